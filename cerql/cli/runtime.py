"""The SparkSession the ``cerql`` command line runs on, and the progress line shown while it works.

Input: ``--conf key=value``, ``--master`` and ``--remote`` options, ``SPARK_REMOTE`` in the
environment, and the SparkSession already active in the process, if any. Output:
:func:`spark_session`, a context manager giving the session ``cerql run``, ``explain`` and
``demo`` run on, :func:`describe` naming it, and :func:`progress`, a context manager reporting
Spark's running stages on stderr. Kept apart from the commands because the CLI's results depend
on session settings (time zone, Parquet timestamp type) whichever session runs them, and because
the demo (:func:`cerql.cli.demo.run_demo`) needs the same session without the command line.

Where a command runs, first match first (:func:`spark_session`):

1. ``--remote sc://host:port`` (or ``--conf spark.remote=...``): a Spark Connect client session
   of its own on that server, released at the end;
2. the session already active in the process (a notebook's, or the test suite's), reused with the
   settings the results depend on set for the command, and left running;
3. ``SPARK_REMOTE`` in the environment: a Spark Connect session on that server, as PySpark's
   own builder would give;
4. a classic SparkSession started for the command on ``--master URL`` (or
   ``--conf spark.master=...``; ``--master`` wins), ``local[*]`` by default, UI off, session time
   zone UTC, Spark's log cut to errors, and stopped at the end.

A master and a Connect server together are refused (:func:`connect_url`), as PySpark refuses
them, but with the flags named. Over Spark Connect, ``--conf`` settings are session settings set
on the server's session (a static one such as ``spark.driver.memory`` is refused, one message),
and the ``--table`` paths and ``--out`` are read and written by the server.

While Spark works, a progress line on stderr names the running stages and their finished and
total tasks (``--progress``; on by default when stderr is a terminal), so a long run shows that
it is moving. It is written by a thread polling Spark's status tracker, not by Spark's console
progress bar, which is fixed when the SparkContext starts (so a reused session could not get it)
and writes from the JVM straight into the terminal, across Python's output.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import cerql
from cerql.spark.task_errors import first_line
from cerql.cli.tables_io import CliError

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


# ------------------------------------------------------------------------------------- session
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


def connect_url(conf: dict[str, str], master: str | None = None, remote: str | None = None,
                environ=os.environ) -> str | None:
    """The Spark Connect server a command runs on: ``--remote``, else ``--conf spark.remote``,
    else ``SPARK_REMOTE``; None for a classic session. A master (``--master`` or
    ``--conf spark.master``) together with a server is a :class:`CliError` naming both, since the
    two say different things about where to run.

    Examples
    --------
    >>> connect_url({}, remote="sc://spark:15002", environ={})
    'sc://spark:15002'
    >>> connect_url({"spark.master": "local[2]"}, environ={}) is None
    True
    """
    url = remote or conf.get("spark.remote") or environ.get("SPARK_REMOTE") or None
    master = master or conf.get("spark.master")
    if url is not None and master:
        named = ("--remote" if remote else "--conf spark.remote" if conf.get("spark.remote")
                 else "SPARK_REMOTE")
        raise CliError(f"{named}={url} and the master {master} both say where to run: give one "
                       "(a Spark Connect server runs queries on its own master)")
    return url


@contextlib.contextmanager
def spark_session(conf: dict[str, str] | None = None, master: str | None = None,
                  remote: str | None = None):
    """The SparkSession a command runs on, as a context manager; which one: module docstring.

    A reused session gets :data:`SESSION_DEFAULTS` and ``conf`` for the command, restored
    afterwards, and is left running (``--master`` must then be its own). A Connect session gets
    them too and is released at the end. A started session gets :data:`SPARK_DEFAULTS`, ``conf``
    on top and ``master`` over both, Spark's log cut to errors, and is stopped at the end;
    ``PYSPARK_PYTHON`` is set to this interpreter when unset, so Spark's Python workers import
    the same cerql.

    Yields
    ------
    pyspark.sql.SparkSession
        A classic session, or a Spark Connect one.
    """
    from pyspark.sql import SparkSession

    conf = dict(conf or {})
    url = connect_url(conf, master, remote)
    active = SparkSession.getActiveSession()
    if url is not None and (remote or conf.get("spark.remote") or active is None):
        with _connect_session(url, conf) as spark:
            yield spark
        return
    if active is not None:
        _check_master(active, master)
        with _settings(active, {**SESSION_DEFAULTS, **conf}, "the running session"):
            yield active
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
    if master:
        settings["spark.master"] = master
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


def _check_master(active, master: str | None) -> None:
    """Refuse a ``--master`` other than the reused session's: a process holds one Spark driver."""
    if not master:
        return
    try:
        running = active.sparkContext.master
    except Exception:  # noqa: BLE001 - a Spark Connect session has no SparkContext
        running = "a Spark Connect server"
    if running != master:
        raise CliError(f"--master {master}: this process already runs a Spark session on "
                       f"{running}, which the command reuses; leave out --master")


@contextlib.contextmanager
def _settings(spark, settings: dict[str, str], where: str):
    """``settings`` set on ``spark`` for the duration, restored afterwards; a setting Spark
    refuses is a :class:`CliError` naming it."""
    saved: dict[str, str | None] = {}
    try:
        for key, value in settings.items():
            before = spark.conf.get(key, None)
            try:
                spark.conf.set(key, value)
            except Exception as err:  # noqa: BLE001 - Spark refuses static settings in several ways
                raise CliError(f"--conf {key}: cannot change it on {where}: {first_line(err)}") from None
            saved[key] = before
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


@contextlib.contextmanager
def _connect_session(url: str, conf: dict[str, str]):
    """A Spark Connect client session of the command's own on the server at ``url``, with
    :data:`SESSION_DEFAULTS` and ``conf`` set, released at the end. Created, not looked up, so a
    Connect session the process already holds is neither changed nor stopped."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    settings = {k: v for k, v in {**SESSION_DEFAULTS, **conf}.items() if k != "spark.remote"}
    try:
        spark = ConnectSession.builder.remote(url).create()
    except Exception as err:  # noqa: BLE001 - a malformed URL is PySpark's ValueError or its own
        raise CliError(f"Spark Connect {url}: {first_line(err)}") from None
    try:
        with _settings(spark, settings, f"the Spark Connect session at {url}"):
            yield spark
    finally:
        spark.stop()


def describe(spark) -> str:
    """Where a session runs, for the CLI's first line: its master (``local[*]``,
    ``spark://host:7077``), or ``Spark Connect`` with the server's own master when it tells."""
    try:
        return spark.sparkContext.master
    except Exception:  # noqa: BLE001 - a Spark Connect session has no SparkContext
        pass
    try:
        return f"Spark Connect, master {spark.conf.get('spark.master')}"
    except Exception:  # noqa: BLE001 - a server may not say
        return "Spark Connect"


# ------------------------------------------------------------------------------------ progress
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
