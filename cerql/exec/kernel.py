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
DONE, NEED_TRANSITION, NEED_ARENA, NEED_OUTPUT, TOO_MANY, TOO_MANY_CANDIDATES, NEED_ACTIVE = 0, 1, 2, 3, 4, 5, 6
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
# Registers (seed 002): a predicate ``f(x) op g(y)`` between two single-event variables is checked
# on the transition that binds the second of them, from the value of the first carried on the
# run. A run's registers hold, per predicate, a status and the value of the side bound so far;
# runs merge only when their deterministic state and registers are equal. At most MAX_REGISTERS
# predicates (the planner leaves the others to exec/post_filter.py).
MAX_REGISTERS = 4
NONE_BOUND, X_BOUND, Y_BOUND, CHECKED, X_NULL, Y_NULL = 0, 1, 2, 3, 4, 5
OP_EQ, OP_NE, OP_GT, OP_GE, OP_LT, OP_LE = 0, 1, 2, 3, 4, 5
_KEY = types.UniTuple(types.int64, 1 + 2 * MAX_REGISTERS)


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
def _step_registers(k, lab, i, n_regs, reg_x, reg_y, reg_op, reg_float, fx_key, fx_num, fx_ok, gy_key, gy_num,
                    gy_ok, act_rs, act_rk, act_rf, tmp_s, tmp_k, tmp_f):
    """The registers of active run k after a transition marking ``lab`` on event i, in tmp_*;
    False when a predicate whose variables are now both bound fails (the transition is dropped)."""
    for p in range(n_regs):
        s0, key, num = act_rs[k, p], act_rk[k, p], act_rf[k, p]
        bx = lab & reg_x[p] != 0
        by = lab & reg_y[p] != 0
        if s0 == CHECKED or not (bx or by):
            pass
        elif bx and by:  # one event is both x and y
            if not (fx_ok[i, p] and gy_ok[i, p]
                    and _holds(reg_op[p], reg_float[p], fx_key[i, p], fx_num[i, p], gy_key[i, p], gy_num[i, p])):
                return False
            s0, key, num = CHECKED, 0, 0.0
        elif bx:
            if s0 == Y_BOUND:
                if not (fx_ok[i, p] and _holds(reg_op[p], reg_float[p], fx_key[i, p], fx_num[i, p], key, num)):
                    return False
                s0, key, num = CHECKED, 0, 0.0
            elif s0 == Y_NULL:
                return False
            elif fx_ok[i, p]:
                s0, key, num = X_BOUND, fx_key[i, p], fx_num[i, p]
            else:
                s0, key, num = X_NULL, 0, 0.0
        else:
            if s0 == X_BOUND:
                if not (gy_ok[i, p] and _holds(reg_op[p], reg_float[p], key, num, gy_key[i, p], gy_num[i, p])):
                    return False
                s0, key, num = CHECKED, 0, 0.0
            elif s0 == X_NULL:
                return False
            elif gy_ok[i, p]:
                s0, key, num = Y_BOUND, gy_key[i, p], gy_num[i, p]
            else:
                s0, key, num = Y_NULL, 0, 0.0
        tmp_s[p], tmp_k[p], tmp_f[p] = s0, key, num
    return True


@njit(nogil=True, cache=True)
def _run_key(d, tmp_s, tmp_k):
    return (d, tmp_s[0], tmp_k[0], tmp_s[1], tmp_k[1], tmp_s[2], tmp_k[2], tmp_s[3], tmp_k[3])


@njit(nogil=True, cache=True)
def run_batch(sym, starts, vals, windowed, amount, strategy, consume, max_matches,
              tr_first, tr_count, tr_label, tr_target, ds_final, inert, ds_fixed,
              st, act_ds, act_node, new_ds, new_node, slot, cut,
              n_pos, n_label, n_a, n_b, n_maxpos, n_maxval, stack_node, stack_len, path,
              res_end, res_endpos, res_start, res_off, res_len, lab_pos, lab_mask,
              n_regs, reg_x, reg_y, reg_op, reg_float, fx_key, fx_num, fx_ok, gy_key, gy_num, gy_ok,
              act_rs, act_rk, act_rf, new_rs, new_rk, new_rf):
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
    tmp_s = np.zeros(MAX_REGISTERS, np.int64)
    tmp_k = np.zeros(MAX_REGISTERS, np.int64)
    tmp_f = np.zeros(MAX_REGISTERS, np.float64)
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
                for p in range(MAX_REGISTERS):
                    act_rs[0, p], act_rk[0, p], act_rf[0, p] = NONE_BOUND, 0, 0.0
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
                        if not _step_registers(k, lab, i, n_regs, reg_x, reg_y, reg_op, reg_float, fx_key, fx_num,
                                               fx_ok, gy_key, gy_num, gy_ok, act_rs, act_rk, act_rf,
                                               tmp_s, tmp_k, tmp_f):
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
                        key = _run_key(d2, tmp_s, tmp_k)
                        at = meet[key] if key in meet else -1
                        if at < 0:
                            meet[key] = nn
                            for p in range(n_regs):
                                new_rs[nn, p], new_rk[nn, p], new_rf[nn, p] = tmp_s[p], tmp_k[p], tmp_f[p]
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
            moving = 0
            for k in range(nn):
                if n_regs == 0:
                    slot[new_ds[k]] = -1
                act_ds[k] = new_ds[k]
                act_node[k] = new_node[k]
                for p in range(n_regs):
                    act_rs[k, p], act_rk[k, p], act_rf[k, p] = new_rs[k, p], new_rk[k, p], new_rf[k, p]
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
        for k in range(st[NACT]):
            if strategy == ANY and st[NRES] > r0:
                break
            if ds_final[act_ds[k]] and _alive(act_node[k], consumed, windowed, cutoff, n_maxpos, n_maxval):
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
def compact(st, act_ds, act_node, act_rs, act_rk, act_rf, windowed, cut, n_pos, n_label, n_a, n_b, n_maxpos,
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
            for p in range(act_rs.shape[1]):
                act_rs[kept, p], act_rk[kept, p], act_rf[kept, p] = act_rs[k, p], act_rk[k, p], act_rf[k, p]
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
