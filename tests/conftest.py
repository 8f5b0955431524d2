"""The fixtures of the test suite, defined once: ``engine`` (each engine that runs without Spark)
and the one Spark session of the process (``spark``, and ``connect`` on it; ``make test`` runs
two pytest workers, each with its own). Plain helpers live in
tests/support.py, tests/generators.py, tests/differential.py and tests/spark/compare.py.
"""

from __future__ import annotations

import pytest

from tests.support import ENGINES, spy


@pytest.fixture(params=ENGINES)
def engine(request):
    """Each engine that runs without Spark, the reference evaluator first."""
    return request.param


# ---------------------------------------------------------------------------- Spark
def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def spark():
    """The one classic SparkSession of the run: local[2], UI off, 4 shuffle partitions. It also
    serves Spark Connect (see ``connect``), since a process holds one Spark driver."""
    import os
    import sys

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    port = _free_port()
    session = (
        SparkSession.builder.master("local[2]").appName("cerql-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
        .config("spark.connect.grpc.binding.port", str(port))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    session._cerql_connect_port = port
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect(spark):
    """A Spark Connect client session talking to the test driver."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    session = ConnectSession.builder.remote(f"sc://localhost:{spark._cerql_connect_port}").getOrCreate()
    yield session
    session.stop()


@pytest.fixture
def seen(monkeypatch):
    """Every Planned the front door (cerql/planner/front.py) gives while the test runs, in order."""
    from cerql.planner import front

    return spy(monkeypatch, front, "plan")
