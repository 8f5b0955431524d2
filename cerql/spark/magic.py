"""``%%ceql``: a notebook cell that is a CEQL or MATCH_RECOGNIZE query (docs/semantics.md, "SQL cells").

Input: the cell text, the user's namespace and the active Spark session. Output: the result
DataFrame of ``cerql.cer_sql``, returned (so ``_`` and ``Out[n]`` hold it) and stored under the
name given on the magic line when there is one. Load it with ``%load_ext cerql`` (or
``cerql.spark.magic``)::

    %%ceql matches
    SELECT * FROM stock WHERE SELL AS s ; BUY+ AS b PARTITION BY [name] ORDER BY ts WITHIN 10 EVENTS

FROM sources (for MATCH_RECOGNIZE, the table named before it) are looked up first among the
Spark DataFrames of the namespace, by name, then among the session's tables and temp views, as
``cer_sql(spark, text, stock=stock)`` would.

The cell shows its first rows as a table (HTML in Jupyter, text in a terminal), whatever
``spark.sql.repl.eagerEval.enabled`` says, with the row count under it:

- how many rows: ``spark.sql.repl.eagerEval.maxNumRows`` of the session (20 by default, as
  ``DataFrame.show``);
- the count without running the query twice: the cell runs one Spark job, the first
  ``maxNumRows + 1`` rows (``limit``), with each value cast to a string as ``show`` prints it.
  With at most ``maxNumRows`` rows the count is exact ("3 rows"); with more it says "at least
  21 rows, the first 20 shown", and ``df.count()`` on the returned DataFrame gives the total
  (by running the query again). Caching the whole result to count it would hold every match
  in the executors' memory for a preview, so the cell does not;
- the table is what the cell's result displays as, once: the returned DataFrame's own
  ``_repr_html_`` (eagerEval) does not run the query a second time for it, and displaying the
  DataFrame later (typing its name) shows it as Spark does.

Loading the extension also makes IPython show a :class:`cerql.CeqlError` raised by any cell
(``%%ceql``, ``cerql.run``, ``cer_sql``) as its message, the query line with the caret, and the
hint, without the traceback through cerql's internals; the full traceback stays available with
``%tb`` (and ``%debug``), and as the error's ``__traceback__``. A CeqlError raised inside a
Spark task (a guard such as ``cerql.maxMatchesPerEvent``, when a ``%%ceql`` cell or a later
``df.toPandas()`` runs the query) reaches the driver as Spark's ``PythonException``; it is shown
the same way, as the CeqlError the task raised. Loading needs no Spark session:
the magic looks for one when a cell runs.
"""

from __future__ import annotations

import html
from typing import Any, Mapping

from cerql.errors import CeqlError
from cerql.spark import compat
from cerql.spark.task_errors import task_error

ROWS_CONF = "spark.sql.repl.eagerEval.maxNumRows"  # how many rows a cell shows; Spark's default is 20
DEFAULT_ROWS = 20
LONGEST_CELL = 200  # characters of one value shown; longer ones end in "..."


def active_session():
    """The active classic session, else the active Spark Connect one; a CeqlError if none."""
    spark = compat.active_session()
    if spark is None:
        raise CeqlError("%%ceql needs an active Spark session, and there is none", error_class="NO_SPARK_SESSION",
                        hint="create one first, e.g. spark = SparkSession.builder.getOrCreate()")
    return spark


def source_names(text: str) -> list[str]:
    """The names the query reads from: CEQL's FROM sources, or the table named before
    MATCH_RECOGNIZE (none when a subquery stands there: ``spark.sql`` runs it)."""
    from cerql.api import analyze
    from cerql.planner import front

    if front.dialect_of(text) == "match_recognize":
        clause = front.plan_row_pattern(text).clause
        return [] if clause.source_is_query else [clause.source]
    return [source.name for source in analyze(text).select.sources]


def namespace_frames(text: str, namespace: Mapping[str, Any]) -> dict[str, Any]:
    """Spark DataFrames of ``namespace`` named like a source of the query (``source_names``)."""
    from pyspark.sql.dataframe import DataFrame  # the parent of classic and Connect DataFrames

    lowered = {name.lower(): name for name in namespace}
    frames = {}
    for source in source_names(text):
        name = source if source in namespace else lowered.get(source.lower())
        if name is not None and isinstance(namespace[name], DataFrame):
            frames[source] = namespace[name]
    return frames


def ceql(line: str, cell: str, namespace: dict[str, Any]):
    """Run the cell as CEQL; store the result as ``namespace[line]`` when a name is given."""
    return _run(line, cell, namespace)[0]


def _run(line: str, cell: str, namespace: dict[str, Any]):
    from cerql.spark.session import cer_sql

    target = line.strip()
    if target and not target.isidentifier():
        raise CeqlError(f"'{target}' is not a variable name", error_class="MAGIC_ARGUMENT",
                        hint="write %%ceql, or %%ceql name to also store the result in `name`")
    spark = active_session()
    df = cer_sql(spark, cell, **namespace_frames(cell, namespace))
    try:
        shown = Preview.of(df, shown_rows(spark))  # runs the query: a failing one fails the cell
    except Exception as err:  # noqa: BLE001 - a guard a Spark task raised is shown as cerql's
        cause = task_error(err)
        if cause is None:
            raise
        raise cause.with_text(cell) from err
    if target:
        namespace[target] = df
    return df, shown


def shown_rows(spark) -> int:
    """``spark.sql.repl.eagerEval.maxNumRows`` of the session, else 20."""
    try:
        return max(int(spark.conf.get(ROWS_CONF, str(DEFAULT_ROWS))), 0)
    except (ValueError, TypeError):
        return DEFAULT_ROWS


class Preview:
    """The first ``n`` rows of a DataFrame as strings, and whether it has more: one Spark job."""

    def __init__(self, columns: list[str], rows: list[list[str]], n: int):
        self.columns = columns
        self.rows = rows[:n]
        self.more = len(rows) > n  # rows holds up to n + 1

    @classmethod
    def of(cls, df, n: int) -> "Preview":
        columns = list(df.columns)
        positional = [f"_{i}" for i in range(len(columns))]  # a and A may both be columns
        got = (df.limit(n + 1).toDF(*positional)
               .selectExpr(*(f"CAST({c} AS STRING) AS {c}" for c in positional)).collect())
        return cls(columns, [[_cell(v) for v in row] for row in got], n)

    def caption(self) -> str:
        if self.more:
            return f"at least {len(self.rows) + 1} rows, the first {len(self.rows)} shown"
        return "1 row" if len(self.rows) == 1 else f"{len(self.rows)} rows"

    def __str__(self) -> str:  # as DataFrame.show prints it
        widths = [max([len(c)] + [len(r[i]) for r in self.rows]) for i, c in enumerate(self.columns)]
        rule = "+" + "+".join("-" * w for w in widths) + "+"

        def line(values):
            return "|" + "|".join(v.ljust(w) for v, w in zip(values, widths)) + "|"

        return "\n".join([rule, line(self.columns), rule, *map(line, self.rows), rule, self.caption()])

    def _repr_html_(self) -> str:
        def row(tag: str, values) -> str:
            return "<tr>" + "".join(f"<{tag}>{html.escape(v)}</{tag}>" for v in values) + "</tr>"

        return ("<table class=\"dataframe\" border=\"1\">\n<thead>" + row("th", self.columns) + "</thead>\n<tbody>\n"
                + "\n".join(row("td", r) for r in self.rows) + "\n</tbody>\n</table>\n"
                + f"<p>{html.escape(self.caption())}</p>")

    def bundle(self) -> dict[str, str]:
        return {"text/plain": str(self), "text/html": self._repr_html_()}


def _cell(value) -> str:
    text = "NULL" if value is None else str(value)
    return text if len(text) <= LONGEST_CELL else text[:LONGEST_CELL - 3] + "..."


def show_ceql_error(shell, etype, value, tb, tb_offset=None):
    """IPython's handler for a CeqlError: the message (with its caret and hint) and no
    traceback; ``%tb`` and ``%debug`` still find the full one (sys.last_traceback)."""
    shell._get_exc_info((etype, value, tb))  # sets sys.last_type, last_value, last_traceback
    stb = [f"{etype.__name__}: {value}", "(%tb shows where cerql raised it)"]
    shell._showtraceback(etype, value, stb)
    return stb


def _spark_task_failure() -> tuple[type, ...]:
    """Spark's exception for a failed Python task (``PythonException``, classic and Connect
    subclass it), whose text carries a CeqlError a cerql task raised: a guard such as
    ``maxMatchesPerEvent`` fails when an action runs, in a later cell than the query. Importing
    ``pyspark.errors`` starts no JVM."""
    try:
        from pyspark.errors import PythonException
    except ImportError:  # pragma: no cover - pyspark is a dependency
        return ()
    return (PythonException,)


def _install_error_display(ipython) -> None:
    """Route CeqlError, and a Spark task failure that is a CeqlError a cerql task raised, to
    :func:`show_ceql_error`, keeping a custom handler already there for its own exceptions;
    any other Spark task failure shows IPython's usual traceback."""
    if getattr(ipython, "_cerql_custom_exc", False):
        return
    before, handler_before = tuple(ipython.custom_exceptions), ipython.CustomTB
    task_failures = _spark_task_failure()

    def handler(shell, etype, value, tb, tb_offset=None):
        if issubclass(etype, CeqlError):
            return show_ceql_error(shell, etype, value, tb, tb_offset)
        if task_failures and issubclass(etype, task_failures) and not issubclass(etype, before):
            cause = task_error(value)
            if cause is not None:
                return show_ceql_error(shell, type(cause), cause, tb, tb_offset)
            stb = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
            shell._showtraceback(etype, value, stb)
            return stb
        return handler_before(etype, value, tb, tb_offset=tb_offset)

    ipython.set_custom_exc(before + (CeqlError,) + task_failures, handler)
    ipython._cerql_custom_exc = True


def load_ipython_extension(ipython) -> None:
    """Register ``%%ceql`` on an IPython shell (``%load_ext cerql`` calls this), and the
    display of CeqlError. Imports nothing of Spark: a session is looked for when a cell runs."""
    shown = getattr(ipython, "_cerql_shown", None)  # the last %%ceql result of the running cell
    if shown is None:
        shown = ipython._cerql_shown = {}
        ipython.events.register("pre_run_cell", lambda *info: shown.clear())

    def ceql_magic(line: str, cell: str):
        df, preview = _run(line, cell, ipython.user_ns)
        shown.clear()
        shown[id(df)] = (df, preview)
        return df

    def as_table(obj):
        entry = shown.get(id(obj))
        return entry[1].bundle() if entry is not None and entry[0] is obj else None

    ceql_magic.__doc__ = __doc__
    ipython.register_magic_function(ceql_magic, magic_kind="cell", magic_name="ceql")
    # Spark's DataFrame classes (classic and Connect) share this parent; by name, so that
    # loading imports nothing of Spark. A DataFrame other than the cell's result shows as usual.
    ipython.display_formatter.mimebundle_formatter.for_type_by_name("pyspark.sql.dataframe", "DataFrame", as_table)
    _install_error_display(ipython)
