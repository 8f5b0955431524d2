"""The executors of a cluster or of a Spark Connect session must run cerql: checked with one tiny
Spark job, once per application (classic) or session (Connect), before a query runs.

Why: on a local master :mod:`cerql.spark.workers` starts the workers' interpreter itself. On a
cluster (standalone ``spark://``, ``local-cluster``, YARN, Kubernetes) or behind Spark Connect
the Python workers run on other machines, or in another process tree, with whatever Python the
executors were given; when it lacks cerql (or numpy, pyarrow, numba), or runs another Python or
another cerql, nothing said so until the query's first action, half a minute in, as a
20-line worker traceback. :func:`check_executors` asks the executors themselves instead:

* The job is a plain Python UDF over one row, not an Arrow one: a worker needs neither numpy
  nor pyarrow to run it, so a bare interpreter still answers and says what it lacks.
* The UDF's function is :func:`probe`'s code rebuilt in a module of its own that no process
  imports, so cloudpickle ships it by value: a function of this module would travel by
  reference, and a worker without cerql could not even unpickle it. It imports numpy, pyarrow,
  numba, cerql and :mod:`cerql.exec.task`, each in a ``try``, and returns its Python version,
  ``sys.executable`` and the versions found, as JSON (:func:`report_problem` compares them with
  the driver's).
* When the job itself fails (the interpreter cannot be started, PySpark refuses a worker of
  another Python version, a missing module stops the worker before the UDF runs), the reason is
  read from the Spark error's text (:func:`failure_problem`). A failure it cannot read is
  reported as a warning and the query goes on: it may well run.

A pass is kept per (application, worker interpreter) on a classic session, per session on
Spark Connect (whose ``addArtifacts`` are the session's own). A failure is not kept: the user
may mend the session (``addPyFile``, ``addArtifacts``) and try again. The job waits for
executors as any job does.
"""

from __future__ import annotations

import builtins
import json
import re
import sys
import threading
import types
import warnings

from cerql.errors import ExecutionError
from cerql.spark.compat import functions_for, is_connect

GUIDE = 'docs/cluster.md ("Running on a cluster")'  # the page the errors' hints point to
NEEDED = ("numpy", "pyarrow", "numba", "cerql")  # what cerql's tasks import, cerql last
TASK_MODULE = "cerql.exec.task"  # the module a worker runs cerql's tasks with

# What a failed probe job's error says (PySpark's and the JVM's own wording).
CANNOT_START = re.compile(r'Cannot run program "([^"]+)"[^:\n]*: (?:error=\d+, )?([^\n]+)')
VERSION_MISMATCH = re.compile(r"Python in worker has different version:? (\S+) than that in driver:? ([\d.]+)")
NO_MODULE = re.compile(r"No module named '([\w.]+)'")

_passed: set[tuple] = set()  # keys (see _key) whose executors can run cerql's tasks
_lock = threading.Lock()


def probe(_row):
    """Runs in an executor's Python worker (shipped by value: module docstring), so it names no
    global of this module: what the worker's Python is and which of cerql's modules it imports,
    as JSON."""
    import importlib
    import json
    import sys

    versions, errors = {}, {}
    for name in ("numpy", "pyarrow", "numba", "cerql", "cerql.exec.task"):
        try:
            module = importlib.import_module(name)
            versions[name] = getattr(module, "__version__", None)
        except Exception as err:  # noqa: BLE001 - a broken install is reported, not raised
            errors[name] = f"{type(err).__name__}: {err}"
    return json.dumps({"python": "%d.%d" % sys.version_info[:2], "executable": sys.executable,
                       "versions": versions, "errors": errors})


def shipped_probe():
    """:func:`probe` as a function of a module no process imports, which cloudpickle ships by
    value (module docstring)."""
    scope = {"__builtins__": builtins, "__name__": "cerql_executor_probe"}
    return types.FunctionType(probe.__code__, scope, "cerql_probe")


def driver_facts() -> dict[str, str]:
    """What the executors must share with the driver: the Python version and cerql's. The
    version is read from the package as loaded (Python loads a package before its modules), not
    imported: an import of ``cerql`` here would make an import circle (tests/test_import_graph.py)
    for a string."""
    return {"python": "%d.%d" % sys.version_info[:2], "cerql": sys.modules["cerql"].__version__}


def check_executors(spark) -> None:
    """Run :func:`probe` on the executors of ``spark`` once, and fail at once when they cannot
    run cerql's tasks (module docstring).

    Raises
    ------
    ExecutionError
        ``WORKER_CANNOT_IMPORT_CERQL``, ``WORKER_PYTHON_MISMATCH`` or ``WORKER_CERQL_MISMATCH``,
        naming the executors' interpreter and what it lacks, with a hint to the cluster guide.
    """
    key = _key(spark)
    with _lock:
        if key in _passed:
            return
    try:
        report = run_probe(spark)
    except Exception as err:  # noqa: BLE001 - the job failed in the worker: read why
        problem = failure_problem(str(err), _interpreter(spark), driver_facts())
        if problem is None:
            first = (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
            warnings.warn(f"cerql: could not tell whether Spark's executors can run cerql's tasks (the check's "
                          f"job failed: {first}); going on", RuntimeWarning, stacklevel=3)
            return
        raise problem from None
    problem = report_problem(report, driver_facts())
    if problem is not None:
        raise problem
    with _lock:
        _passed.add(key)


def run_probe(spark) -> dict:
    """The executors' answer: :func:`probe` run as a one-row, non-Arrow Python UDF job."""
    from pyspark.sql.types import StringType  # not "string": a Connect client parses that with a classic JVM

    frame = spark.range(1, numPartitions=1)
    udf = functions_for(frame).udf(shipped_probe(), StringType(), useArrow=False)
    return json.loads(frame.select(udf("id")).collect()[0][0])


def report_problem(report: dict, driver: dict) -> ExecutionError | None:
    """The error :func:`probe`'s ``report`` calls for, None when the executors can run cerql's
    tasks: another Python version first (the root cause of the rest), then what is missing,
    then another cerql version."""
    python = report.get("executable") or "the executors' Python"
    if report["python"] != driver["python"]:
        return mismatch_error(python, report["python"], driver)
    errors = report.get("errors", {})
    missing = [name for name in NEEDED if name in errors]
    if missing:
        first = errors[missing[0]]
        return error("WORKER_CANNOT_IMPORT_CERQL", f"Spark's executors cannot run cerql: their Python, {python}, "
                     f"cannot import {', '.join(missing)} ({first})", driver)
    if TASK_MODULE in errors:
        return error("WORKER_CANNOT_IMPORT_CERQL", f"Spark's executors cannot run cerql: their Python, {python}, "
                     f"cannot import {TASK_MODULE} ({errors[TASK_MODULE]})", driver)
    theirs = report.get("versions", {}).get("cerql")
    if theirs != driver["cerql"]:
        return error("WORKER_CERQL_MISMATCH", f"Spark's executors run cerql {theirs} ({python}) and the driver "
                     f"cerql {driver['cerql']}: the executors run the plan the driver builds, so both must be "
                     "the same version", driver)
    return None


def failure_problem(text: str, python: str | None, driver: dict) -> ExecutionError | None:
    """The error a failed probe job's message ``text`` calls for, None when it says nothing
    cerql can name. ``python`` is the executors' interpreter when the driver knows it."""
    named = python or "the executors' Python"
    found = CANNOT_START.search(text)
    if found:
        return error("WORKER_CANNOT_IMPORT_CERQL", f"Spark's executors cannot run cerql: their Python, "
                     f"{found.group(1)}, cannot be started ({found.group(2).strip()})", driver)
    found = VERSION_MISMATCH.search(text)
    if found:
        return mismatch_error(named, found.group(1), driver)
    found = NO_MODULE.search(text)
    if found:
        return error("WORKER_CANNOT_IMPORT_CERQL", f"Spark's executors cannot run cerql: their Python, {named}, "
                     f"cannot import {found.group(1)} (ModuleNotFoundError: {found.group(0)})", driver)
    return None


def mismatch_error(python: str, version: str, driver: dict) -> ExecutionError:
    return error("WORKER_PYTHON_MISMATCH", f"Spark's executors run Python {version} ({python}) and the driver "
                 f"Python {driver['python']}: PySpark refuses the mix", driver)


def error(error_class: str, message: str, driver: dict) -> ExecutionError:
    """The check's error, with the one hint every case shares."""
    return ExecutionError(
        message, error_class=error_class,
        hint=f"every executor needs a Python {driver['python']} with cerql {driver['cerql']}, numpy, pyarrow and "
        "numba (installed on the nodes, or a packed environment shipped with spark.archives), named by "
        "PYSPARK_PYTHON before the session starts (for Spark Connect: in the server's environment); "
        f"see {GUIDE}")


def _key(spark) -> tuple:
    """What a pass is kept for: the Connect session, or the application and its interpreter."""
    if is_connect(spark):
        return ("connect", spark.session_id)
    sc = spark.sparkContext
    return (sc.applicationId, sc.pythonExec)


def _interpreter(spark) -> str | None:
    """The executors' interpreter when the driver knows it: on a classic session each Python UDF
    carries ``sc.pythonExec`` to the executors, which start it; a Connect server chooses its own."""
    return None if is_connect(spark) else spark.sparkContext.pythonExec
