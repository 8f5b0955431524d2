"""The local engine's machinery (exec/driver.py, exec/kernel/): state carried across batches,
buffers that grow on demand, memory bounded by the window, and the per-event guard.

Results are compared with the reference evaluator or with counts derived by hand.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import cerql
from cerql.errors import ExecutionError
from cerql.exec import driver, kernel, reference, window
from cerql.exec.kernel.arena import chain_find
from cerql.exec.stream import build_stream
from cerql.planner.resolve import resolve
from tests.support import typed_stream


def plan_and_stream(text: str, df: pd.DataFrame, max_matches: int = 100_000):
    table = pa.Table.from_pandas(df, preserve_index=False)
    plan = resolve(cerql.analyze(text), {"s": table.schema}, max_matches)
    return plan, build_stream(plan, {"s": table})


def ab_stream(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"type": rng.choice(["A", "B", "C"], n), "ts": np.arange(n)})


def test_results_do_not_depend_on_batch_size():
    plan, stream = plan_and_stream("SELECT * FROM s WHERE A AS a ; B+ AS b ; C AS c ORDER BY ts WITHIN 6 EVENTS",
                                   ab_stream(60))
    expected = driver.evaluate(plan, stream, batch_size=60)
    assert set(expected) == set(reference.evaluate(plan, stream))
    for size in (1, 2, 7, 13, 59):
        assert driver.evaluate(plan, stream, batch_size=size) == expected


def test_partition_change_inside_a_batch_starts_afresh():
    df = typed_stream("A B A B A B", k=[1, 1, 1, 2, 2, 2])
    plan, stream = plan_and_stream("SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY [k] ORDER BY ts", df)
    got = sorted((r.substream, r.start, r.end) for r in driver.evaluate(plan, stream, batch_size=4))
    # partition 1 holds A B A (0, 1, 2), partition 2 holds B A B (0, 1, 2): the B of
    # partition 2 at position 0 must not pair with partition 1's As
    assert got == [(0, 0, 1), (1, 1, 2)]


def test_output_buffers_grow_past_their_initial_size():
    # A+ over 14 As has 2^14 - 1 results, all ending at the last 14 events
    plan, stream = plan_and_stream("SELECT * FROM s WHERE A+ AS a ORDER BY ts", typed_stream(" ".join("A" * 14)))
    matches = driver.match_arrays(plan, stream, batch_size=3)
    assert len(matches) == 2**14 - 1
    assert len({frozenset(r.labels) for r in matches.results()}) == 2**14 - 1


def run_in_batches(text: str, df: pd.DataFrame, batch: int) -> driver.Run:
    """Feed the stream to one driver.Run in batches; return the run (its buffers) afterwards."""
    plan, stream = plan_and_stream(text, df)
    values = window.stream_values(plan, stream)
    run = driver.open_run(plan, values.dtype)
    bits = driver.condition_bits(plan.automaton, stream)
    starts = np.zeros(len(bits), bool)
    starts[0] = True
    for b0 in range(0, len(bits), batch):
        run.feed(bits[b0:b0 + batch], starts[b0:b0 + batch], values[b0:b0 + batch])
    return run


def test_memory_is_bounded_by_the_window_not_the_stream():
    run = run_in_batches("SELECT * FROM s WHERE A AS a ; B+ AS b ; C AS c ORDER BY ts WITHIN 8 EVENTS",
                         ab_stream(20_000, seed=1), batch=1000)
    assert len(run.arena.pos) == 1 << 12  # the arena never had to grow


def test_without_window_the_arena_grows_with_the_stream():
    run = run_in_batches("SELECT ANY * FROM s WHERE A AS a ; B+ AS b ; C AS c ORDER BY ts",
                         ab_stream(20_000, seed=1), batch=20_000)
    assert len(run.arena.pos) > 1 << 12


def test_window_pruning_keeps_results_equal_to_the_reference_across_compactions():
    df = ab_stream(3_000, seed=2)
    text = "SELECT * FROM s WHERE A AS a ; B+ AS b ; C AS c ORDER BY ts WITHIN 5 EVENTS"
    plan, stream = plan_and_stream(text, df)
    assert set(driver.evaluate(plan, stream, batch_size=257)) == set(reference.evaluate(plan, stream))


@pytest.mark.parametrize("strategy", ["NEXT", "LAST", "MAX"])
@pytest.mark.parametrize("pattern, tail", [
    ("A AS a ; B+ AS b ; C AS c", "WITHIN 9 EVENTS"),
    ("A AS a : B+ AS b ; C AS c", "WITHIN 9 EVENTS CONSUME BY ANY"),
    ("(A AS a ; B AS b) OR (B AS b ; A+ AS a) ; C AS c", "WITHIN 7 EVENTS"),
    # long chains of links (arena.low) that NEXT jumps down, cut by compact
    ("A AS a ; B AS b ; C AS c", "WITHIN 40 EVENTS"),
])
def test_strategies_keep_reference_results_across_compactions(strategy, pattern, tail, monkeypatch):
    # 3 000 events through a 64-node arena: compact runs at every few events, and renumbers the
    # starts NEXT's search reads (arena.starts)
    monkeypatch.setattr(driver, "ARENA_NODES", 64)
    calls = []
    make_room = driver.Run._make_room
    monkeypatch.setattr(driver.Run, "_make_room", lambda run: calls.append(1) or make_room(run))
    df = ab_stream(3_000, seed=3)
    plan, stream = plan_and_stream(f"SELECT {strategy} * FROM s WHERE {pattern} ORDER BY ts {tail}", df)
    got = driver.evaluate(plan, stream, batch_size=331)
    assert len(calls) > 20
    assert set(got) == set(reference.evaluate(plan, stream)) and got


def test_time_window_on_timestamps_prunes_by_value():
    ts = pd.to_datetime("2026-01-01") + pd.to_timedelta([0, 1, 1, 3, 4, 4, 9, 10], unit="s")
    df = pd.DataFrame({"type": list("ABABABAB"), "ts": ts})
    plan, stream = plan_and_stream("SELECT * FROM s WHERE A AS a ; B AS b WITHIN 3 SECONDS", df)
    got = set(driver.evaluate(plan, stream, batch_size=2))
    assert got == set(reference.evaluate(plan, stream))
    assert {(r.start, r.end) for r in got} == {(0, 1), (0, 3), (2, 3), (2, 5), (4, 5), (6, 7)}


def test_guard_fails_the_query_when_one_event_completes_too_many_matches():
    plan, stream = plan_and_stream("SELECT * FROM s WHERE A+ AS a ORDER BY ts", typed_stream("A A A A A"),
                                   max_matches=15)
    with pytest.raises(ExecutionError) as err:
        driver.evaluate(plan, stream)
    assert err.value.error_class == "TOO_MANY_MATCHES_PER_EVENT"  # the last A completes 16


def test_empty_stream_gives_no_results():
    df = pd.DataFrame({"type": pd.Series([], dtype=str), "ts": pd.Series([], dtype="int64")})
    plan, stream = plan_and_stream("SELECT * FROM s WHERE A AS a ORDER BY ts", df)
    assert driver.evaluate(plan, stream) == []


def test_local_is_the_default_engine():
    df = typed_stream("A B")
    out = cerql.run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts", {"s": df})
    assert cerql.api.DEFAULT_ENGINE == "local"
    assert out[["match_start", "match_end"]].values.tolist() == [[0, 1]]


@pytest.mark.parametrize("strategy, text, candidates", [
    # every A but the first starts a result strictly inside the first one's: MAX enters none of
    # them (enumeration.prune_starts), NEXT only the earliest live start
    ("MAX", "A+ AS a ; B AS b", 1),
    ("NEXT", "A+ AS a ; B AS b", 1),
    # ... while the first A is alive: WITHIN 50 EVENTS leaves the A at 150 the earliest
    ("MAX", "A+ AS a ; B AS b ORDER BY ts WITHIN 50 EVENTS", 1),
])
def test_candidates_that_a_live_result_contains_are_not_enumerated(strategy, text, candidates):
    df = typed_stream("A " * 200 + "B")
    if "ORDER BY" not in text:
        text += " ORDER BY ts"
    run = run_in_batches(f"SELECT {strategy} * FROM s WHERE {text}", df, batch=201)
    assert run.st[kernel.COUNT] == candidates  # the candidates of the last event with results


def test_next_finds_its_start_down_a_chain_in_logarithmic_steps():
    # NEXT over A B A B ... C: the runs of state "after B" meet one start group at a time, a
    # chain of 2 000 links (arena.low), each a B over the A before it. NEXT's winner starts at the
    # first A, at the bottom of the chain: the jump pointers reach any link in O(log) steps.
    query = "SELECT NEXT * FROM s WHERE A AS a ; B AS b ; C AS c ORDER BY ts"
    stream = typed_stream("A B " * 2_000 + "C")
    run = run_in_batches(query, stream, batch=4_001)
    arena, used = run.arena, int(run.st[kernel.ARENA])
    chains = [x for x in range(1, used) if arena.pos[x] < 0 and arena.low[x] >= 0]
    top = max(chains, key=lambda x: arena.level[x])
    assert arena.level[top] >= 1_990

    def walk(n, g):  # the same search, one link at a time, counting the nodes it passes
        links = [n]
        while arena.pos[arena.low[n]] < 0 and arena.low[arena.low[n]] >= 0 and arena.maxg[arena.low[n]] >= g:
            n = arena.low[n]
            links.append(n)
        return n, links

    def jumps(n, g):  # chain_find's steps, read from the arrays
        steps = 0
        while True:
            steps += 1
            j, lo = arena.jump[n], arena.low[n]
            if j != n and arena.maxg[j] >= g:
                n = j
            elif arena.pos[lo] < 0 and arena.low[lo] >= 0 and arena.maxg[lo] >= g:
                n = lo
            else:
                return steps

    for g in range(0, int(arena.maxg[top]) + 1, 37):
        found, links = walk(top, g)
        assert chain_find(top, g, arena) == found
        hi = arena.a[found] if arena.low[found] == arena.b[found] else arena.b[found]
        assert arena.ming[hi] <= g <= arena.maxg[hi] or arena.maxg[arena.low[found]] >= g
        assert all(arena.ming[arena.a[x] if arena.low[x] == arena.b[x] else arena.b[x]] > g for x in links[:-1])
        assert jumps(top, g) <= 4 * 11  # about 4 log2(2 000)
    df = cerql.run(query, {"s": stream}, engine="local")
    assert df[["match_start", "match_end"]].values.tolist() == [[0, 4_000]] and df["b"].iloc[0]["ts"] == 1
