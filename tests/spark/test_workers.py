"""Spark's Python workers without cerql (cerql/spark/workers.py): on a local session ``cer_sql``
points them at the driver's interpreter, or fails at once with a CeqlError naming PYSPARK_PYTHON;
the check runs once per (session, interpreter). Connect sessions and other masters ask their
executors instead: tests/spark/test_executors.py.

Each test that changes the shared session's ``pythonExec`` puts it back in a ``finally``.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pandas as pd
import pytest

import cerql
from cerql.cli.commands import main
from cerql.errors import CeqlError, ExecutionError
from cerql.spark import workers
from tests.spark.compare import canonical_rows, local_records, spark_records

pytestmark = pytest.mark.spark

STOCK = pd.DataFrame({
    "type": ["SELL", "BUY", "SELL", "BUY"],
    "name": ["MSFT", "MSFT", "INTC", "INTC"],
    "ts": pd.to_datetime(["2024-03-01 09:30:00", "2024-03-01 09:30:05",
                          "2024-03-01 09:30:07", "2024-03-01 09:30:09"]),
    "price": [101.0, 102.0, 48.0, 47.0],
})
QUERY = "SELECT * FROM stock WHERE SELL AS s ; BUY AS b PARTITION BY [name]"


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    """An interpreter of the driver's Python version without cerql's dependencies: a fresh venv
    with nothing installed (it finds cerql's sources in the working directory, as a worker
    would, and then fails on numpy)."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return str(venv / "bin" / "python")


@pytest.fixture
def stock(spark):
    return spark.createDataFrame(STOCK).coalesce(1)


@pytest.fixture
def restore_python_exec(spark):
    """Put the shared session's worker interpreter back after the test."""
    sc = spark.sparkContext
    before = sc.pythonExec
    try:
        yield sc
    finally:
        sc.pythonExec = before


def test_local_session_workers_move_to_the_driver_interpreter(spark, stock, bare_python, restore_python_exec):
    sc = restore_python_exec
    sc.pythonExec = bare_python

    with pytest.warns(RuntimeWarning, match="now run the driver's interpreter") as caught:
        df = cerql.cer_sql(spark, QUERY, stock=stock)

    assert sc.pythonExec == sys.executable
    warning = str(caught[0].message)
    assert bare_python in warning and "No module named" in warning
    assert f"Set PYSPARK_PYTHON={sys.executable} before the session starts" in warning
    expected = local_records(cerql.run(QUERY, {"stock": STOCK}))
    assert len(expected) == 2 and canonical_rows(spark_records(df)) == canonical_rows(expected)


def test_workers_without_cerql_fail_at_once_when_the_driver_cannot_take_over(
        spark, stock, bare_python, restore_python_exec, monkeypatch):
    """The driver's interpreter stood in by another path to the bare venv (python3 beside python),
    so neither passes; cer_sql raises before any Spark job, and the session is left as it was."""
    sc = restore_python_exec
    sc.pythonExec = bare_python
    driver = bare_python + "3"
    monkeypatch.setattr(workers, "driver_python", lambda: driver)
    jobs = len(sc.statusTracker().getJobIdsForGroup())

    with pytest.raises(ExecutionError) as raised:
        cerql.cer_sql(spark, QUERY, stock=stock)

    err = raised.value
    assert isinstance(err, CeqlError) and err.error_class == "WORKER_CANNOT_IMPORT_CERQL"
    assert f"{bare_python} cannot import cerql (ModuleNotFoundError: " in err.message
    assert f"nor can the driver's own {driver}" in err.message
    assert "set PYSPARK_PYTHON=" in err.hint and "before the session starts" in err.hint
    assert f"The driver's own {driver} cannot serve" in err.hint
    assert sc.pythonExec == bare_python
    assert len(sc.statusTracker().getJobIdsForGroup()) == jobs


def test_register_checks_the_workers_too(spark, bare_python, restore_python_exec, monkeypatch):
    """The SQL-cell function runs in Python workers as well: cerql.register fails at once, not at
    the first cell."""
    sc = restore_python_exec
    sc.pythonExec = bare_python
    monkeypatch.setattr(workers, "driver_python", lambda: bare_python + "3")
    with pytest.raises(ExecutionError) as raised:
        cerql.register(spark, "cerql_unchecked")
    assert raised.value.error_class == "WORKER_CANNOT_IMPORT_CERQL"


def test_cli_reports_workers_without_cerql_as_one_message(spark, tmp_path, bare_python, restore_python_exec,
                                                          monkeypatch, capsys):
    sc = restore_python_exec
    sc.pythonExec = bare_python
    monkeypatch.setattr(workers, "driver_python", lambda: bare_python)
    STOCK.to_csv(tmp_path / "stock.csv", index=False)

    code = main(["run", "-e", QUERY, "--table", f"stock={tmp_path / 'stock.csv'}"])

    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("cerql: [WORKER_CANNOT_IMPORT_CERQL] Spark's Python workers cannot run cerql")
    assert "Hint: " in err and "PYSPARK_PYTHON=" in err and "Traceback" not in err


def test_the_answer_is_kept_per_session_and_interpreter(spark, stock, monkeypatch):
    calls = []
    real = workers.probe
    monkeypatch.setattr(workers, "_answers", {})
    monkeypatch.setattr(workers, "probe", lambda *args: calls.append(args[0]) or real(*args))

    for _ in range(3):
        cerql.cer_sql(spark, QUERY, stock=stock)

    assert calls == [spark.sparkContext.pythonExec]


def test_probe_tells_why_an_interpreter_cannot_run_cerql(bare_python, tmp_path):
    version = "%d.%d" % sys.version_info[:2]
    env = dict(os.environ)

    assert workers.probe(sys.executable, env, os.getcwd(), version) is None
    missing = workers.probe(str(tmp_path / "no-python"), env, None, version)
    assert missing.error_class == "WORKER_CANNOT_IMPORT_CERQL" and "cannot be started" in missing.reason
    bare = workers.probe(bare_python, env, os.getcwd(), version)
    assert bare.error_class == "WORKER_CANNOT_IMPORT_CERQL" and "No module named" in bare.reason


def other_python() -> str | None:
    """An interpreter of another Python version on this machine, if any."""
    mine = "%d.%d" % sys.version_info[:2]
    for minor in range(8, 20):
        name = f"python3.{minor}"
        if f"3.{minor}" == mine:
            continue
        found = [p for p in [*glob.glob(os.path.expanduser(f"~/.pyenv/versions/3.{minor}*/bin/{name}")),
                             f"/usr/bin/{name}", f"/usr/local/bin/{name}"] if os.access(p, os.X_OK)]
        if found:
            return found[0]
    return None


def test_probe_rejects_another_python_version(tmp_path):
    python = other_python()
    if python is None:
        pytest.skip("no interpreter of another Python version here")
    version = "%d.%d" % sys.version_info[:2]

    unfit = workers.probe(python, dict(os.environ), os.getcwd(), version)

    assert unfit.error_class == "WORKER_PYTHON_MISMATCH"
    assert f"and the driver Python {version}" in unfit.reason
