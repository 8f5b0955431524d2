"""Aggregates of expressions over one variable (``sum(b.price * b.volume)``): the expression is
a column derived per row (planner/derived.py), computed by the local engine with Spark's
semantics, so SELECT and FILTER aggregate it as they aggregate a column."""

from __future__ import annotations

import pandas as pd
import pytest

import cerql
from cerql.errors import AnalysisError, UnsupportedError

S = pd.DataFrame({"type": list("ABBB"), "ts": [0, 1, 2, 3], "price": [1.0, 2.0, 3.0, 4.0],
                  "volume": [10, 20, 30, 40]})


def test_select_and_filter_aggregate_an_expression(engine):
    query = ("SELECT sum(b.price * b.volume) AS notional, max(b.volume div 10) AS m, count(b) AS n "
             "FROM s WHERE A AS a ; B+ AS b FILTER sum(b.price * b.volume) > 100 ORDER BY ts")
    out = cerql.run(query, {"s": S}, engine=engine)
    got = sorted(zip(out["notional"], out["m"], out["n"]))
    # subsets of the B's (2x20, 3x30, 4x40 = 40, 90, 160) whose notional is above 100
    assert got == [(130.0, 3, 2), (160.0, 4, 1), (200.0, 4, 2), (250.0, 4, 2), (290.0, 4, 3)]
    assert list(out.columns[-3:]) == ["notional", "m", "n"]


def test_the_derived_column_is_not_shown():
    out = cerql.run("SELECT b, sum(b.price + 1) AS p FROM s WHERE A ; B+ AS b ORDER BY ts", {"s": S})
    assert sorted(out["b"].iloc[0][0]) == sorted(S.columns)


@pytest.mark.parametrize("query,error,error_class", [
    ("SELECT sum(b.price * a.price) AS x FROM s WHERE A AS a ; B+ AS b ORDER BY ts", AnalysisError,
     "AGGREGATE_ARGUMENT"),
    ("SELECT sum(rand() * b.price) AS x FROM s WHERE A AS a ; B+ AS b ORDER BY ts", UnsupportedError,
     "NONDETERMINISTIC_FUNCTION"),
    ("SELECT sum(soundex(b.type)) AS x FROM s WHERE A AS a ; B+ AS b ORDER BY ts", UnsupportedError,
     "UNSUPPORTED_EXPRESSION"),
    ("SELECT sum(b.nope * 2) AS x FROM s WHERE A AS a ; B+ AS b ORDER BY ts", AnalysisError, "UNKNOWN_COLUMN"),  # named
])
def test_refused(query, error, error_class):
    with pytest.raises(error) as err:
        cerql.run(query, {"s": S})
    assert err.value.error_class == error_class
    assert "__cerql" not in str(err.value)  # the derived column is never named
