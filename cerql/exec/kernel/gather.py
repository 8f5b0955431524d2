"""Results' label entries, gathered per variable and hashed into match ids, in compiled loops.

A result's selected events arrive as label entries: entry j says that result ``owner[j]``
selects row ``entry_row[j]`` as the variables whose bits are set in ``entry_mask[j]``. The result
builder (``cerql.exec.output``) needs them two ways: per variable, each result's rows in stream
order (a list column, or the one event of a single-event variable), and summed into each
result's match id. With NumPy that is a boolean mask, a sort and a bincount per variable and a
mask per variable for the ids: about half of ``cerql.run``'s time on a query with 10^6 results.
Here each is one pass over the entries, whatever their order, with no sort when a result's
entries come together in either stream order (the kernel gives them last event first).
"""

from __future__ import annotations

import numpy as np
from numba import njit

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


@njit(nogil=True, cache=True)
def mix(x):
    """The splitmix64 finalizer, as ``cerql.exec.output._mix`` computes it (uint64 wraps)."""
    x ^= x >> np.uint64(30)
    x *= _M1
    x ^= x >> np.uint64(27)
    x *= _M2
    x ^= x >> np.uint64(31)
    return x


@njit(nogil=True, cache=True)
def label_sums(n, owner, entry_row, entry_mask, bits, salts, row_hash):
    """Per result, the sum (mod 2**64) over its entries and each variable k marked on them of
    ``mix(row_hash[row] ^ salts[k])``: the labels' part of its match id."""
    total = np.zeros(n, np.uint64)
    for j in range(len(owner)):
        h = row_hash[entry_row[j]]
        m = entry_mask[j]
        s = np.uint64(0)
        for k in range(len(bits)):
            if m & bits[k]:
                s += mix(h ^ salts[k])
        total[owner[j]] += s
    return total


@njit(nogil=True, cache=True)
def by_variable(n, owner, entry_row, entry_mask, bits):
    """``(offsets, rows)``: variable k's events of result r are
    ``rows[k][offsets[k, r]:offsets[k, r + 1]]``, in stream order. An owner below 0 is a
    dropped result (LIMIT); ``rows`` is one flat array, variable k's part starting at
    ``offsets[k, 0]``."""
    n_var = len(bits)
    count = np.zeros((n_var, n + 1), np.int64)
    for j in range(len(owner)):
        r = owner[j]
        if r >= 0:
            m = entry_mask[j]
            for k in range(n_var):
                if m & bits[k]:
                    count[k, r + 1] += 1
    offsets = np.empty((n_var, n + 1), np.int64)
    at = 0
    for k in range(n_var):
        for r in range(n + 1):
            at += count[k, r]
            offsets[k, r] = at
    rows = np.empty(at, np.int64)
    fill = offsets[:, :n].copy()
    for j in range(len(owner)):
        r = owner[j]
        if r >= 0:
            m = entry_mask[j]
            for k in range(n_var):
                if m & bits[k]:
                    rows[fill[k, r]] = entry_row[j]
                    fill[k, r] += 1
    for k in range(n_var):  # stream order: a result's entries came rising, falling or mixed
        for r in range(n):
            lo, hi = offsets[k, r], offsets[k, r + 1]
            if hi - lo < 2:
                continue
            rising = True
            falling = True
            for i in range(lo + 1, hi):
                if rows[i] < rows[i - 1]:
                    rising = False
                elif rows[i] > rows[i - 1]:
                    falling = False
            if rising:
                continue
            if falling:
                rows[lo:hi] = rows[lo:hi][::-1].copy()
            else:
                rows[lo:hi] = np.sort(rows[lo:hi])
    return offsets, rows
