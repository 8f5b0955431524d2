"""Register runs stay bounded (issue 15, item 3): a min or max in FILTER keeps only its side of
the constant, so runs meet again; a sum over a Kleene variable, whose runs cannot meet, fails
with TOO_MANY_RUNS_PER_EVENT naming its conf instead of filling memory."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cerql

KLEENE = "SELECT ANY count(a) AS n FROM s WHERE A+ AS a ; B FILTER {f} ORDER BY ts"


def _random_stream(n: int, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"type": rng.choice(["A", "B"], n, p=[0.9, 0.1]), "x": rng.random(n), "ts": np.arange(n)})


def test_sum_over_kleene_fails_with_its_conf_not_memory():
    """Issue 15's reproduction, scaled: runs for every distinct sum of a window's A events."""
    s = _random_stream(400)
    q = KLEENE.format(f="sum(a.x) > 5") + " WITHIN 20 EVENTS"
    with pytest.raises(cerql.CeqlError) as err:
        cerql.run(q, {"s": s}, max_matches_per_event=2000)
    assert err.value.error_class == "TOO_MANY_RUNS_PER_EVENT"
    assert "cerql.maxMatchesPerEvent" in str(err.value) and "WITHIN" in str(err.value)


def test_sum_over_kleene_without_window():
    """Issue 15's reproduction: 40 A's with x = 2**i, then a B, no WITHIN (it was OOM-killed).
    The values are non-negative, so sums above 5 meet and it answers; with alternating signs
    the 2**40 sums stay apart and the guard stops it."""
    x = [2 ** i for i in range(40)]
    q = KLEENE.format(f="sum(a.x) > 5") + " LIMIT 5"
    s = pd.DataFrame({"type": ["A"] * 40 + ["B"], "x": x + [0], "ts": range(41)})
    out = cerql.run(q, {"s": s})
    assert len(out) == 1 and out["match_end"].tolist() == [40]
    s["x"] = [v if i % 2 == 0 else -v for i, v in enumerate(x)] + [0]
    with pytest.raises(cerql.CeqlError) as err:
        cerql.run(q, {"s": s})
    assert err.value.error_class == "TOO_MANY_RUNS_PER_EVENT"


def test_count_twin_needs_no_guard():
    s = _random_stream(400)
    out = cerql.run(KLEENE.format(f="count(a) > 5") + " WITHIN 20 EVENTS", {"s": s}, max_matches_per_event=2000)
    assert len(out) == len(cerql.run(KLEENE.format(f="count(a) > 5") + " WITHIN 20 EVENTS", {"s": s}))


OPS = {">": lambda v, c: v > c, ">=": lambda v, c: v >= c, "=": lambda v, c: v == c, "!=": lambda v, c: v != c,
       "<": lambda v, c: v < c, "<=": lambda v, c: v <= c}


@pytest.mark.parametrize("agg", ["max", "min"])
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("column, constant", [("x", 150), ("y", 150.5), ("y", 150.0)])
def test_min_and_max_runs_meet_on_their_side_of_the_constant(agg, op, column, constant):
    """300 A's with distinct values, then a B, no window: one run per distinct min or max would
    pass the limit of 50 runs; kept as their side of the constant (below, equal, above) they
    stay few. ANY gives the B one result, whose a must pass the predicate."""
    x = list(range(300))
    s = pd.DataFrame({"type": ["A"] * 300 + ["B"], "x": x + [0], "y": [float(v) for v in x] + [0.0],
                      "ts": range(301)})
    f = f"{agg}(a.{column}) {op} {constant}"
    q = f"SELECT ANY * FROM s WHERE A+ AS a ; B FILTER {f} ORDER BY ts"
    out = cerql.run(q, {"s": s}, max_matches_per_event=50)
    values = [x[e["ts"]] for e in out["a"][0]] if len(out) else []
    exists = any(OPS[op](v, constant) for v in x)  # a single A with a passing value is a passing result
    assert len(out) == int(exists)
    if values:
        assert OPS[op](max(values) if agg == "max" else min(values), constant), (f, values)


def test_max_side_keeps_nan_apart():
    """NaN is above every number (Spark's order): a max that met NaN is not 'above' a number's max."""
    s = pd.DataFrame({"type": ["A", "A", "B"], "x": [float("nan"), 5.0, 0.0], "ts": range(3)})
    q = "SELECT * FROM s WHERE A+ AS a ; B FILTER max(a.x) {op} 1.0 ORDER BY ts"
    for op in (">", "<", "=", "!="):
        got = cerql.run(q.format(op=op), {"s": s})
        want = cerql.run(q.format(op=op), {"s": s}, engine="reference")
        assert sorted(map(sorted, got["a"].map(lambda es: [e["ts"] for e in es]))) == sorted(
            map(sorted, want["a"].map(lambda es: [e["ts"] for e in es]))), op


@pytest.mark.parametrize("x, overflows", [([2**62, 2**62 - 1], False), ([2**62, 2**62], True),
                                          ([-(2**62), -(2**62)], False), ([-(2**62), -(2**62) - 1], True)])
def test_sum_register_at_the_bigint_edge(x, overflows):
    """The kernel's integer sum stops at BIGINT's range as Spark's ANSI sum does: exactly at the
    edge it still fits; one past it is ARITHMETIC_OVERFLOW, never a wrapped-around sum."""
    s = pd.DataFrame({"type": ["A", "A"], "ts": [0, 1], "x": x})
    q = "SELECT * FROM s WHERE A+ AS a FILTER sum(a.x) != 5 ORDER BY ts"
    if overflows:
        with pytest.raises(cerql.CeqlError) as err:
            cerql.run(q, {"s": s})
        assert err.value.error_class == "ARITHMETIC_OVERFLOW"
    else:
        assert len(cerql.run(q, {"s": s})) == 3


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("column, constant", [("x", 40), ("y", 40.5)])
def test_sum_of_non_negative_values_rises_so_its_runs_meet(op, column, constant):
    """Issue 15's sum over A+ with non-negative values: a sum above the constant stays above it,
    so the local engine keeps it as one value and its runs meet (1000 runs suffice where one per
    distinct sum would not). The results equal the post-filter's for the same predicate, which
    registers do not check (``+ 0``)."""
    rng = np.random.default_rng(5)
    n = 300
    s = pd.DataFrame({"type": rng.choice(["A", "B"], n, p=[0.85, 0.15]), "x": rng.integers(0, 30, n),
                      "ts": np.arange(n)})
    s["y"] = s["x"] + 0.25
    q = "SELECT * FROM s WHERE A+ AS a ; B AS b FILTER sum(a.{c}) {op} {k} ORDER BY ts WITHIN 12 EVENTS"
    got = cerql.run(q.format(c=column, op=op, k=constant), {"s": s}, max_matches_per_event=500_000)
    want = cerql.run(q.format(c=column, op=op, k=f"{constant} + 0"), {"s": s}, max_matches_per_event=500_000)
    assert sorted(got["match_id"]) == sorted(want["match_id"]) and len(got) > 0 or op in ("=",)
    if op in (">", ">=", "!="):  # the sums that pass rise past the constant: runs meet there
        cerql.run("SELECT ANY count(a) AS n FROM s WHERE A+ AS a ; B FILTER sum(a.{c}) {op} {k} ORDER BY ts"
                   .format(c=column, op=op, k=constant), {"s": s}, max_matches_per_event=1000)


def test_a_negative_value_keeps_sums_exact():
    """One negative value anywhere in the stream: sums may fall again, so none is kept as 'above'."""
    s = pd.DataFrame({"type": ["A", "A", "A", "B"], "x": [10, 10, -15, 0], "ts": range(4)})
    q = "SELECT * FROM s WHERE A+ AS a ; B FILTER sum(a.x) {op} 5 ORDER BY ts"
    for op in (">", "<", "="):
        got = cerql.run(q.format(op=op), {"s": s})
        want = cerql.run(q.format(op=op), {"s": s}, engine="reference")
        assert sorted(got["match_id"]) == sorted(want["match_id"]), op
