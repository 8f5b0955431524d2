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


def test_result_table_ids_equal_match_ids_whatever_the_entry_order():
    """exec/output._ids hashes each row once and sums per entry: the same ids as match_ids, for
    owners in order (the kernel's layout, summed by runs) and shuffled (summed unbuffered)."""
    import pyarrow as pa

    from cerql.automaton import label_bits
    from cerql.exec.output import _ids
    from cerql.plan import ORDINAL_COLUMN, SOURCE_COLUMN

    rng = np.random.default_rng(5)
    rows = pa.table({SOURCE_COLUMN: rng.integers(0, 3, 200), ORDINAL_COLUMN: rng.permutation(200)})
    n, bits = 300, label_bits(["a", "b", "c"])
    end_row, start_row = rng.integers(0, 200, n), rng.integers(0, 200, n)
    owner = np.sort(rng.integers(0, n, 900))
    entry_row = rng.integers(0, 200, 900)
    entry_mask = rng.integers(1, 8, 900) << 1  # any of the three variables' bits, never START alone
    src, ordinal = rows.column(SOURCE_COLUMN).to_numpy(), rows.column(ORDINAL_COLUMN).to_numpy()
    label_owner, label_var, label_row = [], [], []
    for k, bit in enumerate(bits.values()):
        has = (entry_mask & bit) != 0
        label_owner.append(owner[has])
        label_var.append(np.full(has.sum(), k))
        label_row.append(entry_row[has])
    label_row = np.concatenate(label_row)
    want = match_ids(src[start_row], ordinal[start_row], src[end_row], ordinal[end_row], np.concatenate(label_owner),
                     np.concatenate(label_var), src[label_row], ordinal[label_row])
    assert _ids(rows, bits, end_row, start_row, owner, entry_row, entry_mask).tolist() == want.tolist()
    shuffle = rng.permutation(900)
    got = _ids(rows, bits, end_row, start_row, owner[shuffle], entry_row[shuffle], entry_mask[shuffle])
    assert got.tolist() == want.tolist()
