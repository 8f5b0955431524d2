"""Property tests: the selection strategies, WITHIN, CONSUME BY and PARTITION BY against ALL.

Random small patterns (atoms A/B/C with ``;``, ``:``, ``+``, ``:+``, OR, AS and unary FILTERs),
printed as fully parenthesised CEQL, run on random streams of up to 7 events. The invariants
follow from docs/language.md ("Selection strategies", "WITHIN", "CONSUME BY"): NEXT, LAST ⊆ MAX
⊆ ALL, STRICT ⊆ ALL, one D per end for NEXT and LAST, ANY one result of ALL per end, WITHIN n
EVENTS = ALL restricted to end - start <= n, CONSUME BY NONE = ALL. Where those sections define a
strategy exactly, the test also rebuilds it from ALL's results with its definition (not with the
evaluator's code) and compares.
"""

from __future__ import annotations

from collections import defaultdict

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cerql
from tests.generators import to_ceql, variables

ENGINE = "reference"
VARS = ["x", "y", "z"]
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- patterns
def _filtered(child):
    return st.tuples(st.just("filter"), st.just(child),
                     st.tuples(st.just("pred"), st.sampled_from(variables(child)),
                               st.sampled_from(["v > 0", "v > 1"])))


def _extend(children):
    return st.one_of(
        st.tuples(st.just("seq"), children, children),
        st.tuples(st.just("colon"), children, children),
        st.tuples(st.just("or"), children, children),
        st.tuples(st.just("plus"), children),
        st.tuples(st.just("cplus"), children),
        st.tuples(st.just("as"), children, st.sampled_from(VARS)),
        children.flatmap(_filtered),
    )


patterns = st.recursive(st.sampled_from(["A", "B", "C"]).map(lambda t: ("atom", t)), _extend, max_leaves=4)
streams = st.lists(st.tuples(st.sampled_from(["A", "A", "B", "B", "C"]), st.integers(0, 3)), min_size=0, max_size=7)


@st.composite
def queries(draw):
    """(pattern text, projection text) with a projection that names pattern variables or *."""
    node = draw(patterns)
    names = sorted(set(variables(node)))
    chosen = draw(st.one_of(st.just(None), st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True)))
    return to_ceql(node), ("*" if chosen is None else ", ".join(chosen))


# --------------------------------------------------------------------------- running
def frame(events, ts=None, k=None) -> pd.DataFrame:
    data = {"type": [t for t, _ in events], "v": [v for _, v in events],
            "ts": list(range(len(events))) if ts is None else list(ts)}
    if k is not None:
        data["k"] = list(k)
    return pd.DataFrame(data)


def run(text: str, df: pd.DataFrame, **kw) -> pd.DataFrame:
    return cerql.run(text, {"s": df}, engine=ENGINE, **kw)


def q(strategy: str, projection: str, pattern: str, tail: str = "", partition: str = "") -> str:
    return f"SELECT {strategy} {projection} FROM s WHERE {pattern} {partition} ORDER BY ts {tail}"


def keys(df: pd.DataFrame, partition=()) -> list[tuple]:
    """Each result as (partition values, start, end, ((variable, ts of its events), ...))."""
    skip = {"match_id", "match_start", "match_end", *partition}
    cols = [c for c in df.columns if c not in skip]
    out = []
    for row in df.to_dict("records"):  # cells as Python values: a list of dicts, a dict or None
        labels = []
        for c in cols:
            v = row[c]
            events = [] if v is None or v is pd.NA else v if isinstance(v, list) else [v]
            labels.append((c, tuple(e["ts"] for e in events)))
        out.append((tuple(row[c] for c in partition), int(row["match_start"]), int(row["match_end"]), tuple(labels)))
    return out


def data(key) -> frozenset:
    return frozenset(p for _, ps in key[3] for p in ps)


def by_end(ks):
    groups = defaultdict(list)
    for k in ks:
        groups[(k[0], k[2])].append(k)
    return groups


def next_greater(d1: frozenset, d2: frozenset, pick) -> bool:
    """d1 <next d2 (pick=min) or d1 <last d2 (pick=max): docs/language.md, "Selection strategies"."""
    diff = d1 ^ d2
    return bool(diff) and pick(diff) in d2


def best(ds, pick) -> frozenset:
    """The greatest D under the total order: the one no other D is greater than."""
    winners = [d for d in ds if not any(next_greater(d, e, pick) for e in ds)]
    assert len(winners) == 1
    return winners[0]


def expected_strategy(strategy: str, all_keys: list[tuple]) -> set:
    """docs/language.md, "Selection strategies", applied to ALL's results, per end position."""
    out = set()
    for group in by_end(all_keys).values():
        ds = {data(k) for k in group}
        if strategy == "MAX":
            out |= {k for k in group if not any(data(k) < d for d in ds)}
        elif strategy == "STRICT":
            for k in group:
                ps = sorted(data(k))  # ts = position here
                if ps[-1] - ps[0] + 1 == len(ps):
                    out.add(k)
        else:
            win = best(ds, min if strategy == "NEXT" else max)
            out |= {k for k in group if data(k) == win}
    return out


def multiset(ks) -> list:
    return sorted(ks, key=repr)


# --------------------------------------------------------------------------- properties
@SETTINGS
@given(queries(), streams)
def test_strategies_are_subsets_as_design_requires(query, events):
    pattern, projection = query
    df = frame(events)
    res = {s: keys(run(q(s, projection, pattern), df)) for s in ("ALL", "NEXT", "LAST", "MAX", "STRICT")}
    sets = {s: set(ks) for s, ks in res.items()}
    for s, ks in res.items():
        assert len(ks) == len(set(ks)), f"{s} repeats a result"
    assert sets["NEXT"] <= sets["MAX"]
    assert sets["LAST"] <= sets["MAX"]
    assert sets["MAX"] <= sets["ALL"]
    assert sets["STRICT"] <= sets["ALL"]
    for s in ("NEXT", "LAST"):
        for end, group in by_end(res[s]).items():
            assert len({data(k) for k in group}) == 1, (s, end, group)
    # each strategy is exactly its definition applied to ALL's results
    for s in ("NEXT", "LAST", "MAX", "STRICT"):
        assert sets[s] == expected_strategy(s, res["ALL"]), s


@SETTINGS
@given(queries(), streams)
def test_any_gives_one_result_of_all_per_end(query, events):
    pattern, projection = query
    df = frame(events)
    all_keys = keys(run(q("ALL", projection, pattern), df))
    any_keys = keys(run(q("ANY", projection, pattern), df))
    ends = by_end(any_keys)
    assert set(ends) == set(by_end(all_keys))
    assert all(len(group) == 1 for group in ends.values())
    assert set(any_keys) <= set(all_keys)


@SETTINGS
@given(queries(), streams, st.integers(0, 4))
def test_within_events_is_all_restricted_to_short_intervals(query, events, n):
    pattern, projection = query
    df = frame(events)
    all_keys = keys(run(q("", projection, pattern), df))
    within = keys(run(q("", projection, pattern, f"WITHIN {n} EVENTS"), df))
    assert multiset(within) == multiset(k for k in all_keys if k[2] - k[1] <= n)


@SETTINGS
@given(queries(), streams, st.lists(st.integers(1, 3), min_size=7, max_size=7), st.integers(0, 6))
def test_within_column_and_events_measure_their_own_units(query, events, gaps, n):
    # ts with gaps of 1-3: WITHIN n [ts] bounds ts(end) - ts(start), n EVENTS bounds positions.
    pattern, projection = query
    ts = [sum(gaps[:i]) for i in range(len(events))]
    pos = {t: i for i, t in enumerate(ts)}
    df = frame(events, ts=ts)
    all_keys = keys(run(q("", projection, pattern), df))
    by_col = keys(run(q("", projection, pattern, f"WITHIN {n} [ts]"), df))
    by_events = keys(run(q("", projection, pattern, f"WITHIN {n} EVENTS"), df))
    assert multiset(by_col) == multiset(k for k in all_keys if k[2] - k[1] <= n)
    assert multiset(by_events) == multiset(k for k in all_keys if pos[k[2]] - pos[k[1]] <= n)


@SETTINGS
@given(queries(), streams, st.sampled_from(["", "NEXT", "LAST", "MAX", "STRICT"]))
def test_consume_by_none_is_no_consumption(query, events, strategy):
    pattern, projection = query
    df = frame(events)
    plain = keys(run(q(strategy, projection, pattern), df))
    none = keys(run(q(strategy, projection, pattern, "CONSUME BY NONE"), df))
    assert multiset(none) == multiset(plain)


@SETTINGS
@given(queries(), streams)
def test_consume_by_partition_keeps_results_that_start_after_the_last_output(query, events):
    # docs/language.md, "CONSUME BY", walked end by end over ALL's results (no strategy, no window).
    pattern, projection = query
    df = frame(events)
    all_keys = keys(run(q("", projection, pattern), df))
    consumed, expected = -1, []
    for (_, end), group in sorted(by_end(all_keys).items()):
        kept = [k for k in group if k[1] > consumed]
        if kept:
            consumed = end
        expected += kept
    got = keys(run(q("", projection, pattern, "CONSUME BY PARTITION"), df))
    assert multiset(got) == multiset(expected)
    got_any = keys(run(q("", projection, pattern, "CONSUME BY ANY"), df))
    assert multiset(got_any) == multiset(expected)


@SETTINGS
@given(queries(), streams, st.lists(st.integers(0, 1), min_size=7, max_size=7),
       st.sampled_from(["", "NEXT", "LAST", "MAX", "STRICT"]))
def test_partition_by_is_the_union_of_the_substreams_run_alone(query, events, ks, strategy):
    pattern, projection = query
    k = ks[: len(events)]
    df = frame(events, k=k)
    together = keys(run(q(strategy, projection, pattern, partition="PARTITION BY k"), df), ("k",))
    alone = []
    for value in sorted(set(k)):
        part = df[df.k == value].drop(columns="k").reset_index(drop=True)
        alone += [((value,),) + key[1:] for key in keys(run(q(strategy, projection, pattern), part))]
    assert multiset(together) == multiset(alone)
