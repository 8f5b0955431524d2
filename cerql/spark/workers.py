"""Spark's Python workers must import cerql: checked, and on a local session repaired, before a
query is planned.

Why: cerql's kernel runs in Spark's Python workers (``mapInArrow`` over
:mod:`cerql.exec.task`), and PySpark starts them with the interpreter of
``PYSPARK_PYTHON``, or a bare ``python3`` from ``PATH`` when it is unset. In a notebook or a
script started from a virtualenv or conda environment, that is often an interpreter without
cerql (or numpy, pyarrow, numba), and nothing says so until a job runs: then the query fails
with a ``ModuleNotFoundError`` deep inside a Python worker traceback wrapped in a Spark error.
:func:`check_workers`, called by ``cer_sql`` (``plan_query``) before the plan is lowered and by
``cerql.register`` before the SQL-cell function is registered, turns that into an answer at once:

* **Local master, classic session** (``local``, ``local[N]``, ``local[*]``): the workers run on
  this machine, so the interpreter they would use (``spark.sparkContext.pythonExec``, which
  PySpark 4 reads each time it builds a Python UDF, ``mapInArrow`` included) is tried in a
  subprocess set up as Spark sets up a worker (the JVM's working directory, Spark's own
  ``PYTHONPATH`` and the session's ``spark.executorEnv.PYTHONPATH``, files added with
  ``addPyFile``): it must import :mod:`cerql.exec.task` and run the driver's Python
  version (PySpark refuses a worker of another one). When it cannot, but the driver's own
  interpreter (``sys.executable``) passes the same test, the session's ``pythonExec`` is pointed
  at it, with a warning, and the query goes on; Python UDFs the session builds afterwards run
  there too. Otherwise ``cer_sql`` raises an :class:`~cerql.errors.ExecutionError`,
  ``WORKER_CANNOT_IMPORT_CERQL`` or ``WORKER_PYTHON_MISMATCH``, whose hint says to start the
  session with ``PYSPARK_PYTHON`` set to an interpreter that has cerql.
* **Spark Connect sessions and other masters** (a cluster, ``local-cluster``): the workers run
  in another process tree, on machines this driver cannot start a process on, so the executors
  are asked with one tiny Spark job instead (:mod:`cerql.spark.executors`): a missing cerql,
  numpy, pyarrow or numba, another Python or another cerql version is an ExecutionError naming
  the executors' interpreter, before the query runs. Nothing is repaired there.

On a local master the answer is kept per (Spark application, interpreter), so a session pays for
one subprocess (about a second: numpy, pyarrow and numba are imported) and not one per query.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import warnings

from cerql.errors import ExecutionError
from cerql.spark.compat import is_connect
from cerql.spark.executors import check_executors

# Masters whose Python workers are children of this machine's JVM; not local-cluster, whose
# executors are separate JVMs with their own environment.
LOCAL_MASTER = re.compile(r"local(\[[^\]]*\])?")
# What a worker does before it can run cerql's task: report its Python version (first line), then
# import the task module (and with it numpy, pyarrow, numba and pyspark).
PROBE = "import sys; print('%d.%d' % sys.version_info[:2], flush=True); import cerql.exec.task"
PROBE_TIMEOUT = 120.0  # seconds; a probe that takes longer is given up on (module docstring)

# (application id, interpreter) -> None when it can run cerql's tasks, else why not.
_answers: dict[tuple[str, str], "Unfit | None"] = {}
_lock = threading.Lock()


class Unfit:
    """Why an interpreter cannot run cerql's tasks: ``error_class`` and what went wrong."""

    def __init__(self, error_class: str, reason: str):
        self.error_class = error_class
        self.reason = reason


def driver_python() -> str:
    """The driver's own interpreter, the one :func:`check_workers` repairs with (a function so
    that tests can stand in an interpreter without cerql)."""
    return sys.executable


def check_workers(spark) -> None:
    """Make sure the Python workers of ``spark`` can run cerql's tasks, or fail at once (rules,
    and which sessions are not checked: module docstring).

    Raises
    ------
    ExecutionError
        ``WORKER_CANNOT_IMPORT_CERQL`` or ``WORKER_PYTHON_MISMATCH``, when neither the session's
        worker interpreter nor the driver's can run them (on a cluster or Connect session also
        ``WORKER_CERQL_MISMATCH``: :func:`cerql.spark.executors.check_executors`).
    """
    if is_connect(spark):
        check_executors(spark)
        return
    try:
        sc = spark.sparkContext
        master = sc.master
    except Exception:  # noqa: BLE001 - a session without a SparkContext here: nothing to probe
        return
    if not LOCAL_MASTER.fullmatch(master or ""):
        check_executors(spark)
        return
    current = sc.pythonExec
    problem = _answer(sc, current)
    if problem is None:
        return
    driver = driver_python()
    fallback = problem if driver == current else _answer(sc, driver)
    if fallback is None:
        sc.pythonExec = driver
        warnings.warn(
            f"cerql: Spark's Python workers were to run {current}, which cannot run cerql's tasks "
            f"({problem.reason}); this session's workers now run the driver's interpreter {driver}. "
            f"Set PYSPARK_PYTHON={driver} before the session starts to choose it yourself.",
            RuntimeWarning, stacklevel=2)
        return
    also = "" if driver == current else f"; nor can the driver's own {driver}: it {fallback.reason}"
    raise ExecutionError(
        f"Spark's Python workers cannot run cerql: {current} {problem.reason}{also}",
        error_class=problem.error_class,
        hint=f"give the workers an interpreter of Python {sc.pythonVer} that imports cerql (and numpy, "
        "pyarrow, numba) in a fresh process: install them for it, and set PYSPARK_PYTHON=/path/to/"
        "that/python in the environment before the session starts (PySpark reads it once, "
        f"when the SparkContext starts). The driver's own {driver} cannot serve: a fresh process of it does not "
        "import cerql (found here only through this process's sys.path?)")


def _answer(sc, python: str) -> Unfit | None:
    """:func:`probe`'s answer for ``python`` on this application, computed once."""
    key = (sc.applicationId, python)
    with _lock:
        if key not in _answers:
            _answers[key] = probe(python, _worker_env(sc), _worker_cwd(sc), sc.pythonVer)
        return _answers[key]


def probe(python: str, env: dict[str, str], cwd: str | None, version: str) -> Unfit | None:
    """Start ``python`` as Spark starts a worker and see whether it can run cerql's tasks: None
    when it can, else why not. A probe that outlasts :data:`PROBE_TIMEOUT` is taken as fit,
    with a warning: a slow disk must not stop a query that may well run."""
    try:
        done = subprocess.run([python, "-c", PROBE], env=env, cwd=cwd, capture_output=True,
                              text=True, timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        warnings.warn(f"cerql: could not tell within {PROBE_TIMEOUT:.0f} s whether {python} can "
                      "run cerql's tasks in Spark's workers; going on", RuntimeWarning, stacklevel=3)
        return None
    except OSError as err:
        return Unfit("WORKER_CANNOT_IMPORT_CERQL", f"cannot be started: {err.strerror or err}")
    seen = done.stdout.strip().splitlines()[:1]
    if seen and seen[0] != version:
        return Unfit("WORKER_PYTHON_MISMATCH",
                     f"is Python {seen[0]} and the driver Python {version} (PySpark refuses the mix)")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        return Unfit("WORKER_CANNOT_IMPORT_CERQL", f"cannot import cerql ({last})")
    return None


def _worker_env(sc) -> dict[str, str]:
    """The environment of a worker, as Spark builds it: this process's, with ``PYTHONPATH`` made
    of Spark's own Python path, the session's ``spark.executorEnv.PYTHONPATH``, the JVM's
    ``PYTHONPATH`` and the files added with ``addPyFile``."""
    jvm = sc._jvm
    paths = [str(jvm.org.apache.spark.api.python.PythonUtils.sparkPythonPath()),
             getattr(sc, "environment", {}).get("PYTHONPATH", ""),
             str(jvm.System.getenv("PYTHONPATH") or "")]
    includes = getattr(sc, "_python_includes", None) or []
    if includes:
        from pyspark import SparkFiles

        root = SparkFiles.getRootDirectory()
        paths += [os.path.join(root, name) for name in includes]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def _worker_cwd(sc) -> str | None:
    """The working directory of a local worker: the JVM's (the driver's when Spark started),
    which ``python -m pyspark.daemon`` puts first on ``sys.path``."""
    cwd = str(sc._jvm.System.getProperty("user.dir") or "")
    return cwd if os.path.isdir(cwd) else None
