"""The Spark SQL a user wrote reaches Spark as written (cerql/parser/written.py).

sqlglot's printing of a tree is not always the expression that was written: it reads Spark's
doubled quote as two strings, rewrites date patterns through strftime, turns ``to_char`` into a
CAST and ``trunc(d, 'Q')`` into ``'QUARTER'``. These tests pin the text cerql sends to Spark
and the local engine's refusals; tests/spark/test_sql_as_written.py runs the same on Spark.
"""

from __future__ import annotations

import pandas as pd
import pytest
from sqlglot import exp

import cerql
from cerql.errors import ParseError, UnsupportedError
from cerql.parser import written
from cerql.parser.sqlexpr import parse_fragment
from cerql.spark.expressions import quoted
from cerql.spark.lower import spark_sql


def spark_text(fragment: str, qualify=None) -> str:
    """The Spark SQL cerql sends for ``fragment``, columns spelled ``<name>_``."""
    tree = parse_fragment(fragment, 0, fragment)
    return spark_sql(tree, fragment, lambda name: name + "_", qualify=qualify)


@pytest.mark.parametrize("text, escaped", [
    ("name = 'O''Brien'", "name = 'O\\'Brien'"),
    ("'a''''b'", "'a\\'\\'b'"),
    ("''''", "'\\''"),
    ('"a""b"', '"a\\"b"'),
    ("'a\\'b' = 'c''d'", "'a\\'b' = 'c\\'d'"),
    ("'a' 'b'", "'a' 'b'"),                 # adjacent strings stay two (Spark concatenates them)
    ("`a``b` = 'x'", "`a``b` = 'x'"),       # a doubled backtick is a backtick, not a quote
    ("r'a''b'", "r'a''b'"),                 # a raw string has no escapes
])
def test_doubled_quotes_become_escapes_of_the_same_length(text, escaped):
    assert written.escape_doubled_quotes(text) == escaped
    assert len(escaped) == len(text)


@pytest.mark.parametrize("fragment, literal", [
    ("name = 'O''Brien'", "O'Brien"),
    ("name = 'it''s ''quoted'''", "it's 'quoted'"),
    ('name = "a""b"', 'a"b'),
])
def test_a_doubled_quote_is_one_quote_inside_the_string(fragment, literal):
    tree = parse_fragment(fragment, 0, fragment)
    assert isinstance(tree.expression, exp.Literal) and tree.expression.this == literal


@pytest.mark.parametrize("fragment, sent", [
    ("name = 'O''Brien'", "`name_` = 'O\\'Brien'"),
    ("date_format(ts, 'yyyy''x''')", "date_format(`ts_`, 'yyyy\\'x\\'')"),
    ("date_format(ts, 'yyyy-MM-dd''T''HH:mm')", "date_format(`ts_`, 'yyyy-MM-dd\\'T\\'HH:mm')"),
    ("to_char(x, '999')", "to_char(`x_`, '999')"),
    ("date_format(ts, 'y')", "date_format(`ts_`, 'y')"),
    ("trunc(d, 'Q')", "trunc(`d_`, 'Q')"),
    ("log10(x) > 2", "log10(`x_`) > 2"),
    ("x  IN {1, 2}", "`x_`  IN (1, 2)"),
    ("x IN RANGE(1, 5)", "((`x_`) BETWEEN (1) AND (5))"),
    ("(x > 1) AND upper(name) LIKE 'A%'", "(`x_` > 1) AND upper(`name_`) LIKE 'A%'"),
    ("CASE WHEN x IS NULL THEN 'n''a' END = 'n''a'", "CASE WHEN `x_` IS NULL THEN 'n\\'a' END = 'n\\'a'"),
])
def test_spark_is_sent_the_text_as_written_with_columns_spelled(fragment, sent):
    assert spark_text(fragment) == sent


def test_a_qualified_column_is_spelled_with_its_variable_struct():
    assert spark_text("b.x > a.x + 1", qualify=lambda v: f"s_{v}") == "`s_b`.`x_` > `s_a`.`x_` + 1"


def test_aggregates_are_replaced_where_they_were_written():
    fragment = "avg(b.x) > a.x"
    tree = parse_fragment(fragment, 0, fragment)
    call = next(tree.find_all(exp.Avg))
    got = spark_sql(tree, fragment, lambda n: n, qualify=lambda v: v, replaced={id(call): "(AGG)"})
    assert got == "(AGG) > `a`.`x`"
    assert quoted("a`b") == "`a``b`"


def test_a_predicate_written_in_a_variables_brackets_keeps_its_qualifier_out():
    query = "SELECT * FROM s WHERE A AS a FILTER a[a.name = 'O''Brien' AND x > 1]"
    predicate = next(n for n in cerql.ast.walk(cerql.parse(query).pattern) if isinstance(n, cerql.ast.VarPredicate))
    assert spark_sql(predicate.predicate.tree, predicate.predicate.source, lambda n: n) == \
        "`name` = 'O\\'Brien' AND `x` > 1"


@pytest.mark.parametrize("left, right", [
    ("date_format(ts, 'y') = '1'", "date_format(ts, 'yyyy') = '1'"),
    ("to_char(x, '999') = '5'", "CAST(x AS STRING) = '5'"),
])
def test_expressions_sqlglot_prints_alike_keep_their_own_text(left, right):
    """The text is the key of a predicate's condition bit: two predicates that mean different
    things must not share one."""
    texts = {parse_fragment(f, 0, f).sql(dialect="spark") for f in (left, right)}
    query = f"SELECT * FROM s WHERE A AS a FILTER a[{left}] OR a[{right}]"
    keys = {n.predicate.text for n in cerql.ast.walk(cerql.parse(query).pattern)
            if isinstance(n, cerql.ast.VarPredicate)}
    assert len(texts) == 1  # sqlglot reads both the same
    assert len(keys) == 2


STREAM = pd.DataFrame({
    "type": ["A", "A", "B"],
    "name": ["O'Brien", "OBrien", "x"],
    "x": [5, 1, 2],
    "ts": pd.to_datetime(["2024-12-30 13:45:00", "2024-12-30 13:46:00", "2024-12-30 13:47:00"]),
})


@pytest.mark.parametrize("engine", ["local", "reference"])
def test_a_doubled_quote_matches_the_name_with_a_quote(engine):
    got = cerql.run("SELECT a FROM s WHERE A AS a FILTER a[name = 'O''Brien'] ORDER BY ts", {"s": STREAM},
                    engine=engine)
    assert [r["name"] for r in got["a"]] == ["O'Brien"]


@pytest.mark.parametrize("engine", ["local", "reference"])
@pytest.mark.parametrize("pattern, values", [
    ("yyyy''x''", ["2024x", "2024x"]),
    ("yyyy-MM-dd''T''HH:mm", ["2024-12-30T13:45", "2024-12-30T13:46"]),
    ("y", ["2024", "2024"]),
    ("''''yyyy", ["'2024", "'2024"]),
])
def test_date_format_reads_the_pattern_as_written(engine, pattern, values):
    got = cerql.run(f"SELECT date_format(a.ts, '{pattern}') AS f FROM s WHERE A AS a ORDER BY ts", {"s": STREAM},
                    engine=engine)
    assert list(got["f"]) == values


@pytest.mark.parametrize("item, name", [
    ("to_char(a.x, '999')", "to_char"),
    ("trunc(CAST(a.ts AS DATE), 'Q')", "trunc"),
    ("to_timestamp(a.name, 'yyyy')", "to_timestamp"),
])
def test_the_local_engine_refuses_functions_it_would_read_as_others(item, name):
    query = f"SELECT {item} AS f FROM s WHERE A AS a ORDER BY ts"
    with pytest.raises(UnsupportedError) as err:
        cerql.run(query, {"s": STREAM})
    assert err.value.error_class == "UNSUPPORTED_EXPRESSION"
    assert f"'{name}'" in err.value.message and "spark.cer_sql runs it" in err.value.message
    assert err.value.column == query.index(name) + 1


def test_a_cast_written_as_to_timestamp_of_one_argument_still_runs():
    """Spark reads ``to_timestamp(s)`` as ``CAST(s AS TIMESTAMP)``: ' 2024-01-02 ' is read, 'x'
    raises CAST_INVALID_INPUT (as Spark 4 does under ANSI)."""
    got = cerql.run("SELECT a FROM s WHERE A AS a FILTER a[to_timestamp(name) > TIMESTAMP '2024-01-01 12:00:00'] "
                    "ORDER BY ts", {"s": STREAM.assign(name=["2024-01-01", " 2024-01-02 ", "2024-01-03"])})
    assert [r["x"] for r in got["a"]] == [1]
    with pytest.raises(cerql.errors.ExecutionError) as err:
        cerql.run("SELECT a FROM s WHERE A AS a FILTER a[to_timestamp(name) IS NULL] ORDER BY ts",
                  {"s": STREAM.assign(name=["2024-01-01", "x", "x"])})
    assert err.value.error_class == "CAST_INVALID_INPUT"


def test_between_symmetric_is_refused_as_spark_refuses_it():
    query = "SELECT * FROM s WHERE A AS a FILTER a[x BETWEEN SYMMETRIC 3 AND 1] ORDER BY ts"
    with pytest.raises(ParseError) as err:
        cerql.run(query, {"s": STREAM})
    assert err.value.error_class == "INVALID_SQL_EXPRESSION"
    assert err.value.column == query.index("SYMMETRIC") + 1
