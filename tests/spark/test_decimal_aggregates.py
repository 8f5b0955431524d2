"""sum and avg of DECIMAL columns on Spark (``cer_sql``) equal ``cerql.run``'s, types and digits.

On Spark a SELECT aggregate is Spark SQL over the variable's events (planner/aggregates.py
``spark_sql``: ``aggregate`` in Spark's sum type, avg by long division), a FILTER aggregate is
the task's Python (exec/aggregate.py); the local engine computes both in Python. Decimals are
compared as exact values with their scale (``str``), next to the columns' Spark types.
"""

from __future__ import annotations

from decimal import Context
from decimal import Decimal as D

import pyarrow as pa
import pytest

import cerql
from tests.spark.compare import canonical_rows

SELECT = "SELECT sum(b.amount) AS total, avg(b.amount) AS mean, collect_list(b.ts) AS at FROM s "


def _frame(spark, table: pa.Table):
    """``table`` as one Spark partition with the same (decimal) types."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    schema = StructType([StructField(f.name, from_arrow_type(f.type), True) for f in table.schema])
    return spark.createDataFrame([tuple(r.values()) for r in table.to_pylist()], schema).coalesce(1)


def _stream(types: str, amounts, amount_type) -> pa.Table:
    kinds = types.split()
    return pa.table({"type": kinds, "ts": list(range(len(kinds))), "amount": pa.array(amounts, amount_type)})


def _exact(value, scale: int | None):
    """A decimal as text at its column's scale (Decimal('1.50') == Decimal('1.5'), the texts
    differ; pyspark may hand over a DECIMAL(38,38)'s 13E-38 as 1.30E-37)."""
    if not isinstance(value, D):
        return value
    at_scale = value.quantize(D(1).scaleb(-scale), context=Context(prec=100))
    assert at_scale == value, (value, scale)  # only the text changes
    return str(at_scale)


def _same(spark, query: str, table: pa.Table) -> list[dict]:
    local = cerql.run(query, {"s": table}, engine="local", output="arrow")
    on_spark = cerql.cer_sql(spark, query, s=_frame(spark, table))
    spark_types = dict(on_spark.dtypes)
    for field in local.schema:
        if pa.types.is_decimal(field.type):
            assert spark_types[field.name] == f"decimal({field.type.precision},{field.type.scale})", field.name
    scales = {f.name: f.type.scale for f in local.schema if pa.types.is_decimal(f.type)}
    want = [{k: _exact(v, scales.get(k)) for k, v in r.items()} for r in local.to_pylist()]
    got = [{k: _exact(v, scales.get(k)) for k, v in r.asDict(recursive=True).items()} for r in on_spark.collect()]
    for r in local.to_pylist():  # the local engine's values carry their type's scale themselves
        assert all(r[k] is None or str(r[k]) == _exact(r[k], scale) for k, scale in scales.items())
    assert canonical_rows(got) == canonical_rows(want)
    return want


@pytest.mark.parametrize("amount_type, amounts", [
    (pa.decimal128(10, 2), ["1.25", "2.50", "-0.01", "7"]),
    (pa.decimal128(38, 18), ["1.25", "0.000000000000000001", "-0.000000000000000003", "7"]),  # 18th digits
    (pa.decimal128(30, 0), ["2", "-3", "1", "7"]),
])
def test_select_sum_and_avg_equal_spark(spark, amount_type, amounts):
    a, b, c, d = (D(x) for x in amounts)
    rows = _same(spark, SELECT + "WHERE A AS a ; B+ AS b ORDER BY ts WITHIN 5 EVENTS",
                 _stream("A B B B B B", [None, a, None, b, c, d], amount_type))
    assert len(rows) == 31
    assert D(next(r["total"] for r in rows if r["at"] == [1, 2, 3, 4, 5])) == a + b + c + d


def test_a_decimal_sum_past_38_digits_fails_on_both_engines(spark):
    nines = D("9" * 36 + ".99")
    table = _stream("A B B", [None, nines, D("0.01")], pa.decimal128(38, 2))
    query = "SELECT sum(b.amount) AS total FROM s WHERE A AS a ; (B ; B) AS b ORDER BY ts"
    with pytest.raises(cerql.ExecutionError, match="ARITHMETIC_OVERFLOW"):
        cerql.run(query, {"s": table}, engine="local")
    with pytest.raises(Exception, match="NUMERIC_VALUE_OUT_OF_RANGE"):  # Spark's own error for its SQL
        cerql.cer_sql(spark, query, s=_frame(spark, table)).collect()


def test_avg_rounds_as_spark_near_38_digits(spark):
    # thirds and two-thirds at scale 38 and 22: long division, rounded half up
    for amount_type, amounts in ((pa.decimal128(36, 34), [D("0.2"), D("-0.1"), D("0")]),
                                 (pa.decimal128(38, 18), [D("-2"), D("0"), D("0"), D("1E-18")])):
        rows = _same(spark, "SELECT avg(b.amount) AS mean FROM s WHERE A AS a ; B+ AS b ORDER BY ts WITHIN 4 EVENTS",
                     _stream("A B B B", [None] + amounts[:3], amount_type))
        assert len(rows) == 7


def test_filter_aggregates_of_decimals_equal_spark(spark):
    table = _stream("A B B B", [D("2.00"), D("6.00"), D("4.50"), D("0.01")], pa.decimal128(10, 2))
    rows = _same(spark, SELECT + "WHERE A AS a ; B+ AS b FILTER sum(b.amount) > 10.5 ORDER BY ts", table)
    assert [r["total"] for r in rows] == ["10.51"]
    rows = _same(spark, SELECT + "WHERE A AS a ; B+ AS b FILTER avg(b.amount) > a.amount ORDER BY ts", table)
    assert sorted(r["mean"] for r in rows) == ["2.255000", "3.005000", "3.503333", "4.500000", "5.250000", "6.000000"]


def test_avg_breaks_a_tie_away_from_zero_as_spark(spark):
    # 1E-36 / 8 = 12.5E-38 at avg's scale 38: Spark gives 13E-38 (and -13E-38)
    query = "SELECT avg(b.amount) AS mean FROM s WHERE A AS a ; (B ; B ; B ; B ; B ; B ; B ; B) AS b ORDER BY ts"
    for one in (D("1E-36"), D("-1E-36")):
        rows = _same(spark, query, _stream("A" + " B" * 8, [None, one] + [D(0)] * 7, pa.decimal128(38, 36)))
        assert [D(r["mean"]) for r in rows] == [D("13E-38").copy_sign(one)]  # not 12E-38
