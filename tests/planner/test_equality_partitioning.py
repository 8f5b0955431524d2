"""Equalities across variables run as partitioning (planner/equality.py, docs/semantics.md).

``FILTER x.id = y.id`` over a pattern whose every event it ties to one ``id`` is run by the
automaton engines on substreams split by ``id`` too, without the predicate; the reference
evaluator still checks it on the PARTITION BY substreams. Each case checks which plan the
query gets (hidden key columns or not), the results by hand, and that the local engine gives
the reference evaluator's rows and match_ids. The cases of seed 002 come from its digest
(shared/notes/seed002_rma.md, C1-C14, F2, F7); positions = ts.
"""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import cerql
from tests.differential import same_rows_as_reference
from tests.generators import WINDOWS, derandomized, pattern_types, patterns, streams, to_ceql, variables
from tests.support import match_sets, plan_of, typed_stream

TABLE1 = dict(spec="T T T H H T", id=[1, 1, 2, 1, 1, 2], v=[22, 24, 32, 70, 68, 33])  # seed 002, Table 1


def run(spec: str, query: str, keys=(), **columns):
    """The reference evaluator's results, after checking the plan's hidden keys and that the
    local engine gives the same rows."""
    df = typed_stream(spec, **columns)
    assert plan_of(query, df).join_columns == keys
    ref = cerql.run(query, {"s": df}, engine="reference")
    local = cerql.run(query, {"s": df}, engine="local")
    assert ref.to_dict("records") == local.to_dict("records")
    return ref


PAIR = "SELECT {s} * FROM s WHERE (T AS x ; H AS y) FILTER x.id = y.id ORDER BY ts {w}"


def test_seed002_pairs_with_equal_ids():
    # C1: T/H pairs with equal id; {2,3} and {2,4} fail (id 2 against 1)
    out = run(TABLE1["spec"], PAIR.format(s="", w=""), ("id",), id=TABLE1["id"], v=TABLE1["v"])
    assert match_sets(out) == [(0, 3), (0, 4), (1, 3), (1, 4)]
    assert plan_of(PAIR.format(s="", w=""), typed_stream("T H", id=[1, 1])).post_filters == ()


def test_seed002_every_earlier_event_pairs_with_the_later_one():
    # C4: m matches at one event (Thm 6.2's shape)
    out = run("T T T H", PAIR.format(s="", w=""), ("id",), id=[1, 1, 1, 1])
    assert match_sets(out) == [(0, 3), (1, 3), (2, 3)]


@pytest.mark.parametrize("window, expected", [("WITHIN 2 [ts]", [(0, 2), (1, 2)]), ("WITHIN 1 [ts]", [(1, 2)])])
def test_seed002_windows(window, expected):
    # C5/C6 with cerql's inclusive bound: end - start <= n
    out = run("T T H", PAIR.format(s="", w=window), ("id",), id=[1, 1, 1])
    assert match_sets(out) == expected


@pytest.mark.parametrize("strategy, expected", [("NEXT", [(0, 3), (0, 4)]), ("LAST", [(1, 3), (1, 4)]),
                                                ("MAX", [(0, 3), (0, 4), (1, 3), (1, 4)])])
def test_strategies_compare_the_results_that_pass(strategy, expected):
    # at j = 3 the results are {0,3} and {1,3}: NEXT keeps the one with min of the difference
    # (0), LAST the one with its max (1); likewise at j = 4
    out = run(TABLE1["spec"], PAIR.format(s=strategy, w=""), ("id",), id=TABLE1["id"], v=TABLE1["v"])
    assert match_sets(out) == expected


def test_variable_bound_in_both_branches_of_an_or():
    # F7: x is bound on both sides, so it is always bound; C(2) pairs with B(2), C(1) with A(1)
    out = run("A B C C", "SELECT * FROM s WHERE ((A AS x) OR (B AS x)) ; C AS y FILTER y.p = x.p ORDER BY ts",
              ("p",), p=[1, 2, 2, 1])
    assert match_sets(out) == [(0, 3), (1, 2)]


def test_seed002_sensor_failure_query():
    # C14 (phi4): x an extreme reading, y a later reading of the same sensor
    out = run("T T T T T", "SELECT * FROM s WHERE ((T AS x FILTER x[v < -40]) OR (T AS x FILTER x[v > 50])) ; "
              "T AS y FILTER y.id = x.id ORDER BY ts", ("id",), id=[1, 2, 1, 1, 1], v=[-45, 10, 20, 60, 5])
    assert match_sets(out, ["x", "y"]) == [(0, 2), (0, 3), (0, 4), (3, 4)]


def test_kleene_variable_shares_the_key_of_every_event():
    # for all b: b.id = a.id. a = 0 (id 1): b any non-empty subset of {1, 4}; a = 2: b = {3}
    out = run("A B A B B", "SELECT * FROM s WHERE A AS a ; B+ AS b FILTER a.id = b.id ORDER BY ts", ("id",),
              id=[1, 1, 2, 2, 1])
    assert match_sets(out) == [(0, 1), (0, 1, 4), (0, 4), (2, 3)]


def test_event_types_as_variables_and_double_equals():
    # T(1) H(2) T(2) H(1): only (0, 3) has equal ids
    out = run("T H T H", "SELECT * FROM s WHERE T ; H FILTER T.id == H.id ORDER BY ts", ("id",), id=[1, 2, 2, 1])
    assert match_sets(out) == [(0, 3)]


def test_other_predicates_are_still_checked():
    # pairs with equal id: (0,3) 70 > 67, (1,3) 70 > 69, (0,4) 68 > 67, (1,4) 68 > 69 fails
    query = "SELECT * FROM s WHERE (T AS x ; H AS y) FILTER x.id = y.id AND y.v > x.v + 45 ORDER BY ts"
    out = run(TABLE1["spec"], query, ("id",), id=TABLE1["id"], v=TABLE1["v"])
    assert match_sets(out) == [(0, 3), (0, 4), (1, 3)]
    plan = plan_of(query, typed_stream("T H", id=[1, 1], v=[1, 2]))
    assert plan.post_filters == () and [r.text for r in plan.registers] == ["y.v > x.v + 45"]


def test_partition_by_the_same_column_needs_no_filter():
    query = "SELECT * FROM s WHERE (T AS x ; H AS y) FILTER x.id = y.id PARTITION BY id ORDER BY ts"
    out = run(TABLE1["spec"], query, (), id=TABLE1["id"], v=TABLE1["v"])
    assert match_sets(out, ["x", "y"]) == [(0, 3), (0, 4), (1, 3), (1, 4)]
    assert plan_of(query, typed_stream("T H", id=[1, 1])).post_filters == ()


def test_shown_partition_columns_and_limit_order():
    # PARTITION BY g (shown) and id (hidden): LIMIT takes the first rows by (g, match_end, ...)
    query = ("SELECT * FROM s WHERE (T AS x ; H AS y) FILTER x.id = y.id PARTITION BY g ORDER BY ts LIMIT 3")
    out = run("T T H H T H", query, ("id",), id=[1, 2, 2, 1, 1, 1], g=[0, 0, 0, 0, 1, 1])
    assert list(out.columns[:4]) == ["g", "match_id", "match_start", "match_end"]
    assert [tuple(r) for r in out[["g", "match_start", "match_end"]].values] == [(0, 1, 2), (0, 0, 3), (1, 4, 5)]


@pytest.mark.parametrize("query, why", [
    # an event not tied to the others (seed 002's F2, a partial equi-join)
    ("SELECT * FROM s WHERE (A AS x ; B AS t ; C AS z) FILTER x.id = z.id ORDER BY ts", "uncovered"),
    # b unbound on one side of the OR: the predicate is vacuously true there
    ("SELECT * FROM s WHERE (A AS a OR B AS b) ; C AS c FILTER a.id = c.id ORDER BY ts", "or"),
    # the equality filters only the inner pattern
    ("SELECT * FROM s WHERE (A AS a ; B AS b FILTER a.id = b.id) ; C AS c ORDER BY ts", "inner"),
    # positions count within a substream; CONSUME BY acts across it
    ("SELECT * FROM s WHERE (A AS a : B AS b) FILTER a.id = b.id ORDER BY ts", "contiguous"),
    ("SELECT STRICT * FROM s WHERE (A AS a ; B AS b) FILTER a.id = b.id ORDER BY ts", "strict"),
    ("SELECT * FROM s WHERE (A AS a ; B AS b) FILTER a.id = b.id ORDER BY ts WITHIN 2 EVENTS", "events"),
    ("SELECT * FROM s WHERE (A AS a ; B AS b) FILTER a.id = b.id ORDER BY ts CONSUME BY ANY", "consume"),
    # floats: Spark's NaN and -0.0
    ("SELECT * FROM s WHERE (A AS a ; B AS b) FILTER a.f = b.f ORDER BY ts", "float"),
    # not an equality of one column: other columns, NULL-safe equality, disjunction
    ("SELECT * FROM s WHERE (A AS a ; B AS b) FILTER a.id = b.g ORDER BY ts", "columns"),
    ("SELECT * FROM s WHERE (A AS a ; B AS b) FILTER a.id <=> b.id ORDER BY ts", "null-safe"),
    ("SELECT * FROM s WHERE (A AS a ; B AS b) FILTER a.id = b.id OR b[id > 1] ORDER BY ts", "or-condition"),
])
def test_no_partitioning_where_it_would_change_results(query, why):
    # run() checks that the plan has no hidden key and that the local engine (filtering the
    # relaxed pattern) gives the reference rows; the stream has matches either way
    out = run("A B A B C C", query, (), id=[1, 1, 2, 1, 2, 1], g=[2, 2, 1, 1, 1, 1],
              f=[0.0, -0.0, 1.0, 1.0, 0.0, 0.0])
    assert len(out) > 0, why


def test_uncovered_event_keeps_its_own_id():
    # F2: x and z equal, t anything (a partition by id would lose {0,1,2})
    out = run("H T H H", "SELECT * FROM s WHERE (H AS x ; T AS t ; H AS z) FILTER x.id = z.id ORDER BY ts", (),
              id=[1, 2, 1, 2])
    assert match_sets(out) == [(0, 1, 2)]


def test_vacuous_side_of_an_or_is_kept():
    # b's branch is not constrained: B(2) ; C(1) passes; A(1) ; C(1) passes, A(2) ; C(1) not
    out = run("A B A C", "SELECT * FROM s WHERE (A AS a OR B AS b) ; C AS c FILTER a.id = c.id ORDER BY ts", (),
              id=[1, 2, 2, 1])
    assert match_sets(out) == [(0, 3), (1, 3)]


def test_explain_says_the_equality_is_partitioning():
    text = cerql.explain(PAIR.format(s="", w=""))
    assert "equalities across variables on id run as partitioning" in text
    assert "__cerql_filter" not in text  # the plain automaton, nothing to filter


# ----------------------------------------------------------------- random queries against the oracle
EQUALITIES = ["{x}.v = {y}.v", "({x}.v = {y}.v)", "{x}.w = {y}.w", "{x}.v = {y}.w"]
OTHERS = ["{x}.v > {y}.v", "{x}.w <= {y}.v + 1", "count({x}) >= 2", "{x}[v > 0]", "{x}[w != 1]"]


def _gapped(node):
    """The pattern with `:` as `;` and `:+` as `+` (positions would forbid partitioning)."""
    if node[0] == "atom":
        return node
    kind = {"colon": "seq", "cplus": "plus"}.get(node[0], node[0])
    return (kind,) + tuple(_gapped(part) if isinstance(part, tuple) and part and isinstance(part[0], str)
                           and part[0] in KINDS else part for part in node[1:])


GAPPED_WINDOWS = st.one_of(st.just(("none", None)), st.tuples(st.just("column"), st.sampled_from([0, 1, 2, 4, 1.5])),
                           st.tuples(st.just("time"), st.integers(0, 4)))
KINDS = ("atom", "seq", "colon", "or", "plus", "cplus", "as", "filter")


@st.composite
def equality_cases(draw):
    """A pattern under a top FILTER of one to three equalities (and sometimes another term),
    often all of its variables, so that many queries partition."""
    node = draw(patterns(draw(st.integers(1, 3)), 3, products=False))
    if draw(st.integers(0, 3)):
        node = _gapped(node)
    names = variables(node)
    if len(names) > 1 and draw(st.booleans()):  # a chain over every variable: covers every event
        order = draw(st.permutations(names))
        terms = [f"{x}.v = {y}.v" for x, y in zip(order, order[1:])]
    else:
        terms = []
        for _ in range(draw(st.integers(1, 3))):
            x = draw(st.sampled_from(names))
            y = draw(st.sampled_from([n for n in names if n != x] or names))
            terms.append(draw(st.sampled_from(EQUALITIES)).format(x=x, y=y))
    if draw(st.booleans()):
        terms.append(draw(st.sampled_from(OTHERS)).format(x=draw(st.sampled_from(names)),
                                                          y=draw(st.sampled_from(names))))
    strategy = draw(st.sampled_from(["ALL", "ALL", "ALL", "NEXT", "LAST", "MAX", "MAX", "STRICT"]))
    kind, n = draw(WINDOWS if draw(st.integers(0, 3)) == 0 else GAPPED_WINDOWS)
    within = {"none": "", "events": f"WITHIN {n} EVENTS", "column": f"WITHIN {n} [ts]",
              "time": f"WITHIN {n} SECONDS"}[kind]
    partitioned = draw(st.booleans())
    consume = draw(st.sampled_from(["", "", "", "", "", "PARTITION"] + ([] if partitioned else ["ANY"])))
    limit = draw(st.sampled_from(["", "", "", "LIMIT 3"]))
    text = (f"SELECT {strategy} * FROM s WHERE ({to_ceql(node)}) FILTER {' AND '.join(terms)}"
            f"{' PARTITION BY [k]' if partitioned else ''} ORDER BY ts {within}"
            f"{' CONSUME BY ' + consume if consume else ''} {limit}")
    df = draw(streams(10, sorted(set(pattern_types(node))), partitioned=partitioned))
    df["w"] = draw(st.lists(st.integers(0, 2), min_size=len(df), max_size=len(df)))
    if kind == "time":
        df = df.assign(ts=pd.Timestamp("2026-01-01") + pd.to_timedelta(df["ts"], unit="s"))
    return text, df


@derandomized(600)
@given(equality_cases())
def test_local_engine_with_equalities_gives_the_reference_results(case):
    text, df = case
    try:
        plan = plan_of(text, df)
    except cerql.CeqlError:
        return  # a query the generator got wrong (a variable bound twice, ...)
    event("partitioned by " + ", ".join(plan.join_columns) if plan.join_columns else "not partitioned")
    if plan.automaton is not None:  # else refused: tests/exec/test_cross_predicates.py
        same_rows_as_reference(text, df)

