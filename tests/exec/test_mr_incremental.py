"""A PARTITION BY group matched batch by batch (cerql/exec/mr_incremental.py, as Spark's tasks
run it) gives exactly the rows the whole group gives at once (cerql/exec/mr_engine.py), in the
same order, on random patterns, DEFINEs (row-local and history-dependent), measures with
PREV/NEXT, skip modes and output layouts, cut into random batches (hypothesis); and holds only
the rows an undecided match needs."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cerql.errors import CeqlError
from cerql.exec import mr_engine
from cerql.exec.mr_define import define_bits
from cerql.exec.mr_incremental import GroupMatcher, GroupPool, local_bits, reach
from cerql.planner.mr_analyze import compiled
from tests.exec.mr_support import clause
from tests.exec.test_mr_engine_vs_reference import _same, cases

BITS = "__bits"


def _matcher(c, text):
    analysis, nfa, skip = compiled(c, text)
    return mr_engine.matcher_for(c, text, nfa, skip, analysis.row_local)


def _groups(c, text, table, matcher):
    """The table as Spark hands it to the tasks: sorted, the row-local DEFINE bits in a column,
    cut into PARTITION BY groups (in the order of their first rows)."""
    rows, partition_keys, order_keys = mr_engine.key_columns(c, table, text, None)
    part = mr_engine.partition_ids(rows, [k.column for k in partition_keys])
    order = mr_engine.sort_order(rows, part, c.order_by, [k.column for k in order_keys])
    rows, part = table.take(pa.array(order)), part[order]
    cuts = np.flatnonzero(np.diff(part)) + 1
    bounds = np.concatenate([[0], cuts, [len(part)]]).astype(int) if len(part) else np.array([0])
    starts, ends = np.repeat(bounds[:-1], np.diff(bounds)), np.repeat(bounds[1:], np.diff(bounds))
    history = set(getattr(matcher, "history", ()))
    defines = {d.variable.upper(): d.condition for d in c.defines if d.variable.upper() not in history}
    bits = define_bits(rows, starts, ends, mr_engine.pattern_variables(c), defines, text)
    rows = rows.append_column(BITS, pa.array(bits.view(np.int64)))
    return [rows.slice(lo, hi - lo) for lo, hi in zip(bounds[:-1], bounds[1:])]


def _incremental(c, text, table, sizes, max_rows=10_000_000, bits_here=False):
    """The groups' results batch by batch; ``bits_here``: the DEFINE bits computed over the rows
    held (local_bits, as the SQL cell does), not given with the rows (as Spark's tasks)."""
    matcher = _matcher(c, text)
    out, peak = [], 0
    for group in _groups(c, text, table, matcher):
        if bits_here:
            group = group.drop_columns([BITS])
        bits = local_bits(c, text, matcher) if bits_here else BITS
        g = GroupMatcher(c, text, matcher, bits=bits, max_rows=max_rows, min_run=1)
        at, k = 0, 0
        while at < group.num_rows:
            size = sizes[k % len(sizes)]
            if at + size >= group.num_rows and sizes[0] % 2:  # the last rows handed to finish
                out += list(g.finish(group.slice(at, size)))
                break
            out += list(g.feed(group.slice(at, size)))
            at, k = at + size, k + 1
        out += list(g.finish())
        peak = max(peak, g.peak)
    return [r for t in out for r in t.to_pylist()], peak


def _compare(case, sizes, bits_here=False):
    c, text, table = case
    try:
        whole = mr_engine.run_match_recognize(c, table, text, _matcher(c, text)).to_pylist()
    except CeqlError as err:
        with pytest.raises(CeqlError) as raised:
            _incremental(c, text, table, sizes, bits_here=bits_here)
        assert raised.value.error_class == err.error_class
        assert str(raised.value) == str(err), text  # the same match number and partition
        return
    got, _ = _incremental(c, text, table, sizes, bits_here=bits_here)
    assert len(got) == len(whole), text
    for g, e in zip(got, whole):
        assert g.keys() == e.keys() and all(_same(g[k], e[k]) for k in g), (text, g, e)


_SIZES = st.lists(st.integers(1, 4), min_size=1, max_size=4)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(cases(), _SIZES)
def test_batch_by_batch_gives_the_whole_groups_rows(case, sizes):
    _compare(case, sizes)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(cases(history=True), _SIZES)
def test_batch_by_batch_with_history_dependent_defines(case, sizes):
    _compare(case, sizes)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(cases(), _SIZES)
def test_batch_by_batch_with_the_bits_computed_over_the_rows_held(case, sizes):
    """The SQL cell's way: PREV/NEXT in DEFINEs read only rows held (reach keeps them)."""
    _compare(case, sizes, bits_here=True)


def _pooled(c, text, table, min_run: int, bits: str):
    """Every group handed whole to one GroupPool (as a Spark task hands it the groups that end
    before a run started), flushed at the end. ``bits``: "column" (the JVM computed them all),
    "here" (computed over the pooled rows, none given) or "mixed" (the even variables' DEFINEs
    here, the rest given in the column with the even variables' bits set)."""
    matcher = _matcher(c, text)
    groups = _groups(c, text, table, matcher)
    variables = mr_engine.pattern_variables(c)
    only = frozenset(v for i, v in enumerate(variables) if i % 2 == 0)
    if bits == "here":
        groups = [g.drop_columns([BITS]) for g in groups]
        spec = local_bits(c, text, matcher)
    elif bits == "mixed":
        mask = sum(1 << i for i, v in enumerate(variables) if v in only)
        groups = [g.set_column(g.schema.get_field_index(BITS), BITS,
                               pa.array(g.column(BITS).to_numpy() | np.int64(mask))) for g in groups]
        spec = local_bits(c, text, matcher, only=only, column=BITS)
    else:
        spec = BITS
    pool = GroupPool(c, text, matcher, bits=spec, min_run=min_run)
    out = [t for g in groups for t in pool.add(g)] + list(pool.flush())
    return [r for t in out for r in t.to_pylist()]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.one_of(cases(), cases(history=True)), st.integers(1, 20), st.sampled_from(["column", "here", "mixed"]))
def test_whole_groups_matched_together_give_the_whole_tables_rows(case, min_run, bits):
    """A GroupPool matches several groups in one run: each group's rows and MATCH_NUMBERs are
    its own, in the order of the groups, whichever DEFINEs are computed where."""
    c, text, table = case
    try:
        whole = mr_engine.run_match_recognize(c, table, text, _matcher(c, text)).to_pylist()
    except CeqlError as err:
        with pytest.raises(CeqlError) as raised:
            _pooled(c, text, table, min_run, bits)
        assert raised.value.error_class == err.error_class
        return
    got = _pooled(c, text, table, min_run, bits)
    assert len(got) == len(whole), text
    for g, e in zip(got, whole):
        assert g.keys() == e.keys() and all(_same(g[k], e[k]) for k in g), (text, g, e)


@pytest.mark.parametrize("bits", ["here", "mixed"])
def test_pooled_groups_navigate_within_their_own_group(bits):
    """PREV and NEXT of DEFINEs computed over pooled groups stop at each group's edge: B holds on
    no first row of a group, C on no last row, whatever the rows of the group beside it."""
    c, text = clause("B+ | C+", define={"B": "value > PREV(value)", "C": "value < NEXT(value)"},
                     measures={"n": "count(*)", "first": "FIRST(t)"}, partition_by=("p",), order_by=("t",))
    table = pa.table({"value": pa.array([0, 1, 2, 9, 9, 3], pa.int64()), "p": pa.array(list("xxxyyz")),
                      "t": pa.array([1, 2, 3, 1, 2, 1], pa.int64())})
    whole = mr_engine.run_match_recognize(c, table, text, _matcher(c, text)).to_pylist()
    assert whole == [{"p": "x", "n": 2, "first": 1}, {"p": "x", "n": 1, "first": 3}]  # C, C then B
    assert _pooled(c, text, table, 100, bits) == whole


def test_whole_gives_a_group_not_run_yet_and_none_once_a_run_started():
    c, text, table = _long(3_000, "A B+ C", {"A": "value = 0", "B": "value > PREV(value)", "C": "value = 6"})
    matcher = _matcher(c, text)
    group = _groups(c, text, table, matcher)[0]
    held = GroupMatcher(c, text, matcher, bits=BITS, min_run=4_000)
    assert not list(held.feed(group.slice(0, 1_000)))
    assert held.whole(group.slice(1_000)).equals(group)
    ran = GroupMatcher(c, text, matcher, bits=BITS, min_run=500)
    first = list(ran.feed(group.slice(0, 1_000)))
    assert ran.whole(group.slice(1_000)) is None
    assert sum(t.num_rows for t in first + list(ran.finish())) == 3_000 // 7


def test_reach_sums_the_offsets_of_each_expression():
    c, _ = clause("A B+", define={"B": "B.value > PREV(B.value, 2) AND value < NEXT(value)"},
                  measures={"m": "PREV(FIRST(A.value), 3)", "n": "NEXT(LAST(B.value))"})
    assert reach(c) == (3, 1)


def _long(n: int, pattern: str, define: dict[str, str], **kw):
    c, text = clause(pattern, define=define, measures={"first": "FIRST(row)", "last": "LAST(row)"}, **kw)
    table = pa.table({"row": pa.array(np.arange(n), pa.int64()), "value": pa.array(np.arange(n) % 7, pa.int64())})
    return c, text, table


def test_short_matches_hold_a_batch_or_two_however_long_the_group():
    c, text, table = _long(20_000, "A B+ C", {"A": "value = 0", "B": "value > PREV(value)", "C": "value = 6"})
    got, peak = _incremental(c, text, table, [500])
    assert len(got) == 20_000 // 7 and got[0] == {"first": 0, "last": 6}
    assert peak <= 2 * 500 + 8


def test_a_group_below_min_run_is_matched_once_when_it_ends():
    c, text, table = _long(3_000, "A B+ C", {"A": "value = 0", "B": "value > PREV(value)", "C": "value = 6"})
    matcher = _matcher(c, text)
    calls = []
    real = matcher.match
    matcher.match = lambda bits, *a, **kw: calls.append(kw["final"]) or real(bits, *a, **kw)
    group = _groups(c, text, table, matcher)[0]
    g = GroupMatcher(c, text, matcher, bits=BITS, min_run=4_000)
    out = [t for at in range(0, 3_000, 500) for t in g.feed(group.slice(at, 500))] + list(g.finish())
    assert calls == [True] and sum(t.num_rows for t in out) == 3_000 // 7


def test_a_live_match_holds_its_rows_and_work_stays_linear():
    c, text, table = _long(20_000, "A+ B", {"A": "value >= 0", "B": "value < 0"})
    matcher = _matcher(c, text)
    seen = []
    real = matcher.match

    def counting(bits, *args, **kw):
        seen.append(len(bits) - kw.get("begin", 0))
        return real(bits, *args, **kw)

    matcher.match = counting
    group = _groups(c, text, table, matcher)[0]
    g = GroupMatcher(c, text, matcher, bits=BITS, min_run=1)
    out = [t for at in range(0, 20_000, 100) for t in g.feed(group.slice(at, 100))] + list(g.finish())
    assert sum(t.num_rows for t in out) == 0 and g.peak == 20_000
    assert sum(seen) <= 3 * 20_000, seen  # each row matched about twice, not once per batch


def test_a_match_longer_than_the_limit_names_the_conf():
    c, text, table = _long(5_000, "A+ B", {"A": "value >= 0", "B": "value < 0"}, partition_by=("k",))
    table = table.append_column("k", pa.array(["x"] * 5_000))
    with pytest.raises(CeqlError) as raised:
        _incremental(c, text, table, [100], max_rows=1_000)
    assert raised.value.error_class == "MATCH_RECOGNIZE_MATCH_TOO_LONG"
    assert "cerql.matchRecognize.maxMatchRows" in str(raised.value) and "k='x'" in str(raised.value)
