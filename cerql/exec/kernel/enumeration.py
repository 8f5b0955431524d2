"""Enumeration: the results under one node of the arena, written to the output buffer.

A depth-first walk from a final run's node to BOTTOM, taking both branches of a union node only
when both lead to a live result (:func:`cerql.exec.kernel.arena.alive`), so each step leads to a
result (output-linear delay). Each result is written to :class:`Output` as its end, start and
its selected (position, label) pairs, last event first; the strategy decides what is kept
(:mod:`cerql.exec.kernel.strategies`). Kept apart from stepping: it reads the arena, never
changes it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from cerql.exec.kernel.arena import alive
from cerql.exec.kernel.registers import aggregates_hold, overflowed
from cerql.exec.kernel.ordered import hand_over
from cerql.exec.kernel.state import (ANY, CONSUMED, COUNT, DECIDED, FULL, HANDED, LAST, MAX, NACT, NEED_CHECK,
                                     NEED_OUTPUT, NEXT, NLAB, NRES, OK, OPEN, ORDER, OVERFLOW, PHASE, POS,
                                     ROUND, STEPS, STRICT, TOO_MANY, TOO_MANY_CANDIDATE_EVENTS, TOO_MANY_CANDIDATES,
                                     TOO_MANY_STEPS, WORK, candidate_limit, search_steps)
from cerql.exec.kernel.selection import (STOPPED, first_live_start, last_data_set, last_start_at, next_data_set,
                                        results_with, write_result)
from cerql.exec.kernel.strategies import admit


class Output(NamedTuple):
    """The results buffer: st[NRES] results, their st[NLAB] selected (position, label) pairs.

    Result r ends at batch event ``end[r]`` (position ``endpos[r]``), starts at position
    ``start[r]``, and its pairs are ``lab_pos``/``lab_mask`` [off[r], off[r] + length[r]), last
    event first. All int64; the last three are MAX's scratch (:mod:`strategies`).
    """

    end: np.ndarray
    endpos: np.ndarray
    start: np.ndarray
    off: np.ndarray
    length: np.ndarray
    lab_pos: np.ndarray
    lab_mask: np.ndarray
    idx_stamp: np.ndarray    # MAX's index of the kept results' positions at one end event, by
    in_count: np.ndarray     # distance from the event (strategies.INDEX slots): how many kept
    first_count: np.ndarray  # results hold the position, how many start there


@njit(nogil=True, cache=True)
def _starts_inside(n, sibling, arena, consumed, windowed, cutoff):
    """Whether union branch n is a result's first event p whose sibling also selects p and
    continues to a live node: the sibling's live results, with p, strictly contain n's one
    (when every result selects its first event), from the same state on."""
    n_pos, n_a, n_b = arena.pos, arena.a, arena.b
    if n < 0 or sibling < 0 or n_pos[n] < 0 or n_a[n] != 0:
        return False
    for c in (sibling, n_a[sibling] if n_pos[sibling] < 0 else -1, n_b[sibling] if n_pos[sibling] < 0 else -1):
        if c > 0 and n_pos[c] == n_pos[n] and n_a[c] > 0 and (
                alive(n_a[c], consumed, windowed, cutoff, arena.maxpos, arena.maxval)):
            return True
    return False


@njit(nogil=True, cache=True)
def enumerate_results(root, i, pos, r0, consumed, cutoff, options, prune_starts, arena, out, st):
    """Write the results under ``root`` ending at event i (position pos); the event's results
    start at r0. Returns OK, FULL (no room: the event's results are to be redone) or TOO_MANY.

    ``prune_starts`` (MAX, every result selecting its first event, no registers): a union
    branch that is a first event p, beside a branch that selects p after a live node, is not
    entered; every result through it is strictly inside a live one through the sibling, which
    ends here too (:func:`_starts_inside`). It spares MAX the candidates of every later start
    of a Kleene closure (``A+ ; B``: one instead of one per A). With ``options.max_work`` (the
    post-filter's candidates, MAX with registers) the events of the event's candidates are
    counted in st[WORK], and past that budget it returns TOO_MANY_CANDIDATE_EVENTS. With
    ``options.unless_bit`` (a post-filtered run's UNLESS inside the pattern) a path is left as
    soon as an event of the UNLESS's left side (read from its last event back) lies at or before
    ``arena.reach`` of that last event: its left side spans a result of the right side, so no
    completion of it passes (exec/post_filter.py ``unless_cut``)."""
    windowed, strategy, max_matches, max_work = options.windowed, options.strategy, options.max_matches, options.max_work
    unless_bit = options.unless_bit
    n_pos, n_a, n_maxpos, n_maxval, n_label, n_reach = arena.pos, arena.a, arena.maxpos, arena.maxval, arena.label, arena.reach
    stack_node, stack_len, path, stack_reach = arena.stack_node, arena.stack_len, arena.path, arena.depth
    lab_pos = out.lab_pos
    top = 0
    stack_node[0] = root
    stack_len[0] = 0
    stack_reach[0] = -2  # the UNLESS's left side not met yet
    while top >= 0:
        n = stack_node[top]
        plen = stack_len[top]
        reach = stack_reach[top]
        top -= 1
        cut = False
        while True:
            if n == 0:
                break
            if n_pos[n] < 0:
                a, b = n_a[n], arena.b[n]
                if prune_starts:
                    if _starts_inside(b, a, arena, consumed, windowed, cutoff):
                        b = -1
                    elif _starts_inside(a, b, arena, consumed, windowed, cutoff):
                        a, b = b, -1
                if alive(b, consumed, windowed, cutoff, n_maxpos, n_maxval):
                    if alive(a, consumed, windowed, cutoff, n_maxpos, n_maxval):
                        top += 1
                        stack_node[top] = b
                        stack_len[top] = plen
                        stack_reach[top] = reach
                    else:
                        a = b
                n = a
            else:
                if n_label[n] & unless_bit:  # the UNLESS's left side, read from its last event back
                    if reach == -2:
                        reach = n_reach[n]  # the latest right-side start up to its last event
                    if n_pos[n] <= reach:  # it spans a result of the right side: every completion fails
                        cut = True
                        break
                path[plen] = n
                plen += 1
                n = n_a[n]
        if cut:
            continue
        # a result: path[0..plen) from the last event back to the first
        if write_result(path, plen, i, pos, arena, out, st) != OK:
            return FULL
        if max_work > 0:  # candidates to be checked or compared: their events are bounded
            st[WORK] += plen + 1
            if st[WORK] > max_work:
                return OPEN if options.ordered else TOO_MANY_CANDIDATE_EVENTS
        if options.ordered and st[NRES] - r0 > options.plain:
            return OPEN  # handed over in the strategy's order instead (kernel/ordered.py)
        if strategy == STRICT:
            r = st[NRES] - 1
            lo, w = out.off[r], st[NLAB]
            if w > lo and lab_pos[lo] - lab_pos[w - 1] + 1 != w - lo:  # not a run of positions: undone
                st[NRES] = r
                st[NLAB] = lo
                continue
        if strategy == ANY:
            return OK
        if strategy == MAX:
            admit(strategy, r0, out, st)
            st[COUNT] += 1  # candidates of this event, counted for candidate_limit
            if st[COUNT] > candidate_limit(max_matches):
                return TOO_MANY_CANDIDATES
        elif st[NRES] - r0 > max_matches:
            return TOO_MANY
    return OK


@njit(nogil=True, cache=True)
def _stopped(code, r0, l0, st):
    """The status of an event whose results stopped with ``code`` (FULL, TOO_MANY or
    TOO_MANY_CANDIDATES): FULL drops the event's results, to be redone once the driver has
    taken the buffer; the TOO_MANY statuses leave their count in st[COUNT]."""
    if code == FULL:
        st[NRES] = r0
        st[NLAB] = l0
        return NEED_OUTPUT
    if code == TOO_MANY:
        st[COUNT] = st[NRES] - r0
    return code  # TOO_MANY_CANDIDATES: COUNT already holds the candidates; _EVENTS: WORK their events


@njit(nogil=True, cache=True)
def _ends_here(k, i, consumed, cutoff, windowed, events, regs, runs, arena, ds_final):
    """Whether active run k ends results at event i: a final state, a live node, and (with
    registers) aggregates that hold."""
    if not (ds_final[runs.ds[k]] and alive(runs.node[k], consumed, windowed, cutoff, arena.maxpos, arena.maxval)):
        return False
    return regs.count == 0 or aggregates_hold(k, i, regs, events.sides, runs.rk, runs.rf)


@njit(nogil=True, cache=True)
def _final_roots(i, consumed, cutoff, windowed, events, regs, runs, arena, ds_final, st):
    """The nodes of the active runs that end results at event i (:func:`_ends_here`), written to
    ``runs.new_node`` (free once the event's runs are stepped); returns how many."""
    n_roots = 0
    for k in range(st[NACT]):
        if _ends_here(k, i, consumed, cutoff, windowed, events, regs, runs, arena, ds_final):
            runs.new_node[n_roots] = runs.node[k]
            n_roots += 1
    return n_roots


@njit(nogil=True, cache=True)
def _sum_overflowed(consumed, cutoff, windowed, regs, runs, arena, ds_final, st):
    """Whether a final run with a live node holds an integer sum past BIGINT: that fails the
    query, whichever result a strategy would pick."""
    for k in range(st[NACT]):
        if ds_final[runs.ds[k]] and alive(runs.node[k], consumed, windowed, cutoff, arena.maxpos, arena.maxval) and (
                overflowed(k, regs, runs.rk)):
            return True
    return False


@njit(nogil=True, cache=True)
def _report_searched(i, pos, r0, consumed, cutoff, options, events, regs, st, runs, arena, out, ds_final):
    """LAST's and NEXT's results at event i, searched for on the arena
    (cerql.exec.kernel.selection): the final runs that can end a result here are the roots (kept
    in ``runs.new_node``, free once the event's runs are stepped). LAST searches their winning
    data set once, then writes each root's results with it. NEXT finds the earliest live start
    once when every result selects its first event; without registers it then decides among
    the results that start there (the automaton keeps one per start and state). With registers
    (the automaton keeps every candidate), or when the first event is not selected (the winner
    may start anywhere), it searches the winning data set first (``next_data_set``). Returns OK,
    FULL, TOO_MANY, TOO_MANY_CANDIDATES (NEXT's admit counts what it compares) or
    TOO_MANY_STEPS (the searches' steps at the event, in st[WORK], passed search_steps)."""
    windowed = options.windowed
    roots = runs.new_node
    n_roots = _final_roots(i, consumed, cutoff, windowed, events, regs, runs, arena, ds_final, st)
    if n_roots == 0:
        return OK
    m, first, last = -1, -1, -1
    st[STEPS] = search_steps(options.max_matches)
    if options.strategy == LAST:
        m = last_data_set(roots, n_roots, consumed, windowed, cutoff, arena, st)
        if m == STOPPED:
            return TOO_MANY_STEPS
    else:
        if options.first_selected:
            first = first_live_start(roots, n_roots, consumed, windowed, cutoff, arena, st)
            if first == STOPPED:
                return TOO_MANY_STEPS
            if first >= 0:
                last = last_start_at(first, arena, st)
        if regs.count > 0 or first < 0:
            m = next_data_set(roots, n_roots, first, consumed, windowed, cutoff, arena, st)
            if m == STOPPED:
                return TOO_MANY_STEPS
            if m < 0:
                return OK
    for q in range(n_roots):
        code = results_with(roots[q], m, first, last, i, pos, r0, consumed, cutoff, options, arena, out, st)
        if code != OK:
            return code
    return OK


@njit(nogil=True, cache=True)
def report_ordered(i, cutoff, options, events, dfa, regs, st, runs, arena, out):
    """:func:`report_results` for a run whose check decides among the candidates under NEXT or
    LAST (``options.ordered``). Its walks allocate (kernel/ordered.py), so it is compiled with
    numba's runtime, unlike the phases; only post-filtered NEXT and LAST runs call it. The
    candidates at event i come as they do for ALL when there are at most ``options.plain`` of them holding at
    most ``options.max_work`` events; else their data sets in the strategy's order, best first,
    a chunk at a time (kernel/ordered.py ``hand_over``): NEED_CHECK after each chunk but the
    last, the driver setting st[ORDER] to DECIDED when the check found the event's match among
    them. The events handed over at one event are bounded by ``options.max_work`` in all
    (TOO_MANY_CANDIDATE_EVENTS), as the candidates as they come are. Returns OK, NEED_CHECK, or
    the code that stops the batch (as :func:`report_results`)."""
    windowed, ds_final = options.windowed, dfa.final
    consumed = st[CONSUMED]
    pos = st[POS]
    r0 = st[NRES]
    l0 = st[NLAB]
    st[COUNT] = 0
    st[WORK] = 0
    if regs.count > 0 and _sum_overflowed(consumed, cutoff, windowed, regs, runs, arena, ds_final, st):
        return OVERFLOW
    code = _ordered(i, pos, r0, l0, consumed, cutoff, options, events, regs, st, runs, arena, out, ds_final)
    if code == NEED_CHECK or code == OK:
        return code
    return _stopped(code, r0, l0, st)


@njit(nogil=True, cache=True)
def _ordered(i, pos, r0, l0, consumed, cutoff, options, events, regs, st, runs, arena, out, ds_final):
    """report_ordered's candidates at event i (see there)."""
    windowed = options.windowed
    roots = runs.new_node
    n_roots = _final_roots(i, consumed, cutoff, windowed, events, regs, runs, arena, ds_final, st)
    if n_roots == 0 or st[ORDER] == DECIDED:
        st[ORDER] = 0
        return OK
    if st[ORDER] == 0:  # as they come
        code = OK
        for q in range(n_roots):
            code = enumerate_results(roots[q], i, pos, r0, consumed, cutoff, options, False, arena, out, st)
            if code != OK:
                break
        if code != OPEN:
            return code
        st[NRES] = r0  # too many: in order instead
        st[NLAB] = l0
        st[ORDER] = 1
        st[ROUND] = 0
        st[HANDED] = 0
    st[WORK] = 0
    st[STEPS] = options.max_matches  # search_steps of the query's maxMatchesPerEvent
    code, passed = hand_over(roots, n_roots, options.ordered, st[ORDER] - 1, options.chunk << min(st[ROUND], 20),
                             i, pos, r0, consumed, cutoff, options, arena, out, st)
    if code != OK and code != OPEN:
        return code
    st[HANDED] += st[NLAB] - l0 + st[NRES] - r0
    if st[HANDED] > options.max_work:
        st[WORK] = st[HANDED]
        return TOO_MANY_CANDIDATE_EVENTS
    if code == OK:  # every data set is handed over: the check decides among them as they come
        st[ORDER] = 0
        return OK
    st[ORDER] = passed + 1
    st[ROUND] += 1
    return NEED_CHECK


@njit(**PHASE)
def report_results(i, cutoff, options, events, dfa, regs, st, runs, arena, out):
    """Write every result ending at event i (window cutoff ``cutoff``): those of each active run
    in a final state whose node is alive and whose aggregates hold. Returns OK, or the status
    that stops the batch: OVERFLOW, NEED_OUTPUT (the buffer is full: the event's results are
    dropped and redone once the driver has taken it), TOO_MANY or TOO_MANY_CANDIDATES (their
    count in st[COUNT]).

    Bundles as in :func:`cerql.exec.kernel.stepping.run_batch`; called once the event's runs are
    stepped, so a resumed call redoes only this.
    """
    windowed, strategy, max_matches = options.windowed, options.strategy, options.max_matches
    ds_final, n_regs = dfa.final, regs.count
    act_node = runs.node
    consumed = st[CONSUMED]
    pos = st[POS]
    r0 = st[NRES]
    l0 = st[NLAB]
    st[COUNT] = 0
    st[WORK] = 0
    if n_regs > 0 and _sum_overflowed(consumed, cutoff, windowed, regs, runs, arena, ds_final, st):
        return OVERFLOW
    prune_starts = strategy == MAX and options.first_selected and n_regs == 0
    if strategy == LAST or strategy == NEXT:
        code = _report_searched(i, pos, r0, consumed, cutoff, options, events, regs, st, runs, arena, out, ds_final)
        if code != OK:
            return _stopped(code, r0, l0, st)
    else:
        for k in range(st[NACT]):
            if strategy == ANY and st[NRES] > r0:
                break
            if not _ends_here(k, i, consumed, cutoff, windowed, events, regs, runs, arena, ds_final):
                continue
            code = enumerate_results(act_node[k], i, pos, r0, consumed, cutoff, options, prune_starts, arena, out,
                                     st)
            if code != OK:
                return _stopped(code, r0, l0, st)
    count = st[NRES] - r0
    if count > max_matches:
        st[COUNT] = count
        return TOO_MANY
    return OK
