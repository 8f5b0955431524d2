"""PARTITION BY and ORDER BY key expressions (``[upper(name) AS sym]``, ``[to_timestamp(t)]``):
parsing, printing, errors, and the local engine's results against the same query over the key
precomputed as a column."""

from __future__ import annotations

import pandas as pd
import pytest

import cerql
from cerql import ast
from cerql.parser import parse
from cerql.parser.printer import to_ceql

STREAM = pd.DataFrame({
    "type": list("ABAB" * 3),
    "name": ["x", "X", "y", "Y", "x", "X", "y", "Y", "x", "y", "X", "Y"],
    "t": [f"2024-01-01 00:00:{i:02d}" for i in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 20)],
    "v": range(12),
})
# the same keys as plain columns, for the expected results
PLAIN = STREAM.assign(sym=STREAM["name"].str.upper(), ts=pd.to_datetime(STREAM["t"]).dt.tz_localize("UTC"),
                      w=STREAM["v"] * 2)


def test_a_bracket_item_that_is_not_a_name_is_a_key_expression():
    select = parse("SELECT * FROM s WHERE A PARTITION BY [upper(name) AS sym, v], [concat(name, ',')] "
                   "ORDER BY t, [v * 2] WITHIN 3 EVENTS")
    assert [k if isinstance(k, str) else (k.expr.text, k.name) for k in select.partition_by] == [
        ("UPPER(name)", "sym"), "v", ("CONCAT(name, ',')", "concat(name, ',')")]
    assert [k if isinstance(k, str) else (k.expr.text, k.name) for k in select.order_by] == ["t", ("v * 2", "v * 2")]
    assert parse(to_ceql(select)) == select  # the printer keeps each key's name as its alias


def test_plain_keys_parse_as_before():
    select = parse("SELECT * FROM s WHERE A PARTITION BY [name, `odd name`] ORDER BY ts, v")
    assert select.partition_by == ("name", "odd name") and select.order_by == ("ts", "v")
    assert not any(isinstance(k, ast.KeyExpr) for k in select.partition_by + select.order_by)


@pytest.mark.parametrize("keys,plain", [
    ("PARTITION BY [upper(name) AS sym] ORDER BY v WITHIN 2 EVENTS", "PARTITION BY sym ORDER BY v WITHIN 2 EVENTS"),
    ("PARTITION BY [upper(name) AS sym] ORDER BY [to_timestamp(t) AS ts] WITHIN 3 SECONDS",
     "PARTITION BY sym ORDER BY ts WITHIN 3 SECONDS"),
    ("PARTITION BY [upper(name) AS sym] ORDER BY [v * 2 AS w] WITHIN 4 [w]", "PARTITION BY sym ORDER BY w WITHIN 4 [w]"),
    ("ORDER BY [to_timestamp(t)] WITHIN 2 SECONDS", "ORDER BY ts WITHIN 2 SECONDS"),
])
def test_results_equal_those_over_the_key_as_a_column(keys, plain):
    select = "SELECT a.v AS av, b.v AS bv FROM s WHERE A AS a ; B AS b "
    got = cerql.run(select + keys, {"s": STREAM})
    want = cerql.run(select + plain, {"s": PLAIN})
    assert len(want) > 0
    assert list(got.columns) == list(want.columns)
    assert got.to_dict("records") == want.to_dict("records")  # match_id too: the same rows matched


def test_results_show_a_key_under_its_name_and_select_reads_it():
    got = cerql.run("SELECT sym, lower(sym) AS low, a.v FROM s WHERE A AS a ; B AS b "
                    "PARTITION BY [upper(name) AS sym] ORDER BY v WITHIN 2 EVENTS", {"s": STREAM})
    assert list(got.columns) == ["sym", "match_id", "match_start", "match_end", "low", "v"]  # as for a column key
    assert sorted(zip(got["low"], got["v"])) == [("x", 0), ("x", 4), ("y", 2), ("y", 6), ("y", 6)]
    unnamed = cerql.run("SELECT a.v FROM s WHERE A AS a ; B AS b PARTITION BY [upper(name)] ORDER BY v "
                        "WITHIN 2 EVENTS", {"s": STREAM})
    assert list(unnamed.columns)[0] == "upper(name)"  # as written, as Spark names such a column
    assert sorted(unnamed["upper(name)"]) == ["X", "X", "Y", "Y", "Y"]
    # the derived column never shows in a variable's struct
    star = cerql.run("SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY [upper(name) AS sym] ORDER BY v "
                     "WITHIN 2 EVENTS", {"s": STREAM})
    assert set(star["a"].iloc[0]) == {"type", "name", "t", "v"}


@pytest.mark.parametrize("keys,error_class,at", [
    ("PARTITION BY [max(name)]", "INVALID_KEY_EXPRESSION", "max"),
    ("PARTITION BY [a.name || 'x']", "INVALID_KEY_EXPRESSION", "a.name"),
    ("PARTITION BY [name, upper(name) AS name]", "KEY_NAME_CLASH", "upper"),
    ("PARTITION BY [upper(name) AS sym] ORDER BY v CONSUME BY ANY", "CONSUME_ANY_WITH_PARTITION", "CONSUME"),
    ("PARTITION BY [name FROM t]", "INVALID_SQL_EXPRESSION", "FROM t"),
    ("PARTITION BY [name,,v]", "EXPECTED_COLUMN", ",v"),
    ("PARTITION BY [java_method('java.lang.Math', 'abs', v)]", "UNSAFE_FUNCTION", "java_method"),
])
def test_bad_keys_are_errors_with_positions(keys, error_class, at):
    query = f"SELECT a FROM s WHERE A AS a ; B AS b {keys}"
    with pytest.raises(cerql.CeqlError) as err:
        cerql.run(query, {"s": STREAM})
    assert err.value.error_class == error_class, err.value
    assert err.value.column == query.index(at) + 1, err.value


def test_a_variable_named_like_a_key_clashes():
    with pytest.raises(cerql.CeqlError) as err:
        cerql.run("SELECT sym FROM s WHERE A AS sym ; B PARTITION BY [upper(name) AS sym] ORDER BY v", {"s": STREAM})
    assert err.value.error_class == "OUTPUT_NAME_CLASH"


def test_a_key_only_spark_runs_is_refused_locally_naming_spark():
    with pytest.raises(cerql.UnsupportedError) as err:
        cerql.run("SELECT a FROM s WHERE A AS a ; B AS b PARTITION BY [soundex(name)] ORDER BY v", {"s": STREAM})
    assert "cer_sql" in str(err.value)
