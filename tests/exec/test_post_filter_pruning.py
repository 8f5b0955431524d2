"""The post-filter drops candidates on arrays before they become objects (exec/post_filter.prune):
only those a FILTER across variables is certainly false for, so the results stay the reference's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cerql
from cerql.exec import driver, post_filter
from cerql.exec.stream import as_arrow, build_stream
from cerql.planner.resolve import resolve


def _stream(n: int = 60, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 10, n).astype(float)
    x[rng.random(n) < 0.1] = np.nan  # NULL in x: the predicate is NULL, so false
    return pd.DataFrame({"type": rng.choice(["A", "B", "C"], n), "x": pd.array(
        [None if v != v else int(v) for v in x], dtype="Int64"), "ts": np.arange(n)})


def _pruned(q: str, s: pd.DataFrame):
    table = as_arrow(s)
    plan = resolve(cerql.analyze(q), {"s": table.schema})
    assert plan.post_filters
    stream = build_stream(plan, {"s": table})
    matches = driver.match_arrays(post_filter.relaxed(plan), stream)
    rows = np.repeat(matches.end_row - matches.end, matches.length) + matches.label_pos
    return len(matches), int(post_filter.prune(plan, matches, stream.table, rows).sum())


QUERIES = [
    "SELECT * FROM s WHERE A AS a ; B AS b FILTER a.x - b.x > 5 ORDER BY ts WITHIN 8 EVENTS",
    "SELECT * FROM s WHERE (A AS a ; B AS b FILTER a.x - b.x > 5) OR (C AS c) ORDER BY ts WITHIN 8 EVENTS",
    "SELECT * FROM s WHERE (A AS a OR C AS c) ; B AS b FILTER b.x - a.x > 0 ORDER BY ts WITHIN 8 EVENTS",
    "SELECT * FROM s WHERE A AS a ; B+ AS b FILTER b.x - a.x > 2 ORDER BY ts WITHIN 6 EVENTS",
    "SELECT * FROM s WHERE A AS a ; B AS b ; C AS c FILTER a.x - b.x > 1 OR c.x * 2 < b.x ORDER BY ts "
    "WITHIN 8 EVENTS",
    "SELECT MAX * FROM s WHERE (A AS a ; B AS b FILTER a.x - b.x > 1) ; (A AS a ; C AS c FILTER c.x + 0 > a.x) "
    "ORDER BY ts WITHIN 9 EVENTS",
    "SELECT NEXT * FROM s WHERE ((A AS a ; A AS c) FILTER a.x - c.x < 0) AS a ; B ORDER BY ts WITHIN 8 EVENTS",
]


@pytest.mark.parametrize("q", QUERIES)
def test_pruned_results_are_the_reference_results(q):
    s = _stream()
    got = cerql.run(q, {"s": s})
    want = cerql.run(q, {"s": s}, engine="reference")
    assert sorted(got["match_id"]) == sorted(want["match_id"])


def test_a_selective_predicate_prunes_almost_every_candidate():
    s = _stream(400)
    candidates, kept = _pruned(QUERIES[0], s)
    passing = len(cerql.run(QUERIES[0], {"s": s}))
    assert candidates > 10 * kept and kept == passing  # single events: the cut is exact


def test_an_empty_variable_or_branch_is_kept_for_the_exact_check():
    s = _stream(200)
    for q in QUERIES[1:3]:
        candidates, kept = _pruned(q, s)
        assert 0 < kept < candidates
