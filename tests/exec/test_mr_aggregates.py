"""Spark's aggregates over a variable's rows in MATCH_RECOGNIZE beyond count/sum/avg/min/max
(exec/mr_folds.py), and PREV/NEXT inside an aggregate's argument: hand-checked values on the
local engine and the reference evaluator, in MEASURES (ONE ROW and ALL ROWS PER MATCH, RUNNING
and FINAL, SUBSETs, the universal variable, no rows) and in history-dependent DEFINEs; the
refused aggregates with their hints. tests/spark/test_mr_aggregates_spark.py checks the same
aggregates against Spark's own."""

from __future__ import annotations

import math
from decimal import Decimal

import pyarrow as pa
import pytest

import cerql
from cerql.errors import CeqlError

# rows 1..8: A = row 1, B = the falling rows (2, 3), then a second match from row 5 (B = 6, 7)
T = pa.table({
    "row": pa.array(range(1, 9), pa.int64()),
    "value": pa.array([90, 80, 70, 80, 90, 50, 40, 60], pa.int64()),
    "ok": pa.array([True, None, False, True, True, None, True, False]),
    "y": pa.array([3, 1, 1, 5, 2, 7, 7, None], pa.int64()),
    "amt": pa.array([Decimal("1.10"), Decimal("2.20"), Decimal("2.20"), None, Decimal("0.05"),
                     Decimal("1.00"), None, Decimal("3.00")], pa.decimal128(5, 2)),
    "f": pa.array([0.0, -0.0, float("nan"), 1.5, float("nan"), 2.0, 2.0, -1.0], pa.float64()),
    "s": pa.array(["a", "b", "c", "d", "e", "f", "g", "h"]),
})


def _array(t: pa.DataType) -> pa.DataType:
    """Spark's type of collect_list: ARRAY<t> whose elements are never NULL."""
    return pa.list_(pa.field("item", t, nullable=False))


def _query(measures: str, rows: str = "ONE ROW PER MATCH", define: str = "B AS B.value < PREV(B.value)",
           pattern: str = "A B+", subset: str = "") -> str:
    return (f"SELECT * FROM t MATCH_RECOGNIZE (ORDER BY row MEASURES {measures} {rows} PATTERN ({pattern}) "
            f"{subset} DEFINE {define})")


def _run(engine: str, text: str, table: pa.Table = T) -> pa.Table:
    return cerql.run(text, {"t": table}, engine=engine, output="arrow")


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b and type(a) is type(b)


@pytest.mark.parametrize("measure, expected, arrow_type", [
    # match 1: A=90, B=80,70 (rows 2, 3); match 2: A=90, B=50,40 (rows 6, 7)
    ("stddev(B.value)", [math.sqrt(50.0), math.sqrt(50.0)], pa.float64()),
    ("std(B.value)", [math.sqrt(50.0), math.sqrt(50.0)], pa.float64()),
    ("stddev_samp(value)", [10.0, math.sqrt(700.0)], pa.float64()),
    ("stddev_pop(B.value)", [5.0, 5.0], pa.float64()),
    ("variance(value)", [100.0, 700.0], pa.float64()),
    ("var_samp(A.value)", [None, None], pa.float64()),   # one row: NULL (Spark 4)
    ("var_pop(A.value)", [0.0, 0.0], pa.float64()),
    ("var_pop(B.amt)", [0.0, 0.0], pa.float64()),        # match 2: B.amt 1.00 and NULL
    ("stddev(B.f)", [math.nan, 0.0], pa.float64()),      # match 1: -0.0 and NaN; match 2: 2.0, 2.0
    ("count_if(B.value > 45)", [2, 1], pa.int64()),
    ("count_if(B.ok)", [0, 1], pa.int64()),
    ("bool_and(B.ok)", [False, True], pa.bool_()),
    ("every(ok)", [False, True], pa.bool_()),
    ("bool_or(B.ok)", [False, True], pa.bool_()),
    ("some(A.ok)", [True, True], pa.bool_()),
    ("any(B.ok)", [False, True], pa.bool_()),
    ("min_by(row, y)", [3, 5], pa.int64()),              # y ties (1, 1): the last row
    ("max_by(B.row, B.y)", [3, 7], pa.int64()),          # y ties (7, 7): the last row
    ("max_by(B.amt, B.y)", [Decimal("2.20"), None], pa.decimal128(5, 2)),  # x may be NULL
    ("min_by(B.f, B.f)", [-0.0, 2.0], pa.float64()),     # NaN above every number
    ("collect_list(B.ok)", [[False], [True]], _array(pa.bool_())),
    ("array_agg(value)", [[90, 80, 70], [90, 50, 40]], _array(pa.int64())),
    ("collect_list(B.amt)", [[Decimal("2.20"), Decimal("2.20")], [Decimal("1.00")]], _array(pa.decimal128(5, 2))),
    ("count(DISTINCT amt)", [2, 2], pa.int64()),
    ("count(DISTINCT f)", [2, 2], pa.int64()),            # 0.0 = -0.0; NaN = NaN
    ("sum(DISTINCT B.amt)", [Decimal("2.20"), Decimal("1.00")], pa.decimal128(15, 2)),
    ("avg(DISTINCT amt)", [Decimal("1.650000"), Decimal("0.525000")], pa.decimal128(9, 6)),
    ("sum(DISTINCT value)", [240, 180], pa.int64()),
    ("min(DISTINCT B.value)", [70, 40], pa.int64()),
    ("sum(B.value - PREV(B.value))", [-20, -50], pa.int64()),
    ("max(PREV(value) - value)", [10, 40], pa.int64()),
    ("collect_list(NEXT(B.row, 2))", [[4, 5], [8]], _array(pa.int64())),  # NEXT past the partition: NULL
    # the second batch of Spark's aggregates (Spark 4.3's values for the same rows)
    ("median(value)", [80.0, 50.0], pa.float64()),
    ("percentile(B.value, 0.25)", [72.5, 42.5], pa.float64()),        # 70 + 0.25 * (80 - 70)
    ("percentile(value, array(0, 0.5, 1))", [[70.0, 80.0, 90.0], [40.0, 50.0, 90.0]], _array(pa.float64())),
    ("median(B.f)", [math.nan, 2.0], pa.float64()),                     # -0.0, NaN: NaN sorts last
    ("skewness(B.value)", [0.0, 0.0], pa.float64()),
    ("skewness(A.value)", [None, None], pa.float64()),                  # one value: NULL
    ("kurtosis(B.value)", [-2.0, -2.0], pa.float64()),
    ("covar_samp(B.value, B.row)", [-5.0, -5.0], pa.float64()),
    ("covar_pop(B.value, B.row)", [-2.5, -2.5], pa.float64()),
    ("corr(B.value, B.row)", [-1.0, -1.0], pa.float64()),
    ("corr(B.value, B.y)", [None, None], pa.float64()),                 # y constant
    ("regr_count(B.value, B.amt)", [2, 1], pa.int64()),                 # rows with a NULL left out
    ("regr_avgx(B.value, B.amt)", [Decimal("2.200000"), Decimal("1.000000")], pa.decimal128(9, 6)),
    ("regr_avgy(B.value, B.row)", [75.0, 45.0], pa.float64()),
    ("regr_sxx(B.value, B.row)", [0.5, 0.5], pa.float64()),
    ("regr_syy(B.value, B.row)", [50.0, 50.0], pa.float64()),
    ("regr_sxy(B.value, B.row)", [-5.0, -5.0], pa.float64()),
    ("regr_slope(B.value, B.row)", [-10.0, -10.0], pa.float64()),
    ("regr_intercept(B.value, B.row)", [100.0, 110.0], pa.float64()),
    ("regr_r2(B.value, B.row)", [1.0, 1.0], pa.float64()),
    ("regr_r2(B.value, B.y)", [None, None], pa.float64()),              # x constant: NULL
    ("regr_r2(B.y, B.value)", [1.0, 1.0], pa.float64()),                # only y constant: 1
    ("bit_and(value)", [64, 0], pa.int64()),
    ("bit_or(B.y)", [1, 7], pa.int64()),
    ("bit_xor(y)", [3, 2], pa.int64()),
    ("try_sum(B.value)", [150, 90], pa.int64()),
    ("try_sum(B.amt)", [Decimal("4.40"), Decimal("1.00")], pa.decimal128(15, 2)),
    ("try_avg(B.amt)", [Decimal("2.200000"), Decimal("1.000000")], pa.decimal128(9, 6)),
    ("listagg(B.s, ', ')", ["b, c", "f, g"], pa.string()),
    ("string_agg(s)", ["abc", "efg"], pa.string()),  # no separator
    ("listagg(A.s, NULL)", ["a", "e"], pa.string()),
])
def test_one_row_per_match(engine, measure, expected, arrow_type):
    out = _run(engine, _query(f"{measure} AS m"))
    got = out.column("m").to_pylist()
    assert len(got) == len(expected) and all(_same(g, e) for g, e in zip(got, expected)), (got, expected)
    if engine == "local":
        assert out.schema.field("m").type == arrow_type


def test_all_rows_running_and_final(engine):
    text = _query("RUNNING stddev_pop(B.value) AS sd, FINAL collect_list(B.row) AS rows, "
                  "RUNNING max_by(row, value) AS top, count_if(ok) AS oks, RUNNING count(DISTINCT B.y) AS ys",
                  rows="ALL ROWS PER MATCH")
    out = _run(engine, text)
    assert out.column("row").to_pylist() == [1, 2, 3, 5, 6, 7]
    assert out.column("sd").to_pylist() == [None, 0.0, 5.0, None, 0.0, 5.0]
    assert out.column("rows").to_pylist() == [[2, 3]] * 3 + [[6, 7]] * 3
    assert out.column("top").to_pylist() == [1, 1, 1, 5, 5, 5]
    assert out.column("oks").to_pylist() == [1, 1, 1, 1, 1, 2]
    assert out.column("ys").to_pylist() == [0, 1, 1, 0, 1, 1]


def test_subset_and_empty_variable(engine):
    # match 1: A = row 1, B = rows 2, 3 (falling), C = rows 4, 5 (rising); match 2: A = 6, B = 7, C = 8;
    # D never maps a row
    text = _query("stddev(S.value) AS sd, collect_list(C.value) AS cs, bool_and(C.ok) AS c_ok, "
                  "min_by(S.row, S.value) AS low, count_if(C.value > 0) AS ci, collect_list(D.value) AS ds, "
                  "stddev(D.value) AS d_sd, bool_and(D.ok) AS d_ok, count_if(D.ok) AS d_ci, "
                  "max_by(D.row, D.y) AS d_by, count(DISTINCT D.value) AS d_cd",
                  pattern="A B+ C* D*", subset="SUBSET S = (A, C)",
                  define="B AS B.value < PREV(B.value), C AS C.value > PREV(C.value), D AS D.value > 1000")
    out = _run(engine, text).to_pylist()
    assert [r["cs"] for r in out] == [[80, 90], [60]]
    assert [r["c_ok"] for r in out] == [True, False]
    assert [r["low"] for r in out] == [4, 6]
    assert [r["ci"] for r in out] == [2, 1]
    assert math.isclose(out[0]["sd"], math.sqrt(100 / 3), rel_tol=1e-12)  # S: 90, 80, 90
    assert math.isclose(out[1]["sd"], math.sqrt(50.0), rel_tol=1e-12)     # S: 50, 60
    assert [(r["ds"], r["d_sd"], r["d_ok"], r["d_ci"], r["d_by"], r["d_cd"]) for r in out] == [
        ([], None, None, 0, None, 0)] * 2


def test_unmatched_rows_and_empty_matches_see_no_rows(engine):
    text = _query("collect_list(value) AS vs, stddev(value) AS sd, count_if(ok) AS ci, bool_or(ok) AS bo, "
                  "count(DISTINCT value) AS cd", rows="ALL ROWS PER MATCH WITH UNMATCHED ROWS",
                  pattern="A*", define="A AS A.value > 100")
    out = _run(engine, text).to_pylist()
    assert {(r["vs"] is None or r["vs"] == [], r["sd"], r["ci"], r["bo"], r["cd"]) for r in out} == {
        (True, None, 0, None, 0)}


def test_types_over_no_rows():
    """The result schema Spark's plan takes is the engine's answer over no rows."""
    text = _query("collect_list(B.amt) AS cl, stddev(B.value) AS sd, count_if(B.ok) AS ci, every(ok) AS ev, "
                  "max_by(B.amt, B.y) AS mb, sum(DISTINCT B.amt) AS sd2, avg(DISTINCT value) AS ad")
    out = _run("local", text, T.slice(0, 0))
    assert out.num_rows == 0
    assert [out.schema.field(n).type for n in ("cl", "sd", "ci", "ev", "mb", "sd2", "ad")] == [
        _array(pa.decimal128(5, 2)), pa.float64(), pa.int64(), pa.bool_(), pa.decimal128(5, 2),
        pa.decimal128(15, 2), pa.float64()]


@pytest.mark.parametrize("define, rows", [
    # the falling B rows while their stddev_pop stays under 4: 80 (0), not 80, 70 (5)
    ("B AS B.value < PREV(B.value) AND stddev_pop(B.value) < 4", [[1, 2], [5, 6]]),
    ("B AS B.value < PREV(B.value) AND coalesce(bool_and(B.ok), true)", [[1, 2], [5, 6, 7]]),
    ("B AS count_if(B.value < 85) <= 1", [[1, 2], [3, 4, 5], [6, 7]]),
    # the current row has the greatest y so far (ties: the last row wins); row 8's y is NULL
    ("B AS max_by(B.row, B.y) = B.row", [[1, 2, 3, 4], [5, 6, 7]]),
    ("B AS coalesce(some(B.ok), false) = false", [[1, 2, 3], [5, 6], [7, 8]]),
    # var_samp of one row is NULL: 0 here; then 50, 33.3, and 66.7 fails (match 1); 50, then 100 fails
    ("B AS coalesce(var_samp(B.value), 0) < 60", [[1, 2, 3, 4], [5, 6, 7]]),
    ("B AS count(DISTINCT B.y) = count(B.y)", [[1, 2], [3, 4, 5, 6], [7, 8]]),
    ("B AS sum(B.value - PREV(B.value)) > -25", [[1, 2, 3, 4, 5], [6, 7, 8]]),
    ("B AS min(PREV(B.value)) >= 80", [[1, 2, 3], [4, 5, 6]]),
    # falling B rows while their median stays above 60: 80 (80), 70 (75); 50 (50) fails
    ("B AS B.value < PREV(B.value) AND median(B.value) > 60", [[1, 2, 3]]),
    ("B AS B.value < PREV(B.value) AND coalesce(kurtosis(B.value), -2) = -2", [[1, 2, 3], [5, 6, 7]]),
    # corr of two B rows is -1, of three not: a third B row fails
    ("B AS coalesce(corr(B.value, B.row), -1) = -1", [[1, 2, 3], [4, 5, 6], [7, 8]]),
    ("B AS bit_or(B.y) < 4", [[1, 2, 3], [4, 5]]),
    ("B AS try_sum(B.value) <= 160", [[1, 2, 3], [4, 5, 6], [7, 8]]),   # 80 + 70, then 230; 90 + 50, then 180
    ("B AS listagg(B.s, '-') IN ('b', 'b-c', 'e', 'f', 'f-g')", [[1, 2, 3], [4, 5]]),  # 'e-f' fails
])
def test_history_dependent_defines(engine, define, rows):
    text = _query("FINAL collect_list(row) AS rows", define=define)
    assert _run(engine, text).column("rows").to_pylist() == rows


@pytest.mark.parametrize("measure, error_class, hint", [
    ("collect_set(B.value)", "MATCH_RECOGNIZE_UNSUPPORTED", "collect_list"),
    ("any_value(B.value)", "MATCH_RECOGNIZE_UNSUPPORTED", "LAST(A.x)"),
    ("approx_count_distinct(B.value)", "MATCH_RECOGNIZE_UNSUPPORTED", "count(DISTINCT"),
    ("percentile_approx(B.value, 0.5)", "MATCH_RECOGNIZE_UNSUPPORTED", "approximate"),
    ("first_value(B.value)", "MATCH_RECOGNIZE_UNSUPPORTED", "FIRST(A.x)"),
    ("mode(B.value)", "MATCH_RECOGNIZE_UNSUPPORTED", "collect_list"),
    ("product(B.value)", "MATCH_RECOGNIZE_UNSUPPORTED", "exp(sum(ln"),
    ("stddev(DISTINCT B.value)", "MATCH_RECOGNIZE_UNSUPPORTED", "drop DISTINCT"),
    ("percentile_cont(0.5) WITHIN GROUP (ORDER BY B.value)", "MATCH_RECOGNIZE_UNSUPPORTED", "percentile(A.x, p)"),
    ("listagg(B.s) WITHIN GROUP (ORDER BY B.value)", "MATCH_RECOGNIZE_UNSUPPORTED", "row order"),
    ("percentile(B.value, 0.5, 2)", "MATCH_RECOGNIZE_UNSUPPORTED", "counts each row once"),
    ("percentile(B.value, B.row / 10)", "DATATYPE_MISMATCH.NON_FOLDABLE_INPUT", "literal"),
    ("percentile(B.value, 1.5)", "DATATYPE_MISMATCH", "[0, 1]"),
    ("bit_and(B.f)", "DATATYPE_MISMATCH", "BIGINT"),
    ("listagg(B.value)", "DATATYPE_MISMATCH", "AS STRING"),
    ("median(DISTINCT B.value)", "MATCH_RECOGNIZE_UNSUPPORTED", "drop DISTINCT"),
    ("sum(LAST(B.value))", "MATCH_RECOGNIZE_UNSUPPORTED", "PREV"),
    ("collect_list(CLASSIFIER())", "MATCH_RECOGNIZE_UNSUPPORTED", "PREV"),
    ("sum(PREV(PREV(B.value)))", "MATCH_RECOGNIZE_INVALID_NAVIGATION", "offsets"),
    ("max_by(B.value)", "MATCH_RECOGNIZE_INVALID_AGGREGATE", "max_by"),
    ("max_by(B.value, A.row)", "MATCH_RECOGNIZE_MIXED_VARIABLES", "split"),
    ("count_if(B.value)", "DATATYPE_MISMATCH", "comparison"),
    ("stddev(CLASSIFIER(B))", "MATCH_RECOGNIZE_UNSUPPORTED", "PREV"),
])
def test_refused(measure, error_class, hint):
    with pytest.raises(CeqlError) as info:
        _run("local", _query(f"{measure} AS m"))
    err = info.value
    assert err.error_class == error_class, str(err)
    assert hint in (err.hint or "") + err.message, str(err)
    # the caret is on the aggregate (or the part of it refused), not at the query's start
    assert err.column > 1 or err.line > 1, str(err)


def test_second_batch_running_final_subset_and_no_rows(engine):
    # match 1: A = 1, B = 2, 3 (falling), C = 4, 5 (rising); match 2: A = 6, B = 7, C = 8; D maps no row
    text = _query("RUNNING median(value) AS md, FINAL listagg(B.s, '+') AS bs, RUNNING regr_count(S.value, S.row) AS rc, "
                  "FINAL percentile(S.value, array(0.5)) AS ps, bit_or(D.y) AS d_bo, try_avg(D.amt) AS d_ta, "
                  "listagg(D.s) AS d_la, regr_count(D.y, D.row) AS d_rc",
                  rows="ALL ROWS PER MATCH", pattern="A B+ C* D*", subset="SUBSET S = (A, C)",
                  define="B AS B.value < PREV(B.value), C AS C.value > PREV(C.value), D AS D.value > 1000")
    out = _run(engine, text).to_pylist()
    assert [r["row"] for r in out] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert [r["md"] for r in out] == [90.0, 85.0, 80.0, 80.0, 80.0, 50.0, 45.0, 50.0]
    assert [r["bs"] for r in out] == ["b+c"] * 5 + ["g"] * 3
    assert [r["rc"] for r in out] == [1, 1, 1, 2, 3, 1, 1, 2]          # S = A and C rows so far
    assert [r["ps"] for r in out] == [[90.0]] * 5 + [[55.0]] * 3          # S: 90, 80, 90 / 50, 60
    assert {(r["d_bo"], r["d_ta"], r["d_la"], r["d_rc"]) for r in out} == {(None, None, None, 0)}


def test_try_sum_is_null_once_a_bigint_sum_overflows(engine):
    big = pa.table({"row": pa.array([1, 2, 3, 4], pa.int64()),
                    "value": pa.array([2 ** 63 - 1, 1, -5, 3], pa.int64())})
    text = ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY row MEASURES RUNNING try_sum(A.value) AS ts, "
            "RUNNING try_avg(A.value) AS ta ALL ROWS PER MATCH PATTERN (A+) DEFINE A AS true)")
    out = _run(engine, text, big).to_pylist()
    assert [r["ts"] for r in out] == [2 ** 63 - 1, None, None, None]    # as Spark: NULL from the overflow on
    assert out[1]["ta"] == (float(2 ** 63 - 1) + 1.0) / 2                # avg sums DOUBLEs: no overflow
    if engine == "local":  # where sum raises Spark's ARITHMETIC_OVERFLOW (the reference does not check)
        with pytest.raises(CeqlError):
            _run(engine, text.replace("try_sum", "sum"), big)
