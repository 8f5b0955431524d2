"""LAST on the arena (cerql/exec/kernel/selection.py): the winning data set is searched for,
not chosen among every candidate, and the results equal the reference evaluator's.

Hand cases from seed 000 (2-foundations.pdf, section 4, with erratum E1's corrected direction)
and DESIGN.md 4.3; random queries of every shape under LAST, with windows, PARTITION BY and
CONSUME BY, against the reference; and queries whose candidates cannot be counted (which
``strategies.admit`` refused with TOO_MANY_CANDIDATES_PER_EVENT) now finish.
"""

from __future__ import annotations

import pandas as pd
import pytest
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


@derandomized(800)
@given(cases(strategies=["LAST"], max_size=14))
@example((Q(KLEENE_OF_SEQ, "LAST"), frame("A B A B A B A B")))
@example((Q(KLEENE_OF_SEQ, "LAST", window=("events", 3), consume="PARTITION"), frame("A B A B A A B B")))
@example((Q(OR_SAME_TYPE, "LAST"), frame("A A B A")))
def test_last_gives_the_reference_results(case):
    query, df = case
    compare(query, df)
