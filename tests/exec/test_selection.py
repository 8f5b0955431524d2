"""NEXT, LAST and MAX without every candidate. LAST on the arena (cerql/exec/kernel/selection.py):
the winning data set is searched for. NEXT and MAX: the automaton drops the runs a strict
superset with the same first event beats (cerql/exec/determinizer.Determinizer's dominance), and
NEXT searches for the earliest live start before it enumerates. The results equal the reference
evaluator's.

Hand cases from seed 000 (2-foundations.pdf, section 4, with erratum E1's corrected direction)
and docs/language.md, "Selection strategies"; random queries of every shape under each
strategy, with windows, PARTITION BY and CONSUME BY, against the reference; and queries whose
candidates cannot be counted (which ``strategies.admit`` refused with
TOO_MANY_CANDIDATES_PER_EVENT) now finish.
"""

from __future__ import annotations

import pandas as pd
from hypothesis import example, given

import cerql
from tests.exec.test_engine_vs_reference import KLEENE_OF_SEQ, OR_SAME_TYPE, Q, compare, frame
from tests.generators import cases, derandomized
from tests.support import typed_stream


def positions(df: pd.DataFrame, var: str) -> list:
    """Each result's ts values of a variable (one event or several), in result order."""
    out = []
    for value in df[var]:
        out.append([e["ts"] for e in value] if isinstance(value, list) else value["ts"])
    return out


def test_seed000_stream_that_separates_the_strategies():
    # A B A B C at 0..4: LAST keeps {2, 3, 4} (max of the difference with {0, 3, 4} is 2, with
    # {0, 1, 4} it is 3)
    s = {"s": typed_stream("A B A B C")}
    df = cerql.run("SELECT LAST * FROM s WHERE A AS a ; B AS b ; C AS c ORDER BY ts", s)
    assert (positions(df, "a"), positions(df, "b"), positions(df, "c")) == ([2], [3], [4])


def test_an_extension_by_earlier_events_wins():
    # {1, 3, 4} and {0, 1, 3, 4}... under A+ ; B the winner holds every A before the B
    s = {"s": typed_stream("A A C A B")}
    df = cerql.run("SELECT LAST * FROM s WHERE A+ AS a ; B AS b ORDER BY ts", s)
    assert positions(df, "a") == [[0, 1, 3]]


def test_every_result_with_the_winning_set_is_kept():
    # (A AS x) OR (A AS y): one event, two labels; both results have D = {1}
    s = {"s": typed_stream("B A")}
    df = cerql.run("SELECT LAST * FROM s WHERE (A AS x) OR (A AS y) ORDER BY ts", s)
    assert len(df) == 2


def test_the_window_applies_before_the_strategy():
    # A B B A C: at C the results start at the A at 0 ({0, 1, 4}, {0, 2, 4}, {0, 1, 2, 4}); the
    # A at 3 has no B after it. WITHIN 3 EVENTS leaves none: the winner is among the live ones.
    s = {"s": typed_stream("A B B A C")}
    df = cerql.run("SELECT LAST * FROM s WHERE A AS a ; B+ AS b ; C AS c ORDER BY ts WITHIN 4 EVENTS", s)
    assert positions(df, "a") == [0] and positions(df, "b") == [[1, 2]]
    df = cerql.run("SELECT LAST * FROM s WHERE A AS a ; B+ AS b ; C AS c ORDER BY ts WITHIN 3 EVENTS", s)
    assert len(df) == 0
    # the best set starts earliest and dies with the window; the best of the live ones wins:
    # A D B C at 0..3 gives {0, 2, 3} and {1, 3} at C; LAST prefers {0, 2, 3} (2 is the
    # greatest of the difference), which WITHIN 2 EVENTS cuts off
    s = {"s": typed_stream("A D B C")}
    query = "SELECT LAST * FROM s WHERE (A AS a ; B AS b ; C AS c) OR (D AS d ; C AS c) ORDER BY ts"
    assert positions(cerql.run(query, s), "a") == [0]
    df = cerql.run(query + " WITHIN 2 EVENTS", s)
    assert len(df) == 1 and df["a"].isna().all() and positions(df, "d") == [1]


def test_kleene_runs_that_failed_for_their_candidates_now_finish():
    """Issue 19's failing shapes: a long run of one partition without WITHIN, and a window of
    many events over trades."""
    n = 3000
    spec = " ".join(["SELL"] + ["BUY"] * n + ["SELL"])
    s = {"s": typed_stream(spec)}
    df = cerql.run("SELECT LAST * FROM s WHERE SELL AS a : BUY+ AS b ORDER BY ts", s)
    assert len(df) == n and positions(df, "b")[-1] == list(range(1, n + 1))
    df = cerql.run("SELECT LAST * FROM s WHERE SELL AS a ; BUY+ AS b ; SELL AS e ORDER BY ts WITHIN 10000 EVENTS", s)
    assert len(df) == 1 and len(df["b"].iloc[0]) == n


def test_seed000_stream_under_next_and_max():
    # A B A B C at 0..4: ALL gives {0, 1, 4}, {0, 3, 4}, {2, 3, 4}. NEXT keeps {0, 1, 4} (the min
    # of its difference with {0, 3, 4} is 1, with {2, 3, 4} 0); MAX keeps all three (pairwise
    # incomparable)
    s = {"s": typed_stream("A B A B C")}
    df = cerql.run("SELECT NEXT * FROM s WHERE A AS a ; B AS b ; C AS c ORDER BY ts", s)
    assert (positions(df, "a"), positions(df, "b"), positions(df, "c")) == ([0], [1], [4])
    df = cerql.run("SELECT MAX * FROM s WHERE A AS a ; B AS b ; C AS c ORDER BY ts", s)
    assert sorted(zip(positions(df, "a"), positions(df, "b"))) == [(0, 1), (0, 3), (2, 3)]


def test_next_takes_the_earliest_live_start():
    # A A B B C: NEXT's winner starts at the first A and takes every B; WITHIN 2 EVENTS leaves
    # only results that start at 2 or later (none: the As are at 0 and 1), WITHIN 3 EVENTS the
    # A at 1, which the window keeps although the A at 0 is better
    s = {"s": typed_stream("A A B B C")}
    query = "SELECT NEXT * FROM s WHERE A AS a ; B+ AS b ; C AS c ORDER BY ts"
    df = cerql.run(query, s)
    assert positions(df, "a") == [0] and positions(df, "b") == [[2, 3]]
    df = cerql.run(query + " WITHIN 2 EVENTS", s)
    assert len(df) == 0
    df = cerql.run(query + " WITHIN 3 EVENTS", s)
    assert positions(df, "a") == [1] and positions(df, "b") == [[2, 3]]


def test_next_keeps_every_label_of_its_start_event():
    # the first A starts two results, one as x and one as y: two starts of one event (numbered
    # one after the other in arena.starts). NEXT's winning set {0, 2, 4} holds both; its jump to
    # the start must not land on one of them only.
    s = {"s": typed_stream("A A B A C")}
    query = "SELECT NEXT * FROM s WHERE (A AS x OR A AS y) ; B AS b ; C AS c ORDER BY ts"
    for engine in ("local", "reference"):
        df = cerql.run(query, s, engine=engine)
        rows = df.to_dict("records")
        assert sorted((r["x"] is None, r["y"] is None) for r in rows) == [(False, True), (True, False)]
        assert df[["match_start", "match_end"]].values.tolist() == [[0, 4], [0, 4]]


def test_max_keeps_a_subset_whose_superset_left_the_window():
    # A+ ; B over A A A B: {0, 1, 2, 3} contains every other result; WITHIN 2 EVENTS removes the
    # results that start at 0, and {1, 2, 3} is then the largest
    s = {"s": typed_stream("A A A B")}
    query = "SELECT MAX * FROM s WHERE A+ AS a ; B AS b ORDER BY ts"
    assert positions(cerql.run(query, s), "a") == [[0, 1, 2]]
    assert positions(cerql.run(query + " WITHIN 2 EVENTS", s), "a") == [[1, 2]]


def test_next_and_max_over_long_kleene_runs_finish():
    """Issue 19's failing shapes under NEXT and MAX: a contiguous run of thousands of events of
    one partition without WITHIN, and the same run between two SELLs in a window."""
    n = 3000
    s = {"s": typed_stream(" ".join(["SELL"] + ["BUY"] * n + ["SELL"]))}
    for strategy in ("NEXT", "MAX"):
        df = cerql.run(f"SELECT {strategy} * FROM s WHERE SELL AS a : BUY+ AS b ORDER BY ts", s)
        assert len(df) == n and positions(df, "b")[-1] == list(range(1, n + 1))
        df = cerql.run(f"SELECT {strategy} * FROM s WHERE SELL AS a ; BUY+ AS b ; SELL AS e ORDER BY ts "
                       "WITHIN 10000 EVENTS", s)
        assert len(df) == 1 and len(df["b"].iloc[0]) == n


def test_max_of_many_starts_keeps_each_start_once():
    # A ; B+ ; C over (A B B) x 200, C: every A starts one maximal set (itself, every B after it,
    # the C); none contains another
    n = 200
    s = {"s": typed_stream("A B B " * n + "C")}
    df = cerql.run("SELECT MAX * FROM s WHERE A AS a ; B+ AS b ; C AS c ORDER BY ts", s)
    assert sorted(positions(df, "a")) == [3 * k for k in range(n)]
    assert all(len(b) == 2 * (n - a // 3) for a, b in zip(positions(df, "a"), positions(df, "b")))


@derandomized(2000)
@given(cases(strategies=["LAST", "NEXT", "MAX"], max_size=14))
@example((Q(KLEENE_OF_SEQ, "LAST"), frame("A B A B A B A B")))
@example((Q(KLEENE_OF_SEQ, "LAST", window=("events", 3), consume="PARTITION"), frame("A B A B A A B B")))
@example((Q(OR_SAME_TYPE, "LAST"), frame("A A B A")))
@example((Q(KLEENE_OF_SEQ, "NEXT"), frame("A B A B A B A B")))
@example((Q(KLEENE_OF_SEQ, "NEXT", window=("events", 3), consume="PARTITION"), frame("A B A B A A B B")))
@example((Q(OR_SAME_TYPE, "NEXT"), frame("A A B A")))
@example((Q(KLEENE_OF_SEQ, "MAX"), frame("A B A B A B A B")))
@example((Q(KLEENE_OF_SEQ, "MAX", window=("events", 3), consume="PARTITION"), frame("A B A B A A B B")))
@example((Q(OR_SAME_TYPE, "MAX"), frame("A A B A")))
@example((Q(("filter", ("plus", ("or", ("as", ("atom", "A"), "A"), ("as", ("filter", ("atom", "A"), ("pred", "A", "v > 0")),
                                                                     "x"))),
            ("and", ("pred", "x", "v > 0"), ("pred", "A", "v > 0"))), "NEXT"),
          frame("A A A A A A A", v=[0, 0, 0, 3, 0, 2, 0], ts=[0, 1, 2, 2, 2, 2, 2])))
def test_last_next_and_max_give_the_reference_results(case):
    query, df = case
    compare(query, df)


def test_max_compares_every_pair_when_results_reach_past_its_index():
    # MAX's index of kept positions covers 65 536 positions back from the end event
    # (strategies.INDEX); the A at 0 is 70 003 back, so the index turns off and every pair of
    # results is tested: {0, 70 001, 70 002} holds the others' As, and is the one MAX result
    s = {"s": typed_stream(" ".join(["A"] + ["X"] * 70_000 + ["A", "A", "B"]))}
    df = cerql.run("SELECT MAX * FROM s WHERE A+ AS a ; B AS b ORDER BY ts", s)
    assert positions(df, "a") == [[0, 70_001, 70_002]] and positions(df, "b") == [70_003]
    df = cerql.run("SELECT MAX * FROM s WHERE (A AS a ; B AS b) OR (A AS a ; A AS c ; B AS b) ORDER BY ts", s)
    assert sorted(zip(positions(df, "a"), positions(df, "c"))) == [(0, 70_001), (0, 70_002), (70_001, 70_002)]
