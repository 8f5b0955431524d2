"""What the user wrote in Spark SQL reaches Spark as written, and the local engine gives Spark's
answer on that text or refuses (cerql/parser/written.py).

The oracle is Spark itself: ``spark.sql`` evaluates the same expression over the same rows,
without cerql. Before cerql sent the text as written, sqlglot's printing reached Spark instead:
``'O''Brien'`` became ``CONCAT('O', 'Brien')``, ``'yyyy''x'''`` lost its quoted text,
``to_char(x, '999')`` became a CAST; the engines agreed with each other and not with Spark.
"""

from __future__ import annotations

import datetime

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import cerql
from cerql.errors import ParseError, UnsupportedError

from tests.generators import derandomized

pytestmark = pytest.mark.spark

NAMES = ["O'Brien", "OBrien", "it's", "a''b", "ab", 'q"t', "O'Brien"]
STREAM = pd.DataFrame({
    "type": ["A", "A", "B", "A", "A", "B", "A"],
    "name": NAMES,
    "x": [5, 1, 2, 42, 7, 3, 123],
    "ts": pd.to_datetime(["2024-12-30 13:45:00", "2024-12-30 13:46:00", "2024-12-30 13:47:00",
                          "2025-01-02 08:05:09", "2025-03-31 23:59:59", "2025-04-01 00:00:00",
                          "2025-07-04 12:00:00"]),
})


@pytest.fixture(scope="module")
def stream(spark):
    frame = spark.createDataFrame(STREAM).coalesce(1)
    frame.createOrReplaceTempView("written_rows")
    return frame


def spark_values(spark, expression: str, where: str = "type = 'A'") -> list:
    """Spark's own value of ``expression`` on each row of the stream (in ts order)."""
    return [r[0] for r in spark.sql(f"SELECT {expression} FROM written_rows WHERE {where} ORDER BY ts").collect()]


def cerql_values(spark, stream, item: str) -> list:
    got = cerql.cer_sql(spark, f"SELECT {item} AS f FROM s WHERE A AS a ORDER BY ts", s=stream)
    return [r.f for r in got.orderBy("match_start").collect()]


# ---------------------------------------------------------------------------- the reproductions
def test_a_doubled_quote_matches_the_name_with_a_quote(spark, stream):
    query = "SELECT a FROM s WHERE A AS a FILTER a[name = 'O''Brien'] ORDER BY ts"
    on_spark = sorted(r.a.x for r in cerql.cer_sql(spark, query, s=stream).collect())
    local = sorted(r["x"] for r in cerql.run(query, {"s": STREAM})["a"])
    assert on_spark == local == [5, 123]


@pytest.mark.parametrize("item, first", [
    ("date_format(a.ts, 'yyyy''x''')", "2024x"),
    ("date_format(a.ts, 'yyyy-MM-dd''T''HH:mm')", "2024-12-30T13:45"),
    ("date_format(a.ts, 'y')", "2024"),
])
def test_date_format_patterns_as_written(spark, stream, item, first):
    on_spark = cerql_values(spark, stream, item)
    assert on_spark[0] == first
    assert on_spark == spark_values(spark, item.replace("a.", ""))
    assert list(cerql.run(f"SELECT {item} AS f FROM s WHERE A AS a ORDER BY ts", {"s": STREAM})["f"]) == on_spark


@pytest.mark.parametrize("item, first", [
    ("to_char(a.x, '999')", "  5"),
    ("trunc(CAST(a.ts AS DATE), 'Q')", None),  # Spark's trunc knows QUARTER, not Q: NULL
    ("trunc(CAST(a.ts AS DATE), 'QUARTER')", datetime.date(2024, 10, 1)),
])
def test_spark_only_functions_run_as_written_and_the_local_engine_refuses_them(spark, stream, item, first):
    on_spark = cerql_values(spark, stream, item)
    assert on_spark[0] == first
    assert on_spark == spark_values(spark, item.replace("a.", ""))
    with pytest.raises(UnsupportedError) as err:
        cerql.run(f"SELECT {item} AS f FROM s WHERE A AS a ORDER BY ts", {"s": STREAM})
    assert err.value.error_class == "UNSUPPORTED_EXPRESSION"


def test_a_spark_only_function_in_brackets_runs_as_written(spark, stream):
    query = "SELECT a FROM s WHERE A AS a FILTER a[to_char(x, '999') = '  5'] ORDER BY ts"
    assert [r.a.x for r in cerql.cer_sql(spark, query, s=stream).collect()] == [5]


def test_between_symmetric_is_refused_before_spark_runs(spark, stream):
    query = "SELECT a FROM s WHERE A AS a FILTER a[x BETWEEN SYMMETRIC 3 AND 1] ORDER BY ts"
    for run in (lambda: cerql.cer_sql(spark, query, s=stream), lambda: cerql.run(query, {"s": STREAM})):
        with pytest.raises(ParseError) as err:
            run()
        assert err.value.error_class == "INVALID_SQL_EXPRESSION"


def test_a_derived_column_is_computed_from_the_text_as_written(spark, stream):
    """``date_format(b.ts, 'y')`` in a FILTER across variables is a column Spark computes per
    row (planner/derived.py); two patterns sqlglot prints alike stay two columns."""
    query = ("SELECT a, b FROM s WHERE A AS a ; B AS b FILTER to_char(b.x, '9') = to_char(a.x, '9') "
             "OR date_format(b.ts, 'y''!''') = date_format(a.ts, 'yyyy') ORDER BY ts")
    got = sorted((r.a.x, r.b.x) for r in cerql.cer_sql(spark, query, s=stream).collect())
    # to_char(x, '9') of 5 and 1 is ' 5', ' 1'; B's x are 2, 3: never equal; 'y!' never equals 'yyyy'
    assert got == []
    query = query.replace("'y''!'''", "'y'")  # now equal years: 2024's A's and B, 2025's
    got = sorted((r.a.x, r.b.x) for r in cerql.cer_sql(spark, query, s=stream).collect())
    assert got == [(1, 2), (5, 2), (7, 3), (42, 3)]


# ---------------------------------------------------------------------------- random texts
def _string_literal(draw, quote: str) -> tuple[str, str]:
    """(SQL text, value) of a string literal whose quotes are doubled or escaped at random."""
    chars = draw(st.lists(st.sampled_from(["a", "b", "'", '"', " ", "T", "x"]), max_size=5))
    text = []
    for ch in chars:
        if ch == quote:
            text.append(draw(st.sampled_from([quote * 2, "\\" + quote])))
        else:
            text.append(ch)
    return quote + "".join(text) + quote, "".join(chars)


@st.composite
def predicates(draw) -> str:
    """A predicate over name, x and ts with quoted literals and date patterns in them."""
    literal, value = _string_literal(draw, draw(st.sampled_from(["'", '"'])))
    pattern, _ = _string_literal(draw, "'")
    fields = draw(st.lists(st.sampled_from(["y", "yyyy", "MM", "M", "dd", "d", "HH", "mm", "ss"]),
                           min_size=1, max_size=3))
    texts = draw(st.lists(st.sampled_from(["-", ":", " ", "''", "'T'", "'at'", "'''x'''"]),
                          min_size=len(fields), max_size=len(fields)))
    letters = [part for pair in zip(fields, texts) for part in pair]  # a field, then text: no 'yyyyyyyy'
    fmt = "'" + "".join(letters).replace("'", "''") + "'"
    name = draw(st.sampled_from(NAMES))
    quoted_name = "'" + name.replace("'", draw(st.sampled_from(["''", "\\'"]))) + "'"
    return draw(st.sampled_from([
        f"name = {literal}",
        f"name = {quoted_name}",
        f"name != {quoted_name} AND x > 1",
        f"concat(name, {literal}) = concat({quoted_name}, {literal})",
        f"length(concat(name, {pattern})) > 6",
        f"date_format(ts, {fmt}) = date_format(TIMESTAMP '2024-12-30 13:45:00', {fmt})",
        f"date_format(ts, {fmt}) > {literal}",
        f"to_char(x, '999') = '  5' OR name = {literal}",
        f"x IN {{1, 5}} AND name <> {literal}",
    ]))


@derandomized(30)
@given(predicates())
def test_random_quoted_literals_and_patterns_mean_what_spark_reads(spark, stream, predicate):
    """Each engine's matches of ``A AS a FILTER a[predicate]`` are the A rows Spark's own
    ``WHERE predicate`` keeps; the local engine may refuse (a function it does not run)."""
    spark_reads = predicate.replace("{", "(").replace("}", ")")
    want = sorted(r[0] for r in spark.sql(
        f"SELECT x FROM written_rows WHERE type = 'A' AND ({spark_reads})").collect())
    query = f"SELECT a FROM s WHERE A AS a FILTER a[{predicate}] ORDER BY ts"
    assert sorted(r.a.x for r in cerql.cer_sql(spark, query, s=stream).collect()) == want
    try:
        local = cerql.run(query, {"s": STREAM})
    except UnsupportedError as err:
        assert err.error_class == "UNSUPPORTED_EXPRESSION"
        return
    assert sorted(r["x"] for r in local["a"]) == want


@derandomized(15)
@given(predicates())
def test_random_select_items_mean_what_spark_reads(spark, stream, predicate):
    """The predicate as a SELECT item over the matched event: Spark's own value per row."""
    item = predicate.replace("name", "a.name").replace("(ts", "(a.ts").replace("x ", "a.x ").replace("(x,", "(a.x,")
    want = spark_values(spark, predicate.replace("{", "(").replace("}", ")"))
    assert cerql_values(spark, stream, item) == want
    try:
        local = cerql.run(f"SELECT {item} AS f FROM s WHERE A AS a ORDER BY ts", {"s": STREAM})
    except UnsupportedError as err:
        assert err.error_class == "UNSUPPORTED_EXPRESSION"
        return
    assert list(local["f"]) == want
