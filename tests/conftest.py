"""Shared helpers for the test suite.

``results(df, *vars)`` turns a result DataFrame into the sets D of DESIGN.md section 9
(positions are the ``ts`` values of the matched events), so tests compare exact match sets.
"""

from __future__ import annotations

import pandas as pd
import pytest

import cerql


def typed_stream(spec: str, **columns) -> pd.DataFrame:
    """``"A B A"`` -> rows of types A, B, A with ts = position (0, 1, 2) and extra columns."""
    types = spec.split()
    data = {"type": types, "ts": list(range(len(types)))}
    data.update({k: list(v) for k, v in columns.items()})
    return pd.DataFrame(data)


def positions(value) -> list[int]:
    if value is None:
        return []
    events = value if isinstance(value, list) else [value]
    return [e["ts"] for e in events]


def match_sets(df: pd.DataFrame, columns=None) -> list[tuple[int, ...]]:
    """Sorted list of D (the union of selected positions) per result row."""
    columns = columns or [c for c in df.columns if c not in ("match_id", "match_start", "match_end")]
    out = []
    for _, row in df.iterrows():
        d = set()
        for c in columns:
            d.update(positions(row[c]))
        out.append(tuple(sorted(d)))
    return sorted(out)


@pytest.fixture
def run_on():
    """``run_on("A B A B", "SELECT * FROM s WHERE ...")`` -> result DataFrame (reference engine)."""

    def _run(spec: str, query: str, engine: str = "reference", **columns) -> pd.DataFrame:
        return cerql.run(query, {"s": typed_stream(spec, **columns)}, engine=engine)

    return _run


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
