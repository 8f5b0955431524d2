"""NEXT and LAST behind a check after the kernel (a FILTER aggregate or comparison across
variables, an UNLESS inside the pattern) search their winner instead of enumerating every
candidate (issue 38, item 3): an end event whose candidates pass the events budget hands them
over in the strategy's order, best data set first, and the check stops at the first that passes
(kernel/ordered.py). The answers are the reference evaluator's whenever the order is used,
which the tests force on small inputs by lowering the kernel's thresholds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cerql
from cerql.exec import kernel

AVG = "A AS a ; B+ AS b ; C AS c FILTER avg(b.x) > a.x"


def chain(n_b: int, x=None) -> pd.DataFrame:
    """A(x=0), n_b B's (x=1 unless given), C."""
    types = ["A"] + ["B"] * n_b + ["C"]
    xs = [0] + (list(x) if x is not None else [1] * n_b) + [1]
    return pd.DataFrame({"type": types, "x": xs, "ts": np.arange(len(types))})


def rows(out: pd.DataFrame) -> list:
    return sorted(map(str, out.values.tolist()))


@pytest.mark.parametrize("strategy", ["NEXT", "LAST"])
@pytest.mark.parametrize("n_b", [19, 20])
def test_the_first_data_set_in_order_passes(strategy, n_b):
    """The issue's reproduction: A(x=0), 19 B's (x=1), C with avg(b.x) > a.x took 86 s and 5.5 GB
    under NEXT, and 20 B's ended in a MemoryError; then it failed with TOO_MANY_CANDIDATES. Every
    candidate passes, so the winner is the greatest data set: every B."""
    out = cerql.run(f"SELECT {strategy} * FROM s WHERE {AVG} ORDER BY ts WITHIN 100 EVENTS", {"s": chain(n_b)})
    assert len(out) == 1
    assert [e["ts"] for e in out["b"].iloc[0]] == list(range(1, n_b + 1))
    assert out["a"].iloc[0]["ts"] == 0 and out["c"].iloc[0]["ts"] == n_b + 1


@pytest.mark.parametrize("strategy", ["NEXT", "LAST"])
def test_unless_inside_answers(strategy):
    """The issue's reproduction: ``A ; ((B+ ; C) UNLESS D)`` over 24 B's ended in a numpy
    MemoryError under NEXT. No D: every B is in the winner."""
    q = f"SELECT {strategy} * FROM s WHERE A AS a ; ((B+ AS b ; C AS c) UNLESS D) ORDER BY ts WITHIN 100 EVENTS"
    out = cerql.run(q, {"s": chain(24)})
    assert len(out) == 1 and [e["ts"] for e in out["b"].iloc[0]] == list(range(1, 25))


def test_winners_found_after_failing_data_sets(monkeypatch):
    """12 B's whose x is 1 but for two 9's (B3 and B11), every end event's candidates handed
    over in order one at a time. With sum(b.x) > 17 every B passes: the greatest data set. With
    sum(b.x) < 12 the greatest data sets fail: NEXT's winner takes the smallest positions first,
    B1, B2, B3 (sum 11); LAST's the greatest, B12, B11, B10 (sum 11)."""
    monkeypatch.setattr(kernel, "ORDER_PLAIN", 0)
    monkeypatch.setattr(kernel, "ORDER_CHUNK", 1)
    x = [1] * 12
    x[2] = x[10] = 9
    s = chain(12, x)
    q = "SELECT {} * FROM s WHERE A AS a ; B+ AS b ; C AS c FILTER sum(b.x) {} AND avg(b.x) > a.x ORDER BY ts"
    for strategy, bound, expected in [("NEXT", "> 17", range(1, 13)), ("LAST", "> 17", range(1, 13)),
                                      ("NEXT", "< 12", [1, 2, 3]), ("LAST", "< 12", [10, 11, 12])]:
        out = cerql.run(q.format(strategy, bound), {"s": s})
        assert [[e["ts"] for e in b] for b in out["b"]] == [list(expected)]
        assert rows(out) == rows(cerql.run(q.format(strategy, bound), {"s": s}, engine="reference"))


def test_no_data_set_passes_fails_early_naming_the_conf():
    """When no candidate passes, the data sets handed over in order are bounded by the same
    budget of events as the candidates enumerated as they come (200 000 events for
    maxMatchesPerEvent 10: the default's 2 000 000 take some 8 s to check)."""
    for strategy in ("NEXT", "LAST"):
        with pytest.raises(cerql.CeqlError) as err:
            cerql.run(f"SELECT {strategy} * FROM s WHERE {AVG} + 5 ORDER BY ts WITHIN 100 EVENTS", {"s": chain(19)},
                      max_matches_per_event=10)
        assert err.value.error_class == "TOO_MANY_CANDIDATES_PER_EVENT" and "200,000" in str(err.value)
        assert err.value.params["conf"] == "cerql.maxMatchesPerEvent"


TEMPLATES = [
    "SELECT {s} * FROM s WHERE A AS a ; B+ AS b ; C AS c FILTER sum(b.x) < {k} ORDER BY ts WITHIN 40 EVENTS",
    "SELECT {s} * FROM s WHERE A AS a ; B+ AS b ; C AS c FILTER avg(b.x) > a.x + {k2} ORDER BY ts WITHIN 40 EVENTS",
    "SELECT {s} a, c FROM s WHERE A AS a ; B+ AS b ; C AS c FILTER sum(b.x) = {k} ORDER BY ts WITHIN 40 EVENTS",
    "SELECT {s} b FROM s WHERE A AS a ; B+ AS b ; C AS c FILTER max(b.x) - min(b.x) < {k3} ORDER BY ts",
    "SELECT {s} * FROM s WHERE A AS a ; ((B+ AS b ; C AS c) UNLESS D) ORDER BY ts WITHIN 40 EVENTS",
    "SELECT {s} * FROM s WHERE (A AS a ; B+ AS b FILTER count(b.x) > {k3}) ; C AS c FILTER sum(b.x) < {k} "
    "ORDER BY ts WITHIN 40 EVENTS",
    "SELECT {s} * FROM s WHERE A AS a ; (B AS b OR D AS d)+ ; C AS c FILTER sum(b.x) < {k} ORDER BY ts",
    "SELECT {s} * FROM s WHERE A AS a ; B+ AS b ; C AS c FILTER sum(b.x) < {k} PARTITION BY g ORDER BY ts "
    "WITHIN 40 EVENTS CONSUME BY PARTITION",
    "SELECT {s} * FROM s WHERE A AS a ; B+ AS b ; C AS c FILTER avg(b.x) > a.x + {k2} ORDER BY ts "
    "WITHIN 40 EVENTS CONSUME BY ANY",
    "SELECT {s} * FROM s WHERE A AS a ; B+ AS b ; C+ AS c FILTER sum(b.x) < sum(c.x) + {k2} ORDER BY ts "
    "WITHIN 10 EVENTS",
    "SELECT {s} c FROM s WHERE (A AS a ; B AS b FILTER b.x > a.x)+ ; C AS c ORDER BY ts WITHIN 12 EVENTS",
    "SELECT {s} * FROM s WHERE A AS a ; B AS b ; B AS c FILTER b.x + c.x > a.x + {k3} ORDER BY ts",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(template=st.sampled_from(TEMPLATES), strategy=st.sampled_from(["NEXT", "LAST"]),
       types=st.lists(st.sampled_from("AABBBBBBBCD"), min_size=4, max_size=16),
       xs=st.lists(st.integers(0, 5), min_size=16, max_size=16),
       k=st.integers(0, 20), k2=st.integers(-1, 2), k3=st.integers(0, 4),
       plain=st.integers(0, 4), chunk=st.integers(1, 3), data=st.data())
def test_in_order_as_the_reference(template, strategy, types, xs, k, k2, k3, plain, chunk, data):
    """Random streams and post-filtered NEXT and LAST queries, with the thresholds lowered so
    that most end events hand their candidates over in order, a few at a time (``plain``:
    candidates taken as they come; ``chunk``: the first hand-over's size): as the reference."""
    n = len(types)
    s = pd.DataFrame({"type": types, "x": xs[:n], "ts": np.arange(n),
                      "g": data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))})
    q = template.format(s=strategy, k=k, k2=k2, k3=k3)
    ref = cerql.run(q, {"s": s}, engine="reference")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kernel, "ORDER_PLAIN", plain)
        mp.setattr(kernel, "ORDER_CHUNK", chunk)
        out = cerql.run(q, {"s": s})
    assert rows(out[list(ref.columns)]) == rows(ref)
