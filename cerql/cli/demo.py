"""Demo data and the demo runner behind ``cerql demo``.

Input: nothing but a row count and a seed. Output: three synthetic event streams as pandas
DataFrames, shaped like the datasets of seed 001's benchmarks (stock trades, smart-home plug
readings, taxi trips), and :func:`run_demo`, which runs every demo query over them (the ``*.sql``
files of ``cerql/cli/queries/``, package data that ``sql/`` at the repository's top links to;
CEQL or MATCH_RECOGNIZE, told apart by the front door) and prints a few matches per query and a
summary table (query, rows in, matches out, seconds).

The generators are deterministic (one seeded ``numpy.random.Generator`` each), so the demo
prints the same matches on every machine and the tests can assert on them. The demo runs on
Spark by default. The streams become Spark DataFrames through Arrow (``createDataFrame`` of a
``pyarrow.Table``), chosen by measurement on 2 cores at the default size: 0.1-0.2 s in a warm
session against 0.3-1.1 s for writing Parquet to a temp directory and reading it back, about
2-3 s either way as the first action of a fresh JVM, and the queries ran equally fast on both.
Each query's result comes back to the driver as one Arrow table (its row count and first rows
from one Spark job), and the matches shown are the first in the order LIMIT uses, as on the
local engine. At the default size (20 000 rows per stream) the whole demo takes well under a
minute on two cores, most of it Spark's start-up and the first query's Python worker start.
"""

from __future__ import annotations

import contextlib
import datetime
import textwrap
import time
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa

import cerql
from cerql import ast
from cerql.parser.match_recognize import parse_match_recognize
from cerql.planner import front

QUERIES = "queries"  # the folder of demo queries in cerql/cli/ (package data; sql/ links to it)
DEMO_ROWS = 20_000  # rows per generated stream in ``cerql demo`` (its ``--rows`` default)
START = pd.Timestamp("2024-03-01 09:30:00")

# Stock names with a base price and a per-trade volatility. MSFT trades around 100 and AMZN
# around 2000 so that seed 001's thresholds (Q1: price > 100, price < 2000) split their trades.
STOCKS = {
    "MSFT": (101.0, 0.01),
    "INTC": (48.0, 0.006),
    "AMZN": (1995.0, 0.004),
    "AAPL": (172.0, 0.004),
    "GOOG": (140.0, 0.005),
}
STOCK_SHARE = (0.25, 0.2, 0.2, 0.2, 0.15)
VOLUMES = (100, 200, 300, 500, 1000)
VOLUME_SHARE = (0.3, 0.25, 0.2, 0.15, 0.1)

# Households 0-5 with two plugs each; plug ids are unique across households, as in DEBS 2014.
HOUSEHOLDS = 6
PLUGS_PER_HOUSEHOLD = 2

# Taxi zones in the order a cab tends to drive through them (neighbours are adjacent), so
# consecutive trips walk along the list, as trips in a city mostly go to nearby zones.
ZONES = (
    "East Harlem North", "Upper East Side", "Midtown Center", "Lincoln Square West",
    "Park Slope", "Midwood", "Gravesend", "West Brighton",
)
AIRPORT = "JFK Airport"
TAXIS = 8


def stock_stream(n_rows: int = DEMO_ROWS, seed: int = 1) -> pd.DataFrame:
    """BUY and SELL trades of five stocks, in arrival order.

    Parameters
    ----------
    n_rows : int
        Number of trades.
    seed : int
        Seed of the random generator; the same seed gives the same frame.

    Returns
    -------
    pandas.DataFrame
        Columns ``type`` ('BUY' or 'SELL'), ``name``, ``price`` (a random walk per stock),
        ``volume`` (round lots, so PARTITION BY [name], [volume] groups trades) and ``ts``
        (datetime64, about one trade per 0.8 s from 2024-03-01 09:30).

    Examples
    --------
    >>> from cerql.cli.demo import stock_stream
    >>> df = stock_stream(5)
    >>> list(df.columns)
    ['type', 'name', 'price', 'volume', 'ts']
    >>> len(df), df["ts"].is_monotonic_increasing
    (5, True)
    """
    rng = np.random.default_rng(seed)
    names = list(STOCKS)
    picked = rng.choice(len(names), size=n_rows, p=STOCK_SHARE)
    last = {name: base for name, (base, _) in STOCKS.items()}
    prices = np.empty(n_rows)
    for i, k in enumerate(picked):
        name = names[k]
        last[name] *= float(np.exp(rng.normal(0.0, STOCKS[name][1])))
        prices[i] = round(last[name], 2)
    gaps = rng.exponential(0.8, size=n_rows)
    return pd.DataFrame({
        "type": np.where(rng.random(n_rows) < 0.5, "BUY", "SELL"),
        "name": [names[k] for k in picked],
        "price": prices,
        "volume": rng.choice(VOLUMES, size=n_rows, p=VOLUME_SHARE).astype(np.int64),
        "ts": START + pd.to_timedelta(np.round(np.cumsum(gaps), 3), unit="s"),
    })


def plug_stream(n_rows: int = DEMO_ROWS, seed: int = 2) -> pd.DataFrame:
    """Load readings of smart plugs in six households, in time order.

    Each plug reports about every 8 seconds. Its device switches between standby (a few watts)
    and running (its own rated load, 60-250 W) as a two-state Markov chain, so readings come
    in runs of high and low load, as in the DEBS 2014 smart-home data.

    Parameters
    ----------
    n_rows : int
        Number of readings over all plugs.
    seed : int
        Seed of the random generator.

    Returns
    -------
    pandas.DataFrame
        Columns ``plug_id``, ``household_id``, ``load`` (watts) and ``ts`` (datetime64, whole
        seconds, so several plugs can report at the same second). There is no type column: a
        query names the source (``plugs AS a``) to match every reading.

    Examples
    --------
    >>> from cerql.cli.demo import plug_stream
    >>> df = plug_stream(24)
    >>> list(df.columns), len(df)
    (['plug_id', 'household_id', 'load', 'ts'], 24)
    """
    rng = np.random.default_rng(seed)
    n_plugs = HOUSEHOLDS * PLUGS_PER_HOUSEHOLD
    per_plug = -(-n_rows // n_plugs)
    frames = []
    for plug in range(n_plugs):
        rated = rng.uniform(60.0, 250.0)
        running = rng.random() < 0.5
        loads = np.empty(per_plug)
        for i in range(per_plug):
            if rng.random() < 0.2:
                running = not running
            level = rated if running else rng.uniform(0.5, 8.0)
            loads[i] = round(max(0.0, level * rng.normal(1.0, 0.05)), 1)
        offsets = rng.integers(0, 8) + np.cumsum(rng.integers(6, 11, size=per_plug))
        frames.append(pd.DataFrame({
            "plug_id": plug,
            "household_id": plug // PLUGS_PER_HOUSEHOLD,
            "load": loads,
            "ts": START + pd.to_timedelta(offsets, unit="s"),
        }))
    df = pd.concat(frames, ignore_index=True)
    df = df.sort_values(["ts", "plug_id"], kind="stable").head(n_rows).reset_index(drop=True)
    return df.astype({"plug_id": np.int64, "household_id": np.int64})


def taxi_stream(n_rows: int = DEMO_ROWS, seed: int = 3) -> pd.DataFrame:
    """PICKUP and DROPOFF events of eight taxis in New York zones, in time order.

    A taxi picks up where it last dropped off, drives to a nearby zone (mostly the next one
    along :data:`ZONES` in its current heading, turning back at either end) or, now and then,
    to JFK Airport (flat fare), and waits a few minutes before its next fare. The fare is
    known at drop-off only.

    Parameters
    ----------
    n_rows : int
        Number of events over all taxis (two per trip).
    seed : int
        Seed of the random generator.

    Returns
    -------
    pandas.DataFrame
        Columns ``type`` ('PICKUP' or 'DROPOFF'), ``taxi_id``, ``trip_id``, ``zone``, ``fare``
        (dollars on DROPOFF rows, NaN on PICKUP rows) and ``ts`` (datetime64).

    Examples
    --------
    >>> from cerql.cli.demo import taxi_stream
    >>> df = taxi_stream(10)
    >>> sorted(set(df["type"]))
    ['DROPOFF', 'PICKUP']
    """
    rng = np.random.default_rng(seed)
    trips_per_taxi = -(-n_rows // (2 * TAXIS)) + 1
    rows = []
    trip_id = 0
    for taxi in range(TAXIS):
        where = int(rng.integers(0, len(ZONES)))
        heading = 1 if rng.random() < 0.5 else -1  # along ZONES, turning back at either end
        clock = float(rng.uniform(0, 20))  # minutes after START
        for _ in range(trips_per_taxi):
            pickup = ZONES[where]
            roll = rng.random()
            if roll < 0.08:
                dropoff, hops = AIRPORT, 4
            else:
                step = 1 if roll < 0.7 else 2 if roll < 0.85 else 0
                if not 0 <= where + heading * step < len(ZONES):
                    heading = -heading
                where += heading * step
                dropoff, hops = ZONES[where], step or 0.5
            minutes = float(rng.uniform(6, 10) * hops + rng.uniform(0, 4))
            fare = 52.0 if dropoff == AIRPORT else round(3.0 + 0.9 * minutes + rng.uniform(0, 2), 2)
            rows.append(("PICKUP", taxi, trip_id, pickup, np.nan, clock))
            rows.append(("DROPOFF", taxi, trip_id, dropoff, fare, clock + minutes))
            clock += minutes + float(rng.uniform(2, 20))
            trip_id += 1
            if dropoff == AIRPORT:  # back into the city for the next fare
                where = int(rng.integers(0, len(ZONES)))
    df = pd.DataFrame(rows, columns=["type", "taxi_id", "trip_id", "zone", "fare", "minutes"])
    df["taxi_id"] = [f"T{t + 1:02d}" for t in df["taxi_id"]]
    df["ts"] = START + pd.to_timedelta(np.round(df.pop("minutes") * 60.0), unit="s")
    df = df.sort_values(["ts", "trip_id"], kind="stable").head(n_rows).reset_index(drop=True)
    return df.astype({"trip_id": np.int64})


DATASETS: dict[str, Callable[..., pd.DataFrame]] = {
    "stock": stock_stream,
    "plugs": plug_stream,
    "trips": taxi_stream,
}


def demo_tables(n_rows: int = DEMO_ROWS) -> dict[str, pd.DataFrame]:
    """Every demo stream by the table name the demo queries use."""
    return {name: make(n_rows) for name, make in DATASETS.items()}


def sql_dir() -> Traversable:
    """Where the demo queries live: ``cerql/cli/queries/``, package data, so that an installed
    wheel or a zipped cerql has them too (the repository's ``sql/`` is a link to it). Read
    through importlib.resources: a folder in a checkout or an install, a folder inside a zip."""
    return resources.files("cerql.cli").joinpath(QUERIES)


def load_queries(directory: Path | Traversable | None = None) -> list[tuple[str, str]]:
    """``(name, text)`` of every ``*.sql`` file, sorted by name; the name is the file stem."""
    directory = directory or sql_dir()
    files = sorted((p for p in directory.iterdir() if p.name.endswith(".sql")), key=lambda p: p.name)
    return [(p.name[: -len(".sql")], p.read_text(encoding="utf-8")) for p in files]


def description(text: str) -> str:
    """The leading ``--`` comment of a query file, joined into one line."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("--"):
            break
        lines.append(stripped[2:].strip())
    return " ".join(lines)


def source_names(text: str) -> list[str]:
    """The table names in a query's FROM clause (lower case, without a schema prefix): a CEQL
    query's sources, or the table a MATCH_RECOGNIZE item reads."""
    if front.dialect_of(text) == "match_recognize":
        clause = parse_match_recognize(text).clause
        return [] if clause.source_is_query else [clause.source.split(".")[-1].lower()]
    select = ast.select_of(cerql.parse(text))
    return [source.name.split(".")[-1].lower() for source in select.sources]


def tables_for(text: str, tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The demo tables a query reads, picked by the names in its FROM clause.

    A name with no demo table is left out, so ``cerql.run`` reports it as an unknown source.
    """
    return {name: tables[name] for name in source_names(text) if name in tables}


def _brief(value) -> str:
    """One result value as short text: an event as its values (numbers with their column name,
    so readings of ids and loads stay apart), a list of events as its first three, a timestamp
    as its time of day (the demo streams each cover a single day)."""
    if isinstance(value, list):
        more = f" +{len(value) - 3} more" if len(value) > 3 else ""
        return "[" + "; ".join(_brief(v) for v in value[:3]) + more + "]"
    if isinstance(value, dict):
        return " ".join(f"{k}={_brief(v)}" if isinstance(v, (int, float)) else _brief(v)
                        for k, v in value.items())
    if value is None or value is pd.NaT or (isinstance(value, float) and np.isnan(value)):
        return "-"
    if isinstance(value, datetime.datetime):
        text = value.strftime("%H:%M:%S.%f")
        return text[:-7] if text.endswith(".000000") else text[:-3]
    return str(value)


def _show(result: pd.DataFrame, limit: int) -> str:
    """The first ``limit`` matches as a small table, without match_id (a long hash)."""
    rows = result.drop(columns="match_id", errors="ignore").head(limit)
    return rows.map(_brief).to_string(index=False)


def spark_tables(spark, tables: Mapping[str, pd.DataFrame]) -> dict:
    """The demo streams as Spark DataFrames, built from Arrow tables (why: module docstring).

    Examples
    --------
    >>> from cerql.cli.demo import demo_tables, spark_tables
    >>> frames = spark_tables(spark, demo_tables(10))  # doctest: +SKIP
    >>> frames["stock"].schema.simpleString()  # doctest: +SKIP
    'struct<type:string,name:string,price:double,volume:bigint,ts:timestamp>'
    """
    return {name: spark.createDataFrame(pa.Table.from_pandas(df, preserve_index=False))
            for name, df in tables.items()}


WARM_UP = ("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY k ORDER BY t MEASURES COUNT(*) AS n ONE ROW PER MATCH "
           "AFTER MATCH SKIP {skip} PATTERN (A B+) DEFINE B AS x > PREV(x))")


def warm_up_spark(spark) -> None:
    """A few rows through both of MATCH_RECOGNIZE's paths on Spark (cerql's Java classes loaded,
    Spark's Python workers started with cerql imported), so that the demo's first query is timed
    for itself, not for the session's first use (about 5 s on 2 cores)."""
    t = spark.createDataFrame(pd.DataFrame({"k": [0, 0, 1, 1] * 4, "t": range(16), "x": [1, 2, 3, 1] * 4}))
    for skip in ("PAST LAST ROW", "TO LAST B"):  # the JVM path, then the Python path
        cerql.cer_sql(spark, WARM_UP.format(skip=skip), t=t).toArrow()


def _first_matches(table, limit: int) -> pd.DataFrame:
    """The first ``limit`` rows of a result (either engine's, as Arrow) in LIMIT's order
    (docs/language.md, "LIMIT": partition columns, match_end, match_start, match_id), as plain
    Python values (dicts, lists of dicts). A MATCH_RECOGNIZE result has no match_id: its first
    rows as they come (the demo's queries end in ORDER BY)."""
    names = table.column_names
    if "match_id" not in names:
        return pd.DataFrame(table.slice(0, limit).to_pylist(), columns=names)
    keys = names[: names.index("match_id")] + ["match_end", "match_start", "match_id"]
    first = table.sort_by([(k, "ascending") for k in keys]).slice(0, limit)
    return pd.DataFrame(first.to_pylist(), columns=names)


def _evaluate(text: str, used: Mapping[str, pd.DataFrame], engine: str, spark, frames,
              progress) -> tuple[int, pa.Table]:
    """(number of matches, the result as Arrow) of one demo query."""
    if spark is None:
        result = cerql.run(text, dict(used), engine=engine, output="arrow")
        return result.num_rows, result
    from pyspark.errors import PySparkException

    from cerql.spark.task_errors import first_line, task_error

    try:
        df = cerql.cer_sql(spark, text, **{name: frames[name] for name in used})
        with progress():
            table = df.toArrow()
    except PySparkException as err:
        # A CeqlError raised in a Spark task arrives as Spark's exception; any other failure of
        # Spark on this query is reported like a query error, so the demo goes on.
        cause = task_error(err) or cerql.ExecutionError(first_line(err), error_class="SPARK_ERROR")
        raise cause.with_text(text) from None
    return table.num_rows, table


def summary_table(summaries: list[dict]) -> str:
    """The per-query summary: query, rows in, matches out, seconds, and a total line."""
    width = max([len(s["query"]) for s in summaries] + [len("total")])
    lines = [f"{'query':<{width}}  {'rows in':>9}  {'matches':>9}  {'seconds':>7}"]
    for s in summaries:
        matches = "failed" if s["error"] is not None else f"{s['matches']:,}"
        lines.append(f"{s['query']:<{width}}  {s['rows_in']:>9,}  {matches:>9}  {s['seconds']:>7.2f}")
    lines.append(f"{'total':<{width}}  {sum(s['rows_in'] for s in summaries):>9,}  "
                 f"{sum(s['matches'] for s in summaries):>9,}  {sum(s['seconds'] for s in summaries):>7.2f}")
    return "\n".join(lines)


def run_demo(
    out: Callable[[str], object] = print,
    n_rows: int = DEMO_ROWS,
    engine: str = "spark",
    show: int = 3,
    directory: Path | None = None,
    spark=None,
    progress: Callable[[], contextlib.AbstractContextManager] | None = None,
) -> list[dict]:
    """Run every demo query (:func:`sql_dir`) over the demo streams and print what it finds.

    Parameters
    ----------
    out : callable
        Receives each chunk of text to print (``print`` by default; a list's ``append`` to
        capture the output).
    n_rows : int
        Rows per demo stream. The queries' windows are sized for the default.
    engine : {"spark", "local", "reference"}
        ``spark`` runs :func:`cerql.cer_sql`; the others are passed to :func:`cerql.run`.
    show : int
        How many matches to print per query.
    directory : pathlib.Path, optional
        Where the ``*.sql`` files are; the demo queries (:func:`sql_dir`) by default.
    spark : pyspark.sql.SparkSession, optional
        The session for ``engine="spark"``; by default the active one, else a local session
        started (and stopped) as ``cerql demo`` does.
    progress : callable, optional
        Returns a context manager to wrap each Spark action in (the CLI's progress line).

    Returns
    -------
    list of dict
        One summary per query: ``query``, ``rows_in``, ``matches``, ``seconds`` and ``error``
        (None, or the :class:`cerql.CeqlError` that stopped the query; the demo goes on with
        the next query, so one broken file does not hide the others).

    Examples
    --------
    >>> from cerql.cli.demo import run_demo
    >>> lines = []
    >>> summaries = run_demo(out=lines.append, engine="local", show=0)  # doctest: +SKIP
    >>> all(s["matches"] > 0 for s in summaries)  # doctest: +SKIP
    True
    """
    with contextlib.ExitStack() as stack:
        if engine == "spark" and spark is None:
            from cerql.cli.runtime import spark_session

            spark = stack.enter_context(spark_session())
        return _run_demo(out, n_rows, engine, show, directory, spark if engine == "spark" else None,
                         progress or contextlib.nullcontext)


def _shown_path(path: Path | Traversable) -> str:
    """A directory as printed: relative to the working directory when inside it
    (``cerql/cli/queries/`` for ``make demo``), else absolute (a folder inside a zip as its path
    through the zip)."""
    if not isinstance(path, Path):
        return f"{path}/"
    path = path.resolve()
    try:
        return f"{path.relative_to(Path.cwd().resolve())}/"
    except ValueError:
        return str(path)


def _run_demo(out, n_rows, engine, show, directory, spark, progress) -> list[dict]:
    """:func:`run_demo` once its session is settled."""
    queries = load_queries(directory)
    started = time.perf_counter()
    tables = demo_tables(n_rows)
    made = f"{len(tables)} streams of {n_rows:,} rows ({', '.join(tables)}) generated in " \
        f"{time.perf_counter() - started:.2f} s"
    frames = None
    if spark is not None:
        started = time.perf_counter()
        frames = spark_tables(spark, tables)
        made += f", loaded into Spark in {time.perf_counter() - started:.2f} s"
        started = time.perf_counter()
        warm_up_spark(spark)
        made += f"; Spark's Python workers and cerql's Java classes started in {time.perf_counter() - started:.2f} s"
    out(made)
    where = _shown_path(directory or sql_dir())
    out(f"{len(queries)} queries from {where}, on the {engine} engine")
    out("")
    if not queries:
        out(f"no *.sql files in {where}")
    summaries = []
    for name, text in queries:
        out(textwrap.fill(f"== {name}: {description(text)}", width=100, subsequent_indent="   "))
        started = time.perf_counter()
        try:
            used = tables_for(text, tables)
            matches, result = _evaluate(text, used, engine, spark, frames, progress)
        except cerql.CeqlError as err:
            out(f"!! {name} failed: {err}")
            summaries.append({"query": name, "rows_in": 0, "matches": 0,
                              "seconds": time.perf_counter() - started, "error": err})
            out("")
            continue
        seconds = time.perf_counter() - started
        rows_in = sum(len(t) for t in used.values())
        if show and matches:
            out(_show(_first_matches(result, show), show))
        summaries.append({"query": name, "rows_in": rows_in, "matches": matches,
                          "seconds": seconds, "error": None})
        out(f"-- {name}: {rows_in} rows in, {matches} matches out, {seconds:.2f} s")
        out("")
    total = sum(s["seconds"] for s in summaries)
    failed = sum(s["error"] is not None for s in summaries)
    if summaries:
        out(summary_table(summaries))
        out("")
    out(f"{len(summaries)} queries, {sum(s['matches'] for s in summaries)} matches, {total:.2f} s"
        + (f", {failed} failed" if failed else ""))
    return summaries
