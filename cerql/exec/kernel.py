"""The compiled hot loop: deterministic CEA runs over a time-ordered ECS (seed 001, section 4).

Shared by ``cerql.exec.driver`` only; the only module that imports numba. Every function is
``@njit(nogil=True, cache=True)`` over NumPy arrays and integers: no dicts, objects or Arrow.

The enumerable structure is an arena of nodes; node 0 is BOTTOM (the empty prefix). An *output*
node (``pos >= 0``) says "event ``pos`` is marked ``label``, then continue at ``a``"; a *union*
node (``pos == -1``) is the union of the result sets of ``a`` and ``b``. Every node keeps the
largest start position (``maxpos``) and start window value (``maxval``) of the results under it,
so enumeration skips whole sub-structures outside the window or consumed (window pruning), and
each node it enters leads to at least one result (output-linear delay). Children always have
smaller indices than their parents, so :func:`compact` frees dead nodes with one backward sweep.

Per event the kernel takes each active deterministic state with its node, follows the state's
transitions on the event's symbol (one new output node per labelled transition, one union node
where two runs meet: constant work per event), then enumerates the results of the final states.
When it lacks a transition, arena room or output room it returns a status and the driver, which
keeps no state of its own, fills the gap and calls again: the event is resumed, not redone.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.typed import Dict

# status codes returned to the driver
(DONE, NEED_TRANSITION, NEED_ARENA, NEED_OUTPUT, TOO_MANY, TOO_MANY_CANDIDATES, NEED_ACTIVE, TOO_MANY_RUNS,
 OVERFLOW) = range(9)
# strategy codes
ALL, ANY, NEXT, LAST, MAX, STRICT = 0, 1, 2, 3, 4, 5
# slots of the int64 state vector ``st``
(POS, CONSUMED, ARENA, NACT, NRES, NLAB, CURSOR, PENDING, NEED_D, NEED_S, COUNT, BOUND, MOVING,
 KMIN, KMAX) = range(15)
STATE_SIZE = 15
START = 1
# what enumeration reports (TOO_MANY and TOO_MANY_CANDIDATES are shared with the statuses)
OK, FULL = 0, 1
# NEXT, LAST and MAX choose among every result ALL would give at an end event. That number can
# grow exponentially with the events in reach (no WITHIN); past this many candidates per event
# (scaled by maxMatchesPerEvent) the run fails with an error instead of running for hours.
CANDIDATES_PER_MATCH = 100
MIN_CANDIDATES = 1_000_000
# Registers (seed 002): a FILTER comparison ``f(x) op g(y)`` holds when it holds for every pair of
# events of x and y (DESIGN.md 4.7). The kernel checks it as events are bound: a run carries, per
# comparison and per side, whether the side has events, whether one of them makes every pair
# fail (NULL; NaN but for !=; two different values under =), and the one value a later event of
# the other side must be compared with (for >, >= the least f of x and the greatest g of y; for
# <, <= the reverse; for = and != the value). An event bound to x is compared with y's value when
# y has events, then joins x's side; likewise for y. Runs merge only when their deterministic
# state and registers are equal. Between single-event variables the comparison is done once both
# are bound and its registers are cleared (DONE), so those runs merge again.
# An aggregate check ``agg(x) op constant`` (seed 004) uses the same three columns for its
# accumulator over the events bound to x: how many values (capped where more would not change
# the answer), the sum or least/greatest value (int64, or the bits of a float64 with the float
# beside it). It is compared with the constant (the right side's value at any event) when the
# run is in a final state: a run that fails it gives no result. At most MAX_REGISTERS checks
# (the planner leaves the others to exec/post_filter.py).
# Runs with different registers cannot meet, so their number is bounded only by the distinct
# register values the events in reach can make: a count is capped where more would not change
# its answer, and a min or max is kept only as its side of the constant (below, equal, above
# or NaN), since a later value moves it only further that way; a sum or an average over a Kleene
# variable can take a new value with every subset of events. Past max_matches runs after one
# event the kernel stops with TOO_MANY_RUNS rather than filling memory.
MAX_REGISTERS = 4
X_HAS, X_BAD, Y_HAS, Y_BAD, DONE_BOTH = 1, 2, 4, 8, 16
OP_EQ, OP_NE, OP_GT, OP_GE, OP_LT, OP_LE = 0, 1, 2, 3, 4, 5
# what a register check is: a comparison between two variables, or an aggregate of one
COMPARE, AGG_COUNT_EVENTS, AGG_COUNT, AGG_SUM, AGG_AVG, AGG_MIN, AGG_MAX = 0, 1, 2, 3, 4, 5, 6
# A sum whose every value is known to be a non-negative number, with no total near BIGINT's edge
# (the local engine sees the whole stream; driver.RegisterSpec.for_stream): a sum above the
# constant stays above it as values join, so it is kept as one value above it and runs meet.
AGG_SUM_RISING = 7
# An integer sum that leaves the BIGINT range sets its count to OVERFLOWED: a run that reaches a
# final state so gives OVERFLOW, as Spark's ANSI sum raises ARITHMETIC_OVERFLOW at that addition.
OVERFLOWED = -1
INT64_MAX, INT64_MIN = np.int64(2**63 - 1), np.int64(-(2**63))
REGISTER_COLUMNS = 3 * MAX_REGISTERS  # per check: flags, x's value, y's value (or count, accumulator)
BIG = 1 << 62
_KEY = types.UniTuple(types.int64, 1 + REGISTER_COLUMNS)


@njit(nogil=True, cache=True)
def candidate_limit(max_matches):
    return max(MIN_CANDIDATES, CANDIDATES_PER_MATCH * max_matches)


@njit(nogil=True, cache=True)
def _alive(n, consumed, windowed, cutoff, maxpos, maxval):
    if n < 0:
        return False
    if n == 0:
        return True
    if maxpos[n] <= consumed:
        return False
    if windowed and not (maxval[n] >= cutoff):
        return False
    return True


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
def _strict_subset(lab_pos, off1, len1, off2, len2):
    """D1 strictly inside D2 (both descending)."""
    if len1 >= len2:
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
def _keep(keep, r0, r1, res_end, res_endpos, res_start, res_off, res_len, lab_pos, lab_mask, st):
    """Compact the results r0..r1 of one event to those with keep[k - r0]."""
    w = r0
    lw = res_off[r0] if r1 > r0 else st[NLAB]
    for r in range(r0, r1):
        if keep[r - r0]:
            off, ln = res_off[r], res_len[r]
            for q in range(ln):
                lab_pos[lw + q] = lab_pos[off + q]
                lab_mask[lw + q] = lab_mask[off + q]
            res_end[w], res_endpos[w], res_start[w] = res_end[r], res_endpos[r], res_start[r]
            res_off[w], res_len[w] = lw, ln
            lw += ln
            w += 1
    st[NRES] = w
    st[NLAB] = lw


@njit(nogil=True, cache=True)
def _admit(strategy, r0, res_end, res_endpos, res_start, res_off, res_len, lab_pos, lab_mask, st):
    """Decide on the newest result (the last one written) of an event under NEXT, LAST or MAX.

    The results kept so far for the event are always the winners among those seen, so memory
    holds the output, not every candidate: for NEXT and LAST they share one D, the greatest
    seen; for MAX they are the D no other seen D strictly contains (DESIGN.md 4.3).
    """
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
                lab_mask[lw + q] = lab_mask[off + q]
            res_end[r0], res_endpos[r0], res_start[r0] = res_end[r], res_endpos[r], res_start[r]
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
    keep = np.ones(r - r0 + 1, dtype=np.bool_)
    for q in range(r0, r):
        keep[q - r0] = not _strict_subset(lab_pos, res_off[q], res_len[q], res_off[r], ln)
    _keep(keep, r0, r + 1, res_end, res_endpos, res_start, res_off, res_len, lab_pos, lab_mask, st)
    st[KMIN] = ln
    st[KMAX] = ln
    for q in range(r0, st[NRES]):
        st[KMIN] = min(st[KMIN], res_len[q])
        st[KMAX] = max(st[KMAX], res_len[q])


@njit(nogil=True, cache=True)
def _enumerate(root, i, pos, r0, max_matches, consumed, windowed, cutoff, strategy,
               n_pos, n_label, n_a, n_b, n_maxpos, n_maxval, stack_node, stack_len, path,
               res_end, res_endpos, res_start, res_off, res_len, lab_pos, lab_mask, st):
    """Write the results under ``root`` ending at event i (position pos); the event's results
    start at r0. Returns OK, FULL (no room: the event's results are to be redone) or TOO_MANY."""
    top = 0
    stack_node[0] = root
    stack_len[0] = 0
    while top >= 0:
        n = stack_node[top]
        plen = stack_len[top]
        top -= 1
        while True:
            if n == 0:
                break
            if n_pos[n] < 0:
                a, b = n_a[n], n_b[n]
                if _alive(b, consumed, windowed, cutoff, n_maxpos, n_maxval):
                    if _alive(a, consumed, windowed, cutoff, n_maxpos, n_maxval):
                        top += 1
                        stack_node[top] = b
                        stack_len[top] = plen
                    else:
                        a = b
                n = a
            else:
                path[plen] = n
                plen += 1
                n = n_a[n]
        # a result: path[0..plen) from the last event back to the first
        r = st[NRES]
        lo = st[NLAB]
        if r >= res_end.shape[0] or lo + plen > lab_pos.shape[0]:
            return FULL
        w = lo
        for q in range(plen):
            m = path[q]
            lab = n_label[m] & ~START
            if lab != 0:
                lab_pos[w] = n_pos[m]
                lab_mask[w] = lab
                w += 1
        if strategy == STRICT and w > lo and lab_pos[lo] - lab_pos[w - 1] + 1 != w - lo:
            continue
        res_end[r] = i
        res_endpos[r] = pos
        res_start[r] = n_pos[path[plen - 1]]
        res_off[r] = lo
        res_len[r] = w - lo
        st[NRES] = r + 1
        st[NLAB] = w
        if strategy == ANY:
            return OK
        if strategy == NEXT or strategy == LAST or strategy == MAX:
            _admit(strategy, r0, res_end, res_endpos, res_start, res_off, res_len, lab_pos, lab_mask, st)
            st[COUNT] += 1  # candidates of this event, counted for candidate_limit
            if st[COUNT] > candidate_limit(max_matches):
                return TOO_MANY_CANDIDATES
        elif st[NRES] - r0 > max_matches:
            return TOO_MANY
    return OK


@njit(nogil=True, cache=True)
def _holds(op, is_float, fk, fn, gk, gn):
    """f op g, on int64 keys or on float64 values (IEEE: NaN compares false but for !=)."""
    if is_float:
        a, b = fn, gn
        if op == OP_EQ:
            return a == b
        if op == OP_NE:
            return a != b
        if op == OP_GT:
            return a > b
        if op == OP_GE:
            return a >= b
        if op == OP_LT:
            return a < b
        return a <= b
    if op == OP_EQ:
        return fk == gk
    if op == OP_NE:
        return fk != gk
    if op == OP_GT:
        return fk > gk
    if op == OP_GE:
        return fk >= gk
    if op == OP_LT:
        return fk < gk
    return fk <= gk


@njit(nogil=True, cache=True)
def _joins(op, is_float, side_x, key, num, vk, vn):
    """The value a side keeps after another event's value (vk, vn) joins it: for x the least
    under > and >=, the greatest under < and <=; for y the reverse (see MAX_REGISTERS)."""
    keep_least = (op == OP_GT or op == OP_GE) == side_x
    if is_float:
        better = vn < num if keep_least else vn > num
    else:
        better = vk < key if keep_least else vk > key
    return (vk, vn) if better else (key, num)


@njit(nogil=True, cache=True)
def _bind(p, x_side, op, is_float, ok, vk, vn, regs_k, regs_f):
    """Bind one event's value (ok, vk, vn) to the x or y side of comparison p in regs_*;
    False when a pair with the other side's events fails."""
    flags = regs_k[3 * p]
    mine, other = (1, 2) if x_side else (2, 1)
    has, bad = (X_HAS, X_BAD) if x_side else (Y_HAS, Y_BAD)
    other_has, other_bad = (Y_HAS, Y_BAD) if x_side else (X_HAS, X_BAD)
    if flags & (other_has | other_bad):
        if not ok or flags & other_bad:
            return False
        ok_pair = (_holds(op, is_float, vk, vn, regs_k[3 * p + other], regs_f[3 * p + other]) if x_side
                   else _holds(op, is_float, regs_k[3 * p + other], regs_f[3 * p + other], vk, vn))
        if not ok_pair:
            return False
    if not ok:
        flags |= bad
    elif not flags & has:
        flags |= has
        regs_k[3 * p + mine], regs_f[3 * p + mine] = vk, vn
    elif op == OP_EQ:
        if (vn != regs_f[3 * p + mine]) if is_float else (vk != regs_k[3 * p + mine]):
            flags |= bad  # two values: no value of the other side equals both
    # (!= is only planned between single-event variables: a side never gets a second value)
    else:
        regs_k[3 * p + mine], regs_f[3 * p + mine] = _joins(op, is_float, x_side, regs_k[3 * p + mine],
                                                            regs_f[3 * p + mine], vk, vn)
    regs_k[3 * p] = flags
    return True


@njit(nogil=True, cache=True)
def _count_cap(kind, is_float, gk, gn):
    """How far an aggregate check keeps counting values: a count compared with k is on the same
    side of k for every value above k, so it stops at k + 1; sum, min and max only need to know
    whether there is a value; avg needs every one."""
    if kind == AGG_AVG:
        return BIG
    if kind != AGG_COUNT_EVENTS and kind != AGG_COUNT:
        return 1
    if is_float:
        if not gn == gn or gn < 0.0:
            return 1
        if gn >= 1e18:
            return BIG
        return np.int64(np.floor(gn)) + 1
    if gk < 0:
        return 1
    return min(gk, BIG) + 1


@njit(nogil=True, cache=True)
def _side_of(kind, is_float, acc_k, acc_f, ck, cn):
    """A min or max accumulator as its side of the constant (ck, cn): one value that compares
    with the constant as the accumulator does, and stays so as later values join (see above),
    so runs that agree on the side meet. NaN, or a NaN constant, is kept as it is."""
    if is_float:
        if acc_f != acc_f or cn != cn or acc_f == cn:
            return acc_k, acc_f
        rep = -np.inf if acc_f < cn else np.inf
        return acc_k, rep
    if acc_k == ck:
        return acc_k, acc_f
    return (ck - 1 if acc_k < ck else ck + 1), acc_f


@njit(nogil=True, cache=True)
def _accumulate(p, kind, is_float, ok, vk, vn, cap, regs_k, regs_f, fbuf, kbuf, const_ok, ck, cn):
    """Add one event's value (ok, vk, vn) to aggregate check p's accumulator in regs_*; the
    constant (const_ok, ck, cn) it is compared with lets a min or max keep only its side."""
    if kind == AGG_COUNT_EVENTS:
        ok = True
    if not ok:
        return
    n = regs_k[3 * p]
    if n == OVERFLOWED:
        return
    if kind == AGG_SUM or kind == AGG_AVG or kind == AGG_SUM_RISING:
        if is_float or kind == AGG_AVG:
            regs_f[3 * p + 1] = (regs_f[3 * p + 1] + vn) if n > 0 else vn
            if kind == AGG_SUM_RISING and const_ok and regs_f[3 * p + 1] > cn:
                regs_f[3 * p + 1] = np.inf
        else:
            acc = regs_k[3 * p + 1]
            # tested before adding: compiled code may assume a signed sum never wraps around
            if n > 0 and ((vk > 0 and acc > INT64_MAX - vk) or (vk < 0 and acc < INT64_MIN - vk)):
                regs_k[3 * p] = OVERFLOWED
                return
            regs_k[3 * p + 1] = (acc + vk) if n > 0 else vk
            if kind == AGG_SUM_RISING and const_ok and regs_k[3 * p + 1] > ck:
                regs_k[3 * p + 1] = ck + 1
    elif kind == AGG_MIN or kind == AGG_MAX:
        if is_float:  # NaN is above every number, as Spark orders it
            acc = regs_f[3 * p + 1]
            if n == 0:
                acc = vn
            elif kind == AGG_MAX:
                if vn != vn or (acc == acc and vn > acc):
                    acc = vn
            elif acc != acc or (vn == vn and vn < acc):
                acc = vn
            regs_f[3 * p + 1] = acc
        else:
            acc = regs_k[3 * p + 1]
            if n == 0 or (vk > acc if kind == AGG_MAX else vk < acc):
                regs_k[3 * p + 1] = vk
        if const_ok:
            regs_k[3 * p + 1], regs_f[3 * p + 1] = _side_of(kind, is_float, regs_k[3 * p + 1], regs_f[3 * p + 1],
                                                            ck, cn)
    if is_float or kind == AGG_AVG:  # the run key holds the float's bits
        fbuf[0] = regs_f[3 * p + 1]
        regs_k[3 * p + 1] = kbuf[0]
    regs_k[3 * p] = min(n + 1, cap)


@njit(nogil=True, cache=True)
def _aggregates_hold(k, i, n_regs, reg_kind, reg_op, reg_float, gy_key, gy_num, gy_ok, act_rk, act_rf):
    """Whether run k's aggregates pass their checks (at a final state, at event i)."""
    for p in range(n_regs):
        kind = reg_kind[p]
        if kind == COMPARE:
            continue
        if not gy_ok[i, p]:
            return False
        n = act_rk[k, 3 * p]
        is_float = reg_float[p]
        if kind == AGG_COUNT_EVENTS or kind == AGG_COUNT:
            vk, vn = n, np.float64(n)
        else:
            if n == 0:  # no values: NULL, which fails
                return False
            vk, vn = act_rk[k, 3 * p + 1], act_rf[k, 3 * p + 1]
            if kind == AGG_AVG:
                vn = vn / n
                is_float = True
            elif not is_float:
                vn = np.float64(vk)
        if not _holds(reg_op[p], is_float, vk, vn, gy_key[i, p], gy_num[i, p]):
            return False
    return True


@njit(nogil=True, cache=True)
def _overflowed(k, n_regs, reg_kind, act_rk):
    """Whether an integer sum of run k left the BIGINT range (its count is OVERFLOWED)."""
    for p in range(n_regs):
        if reg_kind[p] != COMPARE and act_rk[k, 3 * p] == OVERFLOWED:
            return True
    return False


@njit(nogil=True, cache=True)
def _step_registers(k, lab, i, n_regs, reg_kind, reg_x, reg_y, reg_op, reg_float, reg_single, fx_key, fx_num,
                    fx_ok, gy_key, gy_num, gy_ok, act_rk, act_rf, tmp_k, tmp_f, fbuf, kbuf):
    """The registers of active run k after a transition marking ``lab`` on event i, in tmp_*;
    False when a comparison fails on a pair of its events (the transition is dropped)."""
    for c in range(REGISTER_COLUMNS):
        tmp_k[c], tmp_f[c] = act_rk[k, c], act_rf[k, c]
    for p in range(n_regs):
        kind = reg_kind[p]
        if kind != COMPARE:
            if lab & reg_x[p] != 0:
                cap = _count_cap(kind, reg_float[p], gy_key[i, p], gy_num[i, p])
                _accumulate(p, kind, reg_float[p], fx_ok[i, p], fx_key[i, p], fx_num[i, p], cap, tmp_k, tmp_f,
                            fbuf, kbuf, gy_ok[i, p], gy_key[i, p], gy_num[i, p])
            continue
        if tmp_k[3 * p] & DONE_BOTH:
            continue
        op, is_float = reg_op[p], reg_float[p]
        if lab & reg_x[p] != 0:
            ok = fx_ok[i, p] and (op == OP_NE or not (is_float and np.isnan(fx_num[i, p])))
            if not _bind(p, True, op, is_float, ok, fx_key[i, p], fx_num[i, p], tmp_k, tmp_f):
                return False
        if lab & reg_y[p] != 0:
            ok = gy_ok[i, p] and (op == OP_NE or not (is_float and np.isnan(gy_num[i, p])))
            if not _bind(p, False, op, is_float, ok, gy_key[i, p], gy_num[i, p], tmp_k, tmp_f):
                return False
        both = X_HAS | X_BAD
        if reg_single[p] and tmp_k[3 * p] & both and tmp_k[3 * p] & (Y_HAS | Y_BAD):
            tmp_k[3 * p], tmp_k[3 * p + 1], tmp_k[3 * p + 2] = DONE_BOTH, 0, 0  # checked: forget the values
            tmp_f[3 * p + 1], tmp_f[3 * p + 2] = 0.0, 0.0
    return True


@njit(nogil=True, cache=True)
def _run_key(d, t):
    return (d, t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11])


@njit(nogil=True, cache=True)
def run_batch(sym, starts, vals, windowed, amount, strategy, consume, max_matches,
              tr_first, tr_count, tr_label, tr_target, ds_final, inert, ds_fixed,
              st, act_ds, act_node, new_ds, new_node, slot, cut,
              n_pos, n_label, n_a, n_b, n_maxpos, n_maxval, stack_node, stack_len, path,
              res_end, res_endpos, res_start, res_off, res_len, lab_pos, lab_mask,
              n_regs, reg_kind, reg_x, reg_y, reg_op, reg_float, reg_single, fx_key, fx_num, fx_ok, gy_key, gy_num,
              gy_ok, act_rk, act_rf, new_rk, new_rf):
    """Run events st[CURSOR].. of one batch; return a status (see module docstring).

    An *inert* symbol fires no transition but the TRUE gaps; when every active state is a
    fixed point of those (st[MOVING] == 0), such an event changes nothing and costs O(1).
    With registers (``n_regs`` > 0) an active run is a deterministic state, its registers
    (``act_r*``) and its node, and runs meet on equal (state, registers) instead of state.
    """
    n_events = sym.shape[0]
    arena_cap = n_pos.shape[0]
    act_cap = new_ds.shape[0]
    meet = Dict.empty(key_type=_KEY, value_type=types.int64)
    tmp_k = np.zeros(REGISTER_COLUMNS, np.int64)
    tmp_f = np.zeros(REGISTER_COLUMNS, np.float64)
    fbuf = np.zeros(1, np.float64)
    kbuf = fbuf.view(np.int64)
    while st[CURSOR] < n_events:
        i = st[CURSOR]
        s = sym[i]
        v = vals[i]
        cutoff = v - amount
        cut[0] = cutoff
        if st[PENDING] == 0 and inert[s] and st[MOVING] == 0 and not starts[i]:
            st[POS] += 1
            st[CURSOR] = i + 1
            continue
        if st[PENDING] == 0:
            if starts[i]:
                st[POS] = 0
                st[CONSUMED] = -1
                st[ARENA] = 1
                st[NACT] = 1
                st[MOVING] = 0
                act_ds[0] = 0
                act_node[0] = 0
                for c in range(REGISTER_COLUMNS):
                    act_rk[0, c], act_rf[0, c] = 0, 0.0
            consumed = st[CONSUMED]
            # every transition known, and room for the nodes this event can create
            bound = 0
            for k in range(st[NACT]):
                d = act_ds[k]
                if tr_first[d, s] < 0:
                    st[NEED_D] = d
                    st[NEED_S] = s
                    return NEED_TRANSITION
                bound += 2 * tr_count[d, s]
            if st[ARENA] + bound > arena_cap:
                st[BOUND] = bound
                return NEED_ARENA
            if n_regs > 0 and bound // 2 > act_cap:  # one run per transition at most
                st[BOUND] = bound // 2
                return NEED_ACTIVE
            pos = st[POS]
            arena = st[ARENA]
            nn = 0
            if n_regs > 0:
                meet.clear()
            for k in range(st[NACT]):
                d = act_ds[k]
                node = act_node[k]
                if not _alive(node, consumed, windowed, cutoff, n_maxpos, n_maxval):
                    continue
                f = tr_first[d, s]
                for j in range(f, f + tr_count[d, s]):
                    lab = tr_label[j]
                    d2 = tr_target[j]
                    if n_regs > 0:
                        if not _step_registers(k, lab, i, n_regs, reg_kind, reg_x, reg_y, reg_op, reg_float,
                                               reg_single, fx_key, fx_num, fx_ok, gy_key, gy_num, gy_ok, act_rk,
                                               act_rf, tmp_k, tmp_f, fbuf, kbuf):
                            continue
                    if lab == 0:
                        x = node
                    else:
                        x = arena
                        arena += 1
                        n_pos[x] = pos
                        n_label[x] = lab
                        n_a[x] = node
                        n_b[x] = -1
                        if node == 0:
                            n_maxpos[x] = pos
                            n_maxval[x] = v
                        else:
                            n_maxpos[x] = n_maxpos[node]
                            n_maxval[x] = n_maxval[node]
                    if n_regs > 0:
                        key = _run_key(d2, tmp_k)
                        at = meet[key] if key in meet else -1
                        if at < 0:
                            meet[key] = nn
                            for c in range(3 * n_regs):
                                new_rk[nn, c], new_rf[nn, c] = tmp_k[c], tmp_f[c]
                    else:
                        at = slot[d2]
                        if at < 0:
                            slot[d2] = nn
                    if at < 0:
                        new_ds[nn] = d2
                        new_node[nn] = x
                        nn += 1
                    else:
                        y = new_node[at]
                        u = arena
                        arena += 1
                        n_pos[u] = -1
                        n_label[u] = 0
                        n_a[u] = y
                        n_b[u] = x
                        n_maxpos[u] = max(n_maxpos[y], n_maxpos[x])
                        n_maxval[u] = max(n_maxval[y], n_maxval[x])
                        new_node[at] = u
            if n_regs > 0 and nn > max_matches:  # runs apart on register values (see MAX_REGISTERS)
                st[COUNT] = nn
                return TOO_MANY_RUNS
            moving = 0
            for k in range(nn):
                if n_regs == 0:
                    slot[new_ds[k]] = -1
                act_ds[k] = new_ds[k]
                act_node[k] = new_node[k]
                for c in range(3 * n_regs):
                    act_rk[k, c], act_rf[k, c] = new_rk[k, c], new_rf[k, c]
                if not ds_fixed[new_ds[k]]:
                    moving += 1
            st[NACT] = nn
            st[MOVING] = moving
            st[ARENA] = arena
            st[PENDING] = 1
        # enumerate the results ending at this event
        consumed = st[CONSUMED]
        pos = st[POS]
        r0 = st[NRES]
        l0 = st[NLAB]
        st[COUNT] = 0
        if n_regs > 0:  # a sum past BIGINT in any result fails the query, whichever ANY would pick
            for k in range(st[NACT]):
                if ds_final[act_ds[k]] and _alive(act_node[k], consumed, windowed, cutoff, n_maxpos, n_maxval) and (
                        _overflowed(k, n_regs, reg_kind, act_rk)):
                    return OVERFLOW
        for k in range(st[NACT]):
            if strategy == ANY and st[NRES] > r0:
                break
            if not (ds_final[act_ds[k]] and _alive(act_node[k], consumed, windowed, cutoff, n_maxpos, n_maxval)):
                continue
            if n_regs > 0 and not _aggregates_hold(k, i, n_regs, reg_kind, reg_op, reg_float, gy_key, gy_num,
                                                   gy_ok, act_rk, act_rf):
                continue
            code = _enumerate(act_node[k], i, pos, r0, max_matches, consumed, windowed, cutoff, strategy,
                              n_pos, n_label, n_a, n_b, n_maxpos, n_maxval, stack_node, stack_len, path,
                              res_end, res_endpos, res_start, res_off, res_len, lab_pos, lab_mask, st)
            if code == FULL:
                st[NRES] = r0
                st[NLAB] = l0
                return NEED_OUTPUT
            if code == TOO_MANY:
                st[COUNT] = st[NRES] - r0
                return TOO_MANY
            if code == TOO_MANY_CANDIDATES:  # COUNT holds the candidates
                return TOO_MANY_CANDIDATES
        count = st[NRES] - r0
        if count > max_matches:
            st[COUNT] = count
            return TOO_MANY
        if count > 0 and consume:
            st[CONSUMED] = pos
        st[POS] = pos + 1
        st[PENDING] = 0
        st[CURSOR] = i + 1
    return DONE


@njit(nogil=True, cache=True)
def compact(st, act_ds, act_node, act_rk, act_rf, windowed, cut, n_pos, n_label, n_a, n_b, n_maxpos,
            n_maxval, remap):
    """Free the nodes no live result can reach; keep node order (children before parents)."""
    used = st[ARENA]
    consumed = st[CONSUMED]
    cutoff = cut[0]
    for x in range(used):
        remap[x] = 0
    remap[0] = 1
    kept = 0
    for k in range(st[NACT]):
        node = act_node[k]
        if _alive(node, consumed, windowed, cutoff, n_maxpos, n_maxval):
            remap[node] = 1
            act_ds[kept] = act_ds[k]
            act_node[kept] = node
            for c in range(act_rk.shape[1]):
                act_rk[kept, c], act_rf[kept, c] = act_rk[k, c], act_rf[k, c]
            kept += 1
    st[NACT] = kept
    for x in range(used - 1, 0, -1):
        if remap[x] == 0:
            continue
        if n_pos[x] < 0:
            if _alive(n_a[x], consumed, windowed, cutoff, n_maxpos, n_maxval):
                remap[n_a[x]] = 1
            if _alive(n_b[x], consumed, windowed, cutoff, n_maxpos, n_maxval):
                remap[n_b[x]] = 1
        else:
            remap[n_a[x]] = 1
    new = 0
    for x in range(used):
        if remap[x]:
            remap[x] = new
            new += 1
        else:
            remap[x] = -1
    for x in range(used):
        y = remap[x]
        if y < 0:
            continue
        a, b = n_a[x], n_b[x]
        n_pos[y] = n_pos[x]
        n_label[y] = n_label[x]
        n_maxpos[y] = n_maxpos[x]
        n_maxval[y] = n_maxval[x]
        n_a[y] = remap[a] if a >= 0 else -1
        n_b[y] = remap[b] if b >= 0 else -1
    for k in range(kept):
        act_node[k] = remap[act_node[k]]
    st[ARENA] = new
