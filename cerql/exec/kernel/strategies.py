"""Selection strategies at one end event: the results NEXT, LAST and MAX keep (DESIGN.md 4.3).

Enumeration writes every candidate result of an event to the output buffer
(:class:`cerql.exec.kernel.enumeration.Output`); :func:`admit` decides on each one as it is
written, so the buffer holds the event's winners so far rather than every candidate (there can
be exponentially many). Kept apart from enumeration because it compares finished results (their
selected positions D), not nodes.
"""

from __future__ import annotations

from numba import njit

from cerql.exec.kernel.state import KMAX, KMIN, LAST, NEXT, NLAB, NRES


@njit(nogil=True, cache=True)
def _compare(lab_pos, off1, len1, off2, len2, from_smallest):
    """-1, 0 or 1 as D1 <next D2 (from_smallest) or D1 <last D2; D is stored descending."""
    i, j = 0, 0
    while i < len1 and j < len2:
        if from_smallest:
            a, b = lab_pos[off1 + len1 - 1 - i], lab_pos[off2 + len2 - 1 - j]
            if a != b:
                return 1 if a < b else -1
        else:
            a, b = lab_pos[off1 + i], lab_pos[off2 + j]
            if a != b:
                return 1 if a > b else -1
        i += 1
        j += 1
    if len1 == len2:
        return 0
    return 1 if len1 > len2 else -1


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
    (automaton.Determinizer's dominance), differ there, so most tests end in O(log |D2|)."""
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
def _drop_contained(r0, r, out, st):
    """Compact the results r0..r of one event to r and those r strictly contains not. A result
    is tested before anything is moved over it (results only move down), so no array of flags is
    allocated: admit runs inside :func:`cerql.exec.kernel.enumeration.report_results`, which is
    compiled without numba's runtime (state.PHASE)."""
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
    st[NRES] = w
    st[NLAB] = lw


@njit(nogil=True, cache=True)
def admit(strategy, r0, out, st):
    """Decide on the newest result (the last one written) of an event under NEXT, LAST or MAX.

    The results kept so far for the event are always the winners among those seen, so memory
    holds the output, not every candidate: for NEXT and LAST they share one D, the greatest
    seen; for MAX they are the D no other seen D strictly contains (DESIGN.md 4.3).
    """
    res_off, res_len, lab_pos = out.off, out.length, out.lab_pos
    r = st[NRES] - 1
    if r == r0:
        return
    if strategy == NEXT or strategy == LAST:
        c = _compare(lab_pos, res_off[r0], res_len[r0], res_off[r], res_len[r], strategy == NEXT)
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
    if ln < st[KMAX]:
        for q in range(r0, r):
            if _strict_subset(lab_pos, res_off[r], ln, res_off[q], res_len[q]):
                st[NRES] = r
                st[NLAB] = res_off[r]
                return
    dropped = False
    if ln > st[KMIN]:
        for q in range(r0, r):
            if _strict_subset(lab_pos, res_off[q], res_len[q], res_off[r], ln):
                dropped = True
                break
    if not dropped:
        st[KMIN] = min(st[KMIN], ln)
        st[KMAX] = max(st[KMAX], ln)
        return
    _drop_contained(r0, r, out, st)
    st[KMIN] = ln
    st[KMAX] = ln
    for q in range(r0, st[NRES]):
        st[KMIN] = min(st[KMIN], res_len[q])
        st[KMAX] = max(st[KMAX], res_len[q])
