"""The public entry points that need no Spark: ``parse``, ``analyze``, ``run``, ``explain``.

Input: CEQL text (and, for ``run``, tables by name). Output: an AST, an analysis, a pandas
DataFrame of matches, or an explanation. Each function runs the stages in the order of
docs/architecture.md, "The data path" (the front door, planner/front.py: parse -> derive ->
analyze -> resolve, whose plan planner/rules.py completes; then evaluate -> render) and lets
every CeqlError through with the query text attached.
``explain`` prints the plan that runs: with a Spark session the one ``cer_sql`` builds; without
one, having no schemas, the rules' choices with names as written.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, MutableMapping

import pandas as pd
import pyarrow as pa

from cerql import ast
from cerql.errors import AnalysisError, CeqlError, UnsupportedError, start_of
from cerql.exec import collect, driver, post_filter, reference
from cerql.exec import output as output_table
from cerql.exec.stream import as_arrow, build_stream
from cerql.parser.depth import room_to_recurse
from cerql.plan import MAX_MATCHES_PER_EVENT, Evaluation, QueryPlan
from cerql.planner.analyze import Analysis, check_view
from cerql.planner import front
from cerql.expr import ExprError, compile_expr, guard, refuse_call
from cerql.parser import written
from cerql.parser.sqlexpr import expr_position
from cerql.expr import evaluate
from sqlglot import exp

ENGINES = ("local", "reference")
DEFAULT_ENGINE = "local"


def _deep(fn):
    """Run ``fn(text, ...)`` with room for deeply nested queries (parser/depth.py): every stage
    recurses as deep as the query nests, and too deep is QUERY_TOO_COMPLEX, not a traceback."""

    @functools.wraps(fn)
    def run_deep(text, *args, **kwargs):
        with room_to_recurse(text):
            return fn(text, *args, **kwargs)

    return run_deep


def parse(text: str) -> ast.Query:
    """Parse CEQL into its typed AST; ``str(ast)`` prints it back as canonical CEQL.

    Examples
    --------
    >>> import cerql
    >>> q = cerql.parse("select * from s where sell as s ; buy+ as b within 5 events")
    >>> print(q)
    SELECT * FROM s WHERE sell AS s ; buy+ AS b WITHIN 5 EVENTS
    >>> cerql.parse(str(q)) == q
    True
    """
    return front.parse(text)


@_deep
def analyze(text: str) -> Analysis:
    """Parse and check a query without data: a bad query raises a CeqlError with its position and a hint."""
    return front.plan(text).analysis


def arrow_tables(tables: MutableMapping[str, Any], analysis: Analysis, text: str) -> dict[str, pa.Table]:
    """``tables`` as Arrow tables; any other value is a CeqlError at its name in FROM. A Spark
    DataFrame (a table or a stream) is the likely one: its hint names ``cer_sql``, which runs
    the query on Spark, where ``run`` would have to collect every row to the driver first."""
    starts = {source.name.lower(): start_of(source.span) for source in analysis.select.sources}
    out = {}
    for name, table in tables.items():
        try:
            out[name] = as_arrow(table)
        except TypeError:
            kind = type(table).__name__
            on_spark = type(table).__module__.startswith("pyspark.")
            hint = (f"run it on Spark: cerql.cer_sql(spark, query, {name}=df), or spark.cer_sql(query) over a temp "
                    f"view (streams too)" if on_spark else "pass a pandas.DataFrame or a pyarrow.Table")
            raise UnsupportedError.at(text, starts.get(name.lower(), 0), f"Table '{name}' is a {kind}: run takes "
                                      "pandas DataFrames and Arrow tables", "UNSUPPORTED_TABLE", hint) from None
    return out


def with_derived(tables: dict[str, pa.Table], derived, text: str) -> dict[str, pa.Table]:
    """Each table with the derived columns of ``derived`` computed by the local engine's
    expressions (cerql/expr/, Spark's semantics); a table that lacks a column an
    expression reads gets NULL there, as the union of the sources gives a missing column."""
    out = dict(tables)
    for name, bare, origin in derived:
        call = written.unsupported_call(bare, origin.source)
        if call is not None:
            err = refuse_call(call[0], origin.offset + call[1])
            raise err.cls.at(text, err.offset, err.message, err.error_class, err.hint)
        values, missing = {}, []
        for key, table in out.items():
            lowered = {c.lower(): c for c in table.column_names}
            if any(col.name.lower() not in lowered for col in bare.find_all(exp.Column)):
                missing.append(key)
                continue
            try:
                fn = guard(compile_expr(bare, lambda col: lowered[col.name.lower()]),
                           lambda err: err.cls.at(text, expr_position(origin, err.node), err.message,
                                                  err.error_class, err.hint))
            except ExprError as err:
                raise err.cls.at(text, expr_position(origin), err.message, err.error_class, err.hint) from None
            values[key] = evaluate(fn, table)
        if not values:  # no source has every column it reads
            known = {c.lower(): c for t in out.values() for c in t.column_names}
            unknown = next(c for c in origin.tree.find_all(exp.Column) if c.name.lower() not in known)
            raise AnalysisError.at(text, expr_position(origin, unknown.this), f"Unknown column '{unknown.name}'",
                                   "UNKNOWN_COLUMN", f"the stream has columns {', '.join(known.values())}")
        kind = next(iter(values.values())).type
        for key in missing:
            values[key] = pa.nulls(out[key].num_rows, kind)
        for key, column in values.items():
            out[key] = out[key].append_column(name, column)
    return out


def check_choices(engine: str, output: str) -> None:
    """An UnsupportedError for an ``engine`` or ``output`` that ``run`` does not know, raised
    before any work on the query, so a typo costs nothing."""
    if output not in ("pandas", "arrow"):
        raise UnsupportedError(f"Unknown output {output!r}", error_class="UNKNOWN_OUTPUT",
                               hint="output='pandas' (a DataFrame) or output='arrow' (a pyarrow.Table)")
    if engine not in ENGINES:
        raise UnsupportedError(
            f"Unknown or unavailable engine {engine!r}", error_class="UNKNOWN_ENGINE",
            hint=f"available: {', '.join(ENGINES)}",
        )


def matches_table(plan: QueryPlan, arrow: dict[str, pa.Table], engine: str, max_output_rows: int,
                  max_output_events: int) -> pa.Table:
    """The Arrow table of ``plan``'s matches over the tables ``arrow`` (by source key), in
    order and after LIMIT: the stream is built, evaluated by ``engine`` (the automaton, through
    the post-filter when the plan has checks the kernel cannot make, or the reference), its
    results collected within the output limits and rendered. Kept apart from ``run``, which
    adds the query text to any CeqlError raised here."""
    stream = build_stream(plan, {s.key: arrow[s.key] for s in plan.sources})
    if engine == "reference":
        parts = [reference.evaluate(plan, stream)]
    else:
        parts = (post_filter if plan.post_filters else driver).result_batches(plan, stream)
    rows = collect.result_rows(plan, stream, parts, max_output_rows, max_output_events)
    return output_table.build(plan, stream.table, rows, order=True, limit=plan.limit)


@_deep
def run(
    text: str,
    tables: MutableMapping[str, Any],
    engine: str | None = None,
    max_matches_per_event: int = MAX_MATCHES_PER_EVENT,
    max_output_rows: int = collect.MAX_OUTPUT_ROWS,
    output: str = "pandas",
    max_output_events: int = collect.MAX_OUTPUT_EVENTS,
) -> pd.DataFrame | pa.Table:
    """Evaluate a CEQL query over pandas or Arrow tables, without Spark.

    Parameters
    ----------
    text : str
        The query. ``CREATE [OR REPLACE] TEMP VIEW v AS ...`` also stores the result in
        ``tables[v]``, so later queries can read it.
    tables : mapping of str to pandas.DataFrame or pyarrow.Table
        The sources named in FROM (names match case-insensitively).
    engine : {"local", "reference"}, optional
        The evaluator. ``"local"`` (the default) is the automaton engine: constant work per
        event and output-linear enumeration. ``"reference"`` is the brute-force oracle of the
        tests, for tiny inputs only.
    max_matches_per_event : int
        A single event completing more results than this fails the query (docs/semantics.md, "Limits").
    max_output_rows : int
        A query with more results than this (after LIMIT) fails with TOO_MANY_OUTPUT_ROWS
        instead of filling memory (``cerql.maxOutputRows``, default 1 000 000).
    max_output_events : int
        Results holding more events than this in all (one per result and event a variable
        of it selects, after LIMIT) fail with TOO_MANY_OUTPUT_EVENTS before they are rendered
        (``cerql.maxOutputEvents``, default 10 000 000, about 1 GB).
    output : {"pandas", "arrow"}
        ``"pandas"`` (the default) returns a DataFrame whose variable columns are Arrow-backed
        (``pd.ArrowDtype`` structs and lists of structs: ``out["b"].struct.field("price")``,
        ``out["b"].list.len()``); ``"arrow"`` returns the ``pyarrow.Table`` itself.

    Returns
    -------
    pandas.DataFrame or pyarrow.Table
        The output schema of docs/semantics.md: PARTITION BY columns, match_id, match_start,
        match_end, then the SELECT items.

    Examples
    --------
    >>> import pandas as pd, cerql
    >>> s = pd.DataFrame({"type": ["A", "B", "A", "B"], "ts": [0, 1, 2, 3]})
    >>> out = cerql.run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts", {"s": s})
    >>> out[["match_start", "match_end"]].values.tolist()
    [[0, 1], [0, 3], [2, 3]]
    """
    engine = engine or DEFAULT_ENGINE
    check_choices(engine, output)
    if front.dialect_of(text) == "match_recognize":
        from cerql import row_pattern

        return row_pattern.run(text, tables, engine, output)
    arrow: dict[str, pa.Table] = {}

    def schemas(analysis: Analysis, derived) -> dict[str, pa.Schema]:
        """The tables as Arrow with their derived columns (kept for the run), and their schemas."""
        arrow.update(with_derived(arrow_tables(tables, analysis, text), derived, text))
        return {name: t.schema for name, t in arrow.items()}

    planned = front.plan(text, schemas, max_matches_per_event=max_matches_per_event)
    analysis, plan = planned.analysis, planned.plan
    if engine == "reference":  # the oracle checks every equality itself, on the substreams of PARTITION BY alone
        plan = dataclasses.replace(plan, evaluation=dataclasses.replace(plan.evaluation, join_columns=()))
    check_view(analysis, lambda name: name in tables)
    try:
        table = matches_table(plan, arrow, engine, max_output_rows, max_output_events)
    except CeqlError as err:
        raise err.with_text(text)
    result = table if output == "arrow" else output_table.to_pandas(plan, table)
    if analysis.view is not None:
        tables[analysis.view.name] = result
    return result


@_deep
def explain(text: str, spark: Any = None, dot: str | None = None, **tables) -> str:
    """The query as cerql understands it: canonical text, variables, outputs, the evaluation
    choices (planner/rules.py) and the automaton.

    With a Spark session (classic or Connect), explain prints the plan ``cer_sql`` runs, resolved
    against the session's sources, and also how it runs there: the sources, the order, the
    condition bits, which rows are pruned before the shuffle, and Spark's physical plan.
    ``tables`` are keyword DataFrames, as for :func:`cerql.cer_sql`. Without a session there
    are no schemas: the same rules run with names as written, every equality taken as a key and
    every register candidate as checkable (``rules.NamesAsWritten``). ``dot``, when given, is a
    file path where the automaton is written as Graphviz source.

    Examples
    --------
    >>> import cerql
    >>> print(cerql.explain("SELECT * FROM s WHERE A AS a ; B AS b"))
    query: SELECT * FROM s WHERE A AS a ; B AS b
    variables:
      a: one event
      A: one event
      b: one event
      B: one event
    outputs: a, b
    automaton: 4 states, initial 0, final [2], 6 transitions
      0 -> 0  on TRUE  mark {-}
      0 -> 1  on A  mark {START, a}
      1 -> 3  on TRUE  mark {-}
      1 -> 2  on B  mark {b}
      3 -> 3  on TRUE  mark {-}
      3 -> 2  on B  mark {b}
    """
    if front.dialect_of(text) == "match_recognize":
        from cerql import row_pattern

        if spark is not None:
            from cerql.spark.session import explain_on_spark

            return explain_on_spark(spark, text, tables)
        return row_pattern.explain(text)
    planned = front.plan(text)
    a = planned.analysis
    lines = [f"query: {ast.select_of(planned.query)}", "variables:"]
    for v in a.variables:
        lines.append(f"  {v}: {'many events' if a.cardinality[v] == 2 else 'one event'}")
    lines.append("outputs: " + ", ".join(o.name for o in a.outputs))
    try:
        if spark is not None:  # the plan cer_sql runs, resolved against the session's sources
            from cerql.spark.session import describe_on_spark, plan_query

            _, plan, df = plan_query(spark, text, tables)
            evaluation = plan.evaluation
        else:  # no schemas: the same rules, names as written (rules.NamesAsWritten)
            evaluation = planned.evaluation
    except CeqlError as err:
        raise err.with_text(text)
    lines += _navigation_lines(a.select)
    lines += _evaluation_lines(evaluation)
    automaton = evaluation.automaton
    lines.append(automaton.describe())
    if spark is not None:
        lines.append(describe_on_spark(plan, df))
    if dot is not None and automaton is not None:
        with open(dot, "w", encoding="utf-8") as f:
            f.write(automaton.to_dot() + "\n")
    return "\n".join(lines)


def _navigation_lines(select: ast.Select) -> list[str]:
    """What ``explain`` says of the PREV/NEXT columns (planner/navigation.py)."""
    if not select.navigation:
        return []
    columns = ", ".join(f"{n.column} = {n}" for n in select.navigation)
    return [f"row navigation: {columns}, computed per row before matching: the value n rows earlier (PREV) or "
            "later (NEXT) in the event's PARTITION BY partition, in ORDER BY order, then source, then row "
            "ordinal; NULL where no row lies that far"]


def _evaluation_lines(evaluation: Evaluation) -> list[str]:
    """What ``explain`` says of the evaluation choices of planner/rules.py."""
    lines = []
    join, registers, filters = evaluation.equality_columns, evaluation.registers, evaluation.post_filters
    if join:
        lines.append(f"equalities across variables on {', '.join(join)} run as partitioning: the substreams are "
                     f"split by {', '.join(join)} too and the automaton below does not check them (when the "
                     "column holds integers, strings, booleans, dates or timestamps; otherwise they are "
                     "filtered as the other predicates across variables)")
    compared = [c.text for c in registers if c.aggregate is None]
    aggregated = [c.text for c in registers if c.aggregate is not None]
    if compared:
        lines.append(f"comparisons between variables ({', '.join(compared)}) "
                     "are checked by the automaton with registers (seed 002): the values of the events bound so far "
                     "are carried on the run and compared when an event of the other variable is bound (when both "
                     "sides are numbers, dates, timestamps or booleans)" + (", before the filter below" if filters else ""))
    repeated = [c.text for c in registers if c.reset is not None]
    if repeated:
        lines.append(f"{', '.join(repeated)} under + or :+ hold(s) in each repetition: the automaton marks the first "
                     "event of each repetition, where the registers start over")
    if aggregated:
        lines.append(f"aggregates ({', '.join(aggregated)}) are checked by the automaton with registers (seed 004): "
                     "each run carries the aggregate of the events bound so far and compares it with the constant "
                     "when it reaches a final state (when the column and the constant are numbers)"
                     + (", before the filter below" if filters else ""))
    cross = [n.expr.text for pf in filters if pf.unless is None for n in ast.walk(pf.filter.condition)
             if isinstance(n, ast.CrossPredicate)]
    inside = [pf.filter for pf in filters if pf.unless is not None]
    if cross:
        lines.append(f"predicates across variables ({', '.join(cross)}) are checked on each enumerated result "
                     "of the automaton below, which takes them as true: every result of the relaxed pattern is "
                     "enumerated, then filtered, then CONSUME BY and the strategy apply")
    if inside:
        where = ", ".join(f"line {u.span.line}, column {u.span.column}" if u.span else "?" for u in inside)
        lines.append(f"UNLESS inside the pattern ({where}) is checked on each enumerated result of the automaton "
                     "below, which runs its left side alone: the automaton of its right side (unless inside, "
                     "below) runs over the same events and tells where its results lie, a result is kept when "
                     "none lies within the part of it the left side matched, then CONSUME BY and the strategy "
                     "apply")
    if any(pf.first is not None for pf in filters):
        lines.append("a FILTER or UNLESS under + or :+ is checked on each repetition: the automaton marks the first "
                     "event of each, and every split of a result into repetitions is enumerated")
    return lines
