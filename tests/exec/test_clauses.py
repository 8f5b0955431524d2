"""Clause-level semantics under every engine (the reference evaluator and the automaton), with
exact expected results.

WITHIN, PARTITION BY, ORDER BY and the stream order, FROM unions and event types, TYPED BY,
``S>T``, CONSUME BY, LIMIT, FILTER, projection, the output schema, the maxMatchesPerEvent guard,
empty inputs and unicode names, as docs/language.md and docs/semantics.md state them. Every
expected value is derived by hand from those rules; comments show the derivation where it is not
immediate.
"""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest

import cerql
from tests.support import MATCH_COLUMNS, match_sets, positions, typed_stream

BASE = pd.Timestamp("2024-03-01 12:00:00")


# --------------------------------------------------------------------------- helpers
def id_sets(df: pd.DataFrame, key: str = "id") -> list[tuple]:
    """Sorted D per result, positions named by ``key`` (an identifying column of the rows)."""
    out = []
    for _, row in df.iterrows():
        d = set()
        for c in df.columns:
            if c not in MATCH_COLUMNS and isinstance(row[c], (dict, list)):
                d.update(positions(row[c], key))
        out.append(tuple(sorted(d)))
    return sorted(out)


def row_sets(df: pd.DataFrame, columns, key: str = "ts") -> list[tuple]:
    """Per row, in row order: the union of the positions held by ``columns``."""
    return [tuple(sorted({p for c in columns for p in positions(row[c], key)})) for _, row in df.iterrows()]


def timed(spec: str, seconds, **columns) -> pd.DataFrame:
    """Rows of the types in ``spec`` with id = row number and ts = BASE + seconds (TIMESTAMP)."""
    types = spec.split()
    data = {"id": list(range(len(types))), "type": types,
            "ts": [BASE + pd.Timedelta(microseconds=round(s * 1_000_000)) for s in seconds]}
    data.update({k: list(v) for k, v in columns.items()})
    return pd.DataFrame(data)


def run(text, engine, **tables):
    return cerql.run(text, tables, engine=engine)


# =========================================================================== WITHIN
def test_within_events_bound_is_inclusive(engine):
    # end - start <= 2: B at 1 and 2 qualify, B at 3 does not.
    df = run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts WITHIN 2 EVENTS", engine,
             s=typed_stream("A B B B"))
    assert match_sets(df) == [(0, 1), (0, 2)]


def test_within_events_counts_rows_that_match_no_atom(engine):
    s = typed_stream("A C C B")
    assert match_sets(run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts WITHIN 2 EVENTS", engine, s=s)) == []
    assert match_sets(run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts WITHIN 3 EVENTS", engine, s=s)) == [(0, 3)]


def test_within_events_bounds_kleene_results(engine):
    df = run("SELECT * FROM s WHERE A+ AS a ORDER BY ts WITHIN 1 EVENTS", engine, s=typed_stream("A A A"))
    assert match_sets(df) == [(0,), (0, 1), (1,), (1, 2), (2,)]


def test_within_zero_events_keeps_single_position_matches(engine):
    df = run("SELECT * FROM s WHERE A+ AS a ORDER BY ts WITHIN 0 EVENTS", engine, s=typed_stream("A A"))
    assert match_sets(df) == [(0,), (1,)]


def test_within_minute_on_timestamp_is_inclusive(engine):
    # A at 0 s; B at 30 s, 60 s (exactly one minute: in) and 61 s (out).
    s = timed("A B B B", [0, 30, 60, 61])
    df = run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts WITHIN 1 MINUTE", engine, s=s)
    assert id_sets(df) == [(0, 1), (0, 2)]


def test_time_window_orders_by_the_only_timestamp_column(engine):
    # No ORDER BY: the only TIMESTAMP column orders the stream, whatever the row order.
    s = timed("B A B", [60, 0, 61])
    df = run("SELECT * FROM s WHERE A AS a ; B AS b WITHIN 1 MINUTE", engine, s=s)
    assert id_sets(df) == [(0, 1)]


@pytest.mark.parametrize("window, inside, outside", [
    ("500 MILLISECONDS", 0.5, 0.501),
    ("1 MILLISECOND", 0.001, 0.002),
    ("1 SECOND", 1, 1.000001),
    ("45 SECONDS", 45, 45.001),
    ("2 MINUTES", 120, 120.5),
    ("1 HOUR", 3600, 3601),
    ("2 HOURS", 7200, 7201),
    ("1 DAY", 86400, 86401),
    ("1 MINUTE 30 SECONDS", 90, 91),
    ("1 HOUR 1 SECOND", 3601, 3602),
    ("INTERVAL '5' MINUTE", 300, 300.001),
    ("INTERVAL '90' SECONDS", 90, 90.5),
], ids=lambda v: str(v))
def test_time_window_units(window, inside, outside, engine):
    s = timed("A B B", [0, inside, outside])  # seconds, exact to the microsecond
    df = run(f"SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts WITHIN {window}", engine, s=s)
    assert id_sets(df) == [(0, 1)]


def test_nanosecond_timestamps_are_accepted(engine):
    # pandas timestamps carry nanoseconds; B at 0.5 s + 1 ns is inside 1 SECOND, B at 2 s + 1 ns
    # outside, however sub-microsecond digits are treated.
    s = pd.DataFrame({"id": [0, 1, 2], "type": ["A", "B", "B"],
                      "ts": [BASE, BASE + pd.Timedelta(nanoseconds=500_000_001),
                             BASE + pd.Timedelta(nanoseconds=2_000_000_001)]})
    df = run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts WITHIN 1 SECOND", engine, s=s)
    assert id_sets(df) == [(0, 1)]


def test_within_days_on_date_ordering_column(engine):
    # The only DATE column orders the stream (rows given out of order) and days are measured on it.
    s = pd.DataFrame({
        "id": [0, 1, 2, 3],
        "type": ["B", "A", "B", "B"],
        "day": [dt.date(2024, 1, 3), dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 4)],
    })
    df = run("SELECT * FROM s WHERE A AS a ; B AS b WITHIN 2 DAYS", engine, s=s)
    assert id_sets(df) == [(0, 1), (1, 2)]
    starts = sorted(pd.Timestamp(v) for v in df.match_start)
    ends = sorted(pd.Timestamp(v) for v in df.match_end)
    assert starts == [pd.Timestamp("2024-01-01")] * 2
    assert ends == [pd.Timestamp("2024-01-02"), pd.Timestamp("2024-01-03")]


def test_within_numeric_column_orders_by_it_and_bounds_inclusively(engine):
    # WITHIN 10 [x] without ORDER BY: x orders the stream; A at 0; B at 5 and 10 in, 10.5 out.
    s = pd.DataFrame({"id": [0, 1, 2, 3], "type": ["B", "A", "B", "B"], "x": [10.0, 0.0, 5.0, 10.5]})
    df = run("SELECT * FROM s WHERE A AS a ; B AS b WITHIN 10 [x]", engine, s=s)
    assert id_sets(df) == [(0, 1), (1, 2)]
    assert sorted(zip(df.match_start, df.match_end)) == [(0.0, 5.0), (0.0, 10.0)]


def test_within_numeric_column_with_matching_order_by(engine):
    s = pd.DataFrame({"id": [0, 1, 2], "type": ["A", "B", "B"], "x": [100, 103, 104], "ts": [0, 1, 2]})
    df = run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY x WITHIN 3 [x]", engine, s=s)
    assert id_sets(df) == [(0, 1)]


def test_within_minute_on_timezone_aware_timestamps(engine):
    s = timed("A B B", [0, 60, 61])
    s["ts"] = s["ts"].dt.tz_localize("UTC")
    df = run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts WITHIN 1 MINUTE", engine, s=s)
    assert id_sets(df) == [(0, 1)]
    assert pd.Timestamp(df.match_end.iloc[0]) == pd.Timestamp("2024-03-01 12:01:00", tz="UTC")


def test_query_without_an_ordering_column_is_rejected(engine):
    # ts is an integer, not a TIMESTAMP: nothing tells the order.
    with pytest.raises(cerql.AnalysisError) as err:
        run("SELECT * FROM s WHERE A AS a ; B AS b", engine, s=typed_stream("A B"))
    assert err.value.error_class == "NO_ORDER_COLUMN"
    assert "ORDER BY" in err.value.hint


def test_window_column_must_be_the_first_ordering_column(engine):
    s = typed_stream("A B", x=[0, 1])
    with pytest.raises(cerql.AnalysisError) as err:
        run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts WITHIN 3 [x]", engine, s=s)
    assert err.value.error_class == "WINDOW_COLUMN_NOT_ORDER"


def test_window_column_must_be_numeric(engine):
    s = typed_stream("A B", name=["p", "q"])
    with pytest.raises(cerql.AnalysisError) as err:
        run("SELECT * FROM s WHERE A AS a ; B AS b WITHIN 3 [name]", engine, s=s)
    assert err.value.error_class == "WINDOW_NEEDS_NUMBER"


def test_time_window_on_numeric_ordering_column_is_rejected(engine):
    with pytest.raises(cerql.AnalysisError) as err:
        run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts WITHIN 1 MINUTE", engine, s=typed_stream("A B"))
    assert err.value.error_class == "WINDOW_NEEDS_TIME"


# =========================================================================== PARTITION BY
def test_colon_counts_positions_within_a_substream(engine):
    s = typed_stream("A B B", k=[1, 2, 1])
    assert match_sets(run("SELECT * FROM s WHERE A AS a : B AS b ORDER BY ts", engine, s=s)) == [(0, 1)]
    df = run("SELECT * FROM s WHERE A AS a : B AS b PARTITION BY k ORDER BY ts", engine, s=s)
    assert match_sets(df, ["a", "b"]) == [(0, 2)]
    assert list(df.k) == [1]


def test_events_window_counts_within_a_substream(engine):
    s = typed_stream("A C C B", k=[1, 2, 2, 1])
    q = "SELECT * FROM s WHERE A AS a ; B AS b {} ORDER BY ts WITHIN 1 EVENTS"
    assert match_sets(run(q.format(""), engine, s=s)) == []
    assert match_sets(run(q.format("PARTITION BY k"), engine, s=s), ["a", "b"]) == [(0, 3)]


def test_strict_contiguity_is_measured_within_a_substream(engine):
    # k=1 holds A0 and B3 only: adjacent in the substream, so STRICT keeps {0,3}.
    s = typed_stream("A C C B", k=[1, 2, 2, 1])
    assert match_sets(run("SELECT STRICT * FROM s WHERE A AS a ; B AS b ORDER BY ts", engine, s=s)) == []
    df = run("SELECT STRICT * FROM s WHERE A AS a ; B AS b PARTITION BY k ORDER BY ts", engine, s=s)
    assert match_sets(df, ["a", "b"]) == [(0, 3)]


def test_strategies_compare_results_of_one_substream_only(engine):
    # Without PARTITION BY, NEXT picks {0,1}, {0,3} over {2,3}, and {0,4} over {2,4}.
    # With it, k=1 is A0 B3 -> {0,3} and k=2 is B1 A2 B4 -> {2,4}: each wins its own end.
    s = typed_stream("A B A B B", k=[1, 2, 2, 1, 2])
    assert match_sets(run("SELECT NEXT * FROM s WHERE A AS a ; B AS b ORDER BY ts", engine, s=s)) == [
        (0, 1), (0, 3), (0, 4)]
    df = run("SELECT NEXT * FROM s WHERE A AS a ; B AS b PARTITION BY k ORDER BY ts", engine, s=s)
    assert sorted(zip(df.k, row_sets(df, ["a", "b"]))) == [(1, (0, 3)), (2, (2, 4))]


def test_matches_never_mix_partitions(engine):
    s = typed_stream("A B A B", k=["x", "y", "y", "x"])
    df = run("SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY k ORDER BY ts", engine, s=s)
    # k=x: A0 B3; k=y: B1 A2 (no B after the A).
    assert list(zip(df.k, row_sets(df, ["a", "b"]))) == [("x", (0, 3))]


def test_rows_with_null_partition_key_take_part_in_no_match(engine):
    s = typed_stream("A B B A B", k=pd.array([1, None, 1, None, None], dtype="Int64"))
    df = run("SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY k ORDER BY ts", engine, s=s)
    assert match_sets(df, ["a", "b"]) == [(0, 2)]


def test_rows_with_null_string_partition_key_take_part_in_no_match(engine):
    s = typed_stream("A B A B", k=["u", None, None, "u"])
    df = run("SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY k ORDER BY ts", engine, s=s)
    assert match_sets(df, ["a", "b"]) == [(0, 3)]


def test_null_partition_key_rows_are_not_positions_of_any_substream(engine):
    # The NULL-key row between A and B is in no substream, so A : B is contiguous in k = 1.
    s = typed_stream("A C B", k=pd.array([1, None, 1], dtype="Int64"))
    df = run("SELECT * FROM s WHERE A AS a : B AS b PARTITION BY k ORDER BY ts", engine, s=s)
    assert match_sets(df, ["a", "b"]) == [(0, 2)]


def test_null_in_any_of_several_partition_columns_excludes_the_row(engine):
    s = typed_stream("A B B", p=[1, 1, 1], q=pd.array([1, None, 1], dtype="Int64"))
    df = run("SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY p, q ORDER BY ts", engine, s=s)
    assert match_sets(df, ["a", "b"]) == [(0, 2)]


PQ_STREAM = dict(spec="A B B A B B", p=[1, 1, 1, 2, 2, 1], q=[1, 2, 1, 1, 1, 1])


@pytest.mark.parametrize("attrs", ["[p], [q]", "[p, q]", "p, q", "[p],[q]"])
def test_partition_by_forms_are_the_same_tuple_of_columns(attrs, engine):
    # (p, q) substreams: (1,1) rows 0 2 5 -> {0,2} {0,5}; (1,2) row 1; (2,1) rows 3 4 -> {3,4}.
    s = typed_stream(PQ_STREAM["spec"], p=PQ_STREAM["p"], q=PQ_STREAM["q"])
    df = run(f"SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY {attrs} ORDER BY ts", engine, s=s)
    assert list(df.columns[:5]) == ["p", "q", "match_id", "match_start", "match_end"]
    assert match_sets(df, ["a", "b"]) == [(0, 2), (0, 5), (3, 4)]
    assert sorted(zip(df.p, df.q)) == [(1, 1), (1, 1), (2, 1)]


def test_partition_by_one_column_differs_from_two(engine):
    s = typed_stream(PQ_STREAM["spec"], p=PQ_STREAM["p"], q=PQ_STREAM["q"])
    df = run("SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY [p] ORDER BY ts", engine, s=s)
    assert match_sets(df, ["a", "b"]) == [(0, 1), (0, 2), (0, 5), (3, 4)]


# =========================================================================== ORDER BY
def _typed(types, ts, **cols):
    return pd.DataFrame({"type": types, "ts": ts, **cols})


def test_order_ties_are_broken_by_source_position_in_from(engine):
    # x's B and y's A both have ts = 1; the source listed first in FROM comes first.
    x = _typed(["C", "B"], [0, 1], id=[10, 11])
    y = _typed(["A"], [1], id=[20])
    ab = "SELECT * FROM {} WHERE A AS a ; B AS b ORDER BY ts"
    ba = "SELECT * FROM {} WHERE B AS b ; A AS a ORDER BY ts"
    assert id_sets(run(ab.format("x, y"), engine, x=x, y=y)) == []
    assert id_sets(run(ba.format("x, y"), engine, x=x, y=y)) == [(11, 20)]
    assert id_sets(run(ab.format("y, x"), engine, x=x, y=y)) == [(11, 20)]
    assert id_sets(run(ba.format("y, x"), engine, x=x, y=y)) == []


def test_order_ties_within_a_source_keep_row_order(engine):
    first = _typed(["A", "B"], [1, 1], id=[0, 1])
    assert id_sets(run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts", engine, s=first)) == [(0, 1)]
    second = _typed(["B", "A"], [1, 1], id=[0, 1])
    assert id_sets(run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts", engine, s=second)) == []
    assert id_sets(run("SELECT * FROM s WHERE B AS b ; A AS a ORDER BY ts", engine, s=second)) == [(0, 1)]


def test_stream_is_sorted_by_the_order_by_column_not_row_order(engine):
    s = _typed(["C", "B", "A"], [2, 1, 0], id=[0, 1, 2])
    df = run("SELECT * FROM s WHERE A AS a : B AS b : C AS c ORDER BY ts", engine, s=s)
    assert id_sets(df) == [(0, 1, 2)]


def test_order_by_several_columns(engine):
    # ORDER BY g, h: C(g=0) first, then B(g=1, h=1), then A(g=1, h=2).
    s = pd.DataFrame({"id": [0, 1, 2], "type": ["A", "B", "C"], "g": [1, 1, 0], "h": [2, 1, 5]})
    assert id_sets(run("SELECT * FROM s WHERE C AS c : B AS b : A AS a ORDER BY g, h", engine, s=s)) == [(0, 1, 2)]
    assert id_sets(run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY g, h", engine, s=s)) == []


def test_rows_with_null_first_ordering_column_take_part_in_no_match(engine):
    s = _typed(["A", "A", "B"], pd.array([None, 1, 2], dtype="Int64"), id=[0, 1, 2])
    df = run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts", engine, s=s)
    assert id_sets(df) == [(1, 2)]


def test_rows_with_null_first_ordering_column_are_no_positions(engine):
    s = _typed(["A", "C", "B"], pd.array([1, None, 2], dtype="Int64"), id=[0, 1, 2])
    df = run("SELECT * FROM s WHERE A AS a : B AS b ORDER BY ts", engine, s=s)
    assert id_sets(df) == [(0, 2)]


def test_null_in_a_later_ordering_column_does_not_exclude_the_row(engine):
    s = pd.DataFrame({"id": [0, 1], "type": ["A", "B"], "g": [0, 1],
                      "h": pd.array([None, None], dtype="Int64")})
    df = run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY g, h", engine, s=s)
    assert id_sets(df) == [(0, 1)]


def test_descending_order_is_rejected(engine):
    with pytest.raises(cerql.CeqlError):
        run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts DESC", engine, s=typed_stream("A B"))


# =========================================================================== FROM and event types
def test_sources_are_unioned_by_column_name_with_nulls_for_missing_columns(engine):
    s1 = pd.DataFrame({"type": ["A"], "ts": [0], "x": [10]})
    s2 = pd.DataFrame({"ts": [1], "y": ["u"], "type": ["B"]})
    df = run("SELECT * FROM s1, s2 WHERE A AS a ; B AS b ORDER BY ts", engine, s1=s1, s2=s2)
    assert len(df) == 1
    a, b = df.a.iloc[0], df.b.iloc[0]
    assert a == {"type": "A", "ts": 0, "x": 10, "y": None}
    assert b == {"type": "B", "ts": 1, "x": None, "y": "u"}


def test_source_columns_match_case_insensitively_in_the_union(engine):
    s1 = pd.DataFrame({"type": ["A"], "TS": [0]})
    s2 = pd.DataFrame({"type": ["B"], "ts": [1]})
    df = run("SELECT * FROM s1, s2 WHERE A AS a ; B AS b ORDER BY ts", engine, s1=s1, s2=s2)
    assert len(df) == 1


def test_atoms_named_after_sources_match_every_row_of_the_source(engine):
    sell = pd.DataFrame({"ts": [0, 2], "id": [0, 2]})
    buy = pd.DataFrame({"ts": [1, 3], "id": [1, 3]})
    df = run("SELECT * FROM sell, buy WHERE sell AS s ; buy AS b ORDER BY ts", engine, sell=sell, buy=buy)
    assert id_sets(df) == [(0, 1), (0, 3), (2, 3)]


def test_atoms_named_after_source_aliases(engine):
    t1 = pd.DataFrame({"ts": [0, 2], "id": [0, 2]})
    t2 = pd.DataFrame({"ts": [1, 3], "id": [1, 3]})
    df = run("SELECT * FROM t1 AS SELL, t2 BUY WHERE SELL AS s ; BUY AS b ORDER BY ts", engine, t1=t1, t2=t2)
    assert id_sets(df) == [(0, 1), (0, 3), (2, 3)]


def test_source_name_wins_over_type_column_values(engine):
    # Atom A matches every row of source A (whatever its type column says), not s's 'A' rows.
    a_src = pd.DataFrame({"type": ["X"], "ts": [0], "id": [0]})
    s = pd.DataFrame({"type": ["A", "B"], "ts": [1, 2], "id": [1, 2]})
    df = run("SELECT * FROM A, s WHERE A AS a ; B AS b ORDER BY ts", engine, A=a_src, s=s)
    assert id_sets(df) == [(0, 2)]


def test_event_type_column_is_used_when_there_is_no_type_column(engine):
    s = pd.DataFrame({"event_type": ["A", "C", "B"], "ts": [0, 1, 2]})
    df = run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts", engine, s=s)
    assert match_sets(df) == [(0, 2)]


def test_type_values_match_exactly(engine):
    s = typed_stream("a A A_ A")
    df = run("SELECT * FROM s WHERE A AS x ORDER BY ts", engine, s=s)
    assert match_sets(df) == [(1,), (3,)]


def test_typed_by_names_the_type_column(engine):
    s = pd.DataFrame({"type": ["B", "A", "A"], "kind": ["A", "B", "C"], "ts": [0, 1, 2]})
    df = run("SELECT * FROM s TYPED BY kind WHERE A AS a ; B AS b ORDER BY ts", engine, s=s)
    assert match_sets(df) == [(0, 1)]


def test_source_with_type_and_event_type_needs_typed_by(engine):
    s = pd.DataFrame({"type": ["A", "B"], "event_type": ["B", "A"], "ts": [0, 1]})
    with pytest.raises(cerql.AnalysisError) as err:
        run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts", engine, s=s)
    assert err.value.error_class == "AMBIGUOUS_TYPE_COLUMN"
    df = run("SELECT * FROM s TYPED BY event_type WHERE B AS b ; A AS a ORDER BY ts", engine, s=s)
    assert match_sets(df) == [(0, 1)]


def test_source_qualified_atom_matches_only_that_source(engine):
    s1 = pd.DataFrame({"type": ["A", "A"], "ts": [0, 2], "id": [0, 2]})
    s2 = pd.DataFrame({"type": ["A", "A"], "ts": [1, 3], "id": [1, 3]})
    df = run("SELECT * FROM s1, s2 WHERE s1>A AS x ; s2>A AS y ORDER BY ts", engine, s1=s1, s2=s2)
    assert id_sets(df) == [(0, 1), (0, 3), (2, 3)]
    plain = run("SELECT * FROM s1, s2 WHERE A AS x ; A AS y ORDER BY ts", engine, s1=s1, s2=s2)
    assert id_sets(plain) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]


def test_type_atom_matches_rows_of_every_source_with_a_type_column(engine):
    s1 = pd.DataFrame({"type": ["A"], "ts": [0], "id": [0]})
    s2 = pd.DataFrame({"kind": ["B"], "ts": [1], "id": [1]})
    df = run("SELECT * FROM s1, s2 TYPED BY kind WHERE A AS a ; B AS b ORDER BY ts", engine, s1=s1, s2=s2)
    assert id_sets(df) == [(0, 1)]


# =========================================================================== CONSUME BY
def test_consume_by_partition_consumes_within_each_substream(engine):
    # k=1: A0 B2 B4 -> {0,2} output at 2, then {0,4} starts at 0 <= 2: consumed.
    # k=2: A1 B3 -> {1,3}, unaffected by k=1's output at 2.
    s = typed_stream("A A B B B", k=[1, 2, 1, 2, 1])
    df = run("SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY k ORDER BY ts CONSUME BY PARTITION",
             engine, s=s)
    assert sorted(zip(df.k, row_sets(df, ["a", "b"]))) == [(1, (0, 2)), (2, (1, 3))]


def test_consume_by_any_consumes_across_the_whole_stream(engine):
    # output at 2: {0,2} {1,2}; at 4 only {3,4} starts after 2.
    s = typed_stream("A A B A B")
    df = run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts CONSUME BY ANY", engine, s=s)
    assert match_sets(df) == [(0, 2), (1, 2), (3, 4)]


def test_consume_by_partition_without_partition_by_consumes_the_whole_stream(engine):
    s = typed_stream("A A B A B")
    df = run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts CONSUME BY PARTITION", engine, s=s)
    assert match_sets(df) == [(0, 2), (1, 2), (3, 4)]


def test_consume_by_none_is_the_default(engine):
    s = typed_stream("A A B A B")
    df = run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts CONSUME BY NONE", engine, s=s)
    assert match_sets(df) == [(0, 2), (0, 4), (1, 2), (1, 4), (3, 4)]


def test_consume_by_any_with_partition_by_is_rejected(engine):
    with pytest.raises(cerql.AnalysisError) as err:
        run("SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY k ORDER BY ts CONSUME BY ANY", engine,
            s=typed_stream("A B", k=[1, 1]))
    assert err.value.error_class == "CONSUME_ANY_WITH_PARTITION"
    assert "PARTITION" in err.value.hint


def test_consume_applies_to_what_the_strategy_outputs(engine):
    # NEXT at 2 outputs {0,2}; at 4 only {3,4} starts after 2.
    s = typed_stream("A A B A B")
    df = run("SELECT NEXT * FROM s WHERE A AS a ; B AS b ORDER BY ts CONSUME BY PARTITION", engine, s=s)
    assert match_sets(df) == [(0, 2), (3, 4)]


def test_results_dropped_by_projection_consume_nothing(engine):
    # At 1 the B result selects nothing (SELECT a), so nothing is output and nothing consumed;
    # A0 ; C2 (start 0) still qualifies at 2.
    s = typed_stream("A B C")
    df = run("SELECT a FROM s WHERE (B AS b) OR (A AS a ; C) ORDER BY ts CONSUME BY PARTITION", engine, s=s)
    assert match_sets(df) == [(0,)]
    assert list(zip(df.match_start, df.match_end)) == [(0, 2)]


def test_results_outside_the_window_consume_nothing(engine):
    # A0;C2 (width 2) and C2;D3 (width 1). Under WITHIN 1 EVENTS the first is gone before
    # CONSUME, so C2;D3 survives; under a wide window {0,2} is output at 2 and consumes C2;D3.
    s = typed_stream("A B C D")
    q = "SELECT * FROM s WHERE (A AS a ; C AS c) OR (C AS c2 ; D AS d) ORDER BY ts WITHIN {} EVENTS CONSUME BY PARTITION"
    assert match_sets(run(q.format(1), engine, s=s)) == [(2, 3)]
    assert match_sets(run(q.format(5), engine, s=s)) == [(0, 2)]


def test_consume_across_or_branches(engine):
    # C1 is output at 1; A0;B2 starts at 0 <= 1: consumed.
    s = typed_stream("A C B")
    df = run("SELECT * FROM s WHERE A AS a ; B AS b OR C AS c ORDER BY ts CONSUME BY PARTITION", engine, s=s)
    assert match_sets(df) == [(1,)]


# =========================================================================== LIMIT
LIMIT_STREAM = dict(spec="A A A B B B", k=[1, 1, 2, 2, 1, 1])


def test_limit_orders_by_partition_then_end_then_start(engine):
    # k=1: A0 A1 B4 B5 -> (0,4) (1,4) (0,5) (1,5); k=2: A2 B3 -> (2,3). k=1 comes first.
    s = typed_stream(LIMIT_STREAM["spec"], k=LIMIT_STREAM["k"])
    df = run("SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY k ORDER BY ts LIMIT 3", engine, s=s)
    assert sorted(zip(df.k, df.match_start, df.match_end)) == [(1, 0, 4), (1, 0, 5), (1, 1, 4)]


def test_limit_without_partition_orders_by_end_then_start(engine):
    s = typed_stream("A A A B B")
    df = run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts LIMIT 4", engine, s=s)
    assert sorted(zip(df.match_start, df.match_end)) == [(0, 3), (0, 4), (1, 3), (2, 3)]


def test_limit_larger_than_the_result_returns_everything(engine):
    s = typed_stream(LIMIT_STREAM["spec"], k=LIMIT_STREAM["k"])
    df = run("SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY k ORDER BY ts LIMIT 100", engine, s=s)
    assert len(df) == 5


def test_limit_zero_returns_no_rows_with_the_schema(engine):
    df = run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts LIMIT 0", engine, s=typed_stream("A B"))
    assert len(df) == 0
    assert list(df.columns) == ["match_id", "match_start", "match_end", "a", "b"]


def test_limit_breaks_interval_ties_by_match_id(engine):
    s = typed_stream("A")
    both = run("SELECT * FROM s WHERE (A AS a) OR (A AS b) ORDER BY ts", engine, s=s)
    assert len(both) == 2
    one = run("SELECT * FROM s WHERE (A AS a) OR (A AS b) ORDER BY ts LIMIT 1", engine, s=s)
    assert list(one.match_id) == [min(both.match_id)]


def test_limit_applies_after_the_strategy(engine):
    # NEXT: (0,3) at end 3 and (0,4) at end 4; LIMIT 2 takes both.
    s = typed_stream("A A A B B")
    df = run("SELECT NEXT * FROM s WHERE A AS a ; B AS b ORDER BY ts LIMIT 2", engine, s=s)
    assert sorted(zip(df.match_start, df.match_end)) == [(0, 3), (0, 4)]


# =========================================================================== FILTER
def test_filter_on_variable_bound_twice_checks_both_events(engine):
    s = typed_stream("A A A", x=[1, 5, 7])
    df = run("SELECT * FROM s WHERE A AS a ; A AS a FILTER a[x > 2] ORDER BY ts", engine, s=s)
    assert match_sets(df) == [(1, 2)]


def test_filter_on_kleene_variable_checks_every_iteration(engine):
    # a: non-empty subsets of the A's with x > 1, i.e. of {0, 2}; then B3.
    s = typed_stream("A A A B", x=[2, 0, 3, 0])
    df = run("SELECT * FROM s WHERE A+ AS a ; B FILTER a[x > 1] ORDER BY ts", engine, s=s)
    assert match_sets(df) == [(0, 2, 3), (0, 3), (2, 3)]


def test_filter_on_empty_variable_passes(engine):
    # The B result leaves a empty: it passes a[x > 5]. A0 (x=1) fails, A2 (x=9) passes.
    s = typed_stream("A B A", x=[1, 0, 9])
    df = run("SELECT * FROM s WHERE (A AS a) OR (B AS b) FILTER a[x > 5] ORDER BY ts", engine, s=s)
    assert match_sets(df) == [(1,), (2,)]


def test_filter_with_null_predicate_is_false(engine):
    s = typed_stream("A A A", x=pd.array([None, 0, 3], dtype="Int64"))
    assert match_sets(run("SELECT * FROM s WHERE A AS a FILTER a[x > 1] ORDER BY ts", engine, s=s)) == [(2,)]
    # NOT NULL is NULL, still false
    assert match_sets(run("SELECT * FROM s WHERE A AS a FILTER a[NOT (x > 1)] ORDER BY ts", engine, s=s)) == [(1,)]
    assert match_sets(run("SELECT * FROM s WHERE A AS a FILTER a[x IS NULL] ORDER BY ts", engine, s=s)) == [(0,)]


def test_filter_on_column_missing_from_the_events_source_is_null(engine):
    s1 = pd.DataFrame({"type": ["A"], "ts": [0], "x": [5]})
    s2 = pd.DataFrame({"type": ["A"], "ts": [1]})
    df = run("SELECT * FROM s1, s2 WHERE A AS a FILTER a[x > 1] ORDER BY ts", engine, s1=s1, s2=s2)
    assert match_sets(df) == [(0,)]


def test_filter_or_is_the_union_of_the_filtered_patterns(engine):
    # (0,1): b=9 passes; (0,3): both 1 fail; (2,3): a=9 passes.
    s = typed_stream("A B A B", x=[1, 9, 9, 1])
    df = run("SELECT * FROM s WHERE A AS a ; B AS b FILTER a[x > 5] OR b[x > 5] ORDER BY ts", engine, s=s)
    assert match_sets(df) == [(0, 1), (2, 3)]


def test_filter_or_with_both_sides_true_gives_one_result(engine):
    s = typed_stream("A B", x=[9, 9])
    df = run("SELECT * FROM s WHERE A AS a ; B AS b FILTER a[x > 5] OR b[x > 5] ORDER BY ts", engine, s=s)
    assert match_sets(df) == [(0, 1)]


def test_filter_and_needs_both(engine):
    s = typed_stream("A B A B", x=[1, 9, 9, 9])
    df = run("SELECT * FROM s WHERE A AS a ; B AS b FILTER a[x > 5] AND b[x > 5] ORDER BY ts", engine, s=s)
    assert match_sets(df) == [(2, 3)]


def test_filter_and_binds_tighter_than_or(engine):
    # a[x > 5] OR (b[x > 5] AND b[y = 1]), as in SQL: a passes, so the result is kept; read
    # left to right, (a OR b[x > 5]) AND b[y = 1] would drop it.
    s = typed_stream("A B", x=[9, 0], y=[0, 0])
    df = run("SELECT * FROM s WHERE A AS a ; B AS b FILTER a[x > 5] OR b[x > 5] AND b[y = 1] ORDER BY ts",
             engine, s=s)
    assert match_sets(df) == [(0, 1)]


def test_filter_on_type_variable(engine):
    s = typed_stream("A A B", x=[0, 5, 0])
    df = run("SELECT * FROM s WHERE A ; B FILTER A[x > 1] ORDER BY ts", engine, s=s)
    assert match_sets(df) == [(1, 2)]


def test_filter_covers_everything_to_its_left(engine):
    # FILTER b[...] after A ; B AS b: b must pass; the A is unconstrained.
    s = typed_stream("A B B", x=[0, 1, 9])
    df = run("SELECT * FROM s WHERE A AS a ; B AS b FILTER b[x > 5] ORDER BY ts", engine, s=s)
    assert match_sets(df) == [(0, 2)]


@pytest.mark.parametrize("predicate, expected", [
    ("x IN {1, 2}", [(0,), (1,)]),
    ("x IN (1, 2)", [(0,), (1,)]),
    ("x IN RANGE(2, 3)", [(1,), (2,)]),
    ("x == 2", [(1,)]),
    ("x = 2", [(1,)]),
    ("x BETWEEN 2 AND 3", [(1,), (2,)]),
    ("name LIKE 'f%'", [(0,), (2,)]),
    ("x > 1 AND x < 4", [(1,), (2,)]),
    ("x < 2 OR x > 3", [(0,), (3,)]),
    ("x % 2 = 0", [(1,), (3,)]),
], ids=lambda v: str(v))
def test_filter_predicate_forms(predicate, expected, engine):
    s = typed_stream("A A A A", x=[1, 2, 3, 4], name=["foo", "bar", "fab", "x"])
    df = run(f"SELECT * FROM s WHERE A AS a FILTER a[{predicate}] ORDER BY ts", engine, s=s)
    assert match_sets(df) == expected


# =========================================================================== projection
def test_select_one_variable_shows_only_it(engine):
    s = typed_stream("A B B")
    df = run("SELECT a FROM s WHERE A AS a ; B AS b ORDER BY ts", engine, s=s)
    assert list(df.columns) == ["match_id", "match_start", "match_end", "a"]
    # two results: the intervals [0,1] and [0,2] differ
    assert sorted(zip(df.match_start, df.match_end, [positions(a) for a in df.a])) == [(0, 1, (0,)), (0, 2, (0,))]


def test_results_equal_after_projection_are_one(engine):
    # A0 B1 D3 and A0 C2 D3 both project to ([0,3], a={0}).
    s = typed_stream("A B C D")
    df = run("SELECT a FROM s WHERE A AS a ; (B OR C) ; D ORDER BY ts", engine, s=s)
    assert list(zip(df.match_start, df.match_end, [positions(a) for a in df.a])) == [(0, 3, (0,))]
    star = run("SELECT * FROM s WHERE A AS a ; (B OR C) ; D ORDER BY ts", engine, s=s)
    assert match_sets(star) == [(0, 1, 3), (0, 2, 3)]


def test_results_with_every_selected_variable_empty_are_dropped(engine):
    s = typed_stream("B A")
    df = run("SELECT a FROM s WHERE (A+ AS a) OR (B AS b) ORDER BY ts", engine, s=s)
    assert match_sets(df) == [(1,)]


def test_select_variable_columns(engine):
    s = typed_stream("A B", x=[1, 2], y=["p", "q"])
    df = run("SELECT a[x], b[y, ts] FROM s WHERE A AS a ; B AS b ORDER BY ts", engine, s=s)
    assert df.a.iloc[0] == {"x": 1}
    assert df.b.iloc[0] == {"y": "q", "ts": 1}


def test_select_columns_of_a_list_variable(engine):
    s = typed_stream("A A B", x=[1, 2, 3])
    df = run("SELECT MAX a[x] FROM s WHERE A+ AS a ; B ORDER BY ts", engine, s=s)
    assert list(df.a) == [[{"x": 1}, {"x": 2}]]


def test_select_expression_on_single_event_variable(engine):
    s = typed_stream("A B", x=[1, 2])
    df = run("SELECT a.x + 1 AS p FROM s WHERE A AS a ; B AS b ORDER BY ts", engine, s=s)
    assert list(df.columns) == ["match_id", "match_start", "match_end", "p"]
    assert list(df.p) == [2]


def test_select_expression_next_to_a_variable(engine):
    s = typed_stream("A B", x=[1, 2])
    df = run("SELECT a.x + 1 AS p, b FROM s WHERE A AS a ; B AS b ORDER BY ts", engine, s=s)
    assert list(df.p) == [2]
    assert [positions(b) for b in df.b] == [(1,)]


def test_select_expression_on_unbound_variable_is_null(engine):
    # The A result binds a (ax = 10) but not b; the B result binds b but not a (ax NULL).
    s = typed_stream("A B", x=[10, 20])
    df = run("SELECT a.x AS ax, b FROM s WHERE (A AS a) OR (B AS b) ORDER BY ts", engine, s=s)
    got = {((None if pd.isna(ax) else ax), positions(b)) for ax, b in zip(df.ax, df.b)}
    assert len(df) == 2
    assert got == {(10, ()), (None, (1,))}


def test_select_expression_alone_drops_results_where_its_variable_is_unbound(engine):
    # a is the only variable SELECT reads; the B result leaves it empty, so it is dropped.
    s = typed_stream("A B", x=[10, 20])
    df = run("SELECT a.x AS ax FROM s WHERE (A AS a) OR (B AS b) ORDER BY ts", engine, s=s)
    assert list(df.ax) == [10]


def test_select_qualified_column_without_alias_is_named_like_spark(engine):
    # Spark names the column of `b.x` "x".
    s = typed_stream("A B", x=[1, 2])
    df = run("SELECT b.x FROM s WHERE A AS a ; B AS b ORDER BY ts", engine, s=s)
    assert list(df.columns) == ["match_id", "match_start", "match_end", "x"]
    assert list(df.x) == [2]


# =========================================================================== output schema
def test_single_event_variable_is_a_struct_and_kleene_variable_a_list(engine):
    s = typed_stream("A B B", x=[1, 2, 3])
    df = run("SELECT * FROM s WHERE A AS a ; B+ AS b ORDER BY ts", engine, s=s)
    assert all(isinstance(v, dict) for v in df.a)
    assert all(isinstance(v, list) for v in df.b)
    assert sorted(positions(b) for b in df.b) == [(1,), (1, 2), (2,)]
    assert df.a.iloc[0] == {"type": "A", "ts": 0, "x": 1}


def test_list_variable_is_in_stream_order(engine):
    s = typed_stream("A A A")
    df = run("SELECT MAX * FROM s WHERE A+ AS a ORDER BY ts", engine, s=s)
    full = [a for a in df.a if len(a) == 3]
    assert [e["ts"] for e in full[0]] == [0, 1, 2]


def test_variable_bound_twice_is_a_list(engine):
    df = run("SELECT * FROM s WHERE A AS a ; A AS a ORDER BY ts", engine, s=typed_stream("A A"))
    assert list(df.a) == [[{"type": "A", "ts": 0}, {"type": "A", "ts": 1}]]


def test_variable_bound_once_on_each_or_branch_is_a_struct(engine):
    df = run("SELECT * FROM s WHERE (A AS x) OR (B AS x) ORDER BY ts", engine, s=typed_stream("A B"))
    assert sorted(v["ts"] for v in df.x) == [0, 1]
    assert all(isinstance(v, dict) for v in df.x)


def test_unbound_struct_is_null_and_unbound_list_is_empty(engine):
    df = run("SELECT * FROM s WHERE (A+ AS a) OR (B AS b) ORDER BY ts", engine, s=typed_stream("A B"))
    rows = sorted(((len(a), b is pd.NA) for a, b in zip(df.a, df.b)))
    assert rows == [(0, False), (1, True)]
    assert df.b.isna().tolist() == [b is pd.NA for b in df.b]
    b_row = df[df.b.notna()].iloc[0]
    assert list(b_row.a) == []
    assert df.a.list.len().tolist() == [len(a) for a in df.a]


def test_match_start_and_end_are_ordering_values_of_the_interval_ends(engine):
    # SELECT b: the interval still starts at the unselected A.
    s = timed("A C B", [0, 5, 7])
    df = run("SELECT b FROM s WHERE A ; B AS b ORDER BY ts", engine, s=s)
    assert list(df.match_start) == [BASE]
    assert list(df.match_end) == [BASE + pd.Timedelta(seconds=7)]


def test_match_id_is_deterministic_and_unique(engine):
    q = "SELECT * FROM s WHERE A+ AS a ; B AS b PARTITION BY k ORDER BY ts"
    first = run(q, engine, s=typed_stream("A A B A B", k=[1, 1, 1, 2, 2]))
    second = run(q, engine, s=typed_stream("A A B A B", k=[1, 1, 1, 2, 2]))
    assert len(first) == 4
    assert first.match_id.is_unique
    assert str(first.match_id.dtype) == "int64"
    key = lambda df: sorted(zip(df.match_id, df.k, df.match_start, df.match_end))  # noqa: E731
    assert key(first) == key(second)


def test_output_columns_are_partition_match_then_select_items_in_order(engine):
    s = typed_stream("A B", k=[1, 1])
    df = run("SELECT b, a FROM s WHERE A AS a ; B AS b PARTITION BY k ORDER BY ts", engine, s=s)
    assert list(df.columns) == ["k", "match_id", "match_start", "match_end", "b", "a"]


@pytest.mark.parametrize("text", [
    "SELECT * FROM s WHERE A AS k ; B AS b PARTITION BY k ORDER BY ts",
    "SELECT * FROM s WHERE A AS match_start ; B AS b ORDER BY ts",
])
def test_variable_clashing_with_an_output_column_is_an_analysis_error(text, engine):
    with pytest.raises(cerql.AnalysisError):
        run(text, engine, s=typed_stream("A B", k=[1, 1]))


# =========================================================================== maxMatchesPerEvent
def test_too_many_matches_at_one_event_fails_the_query(engine):
    # B at 3 completes 7 results (the non-empty subsets of {0, 1, 2}).
    s = {"s": typed_stream("A A A B")}
    with pytest.raises(cerql.ExecutionError) as err:
        cerql.run("SELECT * FROM s WHERE A+ AS a ; B AS b ORDER BY ts", s, engine=engine, max_matches_per_event=3)
    assert err.value.error_class == "TOO_MANY_MATCHES_PER_EVENT"
    text = str(err.value)
    assert "WITHIN" in text and any(name in text for name in ("NEXT", "LAST", "MAX", "ANY"))


def test_max_matches_per_event_is_an_inclusive_limit(engine):
    s = {"s": typed_stream("A A A B")}
    df = cerql.run("SELECT * FROM s WHERE A+ AS a ; B AS b ORDER BY ts", s, engine=engine, max_matches_per_event=7)
    assert len(df) == 7


def test_max_matches_per_event_counts_after_the_strategy(engine):
    s = {"s": typed_stream("A A A B")}
    df = cerql.run("SELECT MAX * FROM s WHERE A+ AS a ; B AS b ORDER BY ts", s, engine=engine,
                   max_matches_per_event=1)
    assert match_sets(df) == [(0, 1, 2, 3)]


def test_max_matches_per_event_counts_after_within(engine):
    s = {"s": typed_stream("A A A B")}
    df = cerql.run("SELECT * FROM s WHERE A+ AS a ; B AS b ORDER BY ts WITHIN 1 EVENTS", s, engine=engine,
                   max_matches_per_event=1)
    assert match_sets(df) == [(2, 3)]


def test_max_matches_per_event_counts_each_event_separately(engine):
    # 2 results at B2 and 2 at B5: never more than 2 at one event.
    s = {"s": typed_stream("A A B A A B")}
    df = cerql.run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts WITHIN 2 EVENTS", s, engine=engine,
                   max_matches_per_event=2)
    assert match_sets(df) == [(0, 2), (1, 2), (3, 5), (4, 5)]


# =========================================================================== empty input, unicode
def test_empty_input_gives_an_empty_result_with_the_schema(engine):
    s = pd.DataFrame({"type": pd.Series([], dtype="string"), "ts": pd.Series([], dtype="int64"),
                      "k": pd.Series([], dtype="int64")})
    df = run("SELECT * FROM s WHERE A AS a ; B+ AS b PARTITION BY k ORDER BY ts", engine, s=s)
    assert len(df) == 0
    assert list(df.columns) == ["k", "match_id", "match_start", "match_end", "a", "b"]


def test_input_without_matching_events_gives_no_rows(engine):
    df = run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts", engine, s=typed_stream("B C A"))
    assert len(df) == 0
    assert list(df.columns) == ["match_id", "match_start", "match_end", "a", "b"]


def test_single_row_partitions(engine):
    s = typed_stream("A A A", k=[1, 2, 3])
    df = run("SELECT * FROM s WHERE A AS a PARTITION BY k ORDER BY ts", engine, s=s)
    assert sorted(zip(df.k, row_sets(df, ["a"]))) == [(1, (0,)), (2, (1,)), (3, (2,))]


def test_unicode_types_columns_and_variables(engine):
    s = pd.DataFrame({"type": ["買い", "Ä", "Ä"], "ts": [0, 1, 2], "größe": [0, 1, 2]})
    df = run("SELECT * FROM s WHERE 買い AS 買 ; Ä AS ä FILTER ä[größe > 1] ORDER BY ts", engine, s=s)
    assert list(df.columns) == ["match_id", "match_start", "match_end", "買", "ä"]
    assert df["ä"].iloc[0] == {"type": "Ä", "ts": 2, "größe": 2}
    assert len(df) == 1


def test_backquoted_unicode_names_with_spaces(engine):
    s = pd.DataFrame({"type": ["kauf order", "verkauf"], "ts": [0, 1], "prix €": [3, 4]})
    df = run("SELECT * FROM données WHERE `kauf order` AS `k ä` ; verkauf AS v "
             "FILTER v[`prix €` = 4] ORDER BY ts", engine, données=s)
    assert list(df.columns) == ["match_id", "match_start", "match_end", "k ä", "v"]
    assert df["k ä"].iloc[0]["prix €"] == 3


def test_last_finds_its_winner_among_exponentially_many_candidates():
    """LAST searches the arena for its data set (kernel/selection.py) instead of choosing among
    ALL's 2**24 - 1 candidates: every A, then the B, at once."""
    s = {"s": typed_stream("A " * 24 + "B")}
    df = cerql.run("SELECT LAST * FROM s WHERE A+ AS a ; B AS b ORDER BY ts", s, engine="local")
    assert len(df) == 1
    assert [e["ts"] for e in df["a"].iloc[0]] == list(range(24)) and df["b"].iloc[0]["ts"] == 24
    windowed = cerql.run("SELECT LAST * FROM s WHERE A+ AS a ; B AS b ORDER BY ts WITHIN 4 EVENTS", s)
    assert [e["ts"] for e in windowed["a"].iloc[0]] == [20, 21, 22, 23]


@pytest.mark.parametrize("strategy", ["NEXT", "MAX"])
def test_a_superset_with_the_same_start_is_never_enumerated(strategy):
    # B at 24 ends 2**24 - 1 results under ALL. Every one of them but {0..23, 24} has a strict
    # superset with the same first event, so the automaton drops it (Determinizer's dominance)
    # and NEXT and MAX give the one maximal set without counting candidates.
    s = {"s": typed_stream("A " * 24 + "B")}
    query = f"SELECT {strategy} * FROM s WHERE A+ AS a ; B AS b ORDER BY ts"
    df = cerql.run(query, s, engine="local")
    assert len(df) == 1 and [e["ts"] for e in df["a"].iloc[0]] == list(range(24))
    windowed = cerql.run(query + " WITHIN 4 EVENTS", s, engine="local")
    assert [e["ts"] for e in windowed["a"].iloc[0]] == [20, 21, 22, 23]


def test_next_with_registers_searches_instead_of_enumerating_exponentially_many_candidates():
    # With a FILTER aggregate the automaton keeps every candidate (a superset may fail it where its
    # subset holds): B at 26 ends 2**26 - 1 of them, 2**25 from the first A. NEXT picks each
    # node's best path once (selection.next_data_set) instead of enumerating them.
    s = {"s": typed_stream("A " * 26 + "B", v=[0] * 27)}
    query = "SELECT NEXT * FROM s WHERE A+ AS a ; B AS b FILTER sum(a.v) >= 0 ORDER BY ts"
    df = cerql.run(query, s, engine="local")
    assert len(df) == 1 and [e["ts"] for e in df["a"].iloc[0]] == list(range(26))
    # the aggregate decides: the winner is the <next-greatest candidate whose sum holds
    s = {"s": typed_stream("A " * 26 + "B", v=[1] + [0] * 24 + [1, 0])}
    df = cerql.run(query.replace(">= 0", "= 1"), s, engine="local")
    assert len(df) == 1 and [e["ts"] for e in df["a"].iloc[0]] == list(range(25))


def test_max_with_registers_fails_on_exponentially_many_candidates_instead_of_running_for_hours():
    # MAX keeps the candidates no other contains, and with a FILTER aggregate a superset may fail
    # where its subset holds, so MAX still compares them: B at 26 has 2**26 - 1. The automaton
    # engine stops once their events pass candidate_events (2,000,000, before candidate_limit's
    # count) with an error naming WITHIN and the conf. The reference evaluator has no such limit
    # (and cannot run this input at all).
    s = {"s": typed_stream("A " * 26 + "B", v=[0] * 27)}
    query = "SELECT MAX * FROM s WHERE A+ AS a ; B AS b FILTER sum(a.v) >= 0 ORDER BY ts"
    with pytest.raises(cerql.ExecutionError) as err:
        cerql.run(query, s, engine="local")
    assert err.value.error_class == "TOO_MANY_CANDIDATES_PER_EVENT"
    assert "WITHIN" in err.value.hint and "aggregate" in err.value.hint and "2,000,000" in str(err.value)
    assert "cerql.maxMatchesPerEvent" in err.value.hint and err.value.params["conf"] == "cerql.maxMatchesPerEvent"
    # with a window the same query runs: 2**4 - 1 candidates
    df = cerql.run(query + " WITHIN 4 EVENTS", s, engine="local")
    assert len(df) == 1
