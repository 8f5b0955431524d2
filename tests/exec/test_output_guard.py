"""cerql.run keeps its output bounded: TOO_MANY_OUTPUT_ROWS past max_output_rows, and a LIMIT
holds only the results that can still be among its first rows (exec/collect.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import cerql

PAIRS = "SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts"


def _stream(n: int, seed: int = 0, keys: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"type": rng.choice(["A", "B"], n), "k": rng.integers(0, keys, n),
                         "ts": rng.integers(0, n // 2 + 1, n)})


def test_output_past_the_limit_fails_with_its_conf():
    s = pd.DataFrame({"type": ["A"] * 10 + ["B"] * 10, "ts": range(20)})  # 100 results
    with pytest.raises(cerql.CeqlError) as err:
        cerql.run(PAIRS, {"s": s}, max_output_rows=99)
    assert err.value.error_class == "TOO_MANY_OUTPUT_ROWS"
    assert "cerql.maxOutputRows" in str(err.value) and "LIMIT" in str(err.value)
    assert len(cerql.run(PAIRS, {"s": s}, max_output_rows=100)) == 100


@pytest.mark.parametrize("engine", ["local", "reference"])
def test_limit_keeps_output_under_the_guard(engine):
    s = pd.DataFrame({"type": ["A"] * 10 + ["B"] * 10, "ts": range(20)})
    out = cerql.run(PAIRS + " LIMIT 3", {"s": s}, engine=engine, max_output_rows=6)
    assert out[["match_start", "match_end"]].values.tolist() == [[0, 10], [1, 10], [2, 10]]


def test_post_filtered_output_is_guarded_too():
    s = pd.DataFrame({"type": ["A"] * 10 + ["B"] * 10, "x": range(20), "ts": range(20)})
    q = "SELECT * FROM s WHERE A AS a ; B AS b FILTER b.x - a.x > 0 ORDER BY ts"
    with pytest.raises(cerql.CeqlError) as err:
        cerql.run(q, {"s": s}, max_output_rows=50)
    assert err.value.error_class == "TOO_MANY_OUTPUT_ROWS"


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 60), seed=st.integers(0, 10_000), keys=st.integers(1, 5), limit=st.integers(0, 12),
       partitioned=st.booleans())
def test_limit_gives_the_first_rows_of_the_whole_output(n, seed, keys, limit, partitioned):
    """With LIMIT n the collector drops results early; the rows are still the first n of the
    whole output in LIMIT's order (ties on match_end broken by match_start, match_id)."""
    s = _stream(n, seed, keys)
    q = PAIRS.replace(" ORDER BY", " PARTITION BY [k] ORDER BY" if partitioned else " ORDER BY") + " WITHIN 6 [ts]"
    whole = cerql.run(q, {"s": s})
    from cerql.exec import driver

    slice_size = driver.RESULT_SLICE
    for size in (slice_size, 3):  # small slices: later parts are cut on positions before they are objects
        driver.RESULT_SLICE = size
        try:
            limited = cerql.run(q + f" LIMIT {limit}", {"s": s})  # held results are trimmed past 2 x limit
        finally:
            driver.RESULT_SLICE = slice_size
        pd.testing.assert_frame_equal(limited.reset_index(drop=True), whole.head(limit).reset_index(drop=True))


@pytest.mark.parametrize("size", [1, 7, 1000])
def test_result_slices_are_the_whole_results(size):
    """cerql.run turns the kernel's arrays into Python results a slice at a time."""
    from cerql.exec import driver
    from cerql.exec.stream import as_arrow, build_stream
    from cerql.planner.resolve import resolve

    s = as_arrow(_stream(80, seed=4, keys=3))
    q = "SELECT * FROM s WHERE A AS a ; B+ AS b PARTITION BY [k] ORDER BY ts WITHIN 5 [ts]"
    plan = resolve(cerql.analyze(q), {"s": s.schema})
    matches = driver.match_arrays(plan, build_stream(plan, {"s": s}))
    assert len(matches) > 50
    assert [r for part in matches.slices(size) for r in part.results()] == matches.results()


# -- the events results hold (issue 38 item 4): cerql.maxOutputEvents
KLEENE = "SELECT MAX * FROM s WHERE A AS a ; B+ AS b ; C AS c ORDER BY ts"


def _abc(n_a: int, n_b: int, n_c: int) -> pd.DataFrame:
    """n_a A's, then n_b B's, then n_c C's: MAX gives n_a * n_c results of n_b + 2 events."""
    types = ["A"] * n_a + ["B"] * n_b + ["C"] * n_c
    return pd.DataFrame({"type": types, "ts": range(len(types)), "x": range(len(types))})


def test_issue_reproduction_fails_early_naming_its_conf():
    """200 A, 2 000 B, 200 C: 40 000 results of 2 002 events (80M struct cells) filled 6 GB and
    died in Arrow's allocator; past cerql.maxOutputEvents (default 10M) it is a CeqlError
    before anything is rendered, and a LIMIT still answers."""
    s = _abc(200, 2000, 200)
    with pytest.raises(cerql.CeqlError) as err:
        cerql.run(KLEENE, {"s": s})
    assert err.value.error_class == "TOO_MANY_OUTPUT_EVENTS"
    assert "cerql.maxOutputEvents" in str(err.value) and "max_output_events" in str(err.value)
    assert "LIMIT" in str(err.value) and "10,000,000" in str(err.value)


def test_limit_answers_where_the_whole_output_holds_too_many_events():
    """The reproduction scaled down (50 A, 500 B, 50 C: 1.25M events) under a conf of 5 000:
    LIMIT 3 holds at most 7 results (3 514 events) at a time, so it answers."""
    s = _abc(50, 500, 50)
    with pytest.raises(cerql.CeqlError, match="TOO_MANY_OUTPUT_EVENTS"):
        cerql.run(KLEENE, {"s": s}, max_output_events=5000)
    out = cerql.run(KLEENE + " LIMIT 3", {"s": s}, max_output_events=5000)
    assert out[["match_start", "match_end"]].values.tolist() == [[0, 550], [1, 550], [2, 550]]
    assert out["b"].list.len().tolist() == [500] * 3


@pytest.mark.parametrize("engine, sizes", [("local", (20, 200, 20)), ("reference", (2, 8, 2))])
def test_output_events_at_the_limit_pass_and_one_more_fails(engine, sizes):
    n_a, n_b, n_c = sizes
    events = n_a * n_c * (n_b + 2)
    s = _abc(*sizes)
    with pytest.raises(cerql.CeqlError) as err:
        cerql.run(KLEENE, {"s": s}, engine=engine, max_output_events=events - 1)
    assert err.value.error_class == "TOO_MANY_OUTPUT_EVENTS" and "cerql.maxOutputEvents" in str(err.value)
    out = cerql.run(KLEENE, {"s": s}, engine=engine, max_output_events=events)
    assert len(out) == n_a * n_c
    assert out["b"].list.len().tolist() == [n_b] * (n_a * n_c)
    assert out["a"].struct.field("x").tolist() == [i for _ in range(n_c) for i in range(n_a)]


@pytest.mark.parametrize("engine", ["local", "reference"])
def test_limit_holds_few_events(engine):
    """With LIMIT n about 2n results are held, and only their events count."""
    s = _abc(*((30, 100, 30) if engine == "local" else (3, 6, 3)))
    n_b = 100 if engine == "local" else 6
    out = cerql.run(KLEENE + " LIMIT 2", {"s": s}, engine=engine, max_output_events=5 * (n_b + 2))
    assert len(out) == 2 and out["b"].list.len().tolist() == [n_b, n_b]
    with pytest.raises(cerql.CeqlError) as err:  # the held results themselves are too many events
        cerql.run(KLEENE + " LIMIT 2", {"s": s}, engine=engine, max_output_events=n_b)
    assert err.value.error_class == "TOO_MANY_OUTPUT_EVENTS"


def test_post_filtered_output_events_are_guarded_too():
    s = pd.DataFrame({"type": ["A"] * 10 + ["B"] * 10, "x": range(20), "ts": range(20)})  # 100 results
    q = "SELECT * FROM s WHERE A AS a ; B AS b FILTER b.x - a.x > 0 ORDER BY ts"
    with pytest.raises(cerql.CeqlError) as err:
        cerql.run(q, {"s": s}, max_output_events=199)
    assert err.value.error_class == "TOO_MANY_OUTPUT_EVENTS"
    assert len(cerql.run(q, {"s": s}, max_output_events=200)) == 100


@pytest.mark.parametrize("events", [1, 5, 40, 10_000])
def test_event_slices_are_the_whole_results(events):
    from cerql.exec import driver
    from cerql.exec.stream import as_arrow, build_stream
    from cerql.planner.resolve import resolve

    s = as_arrow(_stream(80, seed=4, keys=3))
    q = "SELECT * FROM s WHERE A AS a ; B+ AS b PARTITION BY [k] ORDER BY ts WITHIN 5 [ts]"
    plan = resolve(cerql.analyze(q), {"s": s.schema})
    matches = driver.match_arrays(plan, build_stream(plan, {"s": s}))
    parts = list(matches.event_slices(events))
    assert all(len(p.label_pos) <= events or len(p) == 1 for p in parts)
    assert [r for p in parts for r in p.results()] == matches.results()
