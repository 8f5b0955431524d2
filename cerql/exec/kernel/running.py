"""The compiled loops of MATCH_RECOGNIZE's RUNNING aggregates (exec/mr_measures.py).

Segment g is ``values[offsets[g]:offsets[g + 1]]`` (one match's rows of a variable, in row order);
for every position j the loops give the aggregate of its segment's values up to and including
j, so each output row of ALL ROWS PER MATCH reads its running value at one index, in time linear
in the rows. NULLs (``valid`` False) are skipped; the answers are those of exec/aggregate.py
(sums added in row order, an integer sum checked against BIGINT before each addition, NaN above
every number through the ranks the caller gives).
"""

from __future__ import annotations

import numpy as np
from numba import njit

INT64_MIN, INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)  # Spark's BIGINT range


@njit(nogil=True, cache=True)
def running_sum_int64(numbers, valid, offsets):
    """(running sums, running counts of values, the first segment whose sum leaves BIGINT or -1)."""
    n = len(numbers)
    sums = np.zeros(n, np.int64)
    counts = np.zeros(n, np.int64)
    for g in range(len(offsets) - 1):
        total = 0
        count = 0
        for j in range(offsets[g], offsets[g + 1]):
            if valid[j]:
                v = numbers[j]
                if count > 0 and ((v > 0 and total > INT64_MAX - v) or (v < 0 and total < INT64_MIN - v)):
                    return sums, counts, g
                total = v if count == 0 else total + v
                count += 1
            sums[j] = total
            counts[j] = count
    return sums, counts, -1


@njit(nogil=True, cache=True)
def running_sum_float64(numbers, valid, offsets, from_zero):
    """(running sums in row order, running counts of values); a sum starts from its first value,
    or from 0.0 when ``from_zero`` (avg, as exec/aggregate.py adds it)."""
    n = len(numbers)
    sums = np.zeros(n, np.float64)
    counts = np.zeros(n, np.int64)
    for g in range(len(offsets) - 1):
        total = 0.0
        count = 0
        for j in range(offsets[g], offsets[g + 1]):
            if valid[j]:
                if count == 0 and not from_zero:
                    total = numbers[j]
                else:
                    total += numbers[j]
                count += 1
            sums[j] = total
            counts[j] = count
    return sums, counts


@njit(nogil=True, cache=True)
def running_best(ranks, valid, offsets, is_max):
    """For every position, the position of its segment's least (or greatest) rank so far among
    the values, -1 before the first value."""
    n = len(ranks)
    best = np.full(n, -1, np.int64)
    for g in range(len(offsets) - 1):
        at = -1
        for j in range(offsets[g], offsets[g + 1]):
            if valid[j] and (at < 0 or (ranks[j] > ranks[at] if is_max else ranks[j] < ranks[at])):
                at = j
            best[j] = at
    return best
