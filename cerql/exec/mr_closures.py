"""The epsilon closures of a MATCH_RECOGNIZE NFA, precomputed for the thread matcher.

Input: the NFA's tables (kind, successors in preference order, nullable) as the thread matcher
(exec/mr_threads.py) holds them. Output: per root state and *context* (which anchors hold at the
position, and whether the position is the end of a partition given in pieces), the closure as a
flat list of :data:`Entry` in the order the matcher's depth-first walk visits the states, so that
following a thread's epsilon moves is a loop over a short list instead of a walk of the graph.

The walk it replaces (the Pike kernel's, exec/kernel/pike.py) marks each state it visits with the
thread's dedupe key (the state and the registers read ahead of it) in a set shared by all the
threads of the row, and prunes a state whose key is already there: ACCEPT is then recorded if it
is reachable from that state (``nullable``), a ``$`` that may hold counts as undecided, and the
state's successors are not walked. The list keeps exactly the states where that matters:

- CONSUME states (the thread waits there for the next row), ACCEPT, ANCHOR_END at the end of a
  piece (undecided), and the epsilon states from which ACCEPT is reachable;
- an epsilon state from which ACCEPT is not reachable is left out: pruning it or walking on
  gives the same result, because whoever marked its key walked everything after it (epsilon
  moves form no cycle, and only reaching ACCEPT stops a walk early), so every state the
  walk would meet there is already marked and none of them records anything;
- an anchor that does not hold is left out (it records nothing, first time or not).

An entry is ``(state, skip, op, revisit)``: ``skip`` the index after the states reached through
it (where the walk goes on when its key is already marked), ``op`` what a first visit does,
``revisit`` what a visit to a marked key does. ACCEPT is never marked: a visit records the match
and ends the walk either way. A state met a second time in the same closure (two paths to it) is
an entry with no successors: its key is marked by then (by this thread or, if the first meeting
was pruned, by an earlier one). docs/semantics.md, "MATCH_RECOGNIZE",
"The local engine".
"""

from __future__ import annotations

from cerql.mr_plan import ACCEPT, ANCHOR_END, ANCHOR_START, AT_END, AT_START, CONSUME

# op: what visiting a state whose key is not yet marked does
EMIT = 0      # a CONSUME state: the thread waits there for the next row
STOP = 1      # ACCEPT: record the match and end the walk
PENDING = 2   # ANCHOR_END at the end of a piece: the start stays undecided
WALK = 3      # an epsilon state ACCEPT is reachable from: mark it and walk on
# revisit: what visiting a state whose key is marked does (then its successors are not walked)
NOTHING, ACCEPTS, UNDECIDED = 0, 1, 2

Entry = tuple  # (state, skip, op, revisit)


def context(anchors: int, undecided: bool) -> int:
    """The context's number: the anchors that hold (AT_START | AT_END bits), and whether the
    position is the end of a piece with rows after it (``$`` undecided)."""
    return anchors | (4 if undecided else 0)


def closure(kind: list, succ: list, nullable: list, root: int, ctx: int) -> tuple[Entry, ...]:
    """The entries of the closure of ``root`` in context ``ctx`` (module docstring)."""
    anchors, undecided = ctx & 3, bool(ctx & 4)
    states: list[int] = []
    ops: list[int] = []
    parents: list[int] = []
    seen: set[int] = set()
    stack = [(root, -1)]  # (state, index of the nearest kept entry it was reached from)
    while stack:
        s, parent = stack.pop()
        k = kind[s]
        first = s not in seen
        seen.add(s)
        op = _op(k, nullable[s], anchors, undecided)
        if op is not None:
            states.append(s)
            ops.append(op)
            parents.append(parent)
        if not first or op in (EMIT, STOP, PENDING) or _blocked(k, anchors, undecided):
            continue
        here = len(states) - 1 if op == WALK else parent
        stack.extend((u, here) for u in reversed(succ[s]))
    size = [1] * len(states)
    for i in range(len(states) - 1, -1, -1):
        if parents[i] >= 0:
            size[parents[i]] += size[i]
    return tuple((s, i + size[i], op, _revisit(nullable[s], anchors, undecided))
                 for i, (s, op) in enumerate(zip(states, ops)))


def _blocked(k: int, anchors: int, undecided: bool) -> bool:
    """An anchor that does not hold here: the walk does not go through it."""
    return (k == ANCHOR_START and not anchors & AT_START) or (k == ANCHOR_END and not anchors & AT_END) \
        or (k == ANCHOR_END and undecided)


def _op(k: int, nullable, anchors: int, undecided: bool) -> int | None:
    """A state's op, or None when the list leaves it out (module docstring)."""
    if k == CONSUME:
        return EMIT
    if k == ACCEPT:
        return STOP
    if k == ANCHOR_END and undecided:
        return PENDING
    if _blocked(k, anchors, undecided):
        return None
    if nullable[anchors] or (undecided and nullable[anchors | AT_END]):
        return WALK
    return None


def _revisit(nullable, anchors: int, undecided: bool) -> int:
    if nullable[anchors]:
        return ACCEPTS
    if undecided and nullable[anchors | AT_END]:
        return UNDECIDED
    return NOTHING


__all__ = ["ACCEPTS", "EMIT", "NOTHING", "PENDING", "STOP", "UNDECIDED", "WALK", "closure", "context"]
