"""History-dependent DEFINEs of MATCH_RECOGNIZE (exec/mr_threads.py with exec/mr_history.py),
hand-checked: conditions over other variables' rows, FIRST/LAST with offsets, running
aggregates, CLASSIFIER, PREV of a LAST; the limit on live threads and its error; and the work on
20 000 rows when the registers the conditions read take few values (steps counted, not timed).
docs/semantics.md, "MATCH_RECOGNIZE", "The local engine"."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from cerql import mr_ast
from cerql.errors import CeqlError
from cerql.exec import mr_reference as reference
from cerql.exec.mr_engine import PikeMatcher, matcher_for, run_match_recognize
from cerql.exec.mr_threads import MAX_THREADS_CONF, ThreadMatcher
from cerql.planner.mr_analyze import compiled
from tests.exec.mr_support import clause

ROWS = pa.table({"row": list(range(1, 9)), "value": [90, 80, 70, 80, 90, 50, 40, 60]})
SPAN = {"first": "FIRST(row)", "last": "LAST(row)"}
ALL = "ALL ROWS PER MATCH"


def run(table=ROWS, max_threads: int | None = None, **kwargs):
    """(the result rows, the matcher), after checking the result against the reference evaluator."""
    c, text = clause(**kwargs)
    analysis, nfa, skip = compiled(c, text)
    extra = {} if max_threads is None else {"max_threads": max_threads}
    matcher = matcher_for(c, text, nfa, skip, analysis.row_local, **extra)
    got = run_match_recognize(c, table, text, matcher).to_pylist()
    if table.num_rows <= 50:
        assert got == reference.evaluate(c, table.to_pylist()), text
    return got, matcher


def test_a_condition_over_another_variables_last_and_first_rows():
    # start 3: A=70, B 80 and 90 > 70, then 50 ends B+ and is below FIRST(B) = 80: C
    # start 7: A=40, B=60, and no row for C; the other starts find no B
    got, matcher = run(pattern="A B+ C", define={"B": "B.value > LAST(A.value)", "C": "C.value < FIRST(B.value)"},
                       measures={**SPAN, "cls": "CLASSIFIER()"}, rows=ALL)
    assert isinstance(matcher, ThreadMatcher)
    assert [(r["row"], r["cls"]) for r in got] == [(3, "A"), (4, "B"), (5, "B"), (6, "C")]


def test_a_running_sum_bounds_each_match():
    got, _ = run(pattern="A+", define={"A": "sum(A.value) <= 200"}, measures={**SPAN, "s": "sum(A.value)"})
    # 90+80 = 170 (+70 > 200), 70+80 = 150, 90+50+40 = 180, 60
    assert got == [{"first": 1, "last": 2, "s": 170}, {"first": 3, "last": 4, "s": 150},
                   {"first": 5, "last": 7, "s": 180}, {"first": 8, "last": 8, "s": 60}]


def test_v_shape_prev_and_last_of_the_variable_itself():
    up = "UP.value > PREV(UP.value)"
    by_prev, m1 = run(pattern="STRT DOWN+ UP+", define={"DOWN": "value < PREV(value)", "UP": up}, measures=SPAN)
    assert isinstance(m1, PikeMatcher) and by_prev == [{"first": 1, "last": 5}, {"first": 6, "last": 8}]
    # LAST(value, 1) is the row mapped before the current one: PREV(value) inside a match
    by_last, m2 = run(pattern="STRT DOWN+ UP+", define={"DOWN": "value < LAST(value, 1)", "UP": up}, measures=SPAN)
    assert isinstance(m2, ThreadMatcher) and by_last == by_prev
    # LAST(DOWN.value, 1) is the DOWN row before: NULL on the first DOWN row, so DOWN+ never starts...
    none, _ = run(pattern="STRT DOWN+ UP+", define={"DOWN": "value < LAST(DOWN.value, 1)", "UP": up}, measures=SPAN)
    assert none == []
    # ... unless the first DOWN row compares with the row before it
    own, _ = run(pattern="STRT DOWN+ UP+", measures=SPAN, define={
        "DOWN": "value < coalesce(LAST(DOWN.value, 1), PREV(value))", "UP": up})
    assert own == by_prev


def test_classifier_and_counts_of_the_rows_so_far():
    # (A | B)+ prefers A; B only once two A rows were mapped, A only while fewer than 3 rows are
    got, _ = run(pattern="(A | B)+", define={"A": "count(*) <= 3 AND CLASSIFIER() = 'A'", "B": "count(A.*) >= 2"},
                 measures={"cls": "CLASSIFIER()", "n": "MATCH_NUMBER()"}, rows=ALL)
    assert [(r["row"], r["cls"], r["n"]) for r in got] == [
        (1, "A", 1), (2, "A", 1), (3, "A", 1), (4, "B", 1), (5, "B", 1), (6, "B", 1), (7, "B", 1), (8, "B", 1)]


def test_prev_of_a_last_and_classifier_of_another_variable():
    # B's rows: below the value two rows before A's last row; C only after a B row
    got, _ = run(pattern="A B* C", define={"B": "value < PREV(LAST(A.value), 2)", "C": "CLASSIFIER(B) = 'B'"},
                 measures={**SPAN, "nb": "count(B.*)"})
    # start 3: PREV(A=70, 2) = row 1 (90): B 80, then 90 is not below: C 90 (B mapped); start 6: A=50,
    # PREV 2 = 80: B 40, C 60
    assert got == [{"first": 3, "last": 5, "nb": 1}, {"first": 6, "last": 8, "nb": 1}]


def test_the_live_thread_limit_names_its_conf():
    # every start row keeps a thread of its own (FIRST(A) differs) while C waits for a negative value
    table = pa.table({"row": list(range(200)), "value": [1] * 200})
    kwargs = dict(table=table, pattern="A B+ C", define={"B": "B.value >= FIRST(A.value)", "C": "value < 0"},
                  measures=SPAN)
    assert run(**kwargs)[0] == []
    with pytest.raises(CeqlError) as info:
        run(max_threads=50, **kwargs)
    assert info.value.error_class == "MATCH_RECOGNIZE_TOO_MANY_THREADS"
    assert "max_threads" in info.value.hint and MAX_THREADS_CONF in info.value.hint
    assert info.value.params["max_threads"] == 50


def _walk(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table({"row": np.arange(n), "value": np.cumsum(rng.choice([-1, 1], n)) + 10 * n})


def _v(n: int) -> pa.Table:
    """One V over the whole table: every row of the descent could start a match, and their
    threads meet in DOWN+ with the same last DOWN row, so they merge."""
    half = n // 2
    return pa.table({"row": np.arange(n), "value": np.concatenate([np.arange(half, 0, -1), np.arange(n - half)])})


@pytest.mark.parametrize("data", [_walk, _v])
def test_bounded_registers_stay_linear_on_20000_rows(data):
    define = {"DOWN": "value < coalesce(LAST(DOWN.value, 1), PREV(value))", "UP": "UP.value > LAST(UP.value, 1)"
              " OR (LAST(UP.value, 1) IS NULL AND value > PREV(value))"}
    steps = {}
    for n in (2_000, 20_000):
        got, matcher = run(table=data(n), pattern="STRT DOWN+ UP+", define=define, measures=SPAN,
                           skip=mr_ast.PAST_LAST_ROW)
        steps[n] = matcher.steps
        c, text = clause(pattern="STRT DOWN+ UP+", define={"DOWN": "value < PREV(value)", "UP": "value > PREV(value)"},
                         measures=SPAN)
        _, nfa, skip = compiled(c, text)
        assert got == run_match_recognize(c, data(n), text, PikeMatcher(nfa, skip)).to_pylist()
    assert steps[20_000] < 12 * steps[2_000], steps
    assert steps[20_000] < 40 * 20_000, steps


def test_an_unknown_column_in_a_history_dependent_define_is_placed():
    c, text = clause(pattern="A B", define={"B": "B.value > LAST(A.nope)"})
    analysis, nfa, skip = compiled(c, text)
    with pytest.raises(CeqlError) as info:
        run_match_recognize(c, ROWS, text, matcher_for(c, text, nfa, skip, analysis.row_local))
    assert info.value.error_class == "UNKNOWN_COLUMN" and info.value.column == text.index("nope") - 1


def test_registers_that_are_equal_but_print_apart_stay_apart():
    # 0.0 == -0.0, but not as text: the match from row 3 sums 0.0 + -0.0 = 0.0, while the one
    # from row 2 summed -0.0 + -0.0 = -0.0 before it, and each thread keeps its own sum
    table = pa.table({"row": [1, 2, 3, 4], "value": [-0.0, -0.0, 0.0, -0.0]})
    c, text = clause(pattern="A A", define={"A": "count(*) = 1 OR CAST(sum(A.value) AS STRING) <> '-0.0'"},
                     measures=SPAN, skip=mr_ast.TO_NEXT_ROW)
    analysis, nfa, skip = compiled(c, text)
    matcher = matcher_for(c, text, nfa, skip, analysis.row_local)
    assert isinstance(matcher, ThreadMatcher)
    got = run_match_recognize(c, table, text, matcher).to_pylist()
    assert got == [{"first": 2, "last": 3}, {"first": 3, "last": 4}]
