"""Selection strategies at one end event: the results NEXT and MAX keep among those written
(docs/language.md, "Selection strategies").

Enumeration writes candidate results of an event to the output buffer
(:class:`cerql.exec.kernel.enumeration.Output`); :func:`admit` decides on each one as it is
written, so the buffer holds the event's winners so far rather than every candidate (there can
be exponentially many). LAST never gets here: it searches its winner on the arena
(kernel/selection.py), and NEXT writes only the results of its start. Kept apart from
enumeration because it compares finished results (their selected positions D), not nodes.
"""

from __future__ import annotations

from numba import njit

from cerql.exec.kernel.state import KMAX, KMIN, MAX, MINDEX, MSTAMP, NEXT, NLAB, NRES, POS

# MAX's index of the kept results' positions at one end event covers this many positions back
# from the event (further, it turns off and every pair of results is tested, as before)
INDEX = 1 << 16


@njit(nogil=True, cache=True)
def next_order(x, off_x, len_x, y, off_y, len_y):
    """-1, 0 or 1 as the data set x[off_x, off_x + len_x) is <next-less than, equal to or
    <next-greater than y[off_y, off_y + len_y) (both stored descending, last event first): the
    least position where they differ is in the greater (docs/language.md, "Selection strategies"), and an
    extension by
    later positions is greater."""
    i, j = off_x + len_x - 1, off_y + len_y - 1
    while i >= off_x and j >= off_y:
        if x[i] != y[j]:
            return 1 if x[i] < y[j] else -1
        i -= 1
        j -= 1
    if len_x == len_y:
        return 0
    return 1 if len_x > len_y else -1


@njit(nogil=True, cache=True)
def _holds(lab_pos, off, length, p):
    """Whether the descending positions lab_pos[off, off + length) hold p (a binary search)."""
    lo, hi = off, off + length
    while lo < hi:
        mid = (lo + hi) // 2
        if lab_pos[mid] > p:
            lo = mid + 1
        else:
            hi = mid
    return lo < off + length and lab_pos[lo] == p


@njit(nogil=True, cache=True)
def _strict_subset(lab_pos, off1, len1, off2, len2):
    """D1 strictly inside D2 (both descending). D1's first event is looked up in D2 first (a
    binary search): results with different first events, each the largest of its own start
    (determinizer.Determinizer's dominance), differ there, so most tests end in O(log |D2|)."""
    if len1 >= len2:
        return False
    if len1 > 0 and not _holds(lab_pos, off2, len2, lab_pos[off1 + len1 - 1]):
        return False
    j = 0
    for i in range(len1):
        while j < len2 and lab_pos[off2 + j] > lab_pos[off1 + i]:
            j += 1
        if j == len2 or lab_pos[off2 + j] != lab_pos[off1 + i]:
            return False
        j += 1
    return True


@njit(nogil=True, cache=True)
def _index(r, sign, out, st):
    """Count result r's positions in (sign 1) or out of (sign -1) MAX's index of the end event's
    kept results: ``in_count`` by position, ``first_count`` at its first one. Slots are
    distances from the end event's position (st[POS]); a result that reaches past INDEX of them
    turns the index off for the rest of the event (st[MINDEX] = 0)."""
    if st[MINDEX] == 0:
        return
    base, stamp, off, ln = st[POS], st[MSTAMP], out.off[r], out.length[r]
    idx_stamp, in_count, first_count = out.idx_stamp, out.in_count, out.first_count
    if ln == 0 or base - out.lab_pos[off + ln - 1] >= INDEX:  # the first position is the farthest
        st[MINDEX] = 0
        return
    for q in range(off, off + ln):
        d = base - out.lab_pos[q]
        if idx_stamp[d] != stamp:
            idx_stamp[d] = stamp
            in_count[d] = 0
            first_count[d] = 0
        in_count[d] += sign
    first_count[base - out.lab_pos[off + ln - 1]] += sign


@njit(nogil=True, cache=True)
def _count(d, counts, out, st):
    """counts[d] under the current stamp (0 when the slot is from another event)."""
    return counts[d] if out.idx_stamp[d] == st[MSTAMP] else 0


@njit(nogil=True, cache=True)
def _may_be_inside(r, out, st):
    """Whether a kept result may strictly contain result r: one holds r's first position (or
    the index is off)."""
    if st[MINDEX] == 0:
        return True
    return _count(st[POS] - out.lab_pos[out.off[r] + out.length[r] - 1], out.in_count, out, st) > 0


@njit(nogil=True, cache=True)
def _may_contain(r, out, st):
    """Whether result r may strictly contain a kept result: one starts at a position of r (or
    the index is off)."""
    if st[MINDEX] == 0:
        return True
    base = st[POS]
    for q in range(out.off[r], out.off[r] + out.length[r]):
        if _count(base - out.lab_pos[q], out.first_count, out, st) > 0:
            return True
    return False


@njit(nogil=True, cache=True)
def _drop_contained(r0, r, out, st):
    """Compact the results r0..r of one event to r and those r strictly contains not. A result
    is tested before anything is moved over it (results only move down), so no array of flags is
    allocated: admit runs inside :func:`cerql.exec.kernel.enumeration.report_results`, which is
    compiled without numba's runtime (state.PHASE). A dropped result leaves MAX's index."""
    res_off, res_len, lab_pos = out.off, out.length, out.lab_pos
    off_r, ln = res_off[r], res_len[r]
    w = r0
    lw = res_off[r0]
    for q in range(r0, r + 1):
        if q == r or not _strict_subset(lab_pos, res_off[q], res_len[q], off_r, ln):
            off, lq = res_off[q], res_len[q]
            for p in range(lq):
                lab_pos[lw + p] = lab_pos[off + p]
                out.lab_mask[lw + p] = out.lab_mask[off + p]
            out.end[w], out.endpos[w], out.start[w] = out.end[q], out.endpos[q], out.start[q]
            res_off[w], res_len[w] = lw, lq
            lw += lq
            w += 1
        else:
            _index(q, -1, out, st)
    st[NRES] = w
    st[NLAB] = lw


@njit(nogil=True, cache=True)
def admit(strategy, r0, out, st):
    """Decide on the newest result (the last one written) of an event under NEXT or MAX.

    The results kept so far for the event are always the winners among those seen, so memory
    holds the output, not every candidate: for NEXT they share one D, the greatest seen; for
    MAX they are the D no other seen D strictly contains (docs/language.md, "Selection strategies").

    MAX tests a result against the kept ones only where it can matter: a result can be
    strictly inside a kept one only if some kept result holds its first position, and can
    strictly contain one only if some kept result starts at one of its positions, which an
    index of the kept results' positions answers (``_index``) in time linear in the result; the
    sizes kept (st[KMIN], st[KMAX]) rule out equal-size results the same way.
    """
    res_off, res_len, lab_pos = out.off, out.length, out.lab_pos
    r = st[NRES] - 1
    if r == r0:
        if strategy == MAX:  # the event's first result: a new index, holding it
            st[MSTAMP] += 1
            st[MINDEX] = 1
            _index(r, 1, out, st)
        return
    if strategy == NEXT:
        c = next_order(lab_pos, res_off[r0], res_len[r0], lab_pos, res_off[r], res_len[r])
        if c > 0:  # the newest loses
            st[NRES] = r
            st[NLAB] = res_off[r]
        elif c < 0:  # the newest wins alone
            lw, off, ln = res_off[r0], res_off[r], res_len[r]
            for q in range(ln):
                lab_pos[lw + q] = lab_pos[off + q]
                out.lab_mask[lw + q] = out.lab_mask[off + q]
            out.end[r0], out.endpos[r0], out.start[r0] = out.end[r], out.endpos[r], out.start[r]
            res_len[r0] = ln
            st[NRES] = r0 + 1
            st[NLAB] = lw + ln
        return
    # MAX: drop the newest if a kept D strictly contains it, else drop the kept Ds it contains.
    # st[KMIN], st[KMAX] bound the sizes of the kept Ds, so equal-size results cost O(1).
    ln = res_len[r]
    if r == r0 + 1:  # the kept results are r0 alone
        st[KMIN] = res_len[r0]
        st[KMAX] = res_len[r0]
    if ln < st[KMAX] and _may_be_inside(r, out, st):
        for q in range(r0, r):
            if _strict_subset(lab_pos, res_off[r], ln, res_off[q], res_len[q]):
                st[NRES] = r
                st[NLAB] = res_off[r]
                return
    dropped = False
    if ln > st[KMIN] and _may_contain(r, out, st):
        for q in range(r0, r):
            if _strict_subset(lab_pos, res_off[q], res_len[q], res_off[r], ln):
                dropped = True
                break
    if not dropped:
        st[KMIN] = min(st[KMIN], ln)
        st[KMAX] = max(st[KMAX], ln)
        _index(r, 1, out, st)
        return
    _drop_contained(r0, r, out, st)
    st[KMIN] = ln
    st[KMAX] = ln
    for q in range(r0, st[NRES]):
        st[KMIN] = min(st[KMIN], res_len[q])
        st[KMAX] = max(st[KMAX], res_len[q])
    _index(st[NRES] - 1, 1, out, st)
