"""The local MATCH_RECOGNIZE engine end to end (cerql/exec/mr_engine.py), with the checks of
planner/mr_analyze.py: the reference cases of docs/semantics.md "MATCH_RECOGNIZE", measures,
each output layout, partitions and order, NULLs, and the errors with their positions. The
matcher is the backtracking stand-in of tests/exec/mr_support.py."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from cerql import mr_ast
from cerql.errors import AnalysisError, CeqlError, UnsupportedError
from cerql.exec.mr_engine import PikeMatcher, run_match_recognize
from cerql.parser.match_recognize import parse_match_recognize
from cerql.planner.mr_analyze import analyze, compiled
from tests.exec.mr_support import BacktrackMatcher, clause

ROWS = pa.table({"row": list(range(1, 9)), "value": [90, 80, 70, 80, 90, 50, 40, 60]})
DOWN_UP = {"B": "B.value < PREV(B.value)", "C": "C.value > PREV(C.value)"}
ALL = "ALL ROWS PER MATCH"


@pytest.fixture(autouse=True, params=["pike", "backtrack"])
def matcher_kind(request):
    """Every test runs with the Pike-VM kernel and with the backtracking stand-in."""
    global MATCHER
    MATCHER = request.param
    yield


MATCHER = "pike"


def matcher(c, text):
    if MATCHER == "pike":
        _, nfa, skip = compiled(c, text)
        return PikeMatcher(nfa, skip)
    analyze(c, text)
    return BacktrackMatcher(c)


def run(table=ROWS, **kwargs) -> pa.Table:
    c, text = clause(**kwargs)
    return run_match_recognize(c, table, text, matcher(c, text))


def col(out: pa.Table, name: str) -> list:
    return out.column(name).to_pylist()


@pytest.mark.parametrize("pattern, skip, expected", [
    ("A B+ C+", mr_ast.PAST_LAST_ROW, "1:A1 2:B1 3:B1 4:C1 5:C1 6:A2 7:B2 8:C2"),
    ("A B+? C+?", mr_ast.PAST_LAST_ROW, "1:A1 2:B1 3:B1 4:C1 5:A2 6:B2 7:B2 8:C2"),
    ("A B+ C+", mr_ast.TO_NEXT_ROW, "1:A1 2:B1 3:B1 4:C1 5:C1 2:A2 3:B2 4:C2 5:C2 5:A3 6:B3 7:B3 8:C3 6:A4 7:B4 8:C4"),
    ("(A | B)* C", mr_ast.PAST_LAST_ROW, "1:A1 2:A1 3:A1 4:A1 5:A1 6:A1 7:A1 8:C1"),
    ("A B* C?", mr_ast.TO_NEXT_ROW, "1:A1 2:B1 3:B1 4:C1 2:A2 3:B2 4:C2 3:A3 4:C3 4:A4 5:C4 5:A5 6:B5 7:B5 8:C5 "
                                    "6:A6 7:B6 8:C6 7:A7 8:C7 8:A8"),
])
def test_reference_cases(pattern, skip, expected):
    out = run(pattern=pattern, define=DOWN_UP, measures={"cls": "CLASSIFIER()", "mno": "MATCH_NUMBER()"},
              rows=ALL, skip=skip)
    got = " ".join(f"{r}:{k}{m}" for r, k, m in zip(col(out, "row"), col(out, "cls"), col(out, "mno")))
    assert got == expected


def test_one_row_measures():
    out = run(pattern="A B+ C+", define=DOWN_UP, subsets={"BC": ("B", "C")}, measures={
        "fb": "FIRST(B.value)", "lb": "LAST(B.value)", "fb1": "FIRST(B.value, 1)", "lc1": "LAST(C.value, 1)",
        "prev_lb": "PREV(LAST(B.value), 2)", "next_a": "NEXT(A.value)", "nb": "count(B.*)", "n": "count(*)",
        "sc": "sum(C.value)", "ab": "avg(B.value)", "mn": "min(value)", "mx": "max(C.value)",
        "cls": "CLASSIFIER()", "clsb": "CLASSIFIER(B)", "mno": "MATCH_NUMBER()", "v": "value", "nbc": "count(BC.*)",
        "lbc2": "LAST(BC.value, 2)", "plus": "LAST(value + 1)", "diff": "LAST(B.value) - FIRST(A.value)",
        "ncv": "count(C.value)", "e1": "A.value + 1", "e2": "LAST(B.value) * 2 + value"})
    assert out.column_names[:3] == ["fb", "lb", "fb1"] and out.num_rows == 2
    expected = {
        "fb": [80, 40], "lb": [70, 40], "fb1": [70, None], "lc1": [80, None], "prev_lb": [90, 90],
        "next_a": [80, 40], "nb": [2, 1], "n": [5, 3], "sc": [170, 60], "ab": [75.0, 40.0], "mn": [70, 40],
        "mx": [90, 60], "cls": ["C", "C"], "clsb": ["B", "B"], "mno": [1, 2], "v": [90, 60], "nbc": [4, 2],
        "lbc2": [70, None], "plus": [91, 61], "diff": [-20, -10], "ncv": [2, 1],
        "e1": [91, 51], "e2": [230, 140],
    }
    for name, values in expected.items():
        assert col(out, name) == values, name
    assert out.schema.field("n").type == pa.int64() and out.schema.field("sc").type == pa.int64()
    assert out.schema.field("ab").type == pa.float64() and out.schema.field("cls").type == pa.string()


def test_running_and_final_in_all_rows():
    out = run(pattern="A B+ C+", define=DOWN_UP, rows=ALL, measures={
        "r_last": "LAST(B.value)", "f_last": "FINAL(LAST(B.value))", "r_cnt": "RUNNING(count(B.*))",
        "f_cnt": "FINAL(count(B.*))", "r_sum": "sum(value)", "f_sum": "FINAL(sum(value))",
        "f_v": "FINAL(LAST(value))", "r_fc1": "FIRST(C.value, 1)", "f_cls": "FINAL(CLASSIFIER())"})
    assert col(out, "row") == [1, 2, 3, 4, 5, 6, 7, 8]
    assert col(out, "r_last") == [None, 80, 70, 70, 70, None, 40, 40]
    assert col(out, "f_last") == [70] * 5 + [40] * 3
    assert col(out, "r_cnt") == [0, 1, 2, 2, 2, 0, 1, 1]
    assert col(out, "f_cnt") == [2] * 5 + [1] * 3
    assert col(out, "r_sum") == [90, 170, 240, 320, 410, 50, 90, 150]
    assert col(out, "f_sum") == [410] * 5 + [150] * 3
    assert col(out, "f_v") == [90] * 5 + [60] * 3
    assert col(out, "r_fc1") == [None, None, None, None, 90, None, None, None]
    assert col(out, "f_cls") == ["C"] * 8


def test_layouts_and_partition_order():
    table = pa.table({"value": [5, 1, 6, 2, 7, 3], "sym": ["b", "a", "b", "a", "b", "a"], "row": [1, 1, 2, 2, 3, 3]})
    one = run(table, pattern="A B", partition_by=("sym",), define={"B": "B.value > PREV(value)"},
              measures={"first_v": "FIRST(value)", "mno": "MATCH_NUMBER()"})
    assert one.column_names == ["sym", "first_v", "mno"]
    assert col(one, "sym") == ["b", "a"]  # partitions in the order of their first row in the input
    assert col(one, "first_v") == [5, 1] and col(one, "mno") == [1, 1]
    every = run(table, pattern="A B", partition_by=("sym",), define={"B": "B.value > PREV(value)"},
                measures={"mno": "MATCH_NUMBER()"}, rows=ALL)
    assert every.column_names == ["sym", "row", "mno", "value"]
    assert col(every, "sym") == ["b", "b", "a", "a"] and col(every, "value") == [5, 6, 1, 2]


EMPTY = dict(pattern="A*", define={"A": "A.value > 85"}, measures={"cls": "CLASSIFIER()", "mno": "MATCH_NUMBER()",
                                                                   "n": "count(*)", "v": "LAST(value)"})


def test_empty_matches_in_one_row_and_show_empty():
    one = run(**EMPTY)
    assert col(one, "mno") == [1, 2, 3, 4, 5, 6, 7, 8]
    assert col(one, "n") == [1, 0, 0, 0, 1, 0, 0, 0]
    assert col(one, "v") == [90, None, None, None, 90, None, None, None]
    shown = run(**EMPTY, rows=f"{ALL} {mr_ast.SHOW_EMPTY}")
    assert col(shown, "row") == [1, 2, 3, 4, 5, 6, 7, 8]
    assert col(shown, "cls") == ["A", None, None, None, "A", None, None, None]
    assert col(shown, "n") == [1, 0, 0, 0, 1, 0, 0, 0] and col(shown, "mno") == [1, 2, 3, 4, 5, 6, 7, 8]
    assert col(shown, "value") == [90, 80, 70, 80, 90, 50, 40, 60]  # the empty match's start row
    assert col(run(**EMPTY, rows=ALL), "row") == col(shown, "row")  # SHOW EMPTY MATCHES is the default


def test_omit_empty_matches():
    out = run(**EMPTY, rows=f"{ALL} {mr_ast.OMIT_EMPTY}")
    assert col(out, "row") == [1, 5] and col(out, "mno") == [1, 5]


def test_with_unmatched_rows():
    out = run(pattern="A B", define={"A": "A.value > 85"}, measures={"mno": "MATCH_NUMBER()", "n": "count(*)"},
              rows=f"{ALL} {mr_ast.WITH_UNMATCHED}")
    assert col(out, "row") == [1, 2, 3, 4, 5, 6, 7, 8]
    assert col(out, "mno") == [1, 1, None, None, 2, 2, None, None]
    assert col(out, "n") == [1, 2, None, None, 1, 2, None, None]  # an unmatched row's measures are NULL


def test_exclusion_leaves_rows_out_of_all_rows_only():
    kwargs = dict(pattern="A {- B+ -} C+", define=DOWN_UP, measures={"nb": "count(B.*)", "cls": "CLASSIFIER()"})
    out = run(**kwargs, rows=ALL)
    assert col(out, "row") == [1, 4, 5, 6, 8]
    assert col(out, "nb") == [0, 2, 2, 0, 1] and col(out, "cls") == ["A", "C", "C", "A", "C"]
    assert col(run(**kwargs), "nb") == [2, 1]  # ONE ROW PER MATCH: no effect


def _order(order_by, ts, ids=None):
    table = pa.table({"ts": ts, "id": ids or list(range(len(ts)))})
    return col(run(table, pattern="A+", order_by=order_by, measures={"n": "count(*)"}, rows=ALL), "id")


def test_order_by_directions_and_nulls():
    ts = [3, None, 1, 2]
    assert _order(("ts",), ts) == [1, 2, 3, 0]  # ASC: NULLS FIRST
    assert _order(("ts DESC",), ts) == [0, 3, 2, 1]  # DESC: NULLS LAST
    assert _order(("ts ASC NULLS LAST",), ts) == [2, 3, 0, 1]
    assert _order(("ts DESC NULLS FIRST",), ts) == [1, 0, 3, 2]
    assert _order(("ts",), [1.0, math.nan, -1.0]) == [2, 0, 1]  # NaN above every number
    assert _order(("ts DESC",), [1.0, math.nan, -1.0]) == [1, 0, 2]


def test_ties_keep_input_order():
    assert _order(("ts",), [2, 1, 1, 2, 1]) == [1, 2, 4, 0, 3]
    assert _order(("ts DESC",), [2, 1, 1, 2, 1]) == [0, 3, 1, 2, 4]


def test_null_in_define_is_false():
    table = pa.table({"row": [1, 2, 3], "value": [1, None, 2]})
    out = run(table, pattern="A", define={"A": "A.value > 0"}, measures={"r": "LAST(row)"})
    assert col(out, "r") == [1, 3]


def test_prev_does_not_cross_partitions():
    table = pa.table({"p": ["x", "x", "y", "y"], "row": [1, 2, 3, 4], "value": [1, 2, 3, 4]})
    out = run(table, pattern="A", partition_by=("p",), define={"A": "value >= PREV(value)"}, measures={"r": "row"})
    assert col(out, "r") == [2, 4]
    out = run(table, pattern="A", define={"A": "NEXT(value, 2) IS NULL AND PREV(A.value, 3) IS NULL"},
              measures={"r": "row"})
    assert col(out, "r") == [3]


def test_no_rows_and_no_matches():
    empty = ROWS.slice(0, 0)
    out = run(empty, pattern="A B+", define={"B": DOWN_UP["B"]}, measures={"n": "count(*)", "v": "LAST(value)"})
    assert out.num_rows == 0 and out.column_names == ["n", "v"]
    out = run(pattern="A B+", define={"A": "value > 1000"}, measures={"n": "count(*)"}, rows=ALL)
    assert out.num_rows == 0 and out.column_names == ["row", "n", "value"]


def _error(**kwargs) -> CeqlError:
    c, text = clause(**kwargs)
    with pytest.raises(CeqlError) as info:
        run_match_recognize(c, ROWS, text, matcher(c, text))
    err = info.value
    err.query = text
    return err


def _at(err: CeqlError, written: str) -> bool:
    """The error points at ``written`` (its first occurrence after the clause's opening)."""
    return err.line == 1 and err.column == err.query.index(written, len("SELECT * FROM t ")) + 1


@pytest.mark.parametrize("kwargs, error_class, where", [
    (dict(pattern="A", measures={"x": "LAST(Z.value)"}), "MATCH_RECOGNIZE_UNDEFINED_VARIABLE", "Z.value"),
    (dict(pattern="A B", define={"A": "Z.value > 1"}), "MATCH_RECOGNIZE_UNDEFINED_VARIABLE", "Z.value"),
    (dict(pattern="A", measures={"x": "CLASSIFIER(Q)"}), "MATCH_RECOGNIZE_UNDEFINED_VARIABLE", "Q)"),
    (dict(pattern="A", skip=mr_ast.TO_LAST, skip_to="Z"), "MATCH_RECOGNIZE_UNDEFINED_VARIABLE", "Z "),
    (dict(pattern="A B", define={"B": "FINAL(LAST(B.value)) > 1"}), "MATCH_RECOGNIZE_FINAL_IN_DEFINE", "FINAL"),
    (dict(pattern="A B", define={"B": "MATCH_NUMBER() > 1"}), "MATCH_RECOGNIZE_MATCH_NUMBER_IN_DEFINE",
     "MATCH_NUMBER"),
    (dict(pattern="A B", subsets={"S": ("A", "Z")}), "MATCH_RECOGNIZE_UNDEFINED_VARIABLE", "Z)"),
    (dict(pattern="A B", subsets={"A": ("A", "B")}), "MATCH_RECOGNIZE_DUPLICATE_NAME", "SUBSET"),
    (dict(pattern="A B", define={"C": "value > 1"}), "MATCH_RECOGNIZE_UNDEFINED_VARIABLE", "C AS"),
    (dict(pattern="A {- B -}", rows=f"{ALL} {mr_ast.WITH_UNMATCHED}"), "MATCH_RECOGNIZE_UNMATCHED_WITH_EXCLUSION",
     "ALL ROWS"),
    (dict(pattern="A B", define={"B": "value + 1"}), "MATCH_RECOGNIZE_DEFINE_NOT_BOOLEAN", "value + 1"),
    (dict(pattern="A B", define={"B": "value"}), "MATCH_RECOGNIZE_DEFINE_NOT_BOOLEAN", "value"),
    (dict(pattern="A", measures={"x": "count(*)", "X": "sum(value)"}), "MATCH_RECOGNIZE_DUPLICATE_MEASURE", "sum"),
    (dict(pattern="A B", define={"B": "value > PREV(value, -1)"}), "MATCH_RECOGNIZE_INVALID_OFFSET", "-1)"),
    (dict(pattern="A", measures={"x": "LAST(A.value + B.value)"}), "MATCH_RECOGNIZE_MIXED_VARIABLES", "LAST(A"),
    (dict(pattern="A B", define={"B": "sum(FIRST(A.value)) > 1"}), "MATCH_RECOGNIZE_UNSUPPORTED", "FIRST"),
    (dict(pattern="A B", define={"B": "LAST(CLASSIFIER()) = 'A'"}), "MATCH_RECOGNIZE_UNSUPPORTED", "CLASSIFIER"),
    (dict(pattern="A B", define={"B": "stddev(DISTINCT A.value) > 2"}), "MATCH_RECOGNIZE_UNSUPPORTED", "stddev"),
    (dict(pattern="A B", define={"B": "size(collect_set(A.value)) > 2"}), "MATCH_RECOGNIZE_UNSUPPORTED", "collect_set"),
    (dict(pattern="A B", define={"B": "MATCH_NUMBER() = 1"}), "MATCH_RECOGNIZE_MATCH_NUMBER_IN_DEFINE", "MATCH_NUMBER"),
    (dict(pattern="A B", define={"B": "nope > 1"}), "UNKNOWN_COLUMN", "nope"),
    (dict(pattern="A", measures={"x": "LAST(nope)"}), "UNKNOWN_COLUMN", "nope"),
])
def test_errors_with_positions(kwargs, error_class, where):
    err = _error(**kwargs)
    assert err.error_class == error_class, str(err)
    assert err.hint
    assert _at(err, where), (str(err), err.column, err.query)


def test_refusals_and_errors_are_their_classes():
    assert isinstance(_error(pattern="A B", define={"B": "LAST(CLASSIFIER()) = 'A'"}), UnsupportedError)
    assert isinstance(_error(pattern="A B", define={"C": "value > 1"}), AnalysisError)


def test_history_dependent_defines_are_accepted_and_sorted():
    c, text = clause(pattern="A B C D", define={"A": "value > 1", "B": "B.value > A.value", "C": "value > FIRST(value)",
                                                 "D": "count(*) > 2 OR CLASSIFIER() = 'A'"})
    assert analyze(c, text).row_local == {"A"}


def test_row_local_defines_are_accepted():
    c, text = clause(pattern="A B", define={"A": "A.value > PREV(A.value, 2) AND NEXT(value) IS NOT NULL",
                                             "B": "RUNNING(PREV(S.value)) < 1"}, subsets={"S": ("B",)})
    analysis = analyze(c, text)
    assert analysis.row_local == {"A", "B"} and analysis.variables == ("A", "B")


def test_skip_to_error_names_the_match_and_partition():
    table = pa.table({"p": ["x"] * 3, "row": [1, 2, 3], "value": [1, 2, 3]})
    c, text = clause(pattern="A B?", partition_by=("p",), skip=mr_ast.TO_LAST, skip_to="b")
    with pytest.raises(CeqlError) as info:
        run_match_recognize(c, table, text, matcher(c, text))
    assert info.value.error_class in ("AFTER_MATCH_SKIP_FAILED",)
    if MATCHER == "pike":
        assert "match 3" in str(info.value) and "p='x'" in str(info.value)  # rows 1-2, 2-3, then 3 alone


def test_skip_to_a_variable_written_in_another_case():
    c, text = clause(pattern="A B+ C+", define=DOWN_UP, skip=mr_ast.TO_LAST, skip_to="c",
                     measures={"r": "FIRST(row)"})
    assert col(run_match_recognize(c, ROWS, text, matcher(c, text)), "r") == [1, 5]


def _from_text(text: str, table: pa.Table) -> pa.Table:
    c = parse_match_recognize(text).clause
    return run_match_recognize(c, table, text, matcher(c, text))


def test_from_the_parser_the_documented_example():
    ticks = pa.table({"sym": ["a", "b", "a", "a", "b", "a", "a", "b"], "ts": [1, 1, 2, 3, 2, 4, 5, 3],
                      "price": [10, 5, 8, 7, 6, 9, 11, 4]})
    text = """SELECT * FROM ticks MATCH_RECOGNIZE (
  PARTITION BY sym ORDER BY ts
  MEASURES FIRST(ts) AS start_ts, LAST(DOWN.price) AS bottom, count(UP.*) AS n, MATCH_NUMBER() AS mno,
           FINAL LAST(price) AS top, PREV(LAST(DOWN.price), 1) AS before_bottom
  ONE ROW PER MATCH
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (STRT DOWN+ UP+)
  SUBSET ALLD = (STRT, DOWN)
  DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price)
) AS m"""
    out = _from_text(text, ticks)
    assert out.column_names == ["sym", "start_ts", "bottom", "n", "mno", "top", "before_bottom"]
    # a: 10 8 7 9 11 (STRT 10, DOWN 8 7, UP 9 11); b: 5 6 4 (no DOWN after STRT 5: 6 > 5; STRT 6, DOWN 4, no UP)
    assert out.to_pylist() == [{"sym": "a", "start_ts": 1, "bottom": 7, "n": 2, "mno": 1, "top": 11,
                                "before_bottom": 8}]


def test_from_the_parser_a_reference_case_and_an_error():
    text = ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY row MEASURES CLASSIFIER() AS cls "
            "ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN (A B+ C+) "
            "DEFINE B AS B.value < PREV(B.value), C AS C.value > PREV(C.value))")
    out = _from_text(text, ROWS)
    assert col(out, "row") == [1, 2, 3, 4, 5, 2, 3, 4, 5, 5, 6, 7, 8, 6, 7, 8]
    bad = text.replace("C.value > PREV(C.value)", "C.value > FINAL LAST(C.value)")
    with pytest.raises(CeqlError) as info:
        _from_text(bad, ROWS)
    assert info.value.error_class == "MATCH_RECOGNIZE_FINAL_IN_DEFINE"
    assert info.value.column == bad.index("FINAL") + 1


def test_aggregates_of_other_types_running_and_final():
    from decimal import Decimal
    table = pa.table({"row": [1, 2, 3, 4], "d": pa.array([Decimal("1.5"), None, Decimal("2.25"), Decimal("-1")],
                                                        pa.decimal128(5, 2)),
                      "f": [1.5, float("nan"), None, -2.0], "s": ["b", "a", None, "c"]})
    out = run(table, pattern="A+", rows=ALL, measures={
        "sd": "sum(d)", "ad": "avg(d)", "fsd": "FINAL(sum(d))", "sf": "sum(f)", "af": "avg(f)", "mxf": "max(f)",
        "mnf": "min(f)", "mns": "min(s)", "mxs": "FINAL(max(s))", "nf": "count(f)"})
    assert col(out, "sd") == [Decimal("1.50"), Decimal("1.50"), Decimal("3.75"), Decimal("2.75")]
    assert out.schema.field("sd").type == pa.decimal128(15, 2) and out.schema.field("ad").type == pa.decimal128(9, 6)
    assert col(out, "ad") == [Decimal("1.5"), Decimal("1.5"), Decimal("1.875"), Decimal("0.916667")]
    assert col(out, "fsd") == [Decimal("2.75")] * 4
    assert col(out, "sf")[0] == 1.5 and all(math.isnan(v) for v in col(out, "sf")[1:])
    assert col(out, "mnf") == [1.5, 1.5, 1.5, -2.0] and col(out, "mxf")[0] == 1.5
    assert all(math.isnan(v) for v in col(out, "mxf")[1:])  # NaN above every number
    assert col(out, "mns") == ["b", "a", "a", "a"] and col(out, "mxs") == ["c"] * 4
    assert col(out, "nf") == [1, 2, 2, 3]


def test_a_running_sum_that_leaves_bigint_fails_as_spark():
    table = pa.table({"row": [1, 2, 3], "v": [2 ** 62, 2 ** 62, -5]})
    with pytest.raises(CeqlError) as info:
        run(table, pattern="A+", rows=ALL, measures={"s": "sum(v)"})
    assert info.value.error_class == "ARITHMETIC_OVERFLOW"
