"""The MATCH_RECOGNIZE matcher for row-local DEFINEs: a Pike VM over one ordered partition.

Input: the NFA tables of a row pattern (``cerql.mr_plan.NfaTables``), ``bits`` (uint64 per row:
bit v set when the row satisfies variable v's DEFINE) and the AFTER MATCH SKIP mode. Output: the
matches in order, as ``(start, end)`` row ranges (end exclusive; equal for an empty match) and
one label per row of each match, concatenated (``mr_plan``: the variable, and whether the row is
inside an exclusion).

Semantics (docs/semantics.md): from the current start row the match is the first mapping in the
pattern's preference order; a start row without one is unmatched and the next row is tried. The
threads (a state, a start row, a path) are kept in priority order: earlier start first, then
preference order; at each row only the first thread to reach an NFA state is kept. With
row-local conditions a thread's future is fixed by its state and row, so a later thread in the
same place (a less preferred path, or a later start) can only repeat what the first one does:
dropping it costs nothing, and the work per row is bounded by the number of states (linear in
rows, whatever the pattern). When a thread accepts, the less preferred threads of its start are
cut, the more preferred ones go on (they may still find a preferred, longer match), and a start
row's match is final once none of its threads is left.

Several start rows run at once. With PAST LAST ROW the next search starts where the match ends,
so threads of start rows before that point are cut when a thread accepts, and later ones go on:
one pass over the partition. A thread of a later start can have been dropped for one in the same
place that is cut afterwards only when that later start falls inside the match, except for a
start row at the very row where an earlier match ends: there a state already reached from which
ACCEPT is reachable without consuming (``nullable``) still gives the new start its empty match.
The other modes resume inside the match, where threads were dropped in favour of threads that are
then cut, so after each non-empty match the search restarts at the resume row: the work is then
rows plus, per match, its length and how far its preferred threads looked ahead past its end.
After an empty match the search resumes at the next row whatever the mode: AFTER MATCH SKIP says
where to resume after a non-empty match (docs/semantics.md, "MATCH_RECOGNIZE").

Paths are nodes in a shared arena (label, parent), so extending a thread by a row is one node;
when the arena is full it is compacted to the nodes the live threads and pending matches use, and
grown only when more than half of it is live: memory follows the live matches, not the partition.

A partition in pieces. A caller that holds only part of a partition (Spark hands a task its rows
in Arrow batches: exec/mr_incremental.py) runs the kernel on the rows it has, not ``final``: no
thread dies for want of a row, a thread at ``$`` after the last row keeps its start undecided
(the partition may or may not end there), and the kernel stops at the last row with ``head``,
the first start row whose match is not known yet; the matches of the starts before it are
final. The caller then drops the rows before ``head`` and, when more rows have come, runs the
kernel again from ``head`` (``begin``) over what it kept: the same matches as one run over the
whole partition. Why: the threads of earlier starts that a continuous run would still carry past
``head`` can have taken a later start's thread's place only where both would do the same thing
(a row-local future), or inside a match that cuts the later start; and every other mode restarts
at its resume row anyway, which a new run from ``head`` does too.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from cerql.errors import ExecutionError
from cerql.mr_plan import (ACCEPT, ANCHOR_END, ANCHOR_START, CONSUME, PAST_LAST_ROW, TO_FIRST, TO_LAST, TO_NEXT_ROW,
                           Nfa, NfaTables, Skip)

# error codes of the kernel
OK = 0
SKIP_TO_FIRST_ROW = 1   # AFTER MATCH SKIP TO FIRST/LAST v lands on the match's first row
SKIP_TO_NO_ROW = 2      # ... v maps no row in the match

# slots of the kernel's scalar vector (shared with the closure)
_NEXT = 0    # threads in the next list
_STEPS = 1   # work done: states visited plus threads stepped
_CUT = 2     # threads after this point of the current row with a start below this are cut
_FLOOR = 3   # no start row below this is begun
_GEN = 4     # stamp of the current closure round (``visited``)
_CONT = 5    # 1: PAST LAST ROW (one pass), 0: restart after each match
_N = 6       # rows given
_FIRST = 7   # the position of the partition's first row (``^``), -1 when it lies before the rows given
_FINAL = 8   # 1: the partition ends after the rows given (``$``), 0: more rows follow
# the loop's own state, kept here while match_kernel grows an array (``_advance``)
_HEAD = 9          # the earliest start row whose outcome is not yet known
_LAST_START = 10   # the latest start row begun
_P = 11            # the next row to consume
_N_CUR = 12        # threads in the current list
_N_NODES = 13      # nodes of the path arena in use
_N_MATCH = 14      # matches found
_N_LABELS = 15     # labels written
_WANT = 16         # the labels the next match needs (``_NEEDS_LABELS``)
_ERROR = 17        # the SKIP_TO_* code (``_FAILED``)
_SLOTS = 18

_NEVER = np.int64(1) << np.int64(62)


@njit(nogil=True, cache=True)
def _accept(start, node, pos, rec_end, rec_node, sc):
    """A thread of ``start`` reached ACCEPT at ``pos``: it is the start's best match so far (the
    threads before it that are still alive are preferred, the ones after it are cut)."""
    rec_end[start] = pos
    rec_node[start] = node
    if sc[_CONT] == 1:
        resume = pos if pos > start else start + 1
        if resume > sc[_CUT]:
            sc[_CUT] = resume
        if resume > sc[_FLOOR]:
            sc[_FLOOR] = resume
    else:
        sc[_CUT] = _NEVER
        sc[_FLOOR] = _NEVER


@njit(nogil=True, cache=True)
def _closure(root, start, node, pos, kind, walk_start, walk_state, walk_again, nullable, visited,
             nxt_state, nxt_start, nxt_node, cnt, rec_end, rec_node, sc):
    """Follow the epsilon moves from ``root`` at position ``pos`` (before row ``pos``) in
    preference order, appending the CONSUME states reached first to the next list and recording
    an ACCEPT reached. The depth-first walk is precomputed (``Nfa.walks``): a state an earlier
    thread reached in this round is met as a second meeting, and the states the walk then lists
    below it were reached by that thread too, so they are passed over as well."""
    pending = pos == sc[_N] and sc[_FINAL] == 0  # ``$`` would hold here if no row followed
    anchors = (1 if pos == sc[_FIRST] else 0) | (2 if pos == sc[_N] and sc[_FINAL] == 1 else 0)
    gen = sc[_GEN]
    w = root * 4 + anchors
    for e in range(walk_start[w], walk_start[w + 1]):
        s = walk_state[e]
        sc[_STEPS] += 1
        if walk_again[e] or visited[s] == gen:
            # reached already; if ACCEPT is reachable from here without a row, this start's
            # match may end here too (the module docstring says when that matters)
            if nullable[s, anchors]:
                _accept(start, node, pos, rec_end, rec_node, sc)
                return
            if pending and nullable[s, anchors | 2]:
                cnt[start] += 1  # it might end here with ``$``: not decided until the rows run out
            continue
        visited[s] = gen
        k = kind[s]
        if k == CONSUME:
            i = sc[_NEXT]
            nxt_state[i] = s
            nxt_start[i] = start
            nxt_node[i] = node
            sc[_NEXT] = i + 1
            cnt[start] += 1
        elif k == ACCEPT:
            _accept(start, node, pos, rec_end, rec_node, sc)
            return
        elif k == ANCHOR_END and pending:
            cnt[start] += 1  # ``$`` holds here if no row follows: not decided until the rows run out


@njit(nogil=True, cache=True)
def _compact(node_label, node_parent, n_nodes, cur_node, n_cur, rec_end, rec_node, first, last):
    """Keep the nodes the live threads and the pending matches (starts ``first``..``last``) use;
    returns the new node count. Parents have smaller indices, so one forward pass remaps."""
    keep = np.zeros(n_nodes, dtype=np.bool_)
    for i in range(n_cur):
        r = cur_node[i]
        while r >= 0 and not keep[r]:
            keep[r] = True
            r = node_parent[r]
    for t in range(first, last + 1):
        if rec_end[t] >= 0:
            r = rec_node[t]
            while r >= 0 and not keep[r]:
                keep[r] = True
                r = node_parent[r]
    remap = np.full(n_nodes, -1, dtype=np.int64)
    new = 0
    for i in range(n_nodes):
        if keep[i]:
            remap[i] = new
            node_label[new] = node_label[i]
            p = node_parent[i]
            node_parent[new] = remap[p] if p >= 0 else -1
            new += 1
    for i in range(n_cur):
        if cur_node[i] >= 0:
            cur_node[i] = remap[cur_node[i]]
    for t in range(first, last + 1):
        if rec_end[t] >= 0 and rec_node[t] >= 0:
            rec_node[t] = remap[rec_node[t]]
    return new


@njit(nogil=True, cache=True)
def _grow(a, size):
    b = np.empty(size, dtype=a.dtype)
    b[:a.shape[0]] = a
    return b


# why ``_advance`` stopped (its return value); the state to resume from is in ``sc``
_DONE = 0          # every row consumed
_NEEDS_LABELS = 1  # the next match's labels do not fit: ``sc[_WANT]`` more are needed
_NEEDS_NODES = 2   # the path arena is more than half live after compaction
_FAILED = 3        # AFTER MATCH SKIP cannot resume: ``sc[_ERROR]`` says why


@njit(nogil=True, cache=True)
def _advance(kind, label, out_start, out, label_var, nullable, walk_start, walk_state, walk_again, start_state,
             bits, mode, mask, final, sc, visited, cnt, rec_end, rec_node, cur_state, cur_start, cur_node,
             nxt_state, nxt_start, nxt_node, node_label, node_parent, m_start, m_end, labels):
    """The kernel's loop over the rows, from the state ``sc`` holds, until every row is consumed
    or an array must grow. Why apart from ``match_kernel``: an array variable rebound inside a
    loop (``labels = _grow(labels, ...)``) makes numba count references to it on every pass, about
    70 ns per row here, more than all the matching; so this loop never rebinds an array (the two
    thread lists swap places by copying back on the way out) and the caller grows what is full and
    calls again. ``m_start``/``m_end`` have room for a match per start row, so they never grow."""
    n = bits.shape[0]
    head = sc[_HEAD]
    last_start = sc[_LAST_START]
    p = sc[_P]
    n_cur = sc[_N_CUR]
    n_nodes = sc[_N_NODES]
    n_match = sc[_N_MATCH]
    n_labels = sc[_N_LABELS]
    cap = node_label.shape[0]
    swapped = False
    why = _DONE
    while True:
        if p >= n and final:   # threads waiting for a row past the end die
            for i in range(n_cur):
                cnt[cur_start[i]] -= 1
            n_cur = 0
        # the starts whose threads are all gone are decided, in order
        while head <= last_start and cnt[head] == 0:
            if rec_end[head] < 0:
                head += 1
                continue
            s = head
            e = rec_end[s]
            if n_labels + (e - s) > labels.shape[0]:
                sc[_WANT] = n_labels + (e - s)
                why = _NEEDS_LABELS
                break
            r = rec_node[s]
            for j in range(e - s - 1, -1, -1):
                labels[n_labels + j] = node_label[r]
                r = node_parent[r]
            m_start[n_match] = s
            m_end[n_match] = e
            n_match += 1
            if e == s or mode == PAST_LAST_ROW:  # AFTER MATCH SKIP applies after a non-empty match
                resume = e if e > s else s + 1
            elif mode == TO_NEXT_ROW:
                resume = s + 1
            else:
                resume = -1
                for j in range(e - s):
                    if (mask >> np.uint64(label_var[labels[n_labels + j]])) & np.uint64(1):
                        resume = s + j
                        if mode == TO_FIRST:
                            break
                if resume < 0 or resume == s:
                    sc[_ERROR] = SKIP_TO_NO_ROW if resume < 0 else SKIP_TO_FIRST_ROW
                    n_labels += e - s
                    why = _FAILED
                    break
            n_labels += e - s
            head = resume
            if mode != PAST_LAST_ROW:
                # restart at the resume row: no thread is left (every other start was cut)
                p = resume
                sc[_FLOOR] = resume
                last_start = resume - 1
                n_cur = 0
                if resume < n:
                    sc[_GEN] += 1
                    sc[_NEXT] = 0
                    sc[_CUT] = -1
                    last_start = resume
                    rec_end[resume] = -1
                    _closure(start_state, resume, -1, resume, kind, walk_start, walk_state, walk_again,
                             nullable, visited, cur_state, cur_start, cur_node, cnt, rec_end, rec_node, sc)
                    n_cur = sc[_NEXT]
        if why != _DONE or p >= n:
            break
        if n_nodes + n_cur > cap:
            n_nodes = _compact(node_label, node_parent, n_nodes, cur_node, n_cur, rec_end, rec_node,
                               head, last_start)
            if 2 * (n_nodes + n_cur) > cap:
                why = _NEEDS_NODES
                break
        # consume row p
        sc[_GEN] += 1
        sc[_NEXT] = 0
        sc[_CUT] = -1
        row = bits[p]
        for i in range(n_cur):
            s = cur_state[i]
            t = cur_start[i]
            cnt[t] -= 1
            sc[_STEPS] += 1
            if t < sc[_CUT]:
                continue
            lab = label[s]
            if (row >> np.uint64(label_var[lab])) & np.uint64(1):
                node = n_nodes
                node_label[node] = lab
                node_parent[node] = cur_node[i]
                n_nodes += 1
                _closure(out[out_start[s]], t, node, p + 1, kind, walk_start, walk_state, walk_again,
                         nullable, visited, nxt_state, nxt_start, nxt_node, cnt, rec_end, rec_node, sc)
        p += 1
        if p < n and p >= sc[_FLOOR]:
            last_start = p
            rec_end[p] = -1
            _closure(start_state, p, -1, p, kind, walk_start, walk_state, walk_again, nullable,
                     visited, nxt_state, nxt_start, nxt_node, cnt, rec_end, rec_node, sc)
        n_cur = sc[_NEXT]
        cur_state, nxt_state = nxt_state, cur_state
        cur_start, nxt_start = nxt_start, cur_start
        cur_node, nxt_node = nxt_node, cur_node
        swapped = not swapped
    if swapped:  # the live threads are in the caller's other list: copy them back
        for i in range(n_cur):
            nxt_state[i] = cur_state[i]
            nxt_start[i] = cur_start[i]
            nxt_node[i] = cur_node[i]
    sc[_HEAD] = head
    sc[_LAST_START] = last_start
    sc[_P] = p
    sc[_N_CUR] = n_cur
    sc[_N_NODES] = n_nodes
    sc[_N_MATCH] = n_match
    sc[_N_LABELS] = n_labels
    return why


@njit(nogil=True, cache=True)
def match_kernel(kind, label, out_start, out, label_var, nullable, walk_start, walk_state, walk_again,
                 start_state, bits, mode, mask, first_row, begin, final):
    """The matches of one partition, or of a stretch of it (module docstring, "A partition in
    pieces"): the rows ``bits`` holds, with starts from ``begin`` on; ``first_row`` is where the
    partition's first row lies (-1: before ``bits``), ``final`` whether the partition ends after
    them. Returns ``(starts, ends, labels, error, error_match, steps, head)``: ``error`` is OK or
    a SKIP_TO_* code, ``error_match`` the 1-based number of the match that raised it (the
    matches before it are returned), ``steps`` the work done, ``head`` the first start row whose
    match is not known yet (every match of an earlier start is returned, and none of a later)."""
    n = bits.shape[0]
    ns = kind.shape[0]
    sc = np.zeros(_SLOTS, dtype=np.int64)
    sc[_CONT] = 1 if mode == PAST_LAST_ROW else 0
    sc[_N] = n
    sc[_FIRST] = first_row
    sc[_FINAL] = 1 if final else 0
    sc[_CUT] = -1
    sc[_FLOOR] = begin
    cur_state = np.empty(ns, dtype=np.int64)
    cur_start = np.empty(ns, dtype=np.int64)
    cur_node = np.empty(ns, dtype=np.int64)
    nxt_state = np.empty(ns, dtype=np.int64)
    nxt_start = np.empty(ns, dtype=np.int64)
    nxt_node = np.empty(ns, dtype=np.int64)
    visited = np.full(ns, -1, dtype=np.int64)
    cap = max(1024, 4 * ns)
    node_label = np.empty(cap, dtype=np.int64)
    node_parent = np.empty(cap, dtype=np.int64)
    rec_end = np.full(n + 1, -1, dtype=np.int64)
    rec_node = np.full(n + 1, -1, dtype=np.int64)
    cnt = np.zeros(n + 1, dtype=np.int64)
    starts = max(n - begin, 0) + 1  # a match per start row at most: resuming always moves on
    m_start = np.empty(starts, dtype=np.int64)
    m_end = np.empty(starts, dtype=np.int64)
    # PAST LAST ROW's matches do not overlap, so their labels fit in a row each
    labels = np.empty(starts if mode == PAST_LAST_ROW else max(64, starts), dtype=np.int64)
    sc[_HEAD] = begin            # the earliest start row whose outcome is not yet known
    sc[_LAST_START] = begin - 1  # the latest start row begun
    sc[_P] = begin               # the next row to consume
    if begin < n:
        sc[_GEN] += 1
        sc[_NEXT] = 0
        sc[_LAST_START] = begin
        rec_end[begin] = -1
        _closure(start_state, begin, -1, begin, kind, walk_start, walk_state, walk_again, nullable,
                 visited, cur_state, cur_start, cur_node, cnt, rec_end, rec_node, sc)
        sc[_N_CUR] = sc[_NEXT]
    while True:
        why = _advance(kind, label, out_start, out, label_var, nullable, walk_start, walk_state, walk_again,
                       start_state, bits, mode, mask, final, sc, visited, cnt, rec_end, rec_node, cur_state,
                       cur_start, cur_node, nxt_state, nxt_start, nxt_node, node_label, node_parent, m_start,
                       m_end, labels)
        if why == _NEEDS_LABELS:
            labels = _grow(labels, max(2 * labels.shape[0], sc[_WANT]))
        elif why == _NEEDS_NODES:
            cap = 2 * node_label.shape[0] + sc[_N_CUR]
            node_label = _grow(node_label, cap)
            node_parent = _grow(node_parent, cap)
        else:
            break
    n_match = sc[_N_MATCH]
    if why == _FAILED:
        return m_start[:n_match], m_end[:n_match], labels[:sc[_N_LABELS]], sc[_ERROR], n_match, sc[_STEPS], \
            sc[_HEAD]
    return m_start[:n_match], m_end[:n_match], labels[:sc[_N_LABELS]], OK, 0, sc[_STEPS], sc[_HEAD]


class Matches(NamedTuple):
    """The matches of one partition: ``starts``, ``ends`` (exclusive) and the flat ``labels`` of
    their rows; ``steps``: the kernel's work (states visited plus threads stepped); ``head``: the
    first start row whose match is not known yet (the rows' end when the partition ended)."""

    starts: np.ndarray
    ends: np.ndarray
    labels: np.ndarray
    steps: int = 0
    head: int = 0


def skip_error(nfa: Nfa, skip: Skip, code: int, match_number: int, partition: str | None = None) -> ExecutionError:
    """The standard's exception for AFTER MATCH SKIP TO FIRST/LAST that cannot resume."""
    to = "FIRST" if skip.mode == TO_FIRST else "LAST"
    where = f" in partition {partition}" if partition else ""
    if code == SKIP_TO_NO_ROW:
        what = f"maps no row to {skip.target}"
    else:
        what = f"would resume at its own first row (the row of {to} {skip.target})"
    return ExecutionError(
        f"AFTER MATCH SKIP TO {to} {skip.target}: match {match_number}{where} {what}",
        error_class="AFTER_MATCH_SKIP_FAILED",
        hint="SKIP TO a variable that maps a row after the first one in every match, or use "
             "AFTER MATCH SKIP PAST LAST ROW / TO NEXT ROW")


def match_partition(nfa: Nfa, bits: np.ndarray, skip: Skip, tables: NfaTables | None = None,
                    partition: str | None = None, *, first_row: int = 0, begin: int = 0,
                    final: bool = True, numbered_from: int = 0) -> Matches:
    """Every match of one partition, in order (module docstring); ``tables`` is ``nfa.tables()``
    when the caller keeps it. Raises the AFTER_MATCH_SKIP_FAILED ExecutionError when AFTER MATCH
    SKIP TO cannot resume (``partition`` names the partition in its message).

    A partition given in pieces (module docstring, "A partition in pieces"): ``bits`` holds a
    stretch of it, ``begin`` the first start row to try, ``first_row`` where the partition's
    first row lies in ``bits`` (-1: before it), ``final`` whether the partition ends with
    ``bits``; ``numbered_from`` is the number of matches found before (for the error's match
    number). Only the matches of starts before the returned ``head`` are given."""
    t = tables if tables is not None else nfa.tables()
    bits = np.ascontiguousarray(bits, dtype=np.uint64)
    starts, ends, labels, error, which, steps, head = match_kernel(
        t.kind, t.label, t.out_start, t.out, t.label_var, t.nullable, t.walk_start, t.walk_state, t.walk_again,
        np.int64(t.start), bits,
        np.int64(skip.mode), np.uint64(skip.mask), np.int64(first_row), np.int64(begin), bool(final))
    if error != OK:
        raise skip_error(nfa, skip, int(error), numbered_from + int(which), partition)
    return Matches(starts, ends, labels, int(steps), int(head))


__all__ = ["Matches", "OK", "SKIP_TO_FIRST_ROW", "SKIP_TO_NO_ROW", "match_kernel", "match_partition", "skip_error"]
