"""The ``cerql`` command line (DESIGN.md section 1): ``demo``, ``run`` and ``explain``.

Input: the arguments. Output: text on stdout, result files, and an exit code: 0 on success,
2 for a query error (a :class:`cerql.CeqlError`, printed as its message with the caret and the
hint, never a traceback) or a usage error, 1 when a file cannot be read or written or Spark fails
for a reason that is not the query's.

``run`` and ``demo`` use Spark by default (``--engine spark``): a local SparkSession is started
(``local[*]``, UI off, session time zone UTC, Spark's log cut to errors), or the session already
active in the process is reused (a notebook's, or the test suite's) and left running. The query
is checked before Spark starts, so a typo costs no JVM start-up. ``--engine local`` (the numba
automaton engine) and ``--engine reference`` run without Spark.

Tables for ``run`` come from files, one ``--table name=path`` each: a ``.parquet`` or ``.csv``
file, or a directory of part files (Parquet, or CSV when it holds ``*.csv`` files).

* Parquet is read as is, column types included. With Spark, a file with nanosecond timestamps
  (what pandas writes by default), which Spark cannot read, is loaded through pyarrow on the
  driver with its timestamps cut to microseconds, and a note says so.
* CSV has no types, so timestamps are recognised here. Spark infers the schema (two passes over
  the file) with ISO 8601 as the only timestamp format (``2024-03-01 09:30:00.5``,
  ``2024-03-01T09:30:00Z``; Spark's lenient default would read a taxi id ``T07`` as a time of
  day). The local engines parse with pandas: a text column whose every non-empty value is an
  ISO 8601 date or time becomes a timestamp. On both, a column named ``ts`` must hold timestamps
  (or numbers, for a numeric ordering column).

Results go to ``--out`` as ``.parquet`` (nested structs and lists kept), ``.csv`` (nested values
as JSON text, since CSV has no nested types; timestamps in ISO 8601) or ``.json`` (JSON Lines: one
object per match). Spark writes each as a directory of part files, as it writes any table, so a
large result is written in parallel and never collected on the driver; pandas, pyarrow and Spark
all read such a directory as one table. The local engines write a single file. Without ``--out``,
Spark prints the first ``--show`` matches (``DataFrame.show``) and the local engines print all.

While Spark works, a progress line on stderr names the running stages and their finished and
total tasks (``--progress``; on by default when stderr is a terminal), so a long run shows that
it is moving. It is written by a thread polling Spark's status tracker, not by Spark's console
progress bar, which is fixed when the SparkContext starts (so a reused session could not get it)
and writes from the JVM straight into the terminal, across Python's output.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd

import cerql
from cerql import errors
from cerql.errors import CeqlError
from cerql.session import first_line, task_error

DEMO_ROWS = 20_000  # the default of ``cerql demo``; cerql.demo.DEFAULT_ROWS, without importing it

ENGINES = ("spark", "local", "reference")
TABLE_SUFFIXES = (".parquet", ".csv")
OUT_SUFFIXES = (".parquet", ".csv", ".json")
SHOW_ROWS = 20
SHOW_TRUNCATE = 60

# ISO 8601 date-times with optional seconds, fraction and offset; the one timestamp format CSV
# inference accepts (module docstring).
CSV_TIMESTAMP_FORMAT = "yyyy-MM-dd['T'][' ']HH:mm[:ss][.SSSSSSSSS][XXX]"

# Session settings the CLI's results depend on; also set (and restored) on a reused session.
# UTC: CSV timestamps without an offset are read, and all timestamps printed, as UTC. Parquet's
# standard microsecond timestamps rather than Spark's legacy INT96, which pandas reads inside
# structs as plain integers.
SESSION_DEFAULTS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}
# Settings of the session the CLI starts; ``--conf`` overrides them. Shuffle partitions: one per
# core is enough for the CLI's inputs (adaptive execution merges small ones anyway).
SPARK_DEFAULTS = {
    "spark.master": "local[*]",
    "spark.app.name": "cerql",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": str(max(2, os.cpu_count() or 2)),
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    **SESSION_DEFAULTS,
}

# Spark's log, cut to errors. Root and org.apache at the same level also keeps Spark from
# printing "Setting default log level to ..." at start-up. A failed task is logged by the
# executor with a JVM stack trace and then reported to the driver, where the CLI prints it as one
# message, so the executor's copy is turned off.
LOG4J2_PROPERTIES = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.apache.name = org.apache
logger.apache.level = error
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = off
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = off
"""

PROGRESS_DELAY = 1.0  # seconds a Spark action runs before the progress line appears
PROGRESS_INTERVAL = 0.25  # seconds between polls of the status tracker


class CliError(Exception):
    """A problem with the command's files or arguments (not with the query): exit code 1."""


def note(message: str) -> None:
    """A remark on stderr that is neither an error nor part of the result."""
    print(f"cerql: note: {message}", file=sys.stderr)


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


def table_format(path: Path) -> str:
    """``"parquet"`` or ``"csv"``: by suffix, or for a directory without one, by its files."""
    suffix = path.suffix.lower()
    if suffix in TABLE_SUFFIXES and (path.is_file() or path.is_dir()):
        return suffix[1:]
    if not path.exists():
        raise CliError(f"{path}: no such file")
    if path.is_dir() and suffix not in TABLE_SUFFIXES:
        return "csv" if any(path.glob("*.csv")) else "parquet"
    raise CliError(f"{path}: a table must be a .parquet or .csv file, or a directory of them")


def table_specs(specs: list[str]) -> list[tuple[str, Path, str]]:
    """Every ``--table`` as (name, path, format), checked before any engine starts; a name given
    twice is an error."""
    out: list[tuple[str, Path, str]] = []
    for spec in specs:
        name, path = parse_table_spec(spec)
        if name.lower() in (n.lower() for n, _, _ in out):
            raise CliError(f"--table {name!r} is given twice")
        out.append((name, path, table_format(path)))
    return out


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


def read_table(path: Path, fmt: str | None = None) -> pd.DataFrame:
    """One ``--table`` as a pandas DataFrame, for the local engines (Parquet as is, CSV with
    timestamps parsed; a directory of CSV parts is read part by part, in name order).

    Parameters
    ----------
    path : pathlib.Path
        A ``.parquet`` or ``.csv`` file, or a directory of either.
    fmt : {"parquet", "csv"}, optional
        The format; found from the path when not given.

    Returns
    -------
    pandas.DataFrame
    """
    fmt = fmt or table_format(path)
    try:
        if fmt == "parquet":
            return pd.read_parquet(path)
        parts = sorted(path.glob("*.csv")) if path.is_dir() else [path]
        frames = [pd.read_csv(p) for p in parts]
        return parse_timestamps(pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0])
    except CliError:
        raise
    except Exception as err:  # pandas and pyarrow raise many kinds; all mean "unreadable"
        raise CliError(f"{path}: cannot read table: {err}") from err


def read_tables(specs: list[str]) -> dict[str, pd.DataFrame]:
    """Every ``--table`` as name -> pandas DataFrame (the local engines)."""
    return {name: read_table(path, fmt) for name, path, fmt in table_specs(specs)}


def _micros(t):
    """An Arrow type with every nanosecond timestamp in it (also inside structs and lists) made
    a microsecond one, the finest Spark has."""
    import pyarrow as pa

    if pa.types.is_timestamp(t) and t.unit == "ns":
        return pa.timestamp("us", t.tz)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_micros(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_micros(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_micros(t.value_type)))
    return t


def pa_schema(schema):
    """An Arrow schema with its nanosecond timestamps made microsecond ones (:func:`_micros`)."""
    import pyarrow as pa

    return pa.schema([f.with_type(_micros(f.type)) for f in schema])


def _nanosecond_parquet(path: Path) -> bool:
    """Whether a Parquet file (or the first file of a directory) stores timestamps in
    nanoseconds, which Spark refuses (pandas writes them by default). The footer says it; the
    Arrow schema does not, since pyarrow also reads Spark's INT96 timestamps as nanoseconds."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    files = ds.dataset(path, format="parquet").files
    if not files:
        return False
    schema = pq.ParquetFile(files[0]).schema
    return any("timeUnit=nanoseconds" in str(schema.column(i).logical_type) for i in range(len(schema)))


def read_spark_table(spark, path: Path, fmt: str):
    """One ``--table`` as a Spark DataFrame (rules and the nanosecond fallback: module docstring).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    path : pathlib.Path
    fmt : {"parquet", "csv"}

    Returns
    -------
    pyspark.sql.DataFrame
    """
    from pyspark.errors import PySparkException

    try:
        if fmt == "csv":
            df = (spark.read.option("header", True).option("inferSchema", True).option("escape", '"')
                  .option("timestampFormat", CSV_TIMESTAMP_FORMAT).csv(str(path)))
        else:
            import pyarrow.dataset as ds

            if not _nanosecond_parquet(path):
                df = spark.read.parquet(str(path))
            else:
                table = ds.dataset(path, format="parquet", partitioning="hive").to_table()
                wanted = pa_schema(table.schema)
                note(f"{path}: nanosecond timestamps, which Spark cannot read; loaded through "
                     "pyarrow on the driver, cut to microseconds")
                df = spark.createDataFrame(table.cast(wanted, safe=False))
    except PySparkException as err:
        raise CliError(f"{path}: cannot read table: {first_line(err)}") from err
    except (OSError, ValueError) as err:  # pyarrow: not Parquet, unreadable
        raise CliError(f"{path}: cannot read table: {err}") from err
    for field in df.schema.fields:
        if field.name.lower() == "ts" and field.dataType.typeName() == "string":
            raise CliError(f"{path}: column {field.name!r} is named ts but does not hold timestamps "
                           f"(ISO 8601 date-times such as 2024-03-01 09:30:00) or numbers")
    return df


def read_query(path: str) -> str:
    """The text of a query file."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise CliError(f"{path}: cannot read query: {err.strerror or err}") from err


# ----------------------------------------------------------------------------- writing results
def out_path(value: str | None) -> Path | None:
    """``--out`` checked before anything runs: the suffix picks the format."""
    if value is None:
        return None
    path = Path(value)
    if path.suffix.lower() not in OUT_SUFFIXES:
        raise CliError(f"--out {path}: use a .parquet, .csv or .json file")
    return path


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
    """Write a local engine's result to ``.parquet``, ``.csv`` or ``.json`` (one file each;
    formats in the module docstring).

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


def _replaceable(path: Path) -> bool:
    """Whether Spark may overwrite ``path``: absent, a file, or a directory holding nothing but
    what Spark writes (part files, _SUCCESS, checksums). Spark's overwrite deletes the whole
    directory, so ``--out .`` must not be taken literally."""
    if not path.exists() or path.is_file():
        return True
    return all(p.is_file() and (p.name.startswith(("part-", "_", ".")) or p.suffix == ".crc")
               for p in path.iterdir())


def check_spark_out(path: Path) -> None:
    """Refuse an ``--out`` that Spark's overwrite would wipe (:func:`_replaceable`)."""
    if not _replaceable(path):
        raise CliError(f"--out {path}: a directory that is not a previous result; "
                       "choose a new path (Spark would delete everything in it)")


def write_spark_result(spark, df, path: Path) -> int:
    """Write a Spark result as a directory of part files (formats: module docstring) and return
    how many matches it holds (read back from the written files: a second run of the query
    would cost more).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    df : pyspark.sql.DataFrame
        What :func:`cerql.cer_sql` returned.
    path : pathlib.Path
        The output directory; its suffix picks the format.

    Returns
    -------
    int
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, MapType, StructType

    check_spark_out(path)
    fmt = path.suffix.lower()[1:]
    if fmt == "csv":
        nested = (StructType, ArrayType, MapType)
        df = df.select(*[F.to_json(F.col(f"`{f.name}`")).alias(f.name)
                         if isinstance(f.dataType, nested) else F.col(f"`{f.name}`")
                         for f in df.schema.fields])
    writer = df.write.mode("overwrite")
    if fmt == "csv":  # RFC 4180 quoting (a quote doubled), which pandas and spreadsheets read
        writer = writer.option("header", True).option("escape", '"')
    writer.format(fmt).save(str(path))
    reader = spark.read.option("header", True) if fmt == "csv" else spark.read
    return reader.format(fmt).load(str(path)).count()


def show_text(df, n: int, truncate: int) -> str:
    """What ``df.show(n, truncate)`` prints, as text, so it is printed only once Spark is done
    (the progress line must be gone first)."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        df.show(n, truncate=truncate if truncate > 0 else False)
    return buffer.getvalue().rstrip("\n")


# ---------------------------------------------------------------------------------- Spark glue
def _log4j2_file() -> Path:
    """The log configuration of sessions the CLI starts, in the temp directory (written once,
    atomically, since several commands may start at the same time)."""
    path = Path(tempfile.gettempdir()) / f"cerql-{cerql.__version__}-log4j2.properties"
    if not path.is_file() or path.read_text() != LOG4J2_PROPERTIES:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".cerql-log4j2-")
        with os.fdopen(fd, "w") as f:
            f.write(LOG4J2_PROPERTIES)
        os.replace(tmp, path)
    return path


def parse_conf(items: list[str] | None) -> dict[str, str]:
    """``--conf key=value`` options as a dict."""
    conf = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--conf {item!r}: expected key=value")
        conf[key.strip()] = value
    return conf


@contextlib.contextmanager
def spark_session(conf: dict[str, str] | None = None):
    """The SparkSession a command runs on, as a context manager.

    The session active in this process is reused when there is one (a notebook's, or the test
    suite's), with :data:`SESSION_DEFAULTS` and ``conf`` set on it for the command and restored
    afterwards, and it is left running. Otherwise a local session is started with
    :data:`SPARK_DEFAULTS`, ``conf`` on top and Spark's log cut to errors, and stopped at the end. ``PYSPARK_PYTHON`` is set to this
    interpreter when unset, so Spark's Python workers import the same cerql.

    Yields
    ------
    pyspark.sql.SparkSession
    """
    from pyspark.sql import SparkSession

    conf = dict(conf or {})
    active = SparkSession.getActiveSession()
    if active is not None:
        saved: dict[str, str | None] = {}
        try:
            for key, value in {**SESSION_DEFAULTS, **conf}.items():
                before = active.conf.get(key, None)
                try:
                    active.conf.set(key, value)
                except Exception as err:  # noqa: BLE001 - Spark refuses static settings in several ways
                    raise CliError(f"--conf {key}: cannot change it on the running session: "
                                   f"{first_line(err)}") from None
                saved[key] = before
            yield active
        finally:
            for key, value in saved.items():
                if value is None:
                    active.conf.unset(key)
                else:
                    active.conf.set(key, value)
        return
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings = dict(SPARK_DEFAULTS)
    java = f"-Dlog4j2.configurationFile={_log4j2_file().as_uri()}"
    settings["spark.driver.extraJavaOptions"] = " ".join(
        filter(None, [java, conf.pop("spark.driver.extraJavaOptions", "")]))
    # Keys outside spark.* (cerql.maxMatchesPerEvent) are session settings: spark-submit would
    # drop them with a warning, so they are set once the session is up.
    session_only = {k: v for k, v in conf.items() if not k.startswith("spark.")}
    settings.update({k: v for k, v in conf.items() if k.startswith("spark.")})
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    try:
        for key, value in session_only.items():
            spark.conf.set(key, value)
        yield spark
    finally:
        spark.stop()


class Progress:
    """A line on stderr with the Spark stages that are running, while a command waits for Spark.

    Why a thread over the status tracker rather than ``spark.ui.showConsoleProgress``: module
    docstring. The tracker works with the UI disabled. Nothing is shown for actions shorter than
    ``delay``. On a terminal (``live``) the line is rewritten in place and erased at the end, so
    the results print on a clean screen; elsewhere each change is one line.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        A classic session; with Spark Connect (no status tracker) nothing is shown.
    stream : file, optional
        Where to write; ``sys.stderr`` (looked up when the action starts) by default.
    live : bool, optional
        Rewrite one line in place; by default when ``stream`` is a terminal.
    delay, interval : float, optional
        Seconds before the first line, and between polls.
    """

    def __init__(self, spark, stream=None, live=None, delay=None, interval=None):
        self.spark = spark
        self.stream = stream
        self.live = live
        self.delay = PROGRESS_DELAY if delay is None else delay
        self.interval = PROGRESS_INTERVAL if interval is None else interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._width = 0
        self.lines: list[str] = []  # every status written, for tests and debugging

    def __enter__(self) -> "Progress":
        try:
            self._tracker = self.spark.sparkContext.statusTracker()
        except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
            return self
        self._out = self.stream or sys.stderr
        if self.live is None:
            self.live = bool(getattr(self._out, "isatty", lambda: False)())
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._poll, name="cerql-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        if self.live and self._width:
            self._out.write("\r" + " " * self._width + "\r")
            self._out.flush()

    def status(self) -> str:
        """The running stages as ``stage 3: 1/2 tasks, stage 4: 0/4 tasks`` ('' when none)."""
        parts = []
        for stage in sorted(self._tracker.getActiveStageIds()):
            info = self._tracker.getStageInfo(stage)
            if info is not None:
                parts.append(f"stage {stage}: {info.numCompletedTasks}/{info.numTasks} tasks")
        return ", ".join(parts)

    def _poll(self) -> None:
        last = ""
        while not self._stop.wait(self.interval):
            elapsed = time.monotonic() - self._started
            if elapsed < self.delay:
                continue
            try:
                status = self.status()
            except Exception:  # noqa: BLE001 - the session may be stopping; progress is optional
                return
            if not status or (status == last and not self.live):
                continue
            last = status
            self.lines.append(status)
            text = f"[{elapsed:.0f} s] {status}"
            if self.live:
                self._out.write("\r" + text.ljust(self._width))
                self._width = max(self._width, len(text))
            else:
                self._out.write(text + "\n")
            self._out.flush()


def progress(spark, enabled: bool | None):
    """A :class:`Progress` for ``--progress`` (forced on), ``--no-progress`` (off) or neither
    (on when stderr is a terminal)."""
    if enabled is False or (enabled is None and not sys.stderr.isatty()):
        return contextlib.nullcontext()
    return Progress(spark)


# ------------------------------------------------------------------------------------ commands
def evaluate(text: str, tables: dict[str, pd.DataFrame], engine: str | None) -> pd.DataFrame:
    """Run a query over pandas tables on a local engine (``local`` or ``reference``); an unknown
    engine is rejected by :func:`cerql.run` with a CeqlError naming the available ones."""
    return cerql.run(text, tables, engine=engine)


def check_sources(analysis, names: list[str]) -> None:
    """Reject a FROM source that no ``--table`` gives before Spark starts, when the command is
    to start its own session (a fresh session has no tables; a reused one may, so then
    :func:`cerql.cer_sql` decides)."""
    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is not None:
        return
    given = {n.lower() for n in names}
    for source in analysis.select.sources:
        if source.name.lower() not in given:
            line, column = errors.position_of(analysis.text, source.span.start if source.span else 0)
            raise errors.AnalysisError(
                f"Unknown source '{source.name}'", error_class="UNKNOWN_SOURCE", line=line,
                column=column, text=analysis.text, hint=f"give it with --table {source.name}=PATH")


def run_spark(args: argparse.Namespace, text: str, specs, out: Path | None) -> int:
    """``cerql run`` on Spark: read the tables, plan the query, then show or write the result."""
    with spark_session(parse_conf(args.conf)) as spark:
        frames = {name: read_spark_table(spark, path, fmt) for name, path, fmt in specs}
        df = cerql.cer_sql(spark, text, **frames)
        with progress(spark, args.progress):
            if out is not None:
                count = write_spark_result(spark, df, out)
            else:
                shown = show_text(df, args.show, args.truncate)
        if out is not None:
            print(f"{count} matches written to {out}/ (a directory of {out.suffix[1:]} part files)")
        else:
            print(shown)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """``cerql demo``: generate the demo streams and run every query in ``sql/``; exit 2 when a
    query failed (each failure is printed where it happened) or there was no query to run."""
    from cerql.demo import run_demo  # the demo pulls in its generators only when asked

    if args.engine != "spark":
        summaries = run_demo(out=print, n_rows=args.rows, engine=args.engine, show=args.show)
    else:
        started = time.perf_counter()
        with spark_session(parse_conf(args.conf)) as spark:
            print(f"Spark {spark.version} ({spark.sparkContext.master}) ready in "
                  f"{time.perf_counter() - started:.1f} s")
            summaries = run_demo(out=print, n_rows=args.rows, engine="spark", show=args.show,
                                 spark=spark, progress=lambda: progress(spark, args.progress))
    failed = not summaries or any(s["error"] is not None for s in summaries)
    return 2 if failed else 0


def cmd_run(args: argparse.Namespace) -> int:
    """``cerql run``: evaluate a query file over table files, print or write the result.

    Everything that can be checked without data is checked before an engine starts: the query
    file, the table files and their formats, the ``--out`` suffix, and the query itself.
    """
    text = read_query(args.query)
    specs = table_specs(args.table or [])
    out = out_path(args.out)
    if args.engine == "spark":
        check_sources(cerql.analyze(text), [name for name, _, _ in specs])
        if out is not None:
            check_spark_out(out)
        return run_spark(args, text, specs, out)
    tables = {name: read_table(path, fmt) for name, path, fmt in specs}
    result = evaluate(text, tables, args.engine)
    if out is not None:
        write_result(result, out)
        print(f"{len(result)} matches written to {out}")
    else:
        with pd.option_context("display.width", 0, "display.max_columns", None):
            print(result.to_string(index=False))
        print(f"({len(result)} matches)")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    """``cerql explain``: print how cerql understands a query (no data needed)."""
    print(cerql.explain(read_query(args.query), dot=args.dot))
    return 0


def _spark_options(parser: argparse.ArgumentParser) -> None:
    """The options ``run`` and ``demo`` share for the Spark engine."""
    parser.add_argument("--engine", choices=ENGINES, default="spark",
                        help="spark (default): a local SparkSession; local: the numba automaton "
                        "engine, no Spark; reference: the brute-force semantics, tiny inputs only")
    parser.add_argument("--conf", action="append", metavar="KEY=VALUE",
                        help="a Spark setting (repeatable), e.g. spark.driver.memory=4g or "
                        "cerql.maxMatchesPerEvent=1000000")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="show running Spark stages on stderr (default: when stderr is a terminal)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``cerql`` command, one subparser per subcommand."""
    parser = argparse.ArgumentParser(
        prog="cerql", description="Complex event recognition with CEQL queries.")
    parser.add_argument("--version", action="version", version=f"cerql {cerql.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="run the queries in sql/ over generated data")
    demo.add_argument("--rows", type=int, default=DEMO_ROWS, metavar="N", help=f"rows per demo stream (default {DEMO_ROWS:,})")
    demo.add_argument("--show", type=int, default=3, metavar="N", help="matches printed per query (default 3)")
    _spark_options(demo)
    demo.set_defaults(func=cmd_demo)

    run = sub.add_parser("run", help="evaluate a query file over Parquet or CSV tables")
    run.add_argument("query", metavar="QUERY.sql")
    run.add_argument("--table", action="append", metavar="NAME=PATH",
                     help="a source of the query: name=path.parquet or name=path.csv, or a "
                     "directory of either (repeatable)")
    run.add_argument("--out", metavar="PATH", help="write the result to .parquet, .csv or .json "
                     "(Spark writes a directory of part files)")
    run.add_argument("--show", type=int, default=SHOW_ROWS, metavar="N",
                     help=f"matches printed without --out, on Spark (default {SHOW_ROWS})")
    run.add_argument("--truncate", type=int, default=SHOW_TRUNCATE, metavar="N",
                     help=f"cut printed values to this many characters, 0 for none (default {SHOW_TRUNCATE})")
    _spark_options(run)
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
        The exit code: 0 on success, 2 for a query error, 1 for a file error or a Spark failure
        that is not the query's. (Usage errors exit with 2 from argparse itself.)

    Examples
    --------
    >>> from cerql.cli import main
    >>> main(["explain", "/no/such/query.sql"])  # doctest: +SKIP
    cerql: error: /no/such/query.sql: cannot read query: No such file or directory
    1
    """
    from pyspark.errors import AnalysisException, PySparkException

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except CeqlError as err:
        print(f"cerql: {err.error_class}: {err}", file=sys.stderr)
        return 2
    except CliError as err:
        print(f"cerql: error: {err}", file=sys.stderr)
        return 1
    except PySparkException as err:
        cause = task_error(err)
        if cause is not None:
            print(f"cerql: {cause.error_class}: {cause}", file=sys.stderr)
            if "maxMatchesPerEvent" in cause.message:
                print("cerql: on the command line: --conf cerql.maxMatchesPerEvent=N", file=sys.stderr)
            return 2
        # Spark's analyzer rejecting a fragment of the query is a query error; anything else
        # (memory, a corrupt file) is not.
        print(f"cerql: spark error: {first_line(err)}", file=sys.stderr)
        return 2 if isinstance(err, AnalysisException) else 1
    except KeyboardInterrupt:
        print("cerql: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `cerql demo | head`: the reader left; stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
