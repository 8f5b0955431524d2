"""The compiled loops of the SELECT aggregates over many results at once.

Used by ``cerql.exec.aggregate.grouped`` (the result builder, cerql.exec.output, and the SQL
cells' function): result g's values are ``numbers[offsets[g]:offsets[g + 1]]``, in stream order,
NULLs already dropped. Each loop gives the answer of Spark's aggregate of the same name over
those rows (the rules, NULLs, NaN and BIGINT overflow, are in exec/aggregate.py's docstring):
sums added in stream order (not pairwise, as Spark adds), an integer sum checked against the
BIGINT range before each addition, NaN above every number for min and max. In the kernel
package so that numba's cache of them is kept in step with their source (cache.py) and the
warm-up compiles them with the rest.
"""

from __future__ import annotations

import numpy as np
from numba import njit

INT64_MIN, INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)  # Spark's BIGINT range


@njit(nogil=True, cache=True)
def sum_int64(numbers, offsets):
    """Each group's sum in stream order, and the first group whose running sum leaves BIGINT
    (-1 when none does)."""
    n = len(offsets) - 1
    sums = np.zeros(n, np.int64)
    for g in range(n):
        lo, hi = offsets[g], offsets[g + 1]
        if lo == hi:
            continue
        total = numbers[lo]
        for k in range(lo + 1, hi):
            v = numbers[k]
            if (v > 0 and total > INT64_MAX - v) or (v < 0 and total < INT64_MIN - v):  # checked before: LLVM
                return sums, g                                                            # may drop a wrap test
            total += v
        sums[g] = total
    return sums, -1


@njit(nogil=True, cache=True)
def sum_float64(numbers, offsets, start):
    """Each group's sum in stream order (as Python and Spark add, not pairwise): from its first
    value, or from ``start`` when that is a number (avg's 0.0)."""
    n = len(offsets) - 1
    sums = np.zeros(n, np.float64)
    for g in range(n):
        lo, hi = offsets[g], offsets[g + 1]
        if lo == hi:
            continue
        if np.isnan(start):
            total = numbers[lo]
            lo += 1
        else:
            total = start
        for k in range(lo, hi):
            total += numbers[k]
        sums[g] = total
    return sums


@njit(nogil=True, cache=True)
def min_max_float(numbers, offsets, is_max):
    """Each group's min or max with NaN above every number (Spark's order): max is NaN when
    the group holds one, min only when it holds nothing else."""
    n = len(offsets) - 1
    out = np.zeros(n, numbers.dtype)
    for g in range(n):
        lo, hi = offsets[g], offsets[g + 1]
        best = numbers[lo] if lo < hi else out[g]
        seen = False
        nan = False
        for k in range(lo, hi):
            v = numbers[k]
            if np.isnan(v):
                nan = True
            elif not seen or (v > best if is_max else v < best):
                best = v
                seen = True
        out[g] = np.nan if (nan and (is_max or not seen)) else best
    return out
