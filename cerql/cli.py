"""The ``cerql`` command line (DESIGN.md section 1): ``demo``, ``run`` and ``explain``.

Input: the arguments. Output: text on stdout, result files, and an exit code: 0 on success,
2 for a query error (a :class:`cerql.CeqlError`, printed as its message with the caret and the
hint, never a traceback) or a usage error, 1 when a file cannot be read or written.

Tables for ``run`` come from files, one ``--table name=path`` each:

* ``.parquet`` (a file or a directory of parts): read as is, column types included.
* ``.csv``: read with pandas. CSV has no types, so text columns that hold timestamps are
  parsed here: a text column named ``ts`` always (a value that does not parse is an error),
  and any other text column whose every non-empty value parses as an ISO 8601 date or time
  (``2024-03-01``, ``2024-03-01 09:30:00.5``, ``2024-03-01T09:30:00Z``). Numbers stay numbers,
  so a numeric ``ts`` is still a numeric ordering column.

Results go to ``--out`` as ``.parquet`` (nested structs and lists kept), ``.csv`` (nested
values as JSON text) or ``.json`` (JSON Lines: one object per match, timestamps in ISO 8601);
without ``--out`` they are printed as a table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

import pandas as pd

import cerql
from cerql.errors import CeqlError

DEMO_ROWS = 20_000  # the default of ``cerql demo``; cerql.demo.DEFAULT_ROWS, without importing it

TABLE_SUFFIXES = (".parquet", ".csv")
OUT_SUFFIXES = (".parquet", ".csv", ".json")


class CliError(Exception):
    """A problem with the command's files or arguments (not with the query): exit code 1."""


# ------------------------------------------------------------------------------ reading tables
def parse_table_spec(spec: str) -> tuple[str, Path]:
    """``name=path`` -> (name, path); a bare path is named after its file (``a/stock.csv`` ->
    stock), as Spark names a table after its view."""
    name, sep, path = spec.partition("=")
    if not sep:
        path = spec
        name = Path(spec).name.split(".")[0]
    if not name or not path:
        raise CliError(f"--table {spec!r}: expected name=path.parquet or name=path.csv")
    return name, Path(path)


def parse_timestamps(df: pd.DataFrame) -> pd.DataFrame:
    """Parse the text columns of a CSV table that hold timestamps (rules: module docstring)."""
    df = df.copy()
    for column in df.columns:
        values = df[column]
        if values.dtype != object or values.isna().all():
            continue
        try:
            parsed = pd.to_datetime(values, format="ISO8601")
        except (ValueError, TypeError) as err:
            if str(column).lower() == "ts":
                raise CliError(f"column {column!r} is named ts but does not hold timestamps: {err}")
            continue
        df[column] = parsed
    return df


def read_table(path: Path) -> pd.DataFrame:
    """One ``--table`` file as a pandas DataFrame (Parquet as is, CSV with timestamps parsed).

    Parameters
    ----------
    path : pathlib.Path
        A ``.parquet`` file or directory, or a ``.csv`` file.

    Returns
    -------
    pandas.DataFrame
    """
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise CliError(f"{path}: a table must be a .parquet or .csv file")
    if not path.exists():
        raise CliError(f"{path}: no such file")
    try:
        if suffix == ".parquet":
            return pd.read_parquet(path)
        return parse_timestamps(pd.read_csv(path))
    except CliError:
        raise
    except Exception as err:  # pandas and pyarrow raise many kinds; all mean "unreadable"
        raise CliError(f"{path}: cannot read table: {err}") from err


def read_tables(specs: list[str]) -> dict[str, pd.DataFrame]:
    """Every ``--table`` as name -> DataFrame; a name given twice is an error."""
    tables: dict[str, pd.DataFrame] = {}
    for spec in specs:
        name, path = parse_table_spec(spec)
        if name.lower() in (n.lower() for n in tables):
            raise CliError(f"--table {name!r} is given twice")
        tables[name] = read_table(path)
    return tables


def read_query(path: str) -> str:
    """The text of a query file."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise CliError(f"{path}: cannot read query: {err.strerror or err}") from err


# ----------------------------------------------------------------------------- writing results
def _json_value(value):
    """Timestamps, dates and NumPy scalars as JSON values (``json.dumps``'s ``default``)."""
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if hasattr(value, "item"):  # NumPy scalars
        return value.item()
    return str(value)


def _plain(value):
    """A result cell as a plain Python value: pandas' missing values become None."""
    if isinstance(value, (list, dict)):
        return value
    if value is pd.NaT or (not isinstance(value, str) and pd.isna(value)):
        return None
    return value


def write_result(result: pd.DataFrame, path: Path) -> None:
    """Write a result to ``.parquet``, ``.csv`` or ``.json`` (formats in the module docstring).

    Parameters
    ----------
    result : pandas.DataFrame
        What :func:`cerql.run` returned.
    path : pathlib.Path
        The output file; its suffix picks the format.
    """
    suffix = path.suffix.lower()
    if suffix not in OUT_SUFFIXES:
        raise CliError(f"--out {path}: use a .parquet, .csv or .json file")
    try:
        if suffix == ".parquet":
            result.to_parquet(path, index=False)
        elif suffix == ".csv":
            flat = result.copy()
            for column in flat.columns:
                if flat[column].map(lambda v: isinstance(v, (list, dict))).any():
                    flat[column] = flat[column].map(
                        lambda v: None if v is None else json.dumps(v, default=_json_value))
            flat.to_csv(path, index=False)
        else:
            with path.open("w", encoding="utf-8") as f:
                for record in result.to_dict("records"):
                    plain = {k: _plain(v) for k, v in record.items()}
                    f.write(json.dumps(plain, default=_json_value) + "\n")
    except OSError as err:
        raise CliError(f"--out {path}: cannot write: {err.strerror or err}") from err


# ------------------------------------------------------------------------------------ commands
def evaluate(text: str, tables: dict[str, pd.DataFrame], engine: str | None) -> pd.DataFrame:
    """Run a query on the chosen engine.

    Every engine goes through :func:`cerql.run`, which rejects an unknown or unavailable one with
    a CeqlError naming the available engines. The one exception is ``spark`` once cerql provides
    ``cerql.cer_sql`` (DESIGN.md section 1): then the tables are sent to a local SparkSession.
    """
    if engine == "spark" and hasattr(cerql, "cer_sql"):
        from pyspark.sql import SparkSession  # imported here: starting Spark is slow

        spark = (SparkSession.builder.master("local[2]")
                 .config("spark.sql.session.timeZone", "UTC").getOrCreate())
        frames = {name: spark.createDataFrame(df) for name, df in tables.items()}
        return cerql.cer_sql(spark, text, **frames).toPandas()
    return cerql.run(text, tables, engine=engine)


def cmd_demo(args: argparse.Namespace) -> int:
    """``cerql demo``: generate the demo streams and run every query in ``sql/``; exit 2 when a
    query failed (each failure is printed where it happened) or there was no query to run."""
    from cerql.demo import run_demo  # the demo pulls in its generators only when asked

    summaries = run_demo(out=print, n_rows=args.rows, engine=args.engine, show=args.show)
    failed = not summaries or any(s["error"] is not None for s in summaries)
    return 2 if failed else 0


def cmd_run(args: argparse.Namespace) -> int:
    """``cerql run``: evaluate a query file over table files, print or write the result."""
    text = read_query(args.query)
    tables = read_tables(args.table or [])
    result = evaluate(text, tables, args.engine)
    if args.out:
        write_result(result, Path(args.out))
        print(f"{len(result)} matches written to {args.out}")
    else:
        with pd.option_context("display.width", 0, "display.max_columns", None):
            print(result.to_string(index=False))
        print(f"({len(result)} matches)")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    """``cerql explain``: print how cerql understands a query (no data needed)."""
    print(cerql.explain(read_query(args.query), dot=args.dot))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``cerql`` command, one subparser per subcommand."""
    parser = argparse.ArgumentParser(
        prog="cerql", description="Complex event recognition with CEQL queries.")
    parser.add_argument("--version", action="version", version=f"cerql {cerql.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="run the queries in sql/ over generated data")
    demo.add_argument("--rows", type=int, default=DEMO_ROWS, help=f"rows per demo stream (default {DEMO_ROWS:,})")
    demo.add_argument("--show", type=int, default=3, help="matches printed per query (default 3)")
    demo.add_argument("--engine", default=None, help="engine name (default: the best available)")
    demo.set_defaults(func=cmd_demo)

    run = sub.add_parser("run", help="evaluate a query file over Parquet or CSV tables")
    run.add_argument("query", metavar="QUERY.sql")
    run.add_argument("--table", action="append", metavar="NAME=PATH",
                     help="a source of the query: name=path.parquet or name=path.csv (repeatable)")
    run.add_argument("--engine", default=None,
                     help="reference, local or spark (default: the best available)")
    run.add_argument("--out", metavar="PATH", help="write the result to .parquet, .csv or .json")
    run.set_defaults(func=cmd_run)

    explain = sub.add_parser("explain", help="show how cerql reads a query")
    explain.add_argument("query", metavar="QUERY.sql")
    explain.add_argument("--dot", metavar="FILE", help="also write the automaton as Graphviz source")
    explain.set_defaults(func=cmd_explain)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``cerql`` and ``python -m cerql``.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        The exit code: 0 on success, 2 for a query error, 1 for a file error. (Usage errors
        exit with 2 from argparse itself.)

    Examples
    --------
    >>> from cerql.cli import main
    >>> main(["explain", "/no/such/query.sql"])  # doctest: +SKIP
    cerql: error: /no/such/query.sql: cannot read query: No such file or directory
    1
    """
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except CeqlError as err:
        print(f"cerql: {err.error_class}: {err}", file=sys.stderr)
        return 2
    except CliError as err:
        print(f"cerql: error: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # `cerql demo | head`: the reader left; stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
