"""match_ids: the ids of results that differ in any identifying part differ."""

import itertools

import numpy as np

from cerql.exec.output import match_ids


def ids(results):
    """results: [(start (src, ord), end (src, ord), [(var, src, ord), ...]), ...]"""
    cols = [[], [], [], []]
    labels = [[], [], [], []]
    for i, (start, end, labs) in enumerate(results):
        for c, v in zip(cols, start + end):
            c.append(v)
        for var, src, ordinal in labs:
            for c, v in zip(labels, (i, var, src, ordinal)):
                c.append(v)
    return match_ids(*(np.array(c, np.int64) for c in cols + labels)).tolist()


def test_every_identifying_part_changes_the_id():
    base = ((0, 0), (0, 0), [(0, 0, 0)])               # one event, first row: ids must not degenerate
    variants = [
        base,
        ((0, 0), (0, 1), [(0, 0, 1)]),
        ((0, 0), (0, 1), [(0, 0, 0), (0, 0, 1)]),
        ((0, 0), (0, 1), [(0, 0, 0), (1, 0, 1)]),
        ((0, 0), (0, 1), [(1, 0, 0), (0, 0, 1)]),       # the same rows, variables swapped
        ((1, 0), (1, 0), [(0, 1, 0)]),                  # same ordinal, other source
        ((0, 0), (0, 1), []),
    ]
    got = ids(variants)
    assert len(set(got)) == len(got)
    assert all(0 <= i < 2**63 for i in got)
    assert ids([base]) == got[:1]                       # deterministic


def test_label_order_does_not_matter_and_ids_are_unique_over_many_results():
    a = ids([((0, 3), (0, 9), [(0, 0, 3), (1, 0, 5), (1, 0, 9)])])
    b = ids([((0, 3), (0, 9), [(1, 0, 9), (0, 0, 3), (1, 0, 5)])])
    assert a == b
    many = [((0, s), (0, e), [(0, 0, s), (1, 0, e)]) for s, e in itertools.combinations(range(300), 2)]
    got = ids(many)
    assert len(set(got)) == len(got)
