"""The function a Spark task runs over its sorted rows (spark/mr_lower.py ``_matcher``: groups cut
out of Arrow batches, small whole groups pooled, the others matched batch by batch), driven here
without Spark: whatever the batch edges (a group ending exactly at one, a batch of several groups,
empty batches, NULL keys) and whichever groups are pooled, its rows are the whole table's, in the
same order, and an error is the whole table's (the same partition named)."""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cerql.errors import CeqlError
from cerql.exec import mr_engine
from cerql.exec.mr_incremental import GroupMatcher, GroupPool, local_bits
from cerql.spark import mr_lower
from tests.exec.test_mr_engine_vs_reference import _same, cases
from tests.exec.test_mr_incremental import BITS, _groups, _matcher


def _task(c, text, table, sizes, min_run, bits_here, monkeypatch):
    matcher = _matcher(c, text)
    groups = _groups(c, text, table, matcher)
    rows = (pa.concat_tables(groups) if groups else table).combine_chunks()
    if bits_here:
        rows = rows.drop_columns([BITS])
    bits = local_bits(c, text, matcher) if bits_here else BITS
    monkeypatch.setattr(mr_lower, "GroupMatcher", functools.partial(GroupMatcher, min_run=min_run))
    monkeypatch.setattr(mr_lower, "GroupPool", functools.partial(GroupPool, min_run=min_run))
    task = mr_lower._matcher(c, text, matcher, 10_000_000, [None] * len(c.partition_by), bits)
    batches, at, k = [], 0, 0
    while at < rows.num_rows:
        size = sizes[k % len(sizes)]
        batches.append(rows.slice(at, size).to_batches()[0] if size else pa.RecordBatch.from_pylist([], rows.schema))
        at, k = at + size, k + 1
    return [r for b in task(iter(batches)) for r in b.to_pylist()]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.one_of(cases(), cases(history=True)), st.lists(st.integers(0, 5), min_size=1, max_size=4).filter(any),
       st.sampled_from([1, 3, 100]), st.booleans())
def test_the_tasks_rows_are_the_whole_tables(monkeypatch, case, sizes, min_run, bits_here):
    c, text, table = case
    try:
        whole = mr_engine.run_match_recognize(c, table, text, _matcher(c, text)).to_pylist()
    except CeqlError as err:
        with pytest.raises(CeqlError) as raised:
            _task(c, text, table, sizes, min_run, bits_here, monkeypatch)
        assert raised.value.error_class == err.error_class
        assert str(raised.value) == str(err), text  # the same match number and partition
        return
    got = _task(c, text, table, sizes, min_run, bits_here, monkeypatch)
    assert len(got) == len(whole), (text, got, whole)
    for g, e in zip(got, whole):
        assert g.keys() == e.keys() and all(_same(g[k], e[k]) for k in g), (text, g, e)


def test_a_pooled_groups_error_comes_before_a_later_groups(monkeypatch):
    """Group y (pooled, not matched yet) and group x both fail; y comes first, so its error is
    the task's, as the whole table's (hypothesis found the task naming x)."""
    from cerql.planner import front

    text = ("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY p ORDER BY t MEASURES LAST(A.value) AS m0 "
            "ONE ROW PER MATCH AFTER MATCH SKIP TO FIRST A PATTERN (A) "
            "DEFINE A AS value <= FIRST(A.value) OR FIRST(A.value) IS NULL)")
    c = front.plan_row_pattern(text).clause
    table = pa.table({"value": pa.array([None] * 4, pa.int64()), "p": ["y", "x", "x", "x"],
                      "t": pa.array([None] * 4, pa.int64())})
    with pytest.raises(CeqlError) as whole:
        mr_engine.run_match_recognize(c, table, text, _matcher(c, text))
    assert "p='y'" in str(whole.value)
    with pytest.raises(CeqlError) as task:
        _task(c, text, table, [1], 3, False, monkeypatch)
    assert str(task.value) == str(whole.value)
