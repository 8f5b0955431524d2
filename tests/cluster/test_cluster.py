"""cerql on a real standalone cluster (tests/cluster/conftest.py: a master and one worker, each a
process of its own): ``cer_sql`` on CEQL and MATCH_RECOGNIZE, a SQL cell and a stream give the
local engine's rows; executors whose Python lacks numpy make ``cer_sql`` and ``cerql.register``
raise cerql's error before the query runs (cerql/spark/executors.py); and a Spark Connect server
in front of the cluster runs ``cer_sql`` too.

The classic side runs in a driver process of its own (tests/cluster/driver.py says why), once
for all of its tests; the Connect client runs here, since a Connect session needs no JVM of its
own. Run them alone with ``pytest -m cluster``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import cerql
from tests.cluster import driver
from tests.spark.compare import local_records
from tests.support import spy

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
DRIVER_TIMEOUT = 600  # seconds; the driver took 60-110 on 2 busy cores (more where numba must compile)


def local(query: str, **tables) -> list[str]:
    """The local engine's rows of ``query``, encoded as the driver encodes Spark's."""
    return driver.encoded(local_records(cerql.run(query, tables)))


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    """An interpreter of the driver's Python version with nothing installed (it finds cerql's
    sources on the worker's PYTHONPATH and then fails on numpy)."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return str(venv / "bin" / "python")


@pytest.fixture(scope="module")
def seen(standalone, connect_server, bare_python, tmp_path_factory):
    """What driver.py saw on the cluster (its JSON line); its output is shown when it fails. The
    Connect server starts meanwhile (``connect_server``)."""
    url, processes = standalone
    env = dict(processes.env, PYSPARK_PYTHON=sys.executable, TZ="UTC")
    done = subprocess.run([sys.executable, "-m", "tests.cluster.driver", url, bare_python,
                           str(tmp_path_factory.mktemp("driver"))],
                          cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=DRIVER_TIMEOUT)
    lines = [line for line in done.stdout.splitlines() if line.startswith(driver.MARK)]
    if done.returncode != 0 or not lines:
        pytest.fail(f"driver.py failed (exit code {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}")
    seen = json.loads(lines[-1][len(driver.MARK):])
    print("driver.py's seconds:", seen["fit"]["seconds"], {k: v["seconds"] for k, v in seen["unfit"].items()
                                                       if isinstance(v, dict)})  # shown with -s
    return seen


def test_cer_sql_on_the_cluster_equals_the_local_engine(seen):
    fit = seen["fit"]
    assert fit["python_exec"] == sys.executable
    want = local(driver.CEQL, s=driver.trades())
    assert len(want) > 5 and fit["ceql"] == want


def test_match_recognize_on_the_cluster_equals_the_local_engine(seen):
    want = local(driver.MR, ticks=driver.ticks())
    assert len(want) > 5 and seen["fit"]["mr"] == want


def test_match_recognize_in_the_executors_jvm_equals_the_local_engine(seen):
    assert "cerql's Java matcher" in seen["fit"]["mr_jvm_explained"]
    want = local(driver.MR_JVM, ticks=driver.ticks())
    assert len(want) >= 3 and seen["fit"]["mr_jvm"] == want


def test_sql_cell_on_the_cluster_equals_the_local_engine(seen):
    assert seen["fit"]["cell"] == local(driver.CEQL, s=driver.trades())


def test_stream_on_the_cluster_equals_the_local_engine(seen):
    assert seen["fit"]["stream"] == local(driver.CEQL, s=driver.trades())


def test_the_executors_are_checked_once_per_application(seen):
    """Four queries (cer_sql twice, register, a stream), one probe job."""
    assert seen["fit"]["probes"] == 1


@pytest.mark.parametrize("step", ["cer_sql", "register"])
def test_executors_without_numpy_fail_before_the_query_runs(seen, bare_python, step):
    unfit = seen["unfit"]
    assert unfit["python_exec"] == bare_python
    raised = unfit[step]
    assert raised["raised"] == "WORKER_CANNOT_IMPORT_CERQL"
    assert raised["message"].startswith(f"Spark's executors cannot run cerql: their Python, {bare_python}, "
                                        "cannot import numpy, pyarrow, numba (ModuleNotFoundError: No module named")
    assert "PYSPARK_PYTHON" in raised["hint"] and "docs/cluster.md" in raised["hint"]
    assert raised["jobs"] == 1  # the check's own job; the query's never ran


def test_executors_that_cannot_start_their_python_fail_before_the_query_runs(seen):
    """The check's job itself fails (each task cannot start the interpreter): read from Spark's error."""
    raised = seen["unfit"]["unpacked"]
    assert raised["raised"] == "WORKER_CANNOT_IMPORT_CERQL"
    assert raised["message"] == ("Spark's executors cannot run cerql: their Python, ./environment/bin/python, "
                                 "cannot be started (No such file or directory)")
    assert raised["jobs"] == 1


def test_cer_sql_through_spark_connect_on_the_cluster(connect_server, monkeypatch):
    """A Connect client here, on the server in front of the cluster: the executors are checked
    (one probe job, no warning that the check could not tell) and the rows are the local engine's."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    from cerql.spark import executors

    probes = spy(monkeypatch, executors, "run_probe")
    before = ConnectSession._default_session, getattr(ConnectSession._active_session, "session", None)
    session = ConnectSession.builder.remote(connect_server.ready()).create()  # becomes the default
    try:
        assert session.conf.get("spark.master").startswith("spark://127.0.0.1:")
        frame = session.createDataFrame(driver.trades())
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            results = cerql.cer_sql(session, driver.CEQL, s=frame)
        got = driver.encoded([r.asDict(recursive=True) for r in results.collect()])
    finally:
        session.stop()  # and the test run's own Connect session, if any, is the default again
        ConnectSession._default_session, ConnectSession._active_session.session = before
    assert len(probes) == 1
    assert got == local(driver.CEQL, s=driver.trades())
