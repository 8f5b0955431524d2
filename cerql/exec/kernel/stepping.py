"""The hot loop: deterministic CEA runs over one batch of a time-ordered ECS (seed 001, section 4).

Per event the kernel takes each active deterministic state with its node, follows the state's
transitions on the event's symbol (one new output node per labelled transition, one union node
where two runs meet: constant work per event), then enumerates the results of the final states.
When it lacks a transition, arena room or output room it returns a status
(:mod:`cerql.exec.kernel.state`) and the driver, which keeps no state of its own, fills the gap
and calls again: the event is resumed, not redone.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, types
from numba.typed import Dict

from cerql.exec.kernel.arena import alive
from cerql.exec.kernel.enumeration import enumerate_results
from cerql.exec.kernel.registers import (KEY, KEY_SIZE, REGISTER_COLUMNS, Sides, aggregates_hold, overflowed, run_key,
                                         step_registers)
from cerql.exec.kernel.state import (ANY, ARENA, BOUND, CONSUMED, COUNT, CURSOR, DONE, FULL, MOVING, NACT, NEED_ACTIVE,
                                     NEED_ARENA, NEED_D, NEED_OUTPUT, NEED_S, NEED_TRANSITION, NLAB, NRES, OVERFLOW,
                                     PENDING, POS, TOO_MANY, TOO_MANY_CANDIDATES, TOO_MANY_RUNS)


class Events(NamedTuple):
    """One batch of events, in stream order."""

    symbol: np.ndarray  # int64: the event's symbol id (its condition bits, numbered by the driver)
    starts: np.ndarray  # bool: the event starts a substream
    values: np.ndarray  # the event's window value (its position in the substream for n EVENTS)
    sides: Sides        # the registers' values of the event


class Transitions(NamedTuple):
    """The lazily determinized automaton: what the driver has built of it so far."""

    first: np.ndarray   # int64 (states, symbols): where state d's transitions on symbol s start
                        # in label/target, -1 while not built (the kernel returns NEED_TRANSITION)
    count: np.ndarray   # int64 (states, symbols): how many transitions
    label: np.ndarray   # int64: the label bits a transition marks the event with (0: none)
    target: np.ndarray  # int64: the state a transition goes to
    final: np.ndarray   # bool per state
    fixed: np.ndarray   # bool per state: its successor on an inert event is itself
    inert: np.ndarray   # bool per symbol: fires no transition but the TRUE gaps


class Runs(NamedTuple):
    """The active runs (st[NACT] of them) and the scratch the next event's runs are built in."""

    ds: np.ndarray        # int64: the run's deterministic state
    node: np.ndarray      # int64: the arena node of its results so far
    rk: np.ndarray        # int64 (runs, REGISTER_COLUMNS): its registers
    rf: np.ndarray        # float64 (runs, REGISTER_COLUMNS): the float values beside them
    new_ds: np.ndarray    # the same four, for the runs after the event
    new_node: np.ndarray
    new_rk: np.ndarray
    new_rf: np.ndarray
    slot: np.ndarray      # int64 per state: its new run, -1 for none yet (runs without registers)
    cutoff: np.ndarray    # window value dtype, one: the window cutoff of the last event (compact)


@njit(nogil=True, cache=True)
def run_batch(options, events, dfa, regs, st, runs, arena, out):
    """Run events st[CURSOR].. of one batch; return a status (see module docstring).

    ``options``: :class:`cerql.exec.kernel.state.Options`; ``events``: :class:`Events`;
    ``dfa``: :class:`Transitions`; ``regs``: :class:`cerql.exec.kernel.registers.RegisterPlan`;
    ``st``: the state vector (:mod:`cerql.exec.kernel.state`); ``runs``: :class:`Runs`;
    ``arena``: :class:`cerql.exec.kernel.arena.Arena`; ``out``:
    :class:`cerql.exec.kernel.enumeration.Output`.

    An *inert* symbol fires no transition but the TRUE gaps; when every active state is a
    fixed point of those (st[MOVING] == 0), such an event changes nothing and costs O(1).
    With registers (``regs.count`` > 0) an active run is a deterministic state, its registers
    (``runs.rk``, ``runs.rf``) and its node, and runs meet on equal (state, registers) instead of
    state.
    """
    sym, starts, vals, sides = events.symbol, events.starts, events.values, events.sides
    windowed, amount, strategy, max_matches = options.windowed, options.amount, options.strategy, options.max_matches
    # the arrays as locals: reading a bundle's field in the loop would count a reference each time
    tr_first, tr_count, tr_label, tr_target = dfa.first, dfa.count, dfa.label, dfa.target
    ds_final, ds_fixed, inert, cut = dfa.final, dfa.fixed, dfa.inert, runs.cutoff
    act_ds, act_node, act_rk, act_rf = runs.ds, runs.node, runs.rk, runs.rf
    new_ds, new_node, new_rk, new_rf, slot = runs.new_ds, runs.new_node, runs.new_rk, runs.new_rf, runs.slot
    n_pos, n_label, n_a, n_b, n_maxpos, n_maxval = arena.pos, arena.label, arena.a, arena.b, arena.maxpos, arena.maxval
    n_regs = regs.count
    n_events = sym.shape[0]
    arena_cap = n_pos.shape[0]
    act_cap = new_ds.shape[0]
    meet = Dict.empty(key_type=KEY, value_type=types.int64)
    tmp_k = np.zeros(REGISTER_COLUMNS, np.int64)
    tmp_f = np.zeros(REGISTER_COLUMNS, np.float64)
    fbuf = np.zeros(1, np.float64)
    scratch = (tmp_k, tmp_f, fbuf, fbuf.view(np.int64))
    key_buf = np.zeros(KEY_SIZE, np.int64)
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
            used = st[ARENA]
            nn = 0
            if n_regs > 0:
                meet.clear()
            for k in range(st[NACT]):
                d = act_ds[k]
                node = act_node[k]
                if not alive(node, consumed, windowed, cutoff, n_maxpos, n_maxval):
                    continue
                f = tr_first[d, s]
                for j in range(f, f + tr_count[d, s]):
                    lab = tr_label[j]
                    d2 = tr_target[j]
                    if n_regs > 0:
                        if not step_registers(k, lab, i, regs, sides, act_rk, act_rf, scratch):
                            continue
                    if lab == 0:
                        x = node
                    else:
                        x = used  # an output node: event pos marked lab, then node
                        used += 1
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
                        key = run_key(d2, tmp_k, key_buf)
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
                        u = used  # a union node: the runs meet
                        used += 1
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
            st[ARENA] = used
            st[PENDING] = 1
        # enumerate the results ending at this event
        consumed = st[CONSUMED]
        pos = st[POS]
        r0 = st[NRES]
        l0 = st[NLAB]
        st[COUNT] = 0
        if n_regs > 0:  # a sum past BIGINT in any result fails the query, whichever ANY would pick
            for k in range(st[NACT]):
                if ds_final[act_ds[k]] and alive(act_node[k], consumed, windowed, cutoff, n_maxpos, n_maxval) and (
                        overflowed(k, regs, act_rk)):
                    return OVERFLOW
        for k in range(st[NACT]):
            if strategy == ANY and st[NRES] > r0:
                break
            if not (ds_final[act_ds[k]] and alive(act_node[k], consumed, windowed, cutoff, n_maxpos, n_maxval)):
                continue
            if n_regs > 0 and not aggregates_hold(k, i, regs, sides, act_rk, act_rf):
                continue
            code = enumerate_results(act_node[k], i, pos, r0, consumed, cutoff, options, arena, out, st)
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
        if count > 0 and options.consume:
            st[CONSUMED] = pos
        st[POS] = pos + 1
        st[PENDING] = 0
        st[CURSOR] = i + 1
    return DONE

