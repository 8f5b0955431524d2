"""PARTITION BY and ORDER BY key expressions on Spark: Spark derives the key columns before the
shuffle, results show them under the key's name, and the answer equals the local engine's
(or, for a function only Spark runs, the local engine's over the key precomputed in pandas)."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

import cerql
from cerql.errors import AnalysisError

from tests.spark.compare import canonical_rows, local_records, spark_records

pytestmark = pytest.mark.spark


def _stream(n: int = 200, seed: int = 11) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    name = rng.choice(["msft", "MSFT", "intc", "Intc", "amzn"], n).astype(object)
    name[rng.random(n) < 0.05] = None  # a NULL key takes part in no match
    return pd.DataFrame({
        "type": rng.choice(["SELL", "BUY"], n, p=[0.4, 0.6]),
        "name": name,
        "price": np.round(rng.uniform(10, 20, n), 1),
        "t": [f"2024-03-01 09:{i // 60:02d}:{i % 60:02d}" for i in range(n)],
        "v": np.arange(n),
    })


STREAM = _stream()

QUERIES = [
    "SELECT s, b FROM st WHERE SELL AS s ; BUY+ AS b PARTITION BY [upper(name) AS sym] ORDER BY v WITHIN 4 EVENTS",
    "SELECT sym, s.price AS p, count(b) AS n FROM st WHERE SELL AS s ; BUY+ AS b FILTER b[price > 15] "
    "PARTITION BY [upper(name) AS sym] ORDER BY [to_timestamp(t) AS ts] WITHIN 20 SECONDS",
    "SELECT s, b FROM st WHERE SELL AS s : BUY AS b PARTITION BY [upper(name)], [price > 15 AS high] "
    "ORDER BY [v * 3 AS w] WITHIN 9 [w]",
]


@pytest.fixture(scope="module")
def frame(spark):
    return spark.createDataFrame(STREAM)


@pytest.mark.parametrize("query", QUERIES)
def test_spark_equals_the_local_engine(spark, frame, query):
    got = cerql.cer_sql(spark, query, st=frame)
    want = cerql.run(query, {"st": STREAM})
    assert len(want) > 0
    assert list(got.columns) == list(want.columns)
    assert canonical_rows(spark_records(got), drop=()) == canonical_rows(local_records(want), drop=())


def test_a_key_only_spark_runs_equals_the_key_precomputed(spark, frame):
    """md5 has no local implementation: Spark computes the key; the local engine gets the same
    key as a column from pandas."""
    query = ("SELECT h, s.v AS sv, b.v AS bv FROM st WHERE SELL AS s ; BUY AS b PARTITION BY [{}] "
             "ORDER BY v WITHIN 5 EVENTS")
    got = cerql.cer_sql(spark, query.format("md5(upper(name)) AS h"), st=frame)
    digest = STREAM["name"].map(lambda n: None if n is None else hashlib.md5(n.upper().encode()).hexdigest())
    want = cerql.run(query.format("h"), {"st": STREAM.assign(h=digest)})
    assert len(want) > 0
    assert canonical_rows(spark_records(got)) == canonical_rows(local_records(want))
    with pytest.raises(cerql.UnsupportedError, match="cer_sql"):
        cerql.run(query.format("md5(upper(name)) AS h"), {"st": STREAM})


def test_a_wrong_key_type_is_spark_analyzers_error_with_position(spark, frame):
    query = "SELECT s FROM st WHERE SELL AS s ; BUY PARTITION BY [hour(price) AS h] ORDER BY v"
    with pytest.raises(AnalysisError) as err:
        cerql.cer_sql(spark, query, st=frame)
    assert err.value.error_class.startswith("DATATYPE_MISMATCH")
    assert err.value.column == query.index("hour") + 1
