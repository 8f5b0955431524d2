"""PARTITION BY / ORDER BY expressions in the local MATCH_RECOGNIZE engine: evaluated by
cerql.expr before partitioning and sorting, shown under their text as written
(docs/semantics.md, "MATCH_RECOGNIZE", "The local engine")."""

from __future__ import annotations

import pandas as pd
import pytest

import cerql

ROWS = pd.DataFrame({"sym": ["a", "A", "b", "a", "B"], "ts": [1, 2, 3, 4, 5], "price": [1.0, 2.0, 5.0, 3.0, 4.0]})


def test_expression_keys_partition_sort_and_name_the_columns():
    text = ("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY upper(sym) ORDER BY ts  *  -1 "
            "MEASURES count(*) AS n ALL ROWS PER MATCH PATTERN (A B*) DEFINE B AS price < PREV(price)) AS m")
    out = cerql.run(text, {"t": ROWS})
    assert list(out.columns) == ["upper(sym)", "ts * -1", "n", "sym", "ts", "price"]
    # partition A: ts 4, 2, 1 (descending ts), prices 3, 2, 1 all falling: one match of 3 rows
    # partition B: ts 5, 3, prices 4, 5: rising, two matches of 1 row
    assert out[["upper(sym)", "ts", "n"]].values.tolist() == [["A", 4, 1], ["A", 2, 2], ["A", 1, 3],
                                                               ["B", 5, 1], ["B", 3, 1]]


def test_a_parenthesized_column_is_a_column_and_unknown_columns_are_named():
    text = ("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY (sym) ORDER BY ts MEASURES count(*) AS n "
            "PATTERN (A+) DEFINE A AS price > 0) AS m")
    assert list(cerql.run(text, {"t": ROWS}).columns) == ["sym", "n"]
    with pytest.raises(cerql.CeqlError) as failure:
        cerql.run(text.replace("PARTITION BY (sym)", "PARTITION BY upper(nope)"), {"t": ROWS})
    assert failure.value.error_class == "UNKNOWN_COLUMN" and "nope" in str(failure.value)
