"""exec/spark_keys.py: struct, array and float keys grouped and ordered as Spark does, in the
tasks' cuts (exec/task.py ``key_changes``, ``same_key``) and in a group matched batch by batch
(ONE ROW PER MATCH shows the keys of the group's first row, as the JVM's matcher does). The
orders below are Spark 4's, as its ORDER BY printed them; tests/spark/test_mr_nested_keys_spark.py
checks the engines against Spark itself."""

from __future__ import annotations

import math
import struct

import numpy as np
import pyarrow as pa

from cerql.exec import mr_engine, spark_keys
from cerql.exec.mr_incremental import GroupMatcher, local_bits
from cerql.exec.task import key_changes, same_key
from cerql.planner.mr_analyze import compiled
from tests.exec.mr_support import clause

OTHER_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000001))[0]


def _spark_order(values: list) -> list:
    """``values`` sorted by ``order_key``, ties kept in place."""
    return sorted(values, key=spark_keys.order_key)


def test_structs_sort_field_by_field_nulls_first_nan_last():
    ordered = [None, {"a": None, "b": 1}, {"a": -0.0, "b": 1}, {"a": 0.0, "b": 1}, {"a": 0.0, "b": 2},
               {"a": math.nan, "b": 1}]
    assert _spark_order(ordered[::-1]) == [ordered[0], ordered[1], ordered[3], ordered[2], ordered[4], ordered[5]]
    assert spark_keys.order_key(ordered[2]) == spark_keys.order_key(ordered[3])  # -0.0 ties with 0.0


def test_arrays_sort_element_by_element_then_shorter_first():
    ordered = [None, [], [None], [-0.0, 1.0], [1.0], [1.0, None], [math.nan]]
    assert _spark_order(list(reversed(ordered))) == ordered
    assert spark_keys.order_key([math.nan]) == spark_keys.order_key([OTHER_NAN])


def test_key_changes_and_same_key_compare_nested_keys_as_spark_groups():
    k = pa.array([{"a": -0.0}, {"a": 0.0}, {"a": math.nan}, {"a": OTHER_NAN}, None, None, {"a": None}, {"a": None}])
    arr = pa.array([[-0.0], [0.0], [math.nan], [OTHER_NAN], None, None, [], []])
    for column in (k, arr):
        table = pa.table({"k": column})
        assert key_changes(table, ["k"]).tolist() == [False, False, True, False, True, False, True, False]
        rows = column.to_pylist()
        assert same_key((rows[0],), (rows[1],)) and same_key((rows[2],), (rows[3],))
        assert same_key((rows[4],), (rows[5],)) and not same_key((rows[5],), (rows[6],))


def test_float_keys_group_minus_zero_with_zero_and_every_nan():
    table = pa.table({"d": pa.array([-0.0, 0.0, math.nan, OTHER_NAN, None, 1.0])})
    assert mr_engine.partition_ids(table, ["d"]).tolist() == [0, 0, 1, 1, 2, 3]


def test_a_group_fed_in_batches_shows_its_first_rows_keys():
    """The group's first row (-0.0) has left the rows held when the last match is reported."""
    c, text = clause("A B+", {"B": "x < PREV(x)"}, {"n": "COUNT(*)"}, partition_by=("k",))
    analysis, nfa, skip = compiled(c, text)
    matcher = mr_engine.matcher_for(c, text, nfa, skip, analysis.row_local)
    n = 12
    k = pa.array([{"a": -0.0}] + [{"a": 0.0}] * (n - 1))
    x = [3, 1, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12]
    table = pa.table({"k": k, "row": pa.array(np.arange(n)), "x": pa.array(x)})
    group = GroupMatcher(c, text, matcher, bits=local_bits(c, text, matcher), min_run=1)
    out = []
    for lo in range(0, n, 2):
        out += list(group.feed(table.slice(lo, 2)))
    out += list(group.finish())
    rows = [r for t in out for r in t.to_pylist()]
    assert len(rows) == 6 and group.runs > 1
    assert [repr(r["k"]) for r in rows] == ["{'a': -0.0}"] * 6

