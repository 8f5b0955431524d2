"""NOT, AND and ALL (DESIGN.md 4.8, seed 003 section 5): hand-checked cases on both engines.

Each case gives the results as (match_end, D) pairs, D the set of selected positions, on a
stream whose ts is the position. The random differential tests (test_engine_vs_reference.py,
tests/spark) draw these operators too; these are the cases whose answers are written down in
DESIGN.md 4.8 and in seed 003's digest (G10, G11, K13-K15, K27).
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
    # DESIGN.md 4.8: stream A B A C, (A AS a ALL C AS c) gives {0,3} and {2,3}
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


@pytest.mark.parametrize("engine", ENGINES)
def test_all_under_a_filter_across_variables(engine):
    # seed 003 G10: (A AS x ALL B AS y) FILTER x.p < y.p on B(5) A(1) B(0) A(7)
    stream = typed_stream("B A B A", p=[5, 1, 0, 7])
    df = run("* FROM s WHERE (A AS x ALL B AS y) FILTER x.p < y.p", stream, engine)
    assert ends_and_sets(df) == [(1, (0, 1))]


@pytest.mark.parametrize("engine", ENGINES)
def test_and_takes_the_same_positions(engine):
    # DESIGN.md 4.8: (A AS a ; C AS c) AND (A : C) on A B A C gives a={2}, c={3}
    df = run("a, c FROM s WHERE (A AS a ; C AS c) AND (A : C)", typed_stream("A B A C"), engine)
    assert df[["match_start", "match_end"]].values.tolist() == [[2, 3]]
    assert [(r["a"]["ts"], r["c"]["ts"]) for r in df.to_dict("records")] == [(2, 3)]
    # seed 003 K27: (A ; B+) AND (A+ ; B) is A ; B
    df = run("* FROM s WHERE (A ; B+) AND (A+ ; B)", typed_stream("A A B B"), engine)
    assert ends_and_sets(df) == [(2, (0, 2)), (2, (1, 2)), (3, (0, 3)), (3, (1, 3))]


@pytest.mark.parametrize("engine", ENGINES)
def test_and_unites_the_variables_of_both_sides(engine):
    # Seed 003 asks for the same valuation on both sides (K13 gives nothing); cerql unites them
    # (DESIGN.md 4.8), so one side names what the other leaves unnamed
    df = run("X, Y FROM s WHERE (T AS X) AND (T AS Y)", typed_stream("T T"), engine)
    assert sorted((r["X"]["ts"], r["Y"]["ts"]) for r in df.to_dict("records")) == [(0, 0), (1, 1)]


@pytest.mark.parametrize("engine", ENGINES)
def test_not_is_one_event_in_the_interval_that_binds_nothing(engine):
    # DESIGN.md 4.8: NOT (A) ; C AS c on A B A C gives c={3} with interval [1, 3]
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


def test_cross_filter_inside_a_product_is_refused_with_its_position():
    with pytest.raises(cerql.UnsupportedError) as err:
        cerql.run("SELECT * FROM s WHERE (A AS a ; B AS b FILTER b.v > a.v) AND (A : B) ORDER BY ts",
                  {"s": typed_stream("A B", v=[0, 1])})
    assert err.value.error_class == "CROSS_FILTER_IN_PRODUCT" and err.value.column == 47


def test_unless_is_checked_but_not_evaluated_yet():
    stream = {"s": typed_stream("A B C")}
    with pytest.raises(cerql.UnsupportedError) as err:
        cerql.run("SELECT * FROM s WHERE (A AS a ; C AS c) UNLESS B ORDER BY ts", stream)
    assert err.value.error_class == "UNLESS_NOT_EVALUATED"
    with pytest.raises(cerql.AnalysisError) as err:
        cerql.run("SELECT b FROM s WHERE (A AS a ; C AS c) UNLESS B AS b ORDER BY ts", stream)
    assert (err.value.error_class, err.value.column) == ("UNLESS_VARIABLE_OUTSIDE", 8)
