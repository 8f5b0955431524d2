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

from cerql.exec.kernel.arena import add_output_node, add_union_node, alive
from cerql.exec.kernel.enumeration import report_ordered, report_results
from cerql.exec.kernel.registers import KEY, KEY_SIZE, REGISTER_COLUMNS, Sides, output_bits, run_key, step_registers
from cerql.exec.kernel.state import (ARENA, BOUND, CONSUMED, COUNT, CURSOR, DONE, FINALS, LIVE, MOVING, NACT,
                                     NEED_ACTIVE, NEED_ARENA, NEED_D, NEED_S, NEED_TRANSITION, NRES, NSTART, OK,
                                     PENDING, PHASE, POS, TOO_MANY_RUNS)


class Events(NamedTuple):
    """One batch of events, in stream order."""

    symbol: np.ndarray  # int64: the event's symbol id (its condition bits, numbered by the driver)
    starts: np.ndarray  # bool: the event starts a substream
    values: np.ndarray  # the event's window value (its position in the substream for n EVENTS)
    sides: Sides        # the registers' values of the event
    reach: np.ndarray   # int64: with Options.unless_bit, the latest start of a result of that
                        # UNLESS's right side ending at or before the event, -1 for none
                        # (driver.Run.reach), kept on the nodes marking the event with the bit
    bound: np.ndarray   # int64: the latest start of a result of an UNLESS right side ending at or
                        # before the event, -1 for none; results of the query starting at or before
                        # it contain that result and are dropped (docs/language.md, "Negation and
                        # conjunction"). The right sides' runs (Options.bounds_starts) write it,
                        # the query's run reads it


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

    ``events.bound`` (UNLESS): the query's run treats the positions up to ``bound[i]`` as
    consumed from event i on (results starting there contain a result of the right side); the
    right side's run (``options.bounds_starts``) writes it instead of results (:func:`bound_starts`).

    An *inert* symbol fires no transition but the TRUE gaps; when every active state is a
    fixed point of those (st[MOVING] == 0), such an event changes nothing and costs O(1). Any
    other event goes through :func:`check_room`, the stepping of its runs into ``runs.new_*``
    and their taking over, :func:`cerql.exec.kernel.enumeration.report_results` (when a run is
    in a final state, st[FINALS]) and :func:`end_event`; a call resumed after a status
    (st[PENDING]) redoes only the results. The stepping stays here: it needs the dict runs meet
    in, which needs numba's reference counting (state.PHASE), and a function with it counts a
    reference to each array it is passed, at every event (5x the cost of the event, measured).
    With registers (``regs.count`` > 0) an active run is a deterministic state, its registers
    (``runs.rk``, ``runs.rf``) and its node, and runs meet on equal (state, registers) instead of
    state.
    """
    sym, starts, vals, sides, bound = events.symbol, events.starts, events.values, events.sides, events.bound
    bounds_starts, unless_bit = options.bounds_starts, options.unless_bit
    windowed, amount, consume, max_matches = options.windowed, options.amount, options.consume, options.max_matches
    # the arrays as locals: reading a bundle's field in the loop would count a reference each time
    tr_first, tr_count, tr_label, tr_target, inert = dfa.first, dfa.count, dfa.label, dfa.target, dfa.inert
    ds_fixed, ds_final = dfa.fixed, dfa.final
    act_ds, act_node, act_rk, act_rf, cut = runs.ds, runs.node, runs.rk, runs.rf, runs.cutoff
    new_ds, new_node, new_rk, new_rf, slot = runs.new_ds, runs.new_node, runs.new_rk, runs.new_rf, runs.slot
    n_maxpos, n_maxval, n_regs, n_events = arena.maxpos, arena.maxval, regs.count, sym.shape[0]
    meet = Dict.empty(key_type=KEY, value_type=types.int64)
    tmp_k = np.zeros(REGISTER_COLUMNS, np.int64)
    tmp_f = np.zeros(REGISTER_COLUMNS, np.float64)
    fbuf = np.zeros(1, np.float64)
    scratch = (tmp_k, tmp_f, fbuf, fbuf.view(np.int64))
    key_buf = np.zeros(KEY_SIZE, np.int64)
    keep = output_bits(regs)  # the registers' reset bits are no result's labels
    while st[CURSOR] < n_events:
        i = st[CURSOR]
        s = sym[i]
        v = vals[i]
        cutoff = v - amount
        cut[0] = cutoff
        if st[PENDING] == 0:
            if starts[i]:
                start_substream(st, runs)
            if not bounds_starts and bound[i] > st[CONSUMED]:  # UNLESS: as if consumed up to there
                st[CONSUMED] = bound[i]
            if inert[s] and st[MOVING] == 0 and not starts[i]:
                st[POS] += 1
                st[CURSOR] = i + 1
                continue
            status = check_room(s, tr_first, tr_count, act_ds, st, arena.pos.shape[0], new_ds.shape[0], n_regs)
            if status != OK:
                return status
            # step every live run over the event into runs.new_*: an output node per transition
            # marking the event, a union node where two runs reach one state (and registers)
            consumed, pos, used, nn = st[CONSUMED], st[POS], st[ARENA], 0
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
                    x = node
                    if lab & keep != 0:
                        x = add_output_node(arena, used, pos, lab & keep, node, v, st)
                        if lab & unless_bit:
                            arena.reach[x] = events.reach[i]
                        used += 1
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
                        new_node[at] = add_union_node(arena, used, new_node[at], x, st)
                        used += 1
            if n_regs > 0 and nn > max_matches:  # runs apart on register values (see MAX_REGISTERS)
                st[COUNT] = nn
                return TOO_MANY_RUNS
            moving = 0
            finals = 0
            for k in range(nn):
                if n_regs == 0:
                    slot[new_ds[k]] = -1
                act_ds[k] = new_ds[k]
                act_node[k] = new_node[k]
                for c in range(3 * n_regs):
                    act_rk[k, c], act_rf[k, c] = new_rk[k, c], new_rf[k, c]
                if not ds_fixed[new_ds[k]]:
                    moving += 1
                if ds_final[new_ds[k]]:
                    finals += 1
            st[NACT] = nn
            st[MOVING] = moving
            st[FINALS] = finals
            st[ARENA] = used
            st[PENDING] = 1
        r0 = st[NRES]
        if st[FINALS] > 0 and bounds_starts:
            bound_starts(i, cutoff, bound, windowed, dfa.final, st, runs, arena)
        elif st[FINALS] > 0 and options.ordered:
            status = report_ordered(i, cutoff, options, events, dfa, regs, st, runs, arena, out)
            if status != OK:
                return status
        elif st[FINALS] > 0:  # else no run ends a result here, and the call would cost more than the event
            status = report_results(i, cutoff, options, events, dfa, regs, st, runs, arena, out)
            if status != OK:
                return status
        end_event(i, st[NRES] - r0 > 0 and consume, st)
    return DONE


@njit(**PHASE)
def bound_starts(i, cutoff, bound, windowed, ds_final, st, runs, arena):
    """The run of an UNLESS right side at event i: the latest start of its live results ending
    here (the greatest ``maxpos`` of a final run's node) raises ``bound[i]``. Writing no result,
    it costs one look per final run."""
    n_maxpos, n_maxval = arena.maxpos, arena.maxval
    for k in range(st[NACT]):
        node = runs.node[k]
        if ds_final[runs.ds[k]] and alive(node, st[CONSUMED], windowed, cutoff, n_maxpos, n_maxval):
            if n_maxpos[node] > bound[i]:
                bound[i] = n_maxpos[node]


@njit(**PHASE)
def start_substream(st, runs):
    """The event starts a substream: forget the positions, the arena and the runs, and start
    again from one run at the initial state on BOTTOM with empty registers."""
    act_rk, act_rf = runs.rk, runs.rf
    st[POS] = 0
    st[CONSUMED] = -1
    st[ARENA] = 1
    st[NACT] = 1
    st[MOVING] = 0
    st[NSTART] = 0
    st[LIVE] = 0
    runs.ds[0] = 0
    runs.node[0] = 0
    for c in range(REGISTER_COLUMNS):
        act_rk[0, c], act_rf[0, c] = 0, 0.0


@njit(**PHASE)
def check_room(s, tr_first, tr_count, act_ds, st, arena_cap, act_cap, n_regs):
    """Whether the active runs can step over symbol s now: every transition of their states on s
    is built, the arena has room for the nodes the event can create (two per transition: an
    output node and a union node) and, with registers, ``runs`` has room for one run per
    transition. Returns OK, or what the driver must provide first: NEED_TRANSITION (state and
    symbol in st[NEED_D], st[NEED_S]), NEED_ARENA or NEED_ACTIVE (how many in st[BOUND])."""
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
    return OK


@njit(**PHASE)
def end_event(i, consumes, st):
    """Close event i once its results are written: it consumes its position when it has results
    under CONSUME BY (``consumes``), and the next event runs at the next position."""
    if consumes:
        st[CONSUMED] = st[POS]
    st[POS] += 1
    st[PENDING] = 0
    st[CURSOR] = i + 1
