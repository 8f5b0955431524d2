"""Column types Arrow has and Spark has not, in the local engines (issue 38, item 6).

pandas and Arrow inputs are typed as Spark's ``createDataFrame`` reads them (a ``category`` as
its values, float16 as DOUBLE, date64 as DATE), and a PARTITION BY key both engines cannot
group and sort (an array, a map, a struct, an interval) is an UnsupportedError naming the
column, raised while the query is resolved, before any row is read. Each test is the issue's
reproduction; tests/spark/test_column_types_spark.py runs the same on Spark.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import cerql
from cerql.errors import UnsupportedError

PARTITIONED = "SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY [k] ORDER BY ts"
BASE = {"type": ["A", "B", "A", "B", "B"], "ts": [0, 1, 2, 3, 4]}


def pairs(out: pd.DataFrame) -> list[tuple]:
    """(key, a's ts, b's ts) of each result, sorted."""
    return sorted((row["k"], row["a"]["ts"], row["b"]["ts"]) for _, row in out.iterrows())


def test_category_partition_key_is_its_values(engine):
    """A pandas category key groups by its values, as Spark reads it (a string column); it was
    ArrowTypeError: Unsupported type for RecordBatch sorting."""
    frame = pd.DataFrame(dict(BASE, k=pd.Categorical(["x", "x", "y", "y", "x"])))
    out = cerql.run(PARTITIONED, {"s": frame}, engine=engine)
    assert pairs(out) == [("x", 0, 1), ("x", 0, 4), ("y", 2, 3)]
    assert pa.types.is_string(cerql.run(PARTITIONED, {"s": frame}, engine=engine, output="arrow")
                              .schema.field("k").type)


def test_category_of_numbers_with_nulls_is_its_values(engine):
    """A category of integers with a missing value: the NULL key takes part in no match."""
    frame = pd.DataFrame(dict(BASE, k=pd.Categorical([1, 1, None, 2, 2])))
    out = cerql.run(PARTITIONED, {"s": frame}, engine=engine)
    assert pairs(out) == [(1, 0, 1)]


def test_float16_partition_key_is_double(engine):
    """float16 is DOUBLE, as Spark's createDataFrame reads it (it was ArrowTypeError)."""
    frame = pd.DataFrame(dict(BASE, k=np.array([1.5, 1.5, 2, 2, 1.5], dtype=np.float16)))
    out = cerql.run(PARTITIONED, {"s": frame}, engine=engine, output="arrow")
    assert out.schema.field("k").type == pa.float64()
    assert pairs(out.to_pandas()) == [(1.5, 0, 1), (1.5, 0, 4), (2.0, 2, 3)]


@pytest.mark.parametrize("values", [
    pa.array([[1], [1], [2], [2], [1]]),
    pa.array([[("a", 1)], [("a", 1)], [("b", 2)], [("b", 2)], [("a", 1)]], pa.map_(pa.string(), pa.int64())),
    pa.array([{"a": 1}, {"a": 1}, {"a": 2}, {"a": 2}, {"a": 1}]),
    pa.array([(1, 0, 0)] * 5, pa.month_day_nano_interval()),
], ids=["list", "map", "struct", "interval"])
def test_nested_partition_key_is_refused_naming_the_column(engine, values):
    """A list, map, struct or interval key is UNSUPPORTED_PARTITION_KEY at the key's name (it
    was ArrowTypeError or ArrowNotImplementedError dictionary_encode); Spark refuses the same."""
    table = pa.table(dict(BASE, k=values))
    with pytest.raises(UnsupportedError) as err:
        cerql.run(PARTITIONED, {"s": table}, engine=engine)
    assert err.value.error_class == "UNSUPPORTED_PARTITION_KEY"
    assert "'k'" in err.value.message
    assert (err.value.line, err.value.column) == (1, PARTITIONED.index("[k]") + 2)
    assert "view over the source" in err.value.hint


def test_nested_column_that_is_not_a_key_still_runs(engine):
    """Only a key is refused: a struct column elsewhere is carried as before."""
    table = pa.table(dict(BASE, k=["x"] * 5, v=[{"a": i} for i in range(5)]))
    out = cerql.run(PARTITIONED, {"s": table}, engine=engine)
    assert len(out) == 5  # a at 0 with b at 1, 3, 4; a at 2 with b at 3, 4


def test_date64_in_a_filter_across_variables(engine):
    """A date64 column compares across variables as a DATE (it was ArrowNotImplementedError on
    the local engine; the reference answered)."""
    days = [dt.date(2020, 1, d) for d in (3, 2, 1, 4, 5)]
    table = pa.table({"type": BASE["type"], "ts": BASE["ts"], "d": pa.array(days, pa.date64())})
    query = "SELECT * FROM s WHERE A AS a ; B AS b FILTER b.d > a.d ORDER BY ts"
    out = cerql.run(query, {"s": table}, engine=engine)
    assert sorted((r["a"]["ts"], r["b"]["ts"]) for _, r in out.iterrows()) == [(0, 3), (0, 4), (2, 3), (2, 4)]
    assert cerql.run(query, {"s": table}, engine=engine, output="arrow").schema.field("a").type.field("d").type \
        == pa.date32()


@pytest.mark.parametrize("values", [
    pa.array([[1], [2], [3], [4], [5]]),
    pa.array([{"a": i} for i in range(5)]),
], ids=["list", "struct"])
def test_nested_order_column_is_refused_naming_the_column(engine, values):
    """ORDER BY such a column failed the same way (ArrowTypeError in sorting)."""
    query = "SELECT * FROM s WHERE A AS a ; B AS b ORDER BY k"
    with pytest.raises(UnsupportedError) as err:
        cerql.run(query, {"s": pa.table(dict(BASE, k=values))}, engine=engine)
    assert err.value.error_class == "UNSUPPORTED_ORDER_COLUMN"
    assert "'k'" in err.value.message and err.value.column == query.index("BY k") + 4


# --------------------------------------------------------------------------- function names
def test_backquoted_function_name_is_a_ceql_error(engine):
    """``SELECT `ab\\`(a.x)`` (item 6): the local engines refuse the call at its place with a
    CeqlError, as Spark does (tests/spark/test_column_types_spark.py)."""
    table = pa.table({"type": ["A", "B"], "ts": [0, 1], "x": [1, 2]})
    query = "SELECT `ab\\`(a.x) FROM s WHERE A AS a ; B AS b ORDER BY ts"
    with pytest.raises(UnsupportedError) as err:
        cerql.run(query, {"s": table}, engine=engine)
    assert err.value.error_class == "UNSUPPORTED_EXPRESSION"
    assert err.value.column == query.index("`ab") + 1
