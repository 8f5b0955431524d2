"""The executors of a cluster or Spark Connect session are asked with one tiny job whether they
can run cerql (cerql/spark/executors.py): their report, or the failed job's error, becomes one
CeqlError naming their interpreter; a pass is kept, a failure is not. On a real standalone
cluster: tests/cluster/test_cluster.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

import cerql
from cerql.errors import ExecutionError
from cerql.spark import executors, workers
from tests.support import spy

DRIVER = {"python": "%d.%d" % sys.version_info[:2], "cerql": cerql.__version__}
FIT = {"python": DRIVER["python"], "executable": "/nodes/python", "errors": {},
       "versions": {"numpy": "2.0", "pyarrow": "18", "numba": "0.60", "cerql": DRIVER["cerql"],
                    "cerql.exec.task": DRIVER["cerql"]}}


def cluster_session(app: str = "app-1", python: str = "/nodes/python"):
    """A classic session on a cluster, as far as check_executors looks."""
    return SimpleNamespace(sparkContext=SimpleNamespace(master="spark://host:7077", applicationId=app,
                                                        pythonExec=python))


@pytest.fixture
def no_passes(monkeypatch):
    monkeypatch.setattr(executors, "_passed", set())


def test_the_probe_reports_this_interpreter():
    report = json.loads(executors.probe(0))

    assert report["python"] == DRIVER["python"] and report["executable"] == sys.executable
    assert report["errors"] == {} and report["versions"]["cerql"] == DRIVER["cerql"]
    assert executors.report_problem(report, executors.driver_facts()) is None


def test_the_shipped_probe_runs_where_cerql_and_numpy_are_missing(tmp_path):
    """Pickled as Spark pickles a UDF and loaded by a bare interpreter that has only PySpark's
    own zip files on its path, as a worker has: it runs, and lists what is missing."""
    from pyspark.cloudpickle import dumps

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    lib = os.path.join(os.path.dirname(sys.modules["pyspark"].__file__), "python", "lib")
    env = {"PATH": os.environ.get("PATH", ""),
           "PYTHONPATH": os.pathsep.join(os.path.join(lib, name) for name in sorted(os.listdir(lib)))}
    loader = "import pickle, sys; print(pickle.loads(sys.stdin.buffer.read())(0))"

    done = subprocess.run([str(venv / "bin" / "python"), "-c", loader], input=dumps(executors.shipped_probe()),
                          env=env, cwd=tmp_path, capture_output=True, check=True)

    report = json.loads(done.stdout)
    assert report["executable"] == str(venv / "bin" / "python")
    assert set(report["errors"]) == {"numpy", "pyarrow", "numba", "cerql", "cerql.exec.task"}
    assert report["errors"]["cerql"] == "ModuleNotFoundError: No module named 'cerql'"


@pytest.mark.parametrize("change, error_class, message", [
    ({"errors": {"numpy": "ModuleNotFoundError: No module named 'numpy'",
                 "cerql.exec.task": "ModuleNotFoundError: No module named 'numpy'"}},
     "WORKER_CANNOT_IMPORT_CERQL",
     "Spark's executors cannot run cerql: their Python, /nodes/python, cannot import numpy "
     "(ModuleNotFoundError: No module named 'numpy')"),
    ({"errors": {"cerql": "ModuleNotFoundError: No module named 'cerql'", "numba": "ImportError: broken"}},
     "WORKER_CANNOT_IMPORT_CERQL",
     "Spark's executors cannot run cerql: their Python, /nodes/python, cannot import numba, cerql "
     "(ImportError: broken)"),
    ({"errors": {"cerql.exec.task": "ImportError: cannot import name 'x'"}},
     "WORKER_CANNOT_IMPORT_CERQL",
     "Spark's executors cannot run cerql: their Python, /nodes/python, cannot import cerql.exec.task "
     "(ImportError: cannot import name 'x')"),
    ({"python": "3.99", "errors": {"cerql": "ModuleNotFoundError: No module named 'cerql'"}},
     "WORKER_PYTHON_MISMATCH",
     f"Spark's executors run Python 3.99 (/nodes/python) and the driver Python {DRIVER['python']}"),
    ({"versions": {"cerql": "0.0.1"}},
     "WORKER_CERQL_MISMATCH",
     f"Spark's executors run cerql 0.0.1 (/nodes/python) and the driver cerql {DRIVER['cerql']}"),
])
def test_a_report_that_cannot_run_cerql_is_one_error(change, error_class, message):
    err = executors.report_problem({**FIT, **change}, DRIVER)

    assert isinstance(err, ExecutionError) and err.error_class == error_class
    assert err.message.startswith(message)
    assert "PYSPARK_PYTHON" in err.hint and 'docs/cluster.md ("Running on a cluster")' in err.hint
    assert f"Python {DRIVER['python']} with cerql {DRIVER['cerql']}" in err.hint


@pytest.mark.parametrize("text, python, error_class, message", [
    ('org.apache.spark.SparkException: Job aborted: ... java.io.IOException: Cannot run program '
     '"./environment/bin/python": error=2, No such file or directory\n\tat java.lang.ProcessBuilder.start',
     "./environment/bin/python", "WORKER_CANNOT_IMPORT_CERQL",
     "Spark's executors cannot run cerql: their Python, ./environment/bin/python, cannot be started "
     "(No such file or directory)"),
    ("pyspark.errors.exceptions.base.PySparkRuntimeError: [PYTHON_VERSION_MISMATCH] Python in worker has "
     "different version: 3.12 than that in driver: 3.11, PySpark cannot run with different minor versions.",
     "/usr/bin/python3", "WORKER_PYTHON_MISMATCH",
     "Spark's executors run Python 3.12 (/usr/bin/python3) and the driver Python"),
    ("Traceback (most recent call last):\n  ...\nModuleNotFoundError: No module named 'pyarrow'\n",
     None, "WORKER_CANNOT_IMPORT_CERQL",
     "Spark's executors cannot run cerql: their Python, the executors' Python, cannot import pyarrow "
     "(ModuleNotFoundError: No module named 'pyarrow')"),
])
def test_a_failed_probe_job_is_read_into_one_error(text, python, error_class, message):
    err = executors.failure_problem(text, python, DRIVER)

    assert err.error_class == error_class and err.message.startswith(message)


def test_a_failure_it_cannot_read_warns_and_lets_the_query_go_on(monkeypatch, no_passes):
    def fails(spark):
        raise RuntimeError("Initial job has not accepted any resources\nmore")

    monkeypatch.setattr(executors, "run_probe", fails)
    expected = r"could not tell .* job failed: Initial job has not accepted any resources\); going on"
    with pytest.warns(RuntimeWarning, match=expected):
        executors.check_executors(cluster_session())
    assert executors._passed == set()


def test_a_pass_is_kept_per_application_and_interpreter_a_failure_is_not(monkeypatch, no_passes):
    reports = [FIT, {**FIT, "errors": {"numpy": "ModuleNotFoundError: No module named 'numpy'"}}, FIT]
    calls = []
    monkeypatch.setattr(executors, "run_probe", lambda spark: calls.append(spark) or reports[len(calls) - 1])

    executors.check_executors(cluster_session())
    executors.check_executors(cluster_session())  # kept
    with pytest.raises(ExecutionError):
        executors.check_executors(cluster_session(python="/other/python"))
    executors.check_executors(cluster_session(python="/other/python"))  # asked again: mended since

    assert len(calls) == 3


@pytest.mark.parametrize("master", ["yarn", "spark://host:7077", "local-cluster[2,1,1024]", "k8s://https://host:443"])
def test_non_local_masters_ask_the_executors_not_a_subprocess(monkeypatch, master):
    monkeypatch.setattr(workers, "probe", lambda *args: pytest.fail("probed with a subprocess"))
    asked = []
    monkeypatch.setattr(workers, "check_executors", asked.append)
    session = SimpleNamespace(sparkContext=SimpleNamespace(master=master))

    workers.check_workers(session)

    assert len(asked) == 1


@pytest.mark.spark
def test_a_connect_session_asks_its_executors_once(connect, monkeypatch, no_passes):
    """The test run's Connect server is local[2], but a Connect client cannot tell where the
    executors run: one probe job, then none."""
    monkeypatch.setattr(workers, "probe", lambda *args: pytest.fail("probed with a subprocess"))
    probes = spy(monkeypatch, executors, "run_probe")

    workers.check_workers(connect)
    workers.check_workers(connect)
    cerql.register(connect, "cerql_checked")

    assert len(probes) == 1 and probes[0]["executable"] == sys.executable and probes[0]["errors"] == {}
