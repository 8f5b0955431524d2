"""The query around a MATCH_RECOGNIZE item, GROUP BY, HAVING, DISTINCT and aggregates included,
gives Spark's answer without Spark (exec/mr_outer.py, exec/mr_outer_groups.py): each query below
runs with ``cerql.cer_sql`` (the outer query is Spark SQL over the item's rows) and with
``cerql.run``, and the two results have the same column names, the same Spark types and the same
rows (in order when ORDER BY orders every row, else as multisets; NaN equal to NaN, -0.0 told
from 0.0).

The input: ticks of four symbols (one of them NULL), prices with NaN and -0.0, integer and decimal
columns. Sums are of values whose sums are exact in binary, so that Spark's order of adding
(partition by partition) cannot change a DOUBLE's last bits.
"""

from __future__ import annotations

import math
from collections import Counter
from decimal import Decimal

import pyarrow as pa
import pytest

import cerql

pytestmark = pytest.mark.spark

_SYMS = ["x", "y", None, "z"]
_PRICES = [10.0, 9.5, 9.0, 11.0, -0.0, 0.0, 12.5, 8.25, float("nan"), 7.0, 6.5, 13.0, 0.0, -0.0, 5.5, 4.0]


def _table() -> pa.Table:
    rows = 64
    return pa.table({
        "sym": pa.array([_SYMS[(i // 3) % 4] for i in range(rows)]),
        "ts": pa.array(range(rows), pa.int64()),
        "price": pa.array([_PRICES[(i * 7) % len(_PRICES)] for i in range(rows)], pa.float64()),
        "qty": pa.array([None if i % 11 == 5 else (i * 5) % 9 for i in range(rows)], pa.int32()),
        "amt": pa.array([Decimal((i * 37) % 500 - 120) / 100 for i in range(rows)], pa.decimal128(7, 2)),
    })


ITEM = ("t MATCH_RECOGNIZE (PARTITION BY sym ORDER BY ts MEASURES MATCH_NUMBER() AS mno, A.price AS start, "
        "LAST(B.price) AS bottom, A.price - LAST(B.price) AS fall, count(B.*) AS n, sum(B.qty) AS q, "
        "sum(B.amt) AS total, A.qty AS qty0, CLASSIFIER() AS cls "
        "ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A B+) "
        "DEFINE B AS B.price < PREV(B.price) OR B.qty > 6) AS m")
ALL_ROWS = ("t MATCH_RECOGNIZE (PARTITION BY sym ORDER BY ts MEASURES MATCH_NUMBER() AS mno, CLASSIFIER() AS cls "
            "ALL ROWS PER MATCH WITH UNMATCHED ROWS PATTERN (A B+) DEFINE B AS B.price < PREV(B.price))")

# (outer query with {item}, whether its ORDER BY orders every row)
QUERIES = [
    ("SELECT sym, count(*) AS n, avg(fall) AS avg_fall FROM {item} GROUP BY sym HAVING count(*) > 2 "
     "ORDER BY n DESC, sym", True),
    ("SELECT DISTINCT sym FROM {item}", False),
    ("SELECT DISTINCT sym, n FROM {item} ORDER BY 1, 2", True),
    ("SELECT sym, count(*), count(DISTINCT n), sum(n), max(fall), min(m.start), avg(q) FROM {item} GROUP BY sym",
     False),
    ("SELECT count(*) AS c, sum(n) AS s, avg(fall) AS a, max(sym) AS m, sum(total) AS st, avg(total) AS at, "
     "stddev(q) AS sd, count_if(n > 1) AS ci FROM {item} WHERE n > 100", False),
    ("SELECT sym, count(*) AS c FROM {item} WHERE n > 100 GROUP BY sym", False),
    ("SELECT sym AS s, count(*) AS c, sum(q) AS sq, sum(total) AS st, avg(total) AS at FROM {item} GROUP BY 1 "
     "ORDER BY s NULLS LAST", True),
    ("SELECT sym AS s, max(n) AS longest FROM {item} GROUP BY s ORDER BY longest DESC, s", True),
    ("SELECT sym, n, count(*) AS c FROM {item} GROUP BY ALL ORDER BY sym, n", True),
    ("SELECT start, count(*) AS c FROM {item} GROUP BY start", False),
    ("SELECT DISTINCT start FROM {item}", False),
    ("SELECT bottom, count(*) AS c, sum(bottom) AS s FROM {item} GROUP BY bottom", False),
    ("SELECT DISTINCT bottom AS b FROM {item} ORDER BY b DESC NULLS FIRST", True),
    ("SELECT (n % 2) * 10 AS parity, count(*) AS c, sum(DISTINCT n) AS sd, count(DISTINCT start) AS cd "
     "FROM {item} GROUP BY n % 2 ORDER BY parity", True),
    ("SELECT sym, sum(q) FILTER (WHERE n > 1) AS f, median(fall) AS med, percentile(q, 0.25) AS p, "
     "bool_or(n > 2) AS b, bit_xor(qty0) AS bx, var_pop(q) AS vp, try_sum(total) AS ts, regr_count(q, n) AS rc "
     "FROM {item} GROUP BY sym", False),
    ("SELECT count(*) AS n FROM {item} GROUP BY sym HAVING n > 2 ORDER BY n", True),
    ("SELECT sym, count(*) AS c FROM {item} GROUP BY sym HAVING max(fall) > 1 AND sym IS NOT NULL ORDER BY 2, 1",
     True),
    ("SELECT cls, sym, count(*) AS c FROM " + ALL_ROWS + " GROUP BY cls, sym ORDER BY cls NULLS FIRST, sym", True),
    ("SELECT count(*), count(cls), count(DISTINCT mno) FROM " + ALL_ROWS, False),
    ("SELECT mno, count(*) AS c FROM " + ALL_ROWS + " WHERE mno IS NOT NULL GROUP BY sym, mno ORDER BY c DESC, mno "
     "LIMIT 3", False),  # ties in c and mno across symbols: compared as multisets of what both keep
    ("SELECT sym, 1.5 AS k, sum(1.5) AS s, avg(1.5) AS a, min(-2.50) AS m FROM {item} GROUP BY sym", False),
    ("SELECT (0.25) AS k, n FROM {item}", False),  # a bare decimal literal is a DECIMAL, as Spark types it
]


def _canonical(value):
    if isinstance(value, float):
        return ("NaN",) if math.isnan(value) else (value, math.copysign(1.0, value))
    if isinstance(value, list):
        return tuple(_canonical(v) for v in value)
    return value


@pytest.fixture(scope="module")
def ticks(spark):
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    table = _table()
    schema = StructType([StructField(f.name, from_arrow_type(f.type), True) for f in table.schema])
    frame = spark.createDataFrame([tuple(r.values()) for r in table.to_pylist()], schema).repartition(3)
    return table, frame


@pytest.mark.parametrize("outer, ordered", QUERIES)
def test_outer_query_equals_sparks(ticks, outer, ordered):
    from cerql.spark.lower import spark_type

    table, frame = ticks
    query = outer.format(item=ITEM)
    ours = cerql.run(query, {"t": table}, output="arrow")
    df = cerql.cer_sql(frame.sparkSession, query, t=frame)
    assert ours.column_names == df.columns
    assert [spark_type(t) for t in ours.schema.types] == [f.dataType for f in df.schema.fields]
    got = [tuple(_canonical(v) for v in row.values()) for row in ours.to_pylist()]
    want = [tuple(_canonical(v) for v in row) for row in df.collect()]
    if "LIMIT" in outer:  # ties: LIMIT keeps some of the tied rows; both keep as many
        assert len(got) == len(want)
        return
    assert got == want if ordered else Counter(got) == Counter(want), (got, want)
    assert len(got) > 0 or "n > 100" in outer


def test_the_item_has_what_the_queries_group(ticks):
    """The groups the queries above form: NULL symbols, NaN among the starts, -0.0 and 0.0 among
    the bottoms."""
    table, _ = ticks
    rows = cerql.run(f"SELECT start, bottom, sym FROM {ITEM}", {"t": table}, output="arrow").to_pylist()
    assert any(r["sym"] is None for r in rows) and any(r["start"] != r["start"] for r in rows)
    assert {math.copysign(1.0, r["bottom"]) for r in rows if r["bottom"] == 0.0} == {1.0, -1.0}


@pytest.mark.parametrize("outer", [
    "SELECT m.sym, i.name FROM {item} JOIN names i ON i.sym = m.sym",
    "SELECT bottom, min(bottom) FROM {item} GROUP BY bottom",  # -0.0 and 0.0: Spark keeps the first it reads
    "SELECT sym, count(*) FROM {item} GROUP BY ROLLUP(sym)",
    "SELECT sym, collect_list(n) FROM {item} GROUP BY sym",
    "SELECT sym, n, rank() OVER (PARTITION BY sym ORDER BY n) AS r FROM {item}",
])
def test_what_the_local_engine_refuses_spark_runs(outer):
    with pytest.raises(cerql.CeqlError) as err:
        cerql.run(outer.format(item=ITEM), {"t": _table()})
    assert err.value.error_class == "LOCAL_OUTER_QUERY" and "spark.cer_sql" in err.value.hint


# Unaliased SELECT items of the query around the item: the local engine names each column as
# Spark does (exec/spark_names.py), a plain SELECT list and an aggregate one alike.
UNALIASED_SCALAR = [
    "N", "m.sym", "M.Start", "`n`", "mno", "cls", "1", "1.5", "-1.5", "1.50", "'a'", "NULL", "TRUE", "false",
    "DATE '2020-01-01'", "n + 1", "(n + 1) * 2", "n % 2", "mod(n, 2)", "n - 1", "n / 2", "n div 2", "-n",
    "-(n + 1)", "1 + 2", "start + fall", "total * 2", "m.n + m.q",
    "n > 1", "n >= 1", "n = 1", "n == 1", "n <> 1", "n != 1", "n <=> 1", "n IS DISTINCT FROM 1",
    "NOT n > 1", "n > 1 AND n < 5 AND q < 6", "n > 1 OR sym IS NULL", "sym IS NULL", "sym IS NOT NULL",
    "n IN (1, 2)", "n NOT IN (1, 2)", "sym IN ('x', 'y')", "n BETWEEN 1 AND 3", "n NOT BETWEEN 1 AND 3",
    "sym LIKE 'x%'", "sym NOT LIKE 'x%'", "sym || 'b'", "concat(sym, 'b')", "coalesce(sym, 'z')",
    "COALESCE(q, 0)", "nvl(sym, 'z')", "ifnull(sym, 'z')", "if(n > 1, 1, 0)",
    "CASE WHEN n > 1 THEN 'a' ELSE 'b' END", "CASE WHEN n > 1 THEN 1 END", "CASE n WHEN 1 THEN 'a' ELSE 'b' END",
    "CAST(n AS STRING)", "CAST(total AS DECIMAL(10,1))", "try_cast(n AS INT)", "abs(fall)", "ABS(fall)",
    "round(fall, 1)", "round(fall)", "upper(sym)", "ucase(sym)", "lower(cls)", "length(sym)", "nullif(n, 1)",
    "greatest(n, q)", "least(n, q)",
]
UNALIASED_AGGREGATE = [
    "count(*)", "count(1)", "COUNT(NULL)", "count(n)", "COUNT(n)", "count(DISTINCT sym)", "sum(1)", "sum(n)",
    "SUM(DISTINCT n)", "sum(1.5)", "avg(n)", "min(n > 1)", "max(m.sym)", "stddev(q)", "std(q)",
    "stddev_samp(q)", "stddev_pop(q)", "variance(q)", "var_samp(q)", "var_pop(q)", "median(fall)",
    "percentile(q, 0.25)", "bool_or(n > 2)", "bool_and(n > 2)", "every(n > 2)", "some(n > 2)", "bit_xor(qty0)",
    "bit_and(qty0)", "bit_or(qty0)", "try_sum(total)", "try_avg(total)", "regr_count(q, n)", "count_if(n > 1)",
    "count(1) FILTER (WHERE n > 1)", "sum(q) FILTER (WHERE n > 1)", "count(DISTINCT n) FILTER (WHERE n > 1)",
    "sum(n) + 1", "count(*) * 2", "max(n) - min(n)", "corr(q, n)", "covar_pop(q, n)", "covar_samp(q, n)",
    "skewness(q)", "kurtosis(q)", "sym", "upper(sym)", "max(fall) > 1", "coalesce(sum(q), 0)",
]


@pytest.mark.parametrize("outer", [f"SELECT {e} FROM {{item}}" for e in UNALIASED_SCALAR]
                         + [f"SELECT {e} FROM {{item}} GROUP BY sym" for e in UNALIASED_AGGREGATE])
def test_unaliased_items_are_named_as_spark_names_them(ticks, outer):
    table, frame = ticks
    query = outer.format(item=ITEM)
    ours = cerql.run(query, {"t": table}, output="arrow")
    assert ours.column_names == cerql.cer_sql(frame.sparkSession, query, t=frame).columns
