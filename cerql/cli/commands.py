"""The ``cerql`` command line: ``demo``, ``run``, ``explain``, ``warmup`` and ``pack`` (docs/semantics.md, "Surfaces").

Input: the arguments. Output: text on stdout, result files, and an exit code: 0 on success,
2 for a query error (a :class:`cerql.CeqlError`, also one raised inside a Spark task, printed as
its message with the caret and the hint, never a traceback) or a usage error (an ``--out`` that
cerql refuses to replace included), 1 when a file cannot be read or written, Spark fails for a
reason that is not the query's, or cerql itself fails (one line naming the exception; the
traceback only with ``CERQL_TRACEBACK=1``).

``run`` and ``demo`` use Spark by default (``--engine spark``), on a session from
:mod:`cerql.cli.runtime`: a local one started for the command (or one on ``--master URL``), a
Spark Connect one (``--remote sc://...`` or ``SPARK_REMOTE``), or the one already active in the
process (a notebook's, or the test suite's), reused and left running. The query is checked
before Spark starts, so a typo costs no JVM start-up: its syntax, its sources against the
``--table`` names, and its columns, event types and sources against the schemas of the
``--table`` files read without Spark (a Parquet footer, a CSV header; :func:`check_files`).
``--engine local`` (the numba automaton engine) and ``--engine reference`` run without Spark.

``run`` reads its tables from ``--table name=path`` files and writes the result to ``--out`` or
prints it; which formats are read and written, and how, is in :mod:`cerql.cli.tables_io`, and so
is which ``--out`` may be replaced (never an input, and only with ``--overwrite``). While
Spark works, ``--progress`` shows the running stages on stderr (:mod:`cerql.cli.runtime`).

``run`` and ``explain`` take the query from a file (``cerql run QUERY.sql``) or inline with
``-e``/``--execute``, as ``spark-sql -e`` and ``duckdb -c`` do
(``cerql run -e "SELECT * FROM stock WHERE SELL AS s ; BUY AS b" --table stock=trades.parquet``);
one of the two, never both (a usage error, exit code 2, as is giving neither).

A MATCH_RECOGNIZE query (docs/semantics.md, "MATCH_RECOGNIZE") goes the same ways: its source is
the table named before MATCH_RECOGNIZE, checked against the ``--table`` names and its file's
schema before Spark starts (the local engine over no rows of that schema,
:func:`check_row_pattern_files`); the query around the item runs as Spark SQL on Spark, and as
far as ``cerql.run`` can give Spark's answer on the local engines. Its result counts rows, not
matches. ``explain`` prints its NFA as text (``--dot`` is refused).

``explain`` checks what it can know: without ``--table`` there are no schemas, so sources,
columns and their types are not checked, and the plan says so on its last line; with
``--table`` the query is resolved against the tables as ``run`` would, so an unknown source,
column or event type that no source can hold is the same error (exit code 2), not a plan.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa

import cerql
from cerql import errors
from cerql.api import ENGINES as LOCAL_ENGINES
from cerql.errors import CeqlError
from cerql.spark.task_errors import first_line, task_error
from cerql.cli.demo import DEMO_ROWS
from cerql.cli.runtime import SESSION_DEFAULTS, describe, parse_conf, progress, spark_session
from cerql.cli.tables_io import (
    CliError, OutputRefused, check_not_input, check_out, file_schema, out_suffix, plain_frame, read_spark_table,
    read_table, show_text, table_specs, write_result, write_spark_result,
)


ENGINES = ("spark",) + LOCAL_ENGINES  # Spark first: the default
SHOW_ROWS = 20
SHOW_TRUNCATE = 60


# ----------------------------------------------------------------------------- query and --out
def read_query(path: str) -> str:
    """The text of a query file."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise CliError(f"{path}: cannot read query: {err.strerror or err}") from err


def query_of(args: argparse.Namespace) -> tuple[str, list[Path]]:
    """The query text of ``run`` or ``explain`` and the files it was read from: ``-e`` text as
    given (no file), or the ``QUERY.sql`` file, which ``--out`` and ``--dot`` may never replace."""
    if args.execute is not None:
        return args.execute, []
    return read_query(args.query), [Path(args.query)]


def query_options(parser: argparse.ArgumentParser) -> None:
    """The query of ``run`` and ``explain``: a file or ``-e`` text, one of them (enforced by
    argparse for both, by :func:`main` for neither, since argparse cannot require one of a
    positional and an option with a message that says what to write)."""
    given = parser.add_mutually_exclusive_group()
    given.add_argument("query", nargs="?", metavar="QUERY.sql", help="a file holding the query")
    given.add_argument("-e", "--execute", metavar="QUERY",
                       help='the query itself, as spark-sql -e: -e "SELECT * FROM stock WHERE ..."')
    parser.set_defaults(usage_error=parser.error)


NO_QUERY = 'no query: give a file (QUERY.sql) or the query itself with -e "SELECT ..."'
UNCHECKED = ("columns not checked: without --table there are no schemas, so the sources, their "
             "columns and types are taken as written; give --table NAME=PATH to check them")


def out_path(value: str | None) -> Path | None:
    """``--out`` checked before anything runs: the suffix picks the format."""
    if value is None:
        return None
    path = Path(value)
    out_suffix(path)
    return path


# ------------------------------------------------------------------------------------ commands
LOCAL_CONF = {errors.MAX_MATCHES_CONF: "max_matches_per_event", errors.MAX_OUTPUT_ROWS_CONF: "max_output_rows",
              errors.MAX_OUTPUT_EVENTS_CONF: "max_output_events"}


def local_options(conf: dict[str, str]) -> dict[str, int]:
    """The ``--conf`` settings the local engines take, as :func:`cerql.run` keywords; Spark's
    own settings mean nothing there and are ignored."""
    options = {}
    for key, name in LOCAL_CONF.items():
        if key in conf:
            try:
                options[name] = int(conf[key])
            except ValueError:
                raise CliError(f"--conf {key}={conf[key]}: expected a whole number") from None
    return options


def evaluate(text: str, tables: dict[str, pd.DataFrame], engine: str | None,
             conf: dict[str, str] | None = None) -> pa.Table:
    """Run a query over pandas tables on a local engine (``local`` or ``reference``), its result
    as Arrow (written as it is, no pandas between); an unknown engine is rejected by
    :func:`cerql.run` with a CeqlError naming the available ones."""
    return cerql.run(text, tables, engine=engine, output="arrow", **local_options(conf or {}))


def is_row_pattern(text: str) -> bool:
    """Whether the query is MATCH_RECOGNIZE (the front door's ``dialect_of``), not CEQL."""
    from cerql.planner import front

    return front.dialect_of(text) == "match_recognize"


def result_unit(text: str) -> str:
    """What a result's rows are called: CEQL's are matches; a MATCH_RECOGNIZE query's rows are
    its outer query's (a match, a row of one, or a group)."""
    return "rows" if is_row_pattern(text) else "matches"


def query_sources(text: str) -> list[tuple[str, int]]:
    """The tables a query reads, each with where it is named: CEQL's FROM sources, or the table
    named before MATCH_RECOGNIZE (none for a subquery there, which Spark SQL runs). Parsing and
    checking the query here raises its errors before any engine starts."""
    from cerql.planner import front

    if is_row_pattern(text):
        clause = front.plan_row_pattern(text).clause
        return [] if clause.source_is_query else [(clause.source, errors.start_of(clause.span) if clause.span else 0)]
    return [(source.name, errors.start_of(source.span)) for source in cerql.analyze(text).select.sources]


def check_sources(text: str, names: list[str]) -> None:
    """Reject a source that no ``--table`` gives before Spark starts, when the command is to
    start its own session (a fresh session has no tables; a reused one may, so then
    :func:`cerql.cer_sql` decides)."""
    sources = query_sources(text)
    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is not None:
        return
    given = {n.lower() for n in names}
    for name, at in sources:
        if name.lower() not in given:
            raise errors.AnalysisError.at(text, at, f"Unknown source '{name}'", "UNKNOWN_SOURCE",
                                          f"give it with --table {name}=PATH")


# What the file check reports: errors that depend on the columns' names only, which a Parquet
# footer and a CSV header give exactly as Spark reads them. Parquet's types are exact too, so
# its files also report an ordering column missing; a CSV file's types are pyarrow's guess.
NAME_ERRORS = frozenset({"UNKNOWN_COLUMN", "UNKNOWN_SOURCE", "UNKNOWN_EVENT_TYPE", "NO_TYPE_COLUMN",
                         "AMBIGUOUS_TYPE_COLUMN", "AMBIGUOUS_REFERENCE"})
PARQUET_ERRORS = NAME_ERRORS | {"NO_ORDER_COLUMN"}


def check_files(text: str, specs) -> None:
    """Resolve the query against the schemas of its ``--table`` files, read without Spark
    (:func:`cerql.cli.tables_io.file_schema`), as :func:`cerql.cer_sql` resolves it against
    Spark's, and raise the CeqlError Spark would give for an unknown column, source or event
    type, before a JVM starts (60 s or more on two cores). The check only ever refuses what
    Spark would refuse: an error whose class depends on types Spark may read differently (see
    :data:`NAME_ERRORS`) is left to Spark, as are queries that read a source no ``--table``
    gives (a table of a reused session) or columns Spark computes (aggregates of expressions,
    whose types only Spark's analyzer knows)."""
    from cerql.planner import front

    if is_row_pattern(text):
        return check_row_pattern_files(text, specs)
    analyzed = front.plan(text, spark=True)  # its errors are the query's, whatever the files hold
    analysis = analyzed.analysis
    if analyzed.derived:
        return
    files = {name.lower(): (path, fmt) for name, path, fmt in specs}
    schemas = {}
    for source in analysis.select.sources:
        given = files.get(source.name.lower()) or files.get(source.name.split(".")[-1].lower())
        schema = file_schema(*given) if given is not None else None
        if schema is None:
            return
        schemas[source.name] = schema
    reported = PARQUET_ERRORS if all(fmt == "parquet" for _, _, fmt in specs) else NAME_ERRORS
    try:
        front.plan(text, schemas, spark=True, time_zone=SESSION_DEFAULTS["spark.sql.session.timeZone"])
    except CeqlError as err:
        if err.error_class in reported:
            raise err.with_text(text)


def check_row_pattern_files(text: str, specs) -> None:
    """:func:`check_files` of a MATCH_RECOGNIZE query: the local engine over no rows of the
    source file's schema raises what Spark's check of the item (cerql/spark/mr_lower.py, the
    same engine over no rows of Spark's schema) would, of the errors :func:`check_files`
    reports; the query around the item is Spark's to check."""
    from cerql import row_pattern
    from cerql.planner import front

    planned = front.plan_row_pattern(text)
    clause = planned.clause
    if clause.source_is_query:
        return
    files = {name.lower(): (path, fmt) for name, path, fmt in specs}
    given = files.get(clause.source.lower()) or files.get(clause.source.split(".")[-1].lower())
    schema = file_schema(*given) if given is not None else None
    if schema is None:
        return
    reported = PARQUET_ERRORS if given[1] == "parquet" else NAME_ERRORS
    try:
        row_pattern.item_result(planned, schema.empty_table(), "local")
    except CeqlError as err:
        if err.error_class in reported:
            raise err.with_text(text)


def session(args: argparse.Namespace):
    """The Spark session of ``run``, ``explain`` or ``demo``: ``--conf``, ``--master`` and
    ``--remote`` passed to :func:`cerql.cli.runtime.spark_session`, which also honours
    ``SPARK_REMOTE``."""
    return spark_session(parse_conf(args.conf), master=args.master, remote=args.remote)


def no_session_options(args: argparse.Namespace) -> None:
    """Refuse ``--master`` and ``--remote`` with a local engine, which would ignore them."""
    for flag in ("master", "remote"):
        if getattr(args, flag) is not None:
            raise CliError(f"--{flag} says where Spark runs; --engine {args.engine} runs without "
                           f"Spark: leave out one of them")


def run_spark(args: argparse.Namespace, text: str, specs, out: Path | None) -> int:
    """``cerql run`` on Spark: read the tables, plan the query, then show or write the result."""
    with session(args) as spark:
        frames = {name: read_spark_table(spark, path, fmt) for name, path, fmt in specs}
        df = cerql.cer_sql(spark, text, **frames)
        with progress(spark, args.progress):
            if out is not None:
                count = write_spark_result(spark, df, out)
            else:
                shown = show_text(df, args.show, args.truncate)
        if out is not None:
            print(f"{count} {result_unit(text)} written to {out}/ (a directory of {out.suffix[1:]} part files)")
        else:
            print(shown)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """``cerql demo``: generate the demo streams and run every demo query (package data, linked
    from ``sql/`` in the repository); exit 2 when a query failed (each failure is printed where
    it happened) or there was no query to run."""
    from cerql.cli.demo import run_demo

    if args.stream:
        return _stream_demo(args)
    if args.engine != "spark":
        no_session_options(args)
        summaries = run_demo(out=print, n_rows=args.rows, engine=args.engine, show=args.show)
    else:
        started = time.perf_counter()
        with session(args) as spark:
            print(f"Spark {spark.version} ({describe(spark)}) ready in "
                  f"{time.perf_counter() - started:.1f} s")
            summaries = run_demo(out=print, n_rows=args.rows, engine="spark", show=args.show,
                                 spark=spark, progress=lambda: progress(spark, args.progress))
    failed = not summaries or any(s["error"] is not None for s in summaries)
    return 2 if failed else 0


def _stream_demo(args: argparse.Namespace) -> int:
    """``cerql demo --stream`` (cerql/cli/stream_demo.py): exit 2 when the stream's matches are
    not the batch query's on the same trades."""
    from cerql.cli.stream_demo import run_stream_demo

    if args.engine != "spark":
        raise CliError("--stream runs on Spark only (Structured Streaming); leave out --engine")
    started = time.perf_counter()
    with session(args) as spark:
        print(f"Spark {spark.version} ({describe(spark)}) ready in {time.perf_counter() - started:.1f} s")
        summary = run_stream_demo(spark, out=print, n_rows=args.rows, show=args.show)
    return 0 if summary["same_as_batch"] else 2


def cmd_run(args: argparse.Namespace) -> int:
    """``cerql run``: evaluate a query (a file or ``-e`` text) over table files, print or
    write the result.

    Everything that can be checked without data is checked before an engine starts: the query
    file, the table files and their formats, the ``--out`` suffix and whether it may be written
    (:func:`cerql.cli.tables_io.check_out`), and the query itself.
    """
    text, query_files = query_of(args)
    specs = table_specs(args.table or [])
    out = out_path(args.out)
    if out is not None:
        check_out(out, [*query_files, *(path for _, path, _ in specs)], args.overwrite)
    if args.engine == "spark":
        check_sources(text, [name for name, _, _ in specs])
        check_files(text, specs)  # before Spark starts
        return run_spark(args, text, specs, out)
    no_session_options(args)
    tables = {name: read_table(path, fmt) for name, path, fmt in specs}
    result = evaluate(text, tables, args.engine, parse_conf(args.conf))
    if out is not None:
        write_result(result, out)
        print(f"{len(result)} {result_unit(text)} written to {out}")
    else:
        with pd.option_context("display.width", 0, "display.max_columns", None):
            print(plain_frame(result).to_string(index=False))
        print(f"({len(result)} {result_unit(text)})")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    """``cerql explain``: print how cerql understands a query (no data needed); with ``--table``
    also how it runs on Spark over those tables (the sources, bits, pruning and Spark's plan).

    With ``--table`` the query is resolved against the tables' schemas, so an unknown column or
    source is printed as the error it is (exit code 2) instead of a plan; without, the plan says
    on its last line that columns were not checked (module docstring).
    """
    text, query_files = query_of(args)
    specs = table_specs(args.table)
    if args.dot is not None:  # rewritten freely, as Graphviz users expect, but never an input
        if is_row_pattern(text):
            args.usage_error("--dot draws a CEQL query's automaton; explain prints a MATCH_RECOGNIZE "
                             "query's NFA as text: leave out --dot")
        check_not_input(Path(args.dot), [*query_files, *(path for _, path, _ in specs)], "--dot")
    if not specs:
        print(cerql.explain(text, dot=args.dot))
        print(UNCHECKED)
        return 0
    check_sources(text, [name for name, _, _ in specs])  # before Spark starts
    check_files(text, specs)
    with session(args) as spark:
        frames = {name: read_spark_table(spark, path, fmt) for name, path, fmt in specs}
        print(cerql.explain(text, spark, dot=args.dot, **frames))
    return 0


def cmd_warmup(args: argparse.Namespace) -> int:
    """``cerql warmup``: compile the matching kernel now rather than in the first query
    (cerql/cli/warmup.py); quick when numba's cache is current."""
    from cerql.cli.warmup import warm_up

    warm_up(lambda line: print(line, flush=True), force=args.force)
    return 0


def cmd_pack(args: argparse.Namespace) -> int:
    """``cerql pack``: the current virtualenv with this cerql and a warmed kernel cache as a
    .tar.gz for ``spark.archives`` (cerql/cli/pack.py), and the settings to use it."""
    from cerql.cli import pack

    packed = pack.pack(Path(args.output), warm_cache=args.warm_cache, with_spark_jars=args.with_spark_jars,
                       python_prefix=args.python_prefix, force=args.force,
                       out=lambda line: print(line, flush=True))
    print(pack.describe(packed))
    print(pack.settings(args.output))
    return 0


def _spark_options(parser: argparse.ArgumentParser) -> None:
    """The options ``run`` and ``demo`` share for the Spark engine."""
    parser.add_argument("--engine", choices=ENGINES, default="spark",
                        help="spark (default): a SparkSession, local unless --master or --remote "
                        "say otherwise; local: the numba automaton engine, no Spark; reference: "
                        "the brute-force semantics, tiny inputs only")
    parser.add_argument("--conf", action="append", metavar="KEY=VALUE",
                        help="a Spark setting (repeatable), e.g. spark.driver.memory=4g or "
                        "cerql.maxMatchesPerEvent=1000000; the local engines take "
                        "cerql.maxMatchesPerEvent, cerql.maxOutputRows and cerql.maxOutputEvents")
    _where_options(parser)


def _where_options(parser: argparse.ArgumentParser) -> None:
    """``--master`` and ``--remote``: where Spark runs (cerql/cli/runtime.py)."""
    parser.add_argument("--master", metavar="URL",
                        help="the Spark master to start the session on, e.g. spark://host:7077 or "
                        "local[4] (default local[*]; also --conf spark.master=URL)")
    parser.add_argument("--remote", metavar="sc://HOST:PORT",
                        help="run on a Spark Connect server (default: $SPARK_REMOTE when set); "
                        "--table and --out paths are then the server's")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="show running Spark stages on stderr (default: when stderr is a terminal)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``cerql`` command, one subparser per subcommand."""
    parser = argparse.ArgumentParser(
        prog="cerql", description="Complex event recognition with CEQL queries.")
    parser.add_argument("--version", action="version", version=f"cerql {cerql.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="run the demo queries (sql/ in the repository) over generated data")
    demo.add_argument("--rows", type=int, default=DEMO_ROWS, metavar="N", help=f"rows per demo stream (default {DEMO_ROWS:,})")
    demo.add_argument("--show", type=int, default=3, metavar="N", help="matches printed per query (default 3)")
    demo.add_argument("--stream", action="store_true",
                      help="run a query over Structured Streaming instead: trades arrive as files while it runs, "
                      "and each micro-batch shows rows in, matches out and late rows (Spark only)")
    _spark_options(demo)
    demo.set_defaults(func=cmd_demo)

    run = sub.add_parser("run", help="evaluate a query (a file, or -e text) over Parquet or CSV tables")
    query_options(run)
    run.add_argument("--table", action="append", metavar="NAME=PATH",
                     help="a source of the query: name=path.parquet or name=path.csv, or a "
                     "directory of either (repeatable)")
    run.add_argument("--out", metavar="PATH", help="write the result to .parquet, .csv or .json "
                     "(Spark writes a directory of part files); an existing PATH is refused")
    run.add_argument("--overwrite", action="store_true",
                     help="replace an existing --out: a file, an empty directory or a previous "
                     "Spark result (never an input, nor a directory holding other files)")
    run.add_argument("--show", type=int, default=SHOW_ROWS, metavar="N",
                     help=f"matches printed without --out, on Spark (default {SHOW_ROWS})")
    run.add_argument("--truncate", type=int, default=SHOW_TRUNCATE, metavar="N",
                     help=f"cut printed values to this many characters, 0 for none (default {SHOW_TRUNCATE})")
    _spark_options(run)
    run.set_defaults(func=cmd_run)

    explain = sub.add_parser("explain", help="show how cerql reads a query (a file, or -e text)")
    query_options(explain)
    explain.add_argument("--dot", metavar="FILE", help="also write the automaton as Graphviz source")
    explain.add_argument("--table", action="append", default=[], metavar="NAME=PATH",
                         help="a source table (.parquet or .csv); with tables, also show the Spark plan")
    explain.add_argument("--conf", action="append", metavar="KEY=VALUE", help="a Spark setting")
    _where_options(explain)
    explain.set_defaults(func=cmd_explain)

    warmup = sub.add_parser("warmup", help="compile the matching kernel ahead of the first query "
                            "(numba, 1-2 minutes on 2 cores, once per install)")
    warmup.add_argument("--force", action="store_true", help="run the warm-up queries even when the cache is current")
    warmup.set_defaults(func=cmd_warmup)

    packer = sub.add_parser("pack", help="pack this virtualenv, cerql and its warmed kernel cache into a "
                            ".tar.gz for spark.archives (needs cerql[pack])")
    packer.add_argument("-o", "--output", default="cerql-env.tar.gz", metavar="FILE.tar.gz",
                        help="the archive to write (default cerql-env.tar.gz)")
    packer.add_argument("--warm-cache", action=argparse.BooleanOptionalAction, default=True,
                        help="compile the kernel first and ship numba's cache (default); "
                        "--no-warm-cache leaves it out and executors compile on their first query")
    packer.add_argument("--with-spark-jars", action="store_true",
                        help="keep pyspark's jars (460 MB; executors use their worker's Spark)")
    packer.add_argument("--python-prefix", metavar="PATH",
                        help="where the nodes' base Python lives, when not where this one does "
                        "(venv-pack relinks bin/python to it)")
    packer.add_argument("--force", action="store_true", help="replace an existing archive")
    packer.set_defaults(func=cmd_pack)
    return parser


def query_error(err: BaseException) -> CeqlError | None:
    """The CeqlError behind an exception: itself, the one it was raised from (``raise … from``,
    or lark's ``VisitError.orig_exc``), or one a Spark task raised (:func:`cerql.spark.task_errors.task_error`
    reads it from the failure Spark reports); None when the failure is not the query's."""
    seen: set[int] = set()
    inner: BaseException | None = err
    while inner is not None and id(inner) not in seen:
        seen.add(id(inner))
        if isinstance(inner, CeqlError):
            return inner
        wrapped = getattr(inner, "orig_exc", None)
        inner = wrapped if isinstance(wrapped, BaseException) else inner.__cause__
    return task_error(err)


def report(err: Exception) -> int:
    """Print the error a command ended with as a short message on stderr and return the exit code
    (module docstring): the query's errors with their caret and hint, Spark's first line, and
    anything else as one line naming it (``CERQL_TRACEBACK=1`` re-raises it, for a bug report)."""
    from pyspark.errors import AnalysisException, PySparkException

    cause = query_error(err)
    if cause is not None:
        print(f"cerql: {cause}", file=sys.stderr)  # "[CLASS] message", caret, hint
        for conf in LOCAL_CONF:
            if conf.partition(".")[2] in cause.message:
                print(f"cerql: on the command line: --conf {conf}=N", file=sys.stderr)
        return 2
    if isinstance(err, PySparkException):
        # Spark's analyzer rejecting a fragment of the query is a query error; anything else
        # (memory, a corrupt file) is not.
        print(f"cerql: spark error: {first_line(err)}", file=sys.stderr)
        return 2 if isinstance(err, AnalysisException) else 1
    if os.environ.get("CERQL_TRACEBACK"):
        raise err
    if isinstance(err, MemoryError):
        print("cerql: out of memory: give the query a LIMIT, a WITHIN, a selection strategy (ANY, "
              "LAST), or run it on Spark over more memory", file=sys.stderr)
        return 1
    print(f"cerql: internal error: {type(err).__name__}: {first_line(err)} "
          "(CERQL_TRACEBACK=1 shows where; please report it)", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``cerql`` and ``python -m cerql``.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        The exit code: 0 on success, 2 for a query error or a refused ``--out``, 1 for a file
        error, a Spark failure that is not the query's, or a failure of cerql itself. (Usage
        errors exit with 2 from argparse itself.)

    Examples
    --------
    >>> from cerql.cli.commands import main
    >>> main(["explain", "/no/such/query.sql"])  # doctest: +SKIP
    cerql: error: /no/such/query.sql: cannot read query: No such file or directory
    1
    """
    args = build_parser().parse_args(argv)
    if getattr(args, "usage_error", None) is not None and args.query is None and args.execute is None:
        args.usage_error(NO_QUERY)  # exits 2 with the subcommand's usage, as argparse does
    try:
        return args.func(args)
    except OutputRefused as err:
        print(f"cerql: [{err.error_class}] {err}", file=sys.stderr)
        return 2
    except CliError as err:
        print(f"cerql: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("cerql: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `cerql demo | head`: the reader left; stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as err:  # noqa: BLE001 - every other failure becomes one message
        return report(err)
