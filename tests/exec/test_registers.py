"""Comparisons between single-event variables checked by the kernel with registers (seed 002).

``FILTER b.p > a.p`` over the whole pattern, with a and b bound at most once, is checked on the
transition that binds the later of the two, from the earlier one's value carried on the run
(planner/registers.py, exec/kernel/registers.py). Each case checks the plan (which comparisons the kernel
checks, and whether a post-filter remains), the results by hand, and that the local engine gives
the reference evaluator's rows. Seed 002's cases come from its digest (shared/notes/seed002_rma.md:
C7, C8, F1, F3, F7); positions = ts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import cerql
from cerql.exec import driver, reference
from cerql.exec.stream import as_arrow, build_stream
from tests.differential import BATCH_SIZES, TOO_LARGE, canonical, same_rows_as_reference
from tests.generators import derandomized
from tests.support import match_sets, plan_of, typed_stream


def run(spec: str, query: str, registers, filtered=False, **columns):
    """The reference evaluator's results, after checking the plan's register checks (their text),
    whether a post-filter remains, and that the local engine gives the same rows."""
    df = typed_stream(spec, **columns)
    plan = plan_of(query, df)
    assert [r.text for r in plan.registers] == registers
    assert bool(plan.post_filters) == filtered
    ref = cerql.run(query, {"s": df}, engine="reference")
    local = cerql.run(query, {"s": df}, engine="local")
    assert ref.to_dict("records") == local.to_dict("records")
    return ref


def test_seed002_later_price_above_earlier():
    # C7: B(p=1) fails since 1 > 1 is false
    out = run("A B B", "SELECT * FROM s WHERE A AS a ; B AS b FILTER b.p > a.p ORDER BY ts", ["b.p > a.p"], p=[1, 2, 1])
    assert match_sets(out) == [(0, 1)]


def test_seed002_pairs_with_a_later_anchor():
    # F1: A(1) B(2) B(1) A(0) B(1): (0,1) 2 > 1, (3,4) 1 > 0; (0,4), (0,2) fail
    out = run("A B B A B", "SELECT * FROM s WHERE A AS a ; B AS b FILTER b.p > a.p ORDER BY ts", ["b.p > a.p"],
              p=[1, 2, 1, 0, 1])
    assert match_sets(out) == [(0, 1), (3, 4)]


def test_seed002_chain_of_comparisons():
    # F3: a < b < c: A(1) B(5) A(3) C(4) C(9): only (0, 1, 4)
    out = run("A B A C C", "SELECT * FROM s WHERE (A AS a ; B AS b ; C AS c) FILTER a.p < b.p AND b.p < c.p "
              "ORDER BY ts", ["a.p < b.p", "b.p < c.p"], p=[1, 5, 3, 4, 9])
    assert match_sets(out) == [(0, 1, 4)]


def test_seed002_variable_bound_in_either_branch():
    # F7 with >: x = A(1) or B(2); then C(p) with p > x.p: C(2) > A(1); C(3) > both
    out = run("A B C C", "SELECT * FROM s WHERE ((A AS x) OR (B AS x)) ; C AS y FILTER y.p > x.p ORDER BY ts",
              ["y.p > x.p"], p=[1, 2, 2, 3])
    assert match_sets(out) == [(0, 2), (0, 3), (1, 3)]


def test_unbound_variable_leaves_the_comparison_vacuous():
    # the C branch binds no a: every C passes; the A branch needs c.x > a.x (5 > 1 yes, 0 > 1 no)
    out = run("A C C", "SELECT * FROM s WHERE (A AS a OR B AS b) ; C AS c FILTER c.x > a.x ORDER BY ts",
              ["c.x > a.x"], x=[1, 5, 0])
    assert match_sets(out) == [(0, 1)]
    out = run("B C", "SELECT * FROM s WHERE (A AS a OR B AS b) ; C AS c FILTER c.x > a.x ORDER BY ts",
              ["c.x > a.x"], x=[9, 0])
    assert match_sets(out) == [(0, 1)]


def test_null_on_either_side_fails():
    out = run("A B A B", "SELECT * FROM s WHERE A AS a ; B AS b FILTER b.x >= a.x ORDER BY ts", ["b.x >= a.x"],
              x=[None, 1, 0, None])
    assert match_sets(out) == []


def test_floats_and_integers_mixed():
    # a.f (float) against b.v (integer): 1.5 < 2 only; pandas' NaN arrives as NULL, which fails
    query = "SELECT * FROM s WHERE A AS a ; B AS b FILTER a.f {op} b.v ORDER BY ts"
    kwargs = dict(f=[1.5, 0.0, float("nan"), 0.0], v=[0, 2, 0, 1])
    assert match_sets(run("A B A B", query.format(op="<"), ["a.f < b.v"], **kwargs)) == [(0, 1)]
    assert match_sets(run("A B A B", query.format(op="!="), ["a.f <> b.v"], **kwargs)) == [(0, 1), (0, 3)]


@pytest.mark.parametrize("op, expected", [("=", []), ("!=", [(0, 1), (0, 3), (2, 3)]), (">", []),
                                          ("<", [(0, 1), (0, 3), (2, 3)])])
def test_arrow_nan_compares_as_spark_does(op, expected):
    # a NaN that is not NULL (an Arrow table): the kernel compares as Spark SQL does, and as the
    # reference's expressions do (cerql/expr/): NaN is larger than every number and
    # equal to itself, so x < NaN and x != NaN are true, x = NaN and x > NaN false. Pairs:
    # (0,1) 1.0 vs 2.0, (0,3) 1.0 vs NaN, (2,3) 3.0 vs NaN
    table = pa.table({"type": ["A", "B", "A", "B"], "ts": [0, 1, 2, 3], "f": [1.0, 2.0, 3.0, float("nan")]})
    query = f"SELECT * FROM s WHERE A AS a ; B AS b FILTER a.f {op} b.f ORDER BY ts"
    ref = cerql.run(query, {"s": table}, engine="reference")
    assert list(ref["match_id"]) == list(cerql.run(query, {"s": table}, engine="local")["match_id"])  # NaN != NaN
    assert plan_of(query, table.to_pandas()).registers
    assert match_sets(ref) == expected


def test_timestamps_and_arithmetic_sides():
    # a strictly later clock time than the sale (the first buy has the same), above its price
    # plus 1 (both are)
    ts = pd.to_datetime(["2026-01-01 10:00:00", "2026-01-01 10:00:00", "2026-01-01 10:02:00"])
    out = run("X B B", "SELECT * FROM s WHERE X AS x ; B AS b FILTER b.t > x.t AND b.p > x.p + 1 ORDER BY ts",
              ["b.t > x.t", "b.p > x.p + 1"], t=ts, p=[1.0, 3.0, 9.0])
    assert match_sets(out) == [(0, 2)]


def test_strategies_choose_among_the_passing_results():
    # pairs passing b.p > a.p at j = 3: (0,3) and (2,3) (p 1, 0 < 4); (1,3) fails (5)
    query = "SELECT {s} * FROM s WHERE A AS a ; B AS b FILTER b.p > a.p ORDER BY ts"
    kwargs = dict(p=[1, 5, 0, 4])
    assert match_sets(run("A A A B", query.format(s="NEXT"), ["b.p > a.p"], **kwargs)) == [(0, 3)]
    assert match_sets(run("A A A B", query.format(s="LAST"), ["b.p > a.p"], **kwargs)) == [(2, 3)]


def test_consume_and_window_apply_to_passing_results():
    # A(1) A(0) B(3) A(0) B(2). CONSUME BY ANY: (0,2) and (1,2) pass at 2; later results must
    # start after 2, so (0,4) and (1,4) are gone and (3,4) (2 > 0) stays. Without it they pass too.
    query = "SELECT * FROM s WHERE A AS a ; B AS b FILTER b.p > a.p ORDER BY ts {rest}"
    kwargs = dict(p=[1, 0, 3, 0, 2])
    out = run("A A B A B", query.format(rest="CONSUME BY ANY"), ["b.p > a.p"], **kwargs)
    assert match_sets(out) == [(0, 2), (1, 2), (3, 4)]
    out = run("A A B A B", query.format(rest=""), ["b.p > a.p"], **kwargs)
    assert match_sets(out) == [(0, 2), (0, 4), (1, 2), (1, 4), (3, 4)]
    out = run("A A B A B", query.format(rest="WITHIN 1 [ts]"), ["b.p > a.p"], **kwargs)
    assert match_sets(out) == [(1, 2), (3, 4)]


def test_same_event_in_both_variables():
    # a and b are one event: a.p > b.p is p > p, never true
    out = run("A A", "SELECT * FROM s WHERE (A AS a) AS b FILTER a.p > b.p ORDER BY ts", ["a.p > b.p"], p=[1, 2])
    assert match_sets(out) == []


def test_unselected_variable_prunes_before_the_filter():
    # b is not selected: the kernel prunes with registers, the post-filter projects; one result
    # per end (1 and 2), a = 0 in both
    out = run("A B B", "SELECT a FROM s WHERE A AS a ; B AS b FILTER b.p > a.p ORDER BY ts", ["b.p > a.p"],
              filtered=True, p=[1, 2, 3])
    assert match_sets(out) == [(0,), (0,)] and list(out["match_end"]) == [1, 2]


def test_kleene_variable_against_an_anchor():
    # seed 002's F4 over the whole pattern: every b above a. A(1) B(2) B(0) B(3): b ⊆ {1, 3}
    out = run("A B B B", "SELECT * FROM s WHERE A AS a ; B+ AS b FILTER b.p > a.p ORDER BY ts", ["b.p > a.p"],
              p=[1, 2, 0, 3])
    assert match_sets(out) == [(0, 1), (0, 1, 3), (0, 3)]


def test_kleene_variable_before_its_anchor():
    # every b below the later c: b's greatest value is carried. B(1) B(5) B(2) C(3): b ⊆ {0, 2}
    out = run("B B B C", "SELECT * FROM s WHERE B+ AS b ; C AS c FILTER b.p < c.p ORDER BY ts", ["b.p < c.p"],
              p=[1, 5, 2, 3])
    assert match_sets(out) == [(0, 2, 3), (0, 3), (2, 3)]


def test_two_kleene_variables_every_pair():
    # every a below every b: a ⊆ {0, 1} (1, 5), b ⊆ {2, 3} (6, 3); as in test_cross_predicates
    out = run("A A B B", "SELECT * FROM s WHERE A+ AS a ; B+ AS b FILTER a.x < b.x ORDER BY ts", ["a.x < b.x"],
              x=[1, 5, 6, 3])
    assert match_sets(out) == [(0, 1, 2), (0, 2), (0, 2, 3), (0, 3), (1, 2)]


def test_equality_over_a_kleene_variable():
    # every b equal to a (C, untied, keeps it from being partitioning): a = 0 (2), C = 1,
    # b ⊆ {2, 4} (2, 2); b = 3 (1) never
    out = run("A C B B B", "SELECT * FROM s WHERE A AS a ; C ; B+ AS b FILTER b.p = a.p ORDER BY ts", ["b.p = a.p"],
              p=[2, 0, 2, 1, 2])
    assert match_sets(out) == [(0, 1, 2), (0, 1, 2, 4), (0, 1, 4)]


def test_null_in_a_kleene_variable_fails_only_with_the_other_side_bound():
    # a NULL b fails every pair; with the OR's C branch nothing is compared
    out = run("A B B C", "SELECT * FROM s WHERE (A AS a OR C AS c) ; B+ AS b FILTER b.p > a.p ORDER BY ts",
              ["b.p > a.p"], p=[0, None, 1, 9])
    assert match_sets(out) == [(0, 2)]
    out = run("C B B", "SELECT * FROM s WHERE (A AS a OR C AS c) ; B+ AS b FILTER b.p > a.p ORDER BY ts",
              ["b.p > a.p"], p=[9, None, 1])
    assert match_sets(out) == [(0, 1), (0, 1, 2), (0, 2)]


# ------------------------------------------------ aggregates compared with a constant (seed 004)
def test_count_of_a_kleene_variable():
    # b ⊆ {1, 2, 3} with two or more events: four sets; the count stops at 3 (= 2 + 1) on the run
    out = run("A B B B", "SELECT * FROM s WHERE A AS a ; B+ AS b FILTER count(b) >= 2 ORDER BY ts",
              ["COUNT(b) >= 2"])
    assert match_sets(out) == [(0, 1, 2), (0, 1, 2, 3), (0, 1, 3), (0, 2, 3)]
    # at most two: every set but {1, 2, 3}; a constant on the left reads the same
    out = run("A B B B", "SELECT * FROM s WHERE A AS a ; B+ AS b FILTER 2 >= count(b) ORDER BY ts",
              ["2 >= COUNT(b)"])
    assert match_sets(out) == [(0, 1), (0, 1, 2), (0, 1, 3), (0, 2), (0, 2, 3), (0, 3)]


def test_sum_over_a_contiguous_run_skips_nulls():
    # runs from 1: {1} 4, {1,2} 4 (NULL skipped), {1,2,3} 7; from 2: NULL only (no value: fails),
    # {2,3} 3; from 3: 3. Above 3: {1}, {1,2}, {1,2,3}
    out = run("A B B B", "SELECT * FROM s WHERE A AS a : (B :+) AS b FILTER sum(b.v) > 3 ORDER BY ts",
              ["SUM(b.v) > 3"], v=[0, 4, None, 3])
    assert match_sets(out) == [(0, 1), (0, 1, 2), (0, 1, 2, 3)]
    # a run of NULLs has no sum: not even sum(b.v) IS NULL-like comparisons hold
    out = run("A B B", "SELECT * FROM s WHERE A AS a : (B :+) AS b FILTER sum(b.v) < 100 ORDER BY ts",
              ["SUM(b.v) < 100"], v=[0, None, None])
    assert match_sets(out) == []


def run_nan(query: str, registers, p) -> list:
    """``run`` over an Arrow table of B events whose p keeps NaN apart from NULL (pandas would
    make NaN NULL)."""
    table = pa.table({"type": ["B"] * len(p), "ts": list(range(len(p))), "p": pa.array(p, pa.float64())})
    assert [r.text for r in plan_of(query, table).registers] == registers
    ref = cerql.run(query, {"s": table}, engine="reference")
    local = cerql.run(query, {"s": table}, engine="local")  # the rows hold NaN: compare sets and ids
    assert match_sets(ref) == match_sets(local) and list(ref["match_id"]) == list(local["match_id"])
    return match_sets(ref)


def test_avg_min_and_max_of_floats_with_nan():
    # b ⊆ {0, 1, 2}, p = 1.0, NaN, 3.0. max is NaN once a NaN is in (Spark orders NaN highest),
    # and NaN compares false: max(b.p) < 5 keeps the sets without 1
    query = "SELECT * FROM s WHERE B+ AS b FILTER max(b.p) < 5 ORDER BY ts"
    assert run_nan(query, ["MAX(b.p) < 5"], [1.0, float("nan"), 3.0]) == [(0,), (0, 2), (2,)]
    # min skips the NaN unless there is nothing else: every set but {1}
    query = "SELECT * FROM s WHERE B+ AS b FILTER min(b.p) < 5 ORDER BY ts"
    assert run_nan(query, ["MIN(b.p) < 5"], [1.0, float("nan"), 3.0]) == [
        (0,), (0, 1), (0, 1, 2), (0, 2), (1, 2), (2,)]
    # a sum with a NaN is NaN, which != holds for: sum(b.p) != 4 fails {0, 2} alone
    query = "SELECT * FROM s WHERE B+ AS b FILTER sum(b.p) != 4 ORDER BY ts"
    assert run_nan(query, ["SUM(b.p) <> 4"], [1.0, float("nan"), 3.0]) == [
        (0,), (0, 1), (0, 1, 2), (1,), (1, 2), (2,)]
    # avg over integers is a double: {0} 1, {0,1} 1.5, {0,1,2} 2, {0,2} 2, {1} 2, {1,2} 2.5, {2} 3
    query = "SELECT * FROM s WHERE B+ AS b FILTER avg(b.q) = 2 ORDER BY ts"
    assert match_sets(run("B B B", query, ["AVG(b.q) = 2"], q=[1, 2, 3])) == [(0, 1, 2), (0, 2), (1,)]


def test_aggregate_of_an_unbound_variable_is_the_aggregate_of_no_rows():
    # the C branch binds no a: count(a) is 0, so count(a) = 0 keeps it and the A branch fails
    query = "SELECT * FROM s WHERE (A AS a OR C AS c) ; B AS b FILTER count(a) = 0 ORDER BY ts"
    assert match_sets(run("A C B", query, ["COUNT(a) = 0"])) == [(1, 2)]


def test_aggregates_with_strategies_and_comparisons():
    # every b above a, at least two of them, LAST among those: a = 0 (p 1); b ⊆ {1, 3, 4} (2, 3, 5;
    # 2 is p 0). Pairs and more ending at 4: {1,4}, {3,4}, {1,3,4}; LAST: {1,3,4}
    out = run("A B B B B", "SELECT LAST * FROM s WHERE A AS a ; B+ AS b FILTER b.p > a.p AND count(b) >= 2 "
              "ORDER BY ts", ["b.p > a.p", "COUNT(b) >= 2"], p=[1, 2, 0, 3, 5])
    assert match_sets(out) == [(0, 1, 3), (0, 1, 3, 4)]


@pytest.mark.parametrize("query", [
    "SELECT * FROM s WHERE A AS a ; B+ AS b FILTER b.p != a.p ORDER BY ts",          # != over several events
    "SELECT * FROM s WHERE (A AS a ; B AS b FILTER b.p > a.p) ; C AS c ORDER BY ts",  # not over the whole pattern
    "SELECT * FROM s WHERE A AS a ; B AS b FILTER b.n > a.n ORDER BY ts",            # strings
    "SELECT * FROM s WHERE A AS a ; B AS b FILTER b.p + a.p > 2 ORDER BY ts",        # not one variable a side
    "SELECT * FROM s WHERE A AS a ; B AS b FILTER sum(b.p) > a.p ORDER BY ts",       # an aggregate
])
def test_left_to_the_post_filter(query):
    out = run("A B C B C", query, [], filtered=True, p=[1, 2, 0, 3, 1], n=["x", "y", "z", "a", "b"])
    assert len(out) > 0


def test_explain_says_the_kernel_checks_it():
    text = cerql.explain("SELECT * FROM s WHERE A AS a ; B AS b FILTER b.p > a.p ORDER BY ts")
    assert "checked by the automaton with registers" in text and "__cerql_filter" not in text
    text = cerql.explain("SELECT * FROM s WHERE A AS a ; B+ AS b FILTER count(b) >= 3 ORDER BY ts")
    assert "aggregates (COUNT(b) >= 3) are checked by the automaton with registers" in text
    assert "__cerql_filter" not in text


# ----------------------------------------------------------------- random queries against the oracle
SIDES = ["{x}.v", "{x}.v + 1", "{x}.f", "{x}.ts", "{x}.w * 2"]
OPS = ["=", "!=", "<", "<=", ">", ">="]
# aggregates compared with a constant (seed 004): NULLs in v, NaN in f, either side of the operator
AGGREGATES = ["count({x})", "count({x}.v)", "sum({x}.v)", "sum({x}.f)", "avg({x}.v)", "avg({x}.w)",
              "min({x}.f)", "max({x}.f)", "min({x}.v)", "max({x}.w)", "count({x}.f)"]
CONSTANTS = ["0", "1", "2", "3", "1.5", "-1", "2.0"]
FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "=": "=", "!=": "!="}


@st.composite
def register_cases(draw):
    """A sequence or OR of 2-4 atoms or iterations, most bound to their own AS variable, under a
    FILTER of comparisons between two of them (sometimes with one the kernel cannot check)."""
    n = draw(st.integers(2, 4))
    atoms = [draw(st.sampled_from(["A", "B", "C"])) for _ in range(n)]
    names = [f"x{k}" for k in range(n)]
    shapes = ["{t} AS {v}"] * 3 + ["{t}+ AS {v}", "({t} :+) AS {v}", "{t}"]  # a third hold several events
    parts = [draw(st.sampled_from(shapes)).format(t=t, v=v) for t, v in zip(atoms, names)]
    bound = [v for p, v in zip(parts, names) if " AS " in p]
    if len(bound) < 2:
        parts[0], parts[1] = f"{atoms[0]} AS x0", f"{atoms[1]} AS x1"
        bound = sorted(set(bound) | {"x0", "x1"})
    pattern = parts[0]
    for p in parts[1:]:
        op = draw(st.sampled_from([";"] * 6 + [":", "OR"]))
        pattern = f"({pattern}) {op} {p}" if op == "OR" else f"{pattern} {op} {p}"
    if draw(st.integers(0, 5)) == 0:
        pattern = f"({pattern}) ; B+"
    terms = []
    for _ in range(draw(st.sampled_from([1, 1, 2, 3]))):
        x, y = draw(st.permutations(bound))[:2]
        left, right = (draw(st.sampled_from(SIDES)).format(x=v) for v in (x, y))
        if ("ts" in left) != ("ts" in right):
            left, right = f"{x}.v", f"{y}.w"
        terms.append(f"{left} {draw(st.sampled_from(OPS))} {right}")
    for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
        call = draw(st.sampled_from(AGGREGATES)).format(x=draw(st.sampled_from(bound)))
        term = [call, draw(st.sampled_from(OPS)), draw(st.sampled_from(CONSTANTS))]
        terms.append(" ".join(term if draw(st.booleans()) else term[::-1]))
    if draw(st.integers(0, 4)) == 0:
        x, y = draw(st.permutations(bound))[:2]
        terms.append(f"{x}.v + {y}.v <= 3")  # not one variable a side: post-filter
    strategy = draw(st.sampled_from(["ALL", "ALL", "ALL", "NEXT", "LAST", "MAX", "STRICT", "ANY"]))
    projection = "*" if draw(st.integers(0, 3)) else ", ".join(draw(st.lists(st.sampled_from(bound), min_size=1,
                                                                            max_size=2, unique=True)))
    within = draw(st.sampled_from(["", "", "WITHIN 3 [ts]", "WITHIN 2 EVENTS", "WITHIN 1.5 [ts]"]))
    partitioned = draw(st.booleans())
    consume = draw(st.sampled_from(["", "", "", "", "CONSUME BY PARTITION"] + ([] if partitioned else ["CONSUME BY ANY"])))
    text = (f"SELECT {strategy} {projection} FROM s WHERE {pattern} FILTER {' AND '.join(terms)}"
            f"{' PARTITION BY [k]' if partitioned else ''} ORDER BY ts {within} {consume}")
    size = draw(st.sampled_from([0, 5, 8, 10, 11, 12, 12, 12]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    v = pd.array(rng.integers(0, 4, size), dtype="Int64")
    v[rng.random(size) < 0.1] = pd.NA
    f = rng.choice([0.0, 0.5, 1.0, 2.0, np.nan], size)
    kinds = sorted(set(atoms))
    df = pd.DataFrame({"type": rng.choice(kinds + ["D"], size, p=[0.9 / len(kinds)] * len(kinds) + [0.1]), "v": v, "f": f,
                       "w": rng.integers(0, 3, size), "ts": np.sort(rng.integers(0, size + 1, size)).astype(float),
                       "k": rng.integers(0, 2, size)})
    return text, df


@derandomized(1000)
@given(register_cases())
def test_kernel_registers_give_the_reference_results(case):
    text, df = case
    try:
        plan = plan_of(text, df)
    except cerql.CeqlError:
        return
    event(f"{len(plan.registers)} register checks" + (", then post-filter" if plan.post_filters else ""))
    if any(c.aggregate for c in plan.registers):
        event("aggregates in registers")
    same_rows_as_reference(text, df)


@derandomized(150)
@given(register_cases(), st.sampled_from(BATCH_SIZES))
def test_registers_are_carried_across_batches(case, batch_size):
    text, df = case
    if "ANY" in text or "post" in text:
        return
    try:
        plan = plan_of(text, df)
    except cerql.CeqlError:
        return
    if not plan.registers or plan.post_filters:
        return
    stream = build_stream(plan, {"s": as_arrow(df)})
    try:
        whole = canonical(driver.evaluate(plan, stream))
    except cerql.errors.ExecutionError:
        return
    assert canonical(driver.evaluate(plan, stream, batch_size=batch_size)) == whole
    try:
        ref = reference.evaluate(plan, stream)
    except cerql.errors.ExecutionError as err:
        assert err.error_class == TOO_LARGE
        return
    if not plan.join_columns:
        assert canonical(ref) == whole


@st.composite
def aggregate_cases(draw):
    """A pattern with a set variable b (and single-event a, c) under a FILTER of 1-2 aggregates of
    b or a compared with constants, sometimes with a comparison between variables too: queries
    that have results on most streams, so a wrong accumulator shows."""
    pattern = draw(st.sampled_from([
        "A AS a ; B+ AS b", "A AS a : (B :+) AS b", "B+ AS b ; C AS c", "A AS a ; (B OR C)+ AS b ; C AS c",
        "(A AS a ; B+ AS b) OR (C+ AS b)", "(B :+) AS b", "A AS a ; B+ AS b ; B+ AS b"]))
    bound = [v for v in ("a", "b", "c") if f"AS {v}" in pattern]
    terms = []
    for _ in range(draw(st.sampled_from([1, 1, 2]))):
        call = draw(st.sampled_from(AGGREGATES)).format(x=draw(st.sampled_from(["b", "b", bound[0]])))
        op = draw(st.sampled_from([">=", "<=", ">", "<", ">=", "<=", "=", "!="]))
        term = [call, op, draw(st.sampled_from(["1", "2", "3", "2", "1.5", "4", "-1"]))]
        terms.append(" ".join(term) if draw(st.booleans()) else f"{term[2]} {FLIP[op]} {call}")
    if len(bound) > 1 and draw(st.integers(0, 3)) == 0:
        terms.append(f"b.v > {bound[0] if bound[0] != 'b' else bound[1]}.w")
    strategy = draw(st.sampled_from(["ALL", "ALL", "ALL", "NEXT", "LAST", "MAX", "ANY"]))
    within = draw(st.sampled_from(["", "WITHIN 4 [ts]", "WITHIN 5 EVENTS"]))
    consume = draw(st.sampled_from(["", "", "", "CONSUME BY PARTITION"]))
    shown = ", ".join(f"{v}[ts, v, w]" for v in bound)  # not f: NaN != NaN in the rows compared
    text = (f"SELECT {strategy} {shown} FROM s WHERE {pattern} FILTER {' AND '.join(terms)} "
            f"PARTITION BY [k] ORDER BY ts {within} {consume}")
    size = draw(st.integers(6, 10))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    v = pd.array(rng.integers(0, 4, size), dtype="Int64")
    v[rng.random(size) < 0.1] = pd.NA
    df = pd.DataFrame({"type": rng.choice(["A", "B", "B", "B", "C"], size), "v": v,
                       "w": rng.integers(0, 3, size), "ts": np.arange(size, dtype=float),
                       "k": rng.integers(0, 2, size) if draw(st.booleans()) else np.zeros(size, np.int64)})
    f = rng.choice([0.0, 0.5, 1.0, 2.0, np.nan], size, p=[0.22, 0.22, 0.22, 0.22, 0.12])
    f = pa.array(f, mask=rng.random(size) < 0.1)  # NaN (kept apart from NULL, as pandas would not) and NULL
    return text, pa.Table.from_pandas(df, preserve_index=False).append_column("f", f)


@derandomized(400)
@given(aggregate_cases())
def test_kernel_aggregates_give_the_reference_results(case):
    text, df = case
    plan = plan_of(text, df)
    assert any(c.aggregate for c in plan.registers), text
    event("with a post-filter" if plan.post_filters else "registers alone")
    event("has results" if len(cerql.run(text, {"s": df}, engine="reference")) else "no results")
    same_rows_as_reference(text, df)
