"""NOT, AND, ALL and UNLESS (seed 003 section 5): hand-checked cases on both engines.

Each case gives the results as (match_end, D) pairs, D the set of selected positions, on a
stream whose ts is the position. The random differential tests (test_engine_vs_reference.py,
tests/spark) draw these operators too; these are cases whose answers are worked out by hand from
docs/language.md and docs/semantics.md ("Negation and conjunction" in both, whose examples are
among them) and from seed 003's digest (G10-G12, K13-K15, K18, K19, K27).
"""

from __future__ import annotations

import pytest

import cerql
from tests.support import MATCH_COLUMNS, positions, typed_stream

ENGINES = ["local", "reference"]


def ends_and_sets(df) -> list[tuple[int, tuple[int, ...]]]:
    """(match_end, D) per result row, sorted."""
    columns = [c for c in df.columns if c not in MATCH_COLUMNS]
    return sorted((row["match_end"], tuple(sorted({p for c in columns for p in positions(row[c])})))
                  for _, row in df.iterrows())


def run(query: str, stream, engine: str):
    order = "" if "ORDER BY" in query else " ORDER BY ts"
    return cerql.run(f"SELECT {query}{order}", {"s": stream}, engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_all_takes_both_sides_in_any_order(engine):
    # docs/language.md, "Negation and conjunction": stream A B A C, (A AS a ALL C AS c) gives {0,3} and {2,3}
    df = run("* FROM s WHERE A AS a ALL C AS c", typed_stream("A B A C"), engine)
    assert ends_and_sets(df) == [(3, (0, 3)), (3, (2, 3))]
    df = run("* FROM s WHERE C AS c ALL A AS a", typed_stream("C B A"), engine)
    assert ends_and_sets(df) == [(2, (0, 2))]  # the order in the query is not the order in time


@pytest.mark.parametrize("engine", ENGINES)
def test_all_lets_the_sides_overlap(engine):
    # seed 003 K15: T ALL T on T T gives {0}, {1} and {0,1}: not T ; T
    df = run("* FROM s WHERE T ALL T", typed_stream("T T"), engine)
    assert ends_and_sets(df) == [(0, (0,)), (1, (0, 1)), (1, (1,))]


@pytest.mark.parametrize("engine", ENGINES)
def test_freezing_plantation(engine):
    # seed 003 G10: a temperature below 0 and a humidity of at least 60, in any order
    stream = typed_stream("H T T H", value=[70, -1, 5, 65])
    df = run("* FROM s WHERE (T ALL H) FILTER T[value < 0] AND H[value >= 60]", stream, engine)
    assert ends_and_sets(df) == [(1, (0, 1)), (3, (1, 3))]


# seed 003, Figure 1: farm sensors, T = temperature, H = humidity
FIGURE_1 = typed_stream("T H H T H T H H T H", value=[-2, 30, 20, -1, 27, 2, 45, 50, -2, 65])


@pytest.mark.parametrize("engine", ENGINES)
def test_freezing_plantation_on_the_running_stream(engine):
    # every freezing reading with the humid one at 9, in either order: T at 5 is above 0
    df = run("* FROM s WHERE (T ALL H) FILTER T[value < 0] AND H[value >= 60]", FIGURE_1, engine)
    assert ends_and_sets(df) == [(9, (0, 9)), (9, (3, 9)), (9, (8, 9))]
    # with UNLESS: no humidity of 45 or more between them rules out the first two
    df = run("* FROM s WHERE ((T ALL H) FILTER T[value < 0] AND H[value >= 60]) UNLESS (H FILTER H[value BETWEEN 45 "
             "AND 59])", FIGURE_1, engine)
    assert ends_and_sets(df) == [(9, (8, 9))]


@pytest.mark.parametrize("engine", ENGINES)
def test_all_under_a_filter_across_variables(engine):
    # seed 003 G10: (A AS x ALL B AS y) FILTER x.p < y.p on B(5) A(1) B(0) A(7)
    stream = typed_stream("B A B A", p=[5, 1, 0, 7])
    df = run("* FROM s WHERE (A AS x ALL B AS y) FILTER x.p < y.p", stream, engine)
    assert ends_and_sets(df) == [(1, (0, 1))]


@pytest.mark.parametrize("engine", ENGINES)
def test_and_takes_the_same_positions(engine):
    # docs/language.md, "Negation and conjunction": (A AS a ; C AS c) AND (A : C) on A B A C gives a={2}, c={3}
    df = run("a, c FROM s WHERE (A AS a ; C AS c) AND (A : C)", typed_stream("A B A C"), engine)
    assert df[["match_start", "match_end"]].values.tolist() == [[2, 3]]
    assert [(r["a"]["ts"], r["c"]["ts"]) for r in df.to_dict("records")] == [(2, 3)]
    # seed 003 K27: (A ; B+) AND (A+ ; B) is A ; B
    df = run("* FROM s WHERE (A ; B+) AND (A+ ; B)", typed_stream("A A B B"), engine)
    assert ends_and_sets(df) == [(2, (0, 2)), (2, (1, 2)), (3, (0, 3)), (3, (1, 3))]


@pytest.mark.parametrize("engine", ENGINES)
def test_and_unites_the_variables_of_both_sides(engine):
    # Seed 003 asks for the same valuation on both sides (K13 gives nothing); cerql unites them
    # (docs/semantics.md, "Negation and conjunction"), so one side names what the other leaves unnamed
    df = run("X, Y FROM s WHERE (T AS X) AND (T AS Y)", typed_stream("T T"), engine)
    assert sorted((r["X"]["ts"], r["Y"]["ts"]) for r in df.to_dict("records")) == [(0, 0), (1, 1)]


@pytest.mark.parametrize("engine", ENGINES)
def test_not_is_one_event_in_the_interval_that_binds_nothing(engine):
    # docs/language.md, "Negation and conjunction": NOT (A) ; C AS c on A B A C gives c={3} with interval [1, 3]
    df = run("* FROM s WHERE NOT (A) ; C AS c", typed_stream("A B A C"), engine)
    assert df[["match_start", "match_end"]].values.tolist() == [[1, 3]]
    assert list(df.columns) == ["match_id", "match_start", "match_end", "c"]
    # named, it is selected like any event: (A ; NOT (A) AS n) : C, the C right after n
    df = run("a, n FROM s WHERE A AS a ; NOT (A) AS n : C", typed_stream("A B A C B C"), engine)
    assert sorted((r["a"]["ts"], r["n"]["ts"]) for r in df.to_dict("records")) == [(0, 4), (2, 4)]


@pytest.mark.parametrize("engine", ENGINES)
def test_not_with_a_filter_negates_the_filtered_atom(engine):
    # NOT (B FILTER B[v > 1]): any event but a B with v > 1; a NULL v fails v > 1, so that B is one
    stream = typed_stream("A B B C B A", v=[0, 2, None, 0, 1, 0])
    df = run("x FROM s WHERE A ; NOT (B FILTER B[v > 1]) AS x", stream, engine)
    assert sorted(r["x"]["ts"] for r in df.to_dict("records")) == [2, 3, 4, 5]
    # CORE's tests write it so
    df = run("* FROM s WHERE NOT (SELL); BUY AS b; SELL AS s", typed_stream("SELL BUY SELL X BUY SELL"), engine)
    assert sorted(df[["match_start", "match_end"]].values.tolist()) == [[1, 5], [3, 5]]


@pytest.mark.parametrize("engine", ENGINES)
def test_operators_nest_with_windows_and_strategies(engine):
    stream = typed_stream("A B A C B C")
    df = run("NEXT * FROM s WHERE (A AS a ; B AS b) ALL C AS c", stream, engine)
    assert ends_and_sets(df) == [(3, (0, 1, 3)), (4, (0, 3, 4)), (5, (0, 1, 5))]
    df = run("* FROM s WHERE (A AS a ; B AS b) ALL C AS c", stream, engine)
    windowed = run("* FROM s WHERE (A AS a ; B AS b) ALL C AS c ORDER BY ts WITHIN 2 EVENTS", stream, engine)
    assert ends_and_sets(windowed) == [(4, (2, 3, 4))]
    assert set(ends_and_sets(windowed)) < set(ends_and_sets(df))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_filter_across_variables_inside_an_operand_holds_on_that_operand(engine):
    # the right side names the A b too; the FILTER reads the left side's b only (the B), so both
    # adjacent pairs pass: on the united labels b would hold the A as well, and 0 > 0 fails
    stream = typed_stream("A B A B", v=[0, 1, 0, 2])
    df = run("* FROM s WHERE (A AS a ; B AS b FILTER b.v > a.v) AND (A AS b : B)", stream, engine)
    assert ends_and_sets(df) == [(1, (0, 1)), (3, (2, 3))]
    assert sorted(positions(r["b"]) for r in df.to_dict("records")) == [(0, 1), (2, 3)]
    df = run("* FROM s WHERE (A AS a ; B AS b FILTER b.v > a.v) ALL (A AS b) ORDER BY ts WITHIN 2 EVENTS",
             stream, engine)
    assert ends_and_sets(df) == [(1, (0, 1)), (2, (0, 1, 2)), (3, (2, 3))]


@pytest.mark.parametrize("engine", ENGINES)
def test_unless_drops_results_whose_interval_holds_one_of_the_right_side(engine):
    # docs/language.md, "Negation and conjunction": stream A B C, (A AS a ; C AS c) UNLESS B
    # and UNLESS A give nothing (A lies inside [0, 2]: ends included)
    for right in ("B", "A", "C"):
        assert len(run(f"* FROM s WHERE (A AS a ; C AS c) UNLESS {right}", typed_stream("A B C"), engine)) == 0
    assert len(run("* FROM s WHERE (A AS a ; C AS c) UNLESS D", typed_stream("A B C"), engine)) == 1
    # seed 003 K18 and K19, the span reading cerql chose (docs/semantics.md, "Negation and conjunction")
    assert ends_and_sets(run("* FROM s WHERE (A ; B) UNLESS C", typed_stream("C A B"), engine)) == [(2, (1, 2))]
    assert ends_and_sets(run("* FROM s WHERE (A ; B) UNLESS C", typed_stream("A C B A B"), engine)) == [(4, (3, 4))]


@pytest.mark.parametrize("engine", ENGINES)
def test_temperature_jump(engine):
    # seed 003 G12: a jump from below 20 to above 40 with no temperature from 20 to 40 in between
    stream = typed_stream("T T T T T", v=[10, 30, 50, 15, 45])
    query = ("lo, hi FROM s WHERE ((T AS lo ; T AS hi) FILTER lo[v < 20] AND hi[v > 40]) "
             "UNLESS (T FILTER T[v BETWEEN 20 AND 40])")
    df = run(query, stream, engine)
    assert [(r["lo"]["ts"], r["hi"]["ts"]) for r in df.to_dict("records")] == [(3, 4)]


@pytest.mark.parametrize("engine", ENGINES)
def test_unless_applies_before_the_strategy_and_with_the_window(engine):
    stream = typed_stream("A B A C B A B")
    # under ALL, A ; B ends at 1, 4 and 6; UNLESS C drops those whose interval holds the C at 3
    df = run("* FROM s WHERE (A AS a ; B AS b) UNLESS C", stream, engine)
    assert ends_and_sets(df) == [(1, (0, 1)), (6, (5, 6))]
    assert len(run("* FROM s WHERE A AS a ; B AS b", stream, engine)) == 6  # UNLESS leaves 2 of 6
    # NEXT picks among what UNLESS leaves: at 4 every result holds the C, at 6 only the A at 5 is left
    df = run("NEXT * FROM s WHERE (A AS a ; B AS b) UNLESS C", stream, engine)
    assert ends_and_sets(df) == [(1, (0, 1)), (6, (5, 6))]
    # CONSUME BY and UNLESS both bound where results may start
    df = run("* FROM s WHERE (A AS a ; B+ AS b) UNLESS (C : B) ORDER BY ts CONSUME BY ANY", stream, engine)
    assert ends_and_sets(df) == [(1, (0, 1)), (6, (5, 6))]


@pytest.mark.parametrize("engine", ENGINES)
def test_unless_inside_a_pattern_reads_the_interval_of_its_own_part(engine):
    # the D at 1 lies between A and B: outside (B ; C)'s interval [2, 3], inside the whole [0, 3]
    stream = typed_stream("A D B C")
    assert ends_and_sets(run("* FROM s WHERE A AS a ; (B AS b ; C AS c UNLESS D)", stream, engine)) == [(3, (0, 2, 3))]
    assert ends_and_sets(run("* FROM s WHERE (A AS a ; B AS b ; C AS c) UNLESS D", stream, engine)) == []
    # A B C B D C: B ; C at [1, 2] holds no D; [1, 5] and [3, 5] hold the D at 4
    stream = typed_stream("A B C B D C")
    assert ends_and_sets(run("* FROM s WHERE A AS a ; (B AS b ; C AS c UNLESS D)", stream, engine)) == [(2, (0, 1, 2))]
    # a later part of the pattern may still reach past the D
    df = run("* FROM s WHERE A AS a ; (B AS b ; C AS c UNLESS D) ; C AS z", stream, engine)
    assert ends_and_sets(df) == [(5, (0, 1, 2, 5))]


@pytest.mark.parametrize("engine", ENGINES)
def test_unless_under_kleene_plus_checks_each_repetition(engine):
    # B C B D C B C: the repetitions B ; C without a D inside are [0, 1] and [5, 6] (the B at 2
    # only reaches a C past the D at 3); their sequence spans the D, which lies in neither
    stream = typed_stream("B C B D C B C")
    df = run("* FROM s WHERE (B AS b ; C AS c UNLESS D)+", stream, engine)
    assert ends_and_sets(df) == [(1, (0, 1)), (6, (0, 1, 5, 6)), (6, (5, 6))]


@pytest.mark.parametrize("engine", ENGINES)
def test_unless_inside_all_and_before_the_strategy(engine):
    # ALL's interval [0, 3] holds the C at 2, its left operand's [0, 1] does not
    df = run("* FROM s WHERE (A AS a ; B AS b UNLESS C) ALL D AS d", typed_stream("A B C D"), engine)
    assert ends_and_sets(df) == [(3, (0, 1, 3))]
    assert ends_and_sets(run("* FROM s WHERE (A AS a ; B AS b UNLESS C) ALL D AS d", typed_stream("A C B D"),
                             engine)) == []
    # NEXT picks among what UNLESS leaves: B ; C from the B at 1 holds the D at 2
    stream = typed_stream("A B D B C")
    assert ends_and_sets(run("NEXT * FROM s WHERE A AS a ; (B AS b ; C AS c)", stream, engine)) == [(4, (0, 1, 4))]
    df = run("NEXT * FROM s WHERE A AS a ; (B AS b ; C AS c UNLESS D)", stream, engine)
    assert ends_and_sets(df) == [(4, (0, 3, 4))]


@pytest.mark.parametrize("engine", ENGINES)
def test_unless_inside_under_each_strategy(engine):
    # A B A D B C: B ; C from the B at 1 holds the D at 3, so every result takes the B at 4
    stream = typed_stream("A B A D B C")
    query = "{} * FROM s WHERE A AS a ; (B AS b ; C AS c UNLESS D)"
    assert ends_and_sets(run(query.format("ALL"), stream, engine)) == [(5, (0, 4, 5)), (5, (2, 4, 5))]
    assert ends_and_sets(run(query.format("NEXT"), stream, engine)) == [(5, (0, 4, 5))]
    assert ends_and_sets(run(query.format("LAST"), stream, engine)) == [(5, (2, 4, 5))]
    assert ends_and_sets(run(query.format("MAX"), stream, engine)) == [(5, (0, 4, 5)), (5, (2, 4, 5))]
    assert ends_and_sets(run(query.format("STRICT"), stream, engine)) == []
    assert len(run(query.format("ANY"), stream, engine)) == 1
    assert ends_and_sets(run(query.format("STRICT"), typed_stream("A B C D"), engine)) == [(2, (0, 1, 2))]
    # without the UNLESS, NEXT takes the B at 1
    assert ends_and_sets(run("NEXT * FROM s WHERE A AS a ; (B AS b ; C AS c)", stream, engine)) == [(5, (0, 1, 5))]


@pytest.mark.parametrize("engine", ENGINES)
def test_unless_inside_keeps_the_limit_of_matches_per_event(engine):
    query = "SELECT * FROM s WHERE A AS a ; (B AS b UNLESS C) ORDER BY ts"
    stream = {"s": typed_stream("A A A B")}
    assert len(cerql.run(query, stream, engine=engine, max_matches_per_event=3)) == 3
    with pytest.raises(cerql.ExecutionError) as err:
        cerql.run(query, stream, engine=engine, max_matches_per_event=2)
    assert err.value.error_class == "TOO_MANY_MATCHES_PER_EVENT"


def test_unless_inside_a_pattern_is_checked_on_enumerated_results_and_explain_says_so():
    text = cerql.explain("SELECT * FROM s WHERE A AS a ; (B AS b ; C AS c UNLESS D) ORDER BY ts")
    assert "UNLESS inside the pattern" in text and "unless inside 0" in text


def test_unless_errors():
    stream = {"s": typed_stream("A B C")}
    with pytest.raises(cerql.AnalysisError) as err:
        cerql.run("SELECT b FROM s WHERE (A AS a ; C AS c) UNLESS B AS b ORDER BY ts", stream)
    assert (err.value.error_class, err.value.column) == ("UNLESS_VARIABLE_OUTSIDE", 8)
    with pytest.raises(cerql.UnsupportedError) as err:
        cerql.run("SELECT * FROM s WHERE (A AS a ; C AS c) UNLESS (B AS b ; B AS d FILTER d.v > b.v) ORDER BY ts",
                  {"s": typed_stream("A B C", v=[0, 1, 2])})
    assert err.value.error_class == "CROSS_FILTER_IN_UNLESS"
    with pytest.raises(cerql.UnsupportedError) as err:
        cerql.run("SELECT * FROM s WHERE (A AS a ; C AS c) UNLESS (B ; (A UNLESS C)) ORDER BY ts", stream)
    assert (err.value.error_class, err.value.line, err.value.column) == ("UNLESS_IN_UNLESS", 1, 54)


@pytest.mark.parametrize("engine", ENGINES)
def test_unless_sees_the_whole_substream_when_a_filter_ties_variables(engine):
    # a.v = b.v could split the substream by v (planner/equality.py), but the C between them has
    # another v and must still rule the match out: UNLESS's right side reads every event
    stream = typed_stream("A C B", v=[1, 2, 1])
    assert len(run("* FROM s WHERE (A AS a ; B AS b) UNLESS C FILTER a.v = b.v", stream, engine)) == 0
    assert len(run("* FROM s WHERE (A AS a ; B AS b) UNLESS D FILTER a.v = b.v", stream, engine)) == 1
