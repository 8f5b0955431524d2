"""The enumerable structure: the node arena, whether a node is alive, and ``compact``.

Node 0 is BOTTOM (the empty prefix). An *output* node (``pos >= 0``) says "event ``pos`` is
marked ``label``, then continue at ``a``"; a *union* node (``pos == -1``) is the union of the
result sets of ``a`` and ``b``. Every node keeps the largest start position (``maxpos``) and
start window value (``maxval``) of the results under it, so enumeration skips whole
sub-structures outside the window or consumed (:func:`alive`), and each node it enters leads to
at least one result (output-linear delay). Children always have smaller indices than their
parents, so :func:`compact` frees dead nodes with one backward sweep. Kept apart from the
stepping loop because the driver calls :func:`compact` on its own when the arena is full.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from cerql.exec.kernel.state import ARENA, CONSUMED, LIVE, NACT, NSTART, PHASE, START


class Arena(NamedTuple):
    """The node arrays (one entry per node), and the scratch arrays sized with them."""

    pos: np.ndarray      # int64: the event's position (output node), -1 (union node)
    label: np.ndarray    # int64: the label bits an output node marks its event with
    a: np.ndarray        # int64: the continuation (output node), first child (union node)
    b: np.ndarray        # int64: second child of a union node, else -1
    maxpos: np.ndarray   # int64: the largest start position of the results under the node
    maxval: np.ndarray   # window value dtype: the largest start window value under the node
    minpos: np.ndarray   # int64: the smallest start position under the node (a lower bound for
                         # its live results, which NEXT's search in selection.py uses)
    ming: np.ndarray     # int64: the smallest and ...
    maxg: np.ndarray     # ... greatest number (in ``starts``) of a start under the node
    dense: np.ndarray    # bool: every start numbered from ming to maxg is under the node
    bare: np.ndarray     # bool: every path under the node is a start and unions only (no other
                         # selected event), as a chain of starts meeting in one state
    starts: np.ndarray   # int64: the start nodes of the substream by number, in position order
    low: np.ndarray      # int64: a union node's child whose starts are all numbered below the
                         # other child's (a *chain* link, as runs join one state one start group at
                         # a time), else -1
    level: np.ndarray    # int64: how many chain links lie below a chain node
    jump: np.ndarray     # int64: a chain node further down the links (or itself at the bottom),
                         # the skip pointers that let NEXT reach one start's link in O(log) steps
    top: np.ndarray      # int64: the latest selected position that can come first under the node
                         # (the greatest first selected event over its paths), -1 for none
    reach: np.ndarray    # int64: an output node marking its event with Options.unless_bit: the
                         # latest start of the UNLESS's right side up to the event (Events.reach)
    stack_node: np.ndarray  # int64 scratch of enumeration: the union branches still to take ...
    stack_len: np.ndarray   # ... and the path length at each
    path: np.ndarray        # int64 scratch of enumeration: the output nodes of one result
    remap: np.ndarray       # int64 scratch of compact: each node's new index
    seen: np.ndarray        # int64 scratch of selection.py: the search that last reached the node
    want: np.ndarray        # int64 scratch of selection.py: the winning data set, last event first
    depth: np.ndarray       # int64 scratch of selection.py (how much of it a branch has matched)
                            # and of enumeration.py (the UNLESS reach at each branch still to take)


@njit(nogil=True, cache=True)
def alive(n, consumed, windowed, cutoff, maxpos, maxval):
    """Whether node n leads to a result that starts after ``consumed`` and inside the window."""
    if n < 0:
        return False
    if n == 0:
        return True
    if maxpos[n] <= consumed:
        return False
    if windowed and not (maxval[n] >= cutoff):
        return False
    return True


@njit(**PHASE)
def add_output_node(arena, x, pos, label, then, value, st):
    """Make node x an output node: event ``pos`` (window value ``value``) marked ``label``, then
    node ``then``; its results start where ``then``'s do, or at this event when ``then`` is
    BOTTOM (x is then a start, numbered in ``arena.starts``). Returns x."""
    arena.pos[x] = pos
    arena.label[x] = label
    arena.a[x] = then
    arena.b[x] = -1
    arena.top[x] = pos if label & ~START else arena.top[then]
    if then == 0:
        arena.maxpos[x] = pos
        arena.maxval[x] = value
    else:
        arena.maxpos[x] = arena.maxpos[then]
        arena.maxval[x] = arena.maxval[then]
    _derive_starts(arena, x, st)
    return x


@njit(**PHASE)
def add_union_node(arena, u, a, b, st):
    """Make node u the union of nodes a and b (two runs meeting in one). Returns u."""
    arena.pos[u] = -1
    arena.label[u] = 0
    arena.a[u] = a
    arena.b[u] = b
    arena.maxpos[u] = max(arena.maxpos[a], arena.maxpos[b])
    arena.maxval[u] = max(arena.maxval[a], arena.maxval[b])
    arena.top[u] = max(arena.top[a], arena.top[b])
    _derive_starts(arena, u, st)
    return u


@njit(nogil=True, cache=True)
def _derive_starts(arena, x, st):
    """Node x's starts, from its children's, as the node is made or as compact moves it
    (children come first): ``minpos``, the range of numbers ``ming``..``maxg``, ``dense`` (both
    children dense, their ranges overlapping or touching), ``bare`` and the chain link
    (:func:`_link`). An output node on BOTTOM is a start and takes the next number
    (st[NSTART]). A child of -1 was freed by compact, and one without starts (BOTTOM) adds none
    to the range."""
    n_pos, n_a = arena.pos, arena.a
    minpos, ming, maxg, dense, bare = arena.minpos, arena.ming, arena.maxg, arena.dense, arena.bare
    arena.low[x] = -1
    if n_pos[x] >= 0:  # an output node
        then = n_a[x]
        if then == 0:
            g = st[NSTART]
            st[NSTART] = g + 1
            arena.starts[g] = x
            minpos[x], ming[x], maxg[x], dense[x], bare[x] = n_pos[x], g, g, True, True
        else:
            minpos[x], ming[x], maxg[x], dense[x], bare[x] = minpos[then], ming[then], maxg[then], dense[then], False
        return
    a, b = n_a[x], arena.b[x]
    if a < 0:
        a, b = b, a
    if a < 0:  # not reached: compact keeps a union only with a live child
        minpos[x], ming[x], maxg[x], dense[x], bare[x] = -1, -1, -1, False, False
        return
    minpos[x] = minpos[a] if b < 0 else min(minpos[a], minpos[b])
    if ming[a] < 0:
        a, b = b, a
    if a < 0 or ming[a] < 0:
        ming[x], maxg[x], dense[x], bare[x] = -1, -1, False, False
    elif b < 0 or ming[b] < 0:
        ming[x], maxg[x], dense[x], bare[x] = ming[a], maxg[a], dense[a], bare[a]
    else:
        ming[x] = min(ming[a], ming[b])
        maxg[x] = max(maxg[a], maxg[b])
        dense[x] = dense[a] and dense[b] and max(ming[a], ming[b]) <= min(maxg[a], maxg[b]) + 1
        bare[x] = bare[a] and bare[b]
        if maxg[a] < ming[b]:
            _link(arena, x, a)
        elif maxg[b] < ming[a]:
            _link(arena, x, b)


@njit(nogil=True, cache=True)
def _link(arena, x, lo):
    """Make union x a chain node whose lower child is ``lo``, with its skip pointer: the jump
    pointers of an applicative random-access stack (each node one pointer; the distances they
    span follow the skew binary numbers), so a search down a chain of n links takes O(log n)
    steps (:func:`chain_find`)."""
    low, level, jump = arena.low, arena.level, arena.jump
    low[x] = lo
    if arena.pos[lo] >= 0 or low[lo] < 0:  # lo is no chain node: x is the chain's last link
        level[x] = 0
        jump[x] = x
        return
    level[x] = level[lo] + 1
    j = jump[lo]
    if level[lo] - level[j] == level[j] - level[jump[j]]:
        jump[x] = jump[j]
    else:
        jump[x] = lo


@njit(nogil=True, cache=True)
def chain_find(n, g, arena):
    """From chain node n, the last link down its chain whose starts reach number g (``maxg`` >=
    g, n's own do). Every link passed on the way has a higher child whose starts are all numbered
    above g. O(log) steps of the jump pointers."""
    low, jump, maxg, n_pos = arena.low, arena.jump, arena.maxg, arena.pos
    while True:
        j = jump[n]
        if j != n and maxg[j] >= g:
            n = j
            continue
        lo = low[n]
        if n_pos[lo] < 0 and low[lo] >= 0 and maxg[lo] >= g:
            n = lo
            continue
        return n


@njit(nogil=True, cache=True)
def compact(st, runs, arena, windowed):
    """Free the nodes no live result can reach, and the runs on dead nodes; keep node order
    (children before parents). ``runs.cutoff[0]`` is the window cutoff of the last event. Each
    kept node's starts are derived again from its kept children's (``_derive_starts``), which
    numbers the kept starts again from 0, in order (every kept start is alive, so st[LIVE] is
    0)."""
    n_pos, n_a, n_b, n_maxpos, n_maxval, remap = arena.pos, arena.a, arena.b, arena.maxpos, arena.maxval, arena.remap
    used = st[ARENA]
    consumed = st[CONSUMED]
    cutoff = runs.cutoff[0]
    for x in range(used):
        remap[x] = 0
    remap[0] = 1
    kept = 0
    for k in range(st[NACT]):
        node = runs.node[k]
        if alive(node, consumed, windowed, cutoff, n_maxpos, n_maxval):
            remap[node] = 1
            runs.ds[kept] = runs.ds[k]
            runs.node[kept] = node
            for c in range(runs.rk.shape[1]):
                runs.rk[kept, c], runs.rf[kept, c] = runs.rk[k, c], runs.rf[k, c]
            kept += 1
    st[NACT] = kept
    for x in range(used - 1, 0, -1):
        if remap[x] == 0:
            continue
        if n_pos[x] < 0:
            if alive(n_a[x], consumed, windowed, cutoff, n_maxpos, n_maxval):
                remap[n_a[x]] = 1
            if alive(n_b[x], consumed, windowed, cutoff, n_maxpos, n_maxval):
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
    st[NSTART] = 0
    for x in range(used):
        y = remap[x]
        if y < 0:
            continue
        a, b = n_a[x], n_b[x]
        n_pos[y] = n_pos[x]
        arena.label[y] = arena.label[x]
        n_maxpos[y] = n_maxpos[x]
        n_maxval[y] = n_maxval[x]
        arena.top[y] = arena.top[x]
        arena.reach[y] = arena.reach[x]
        n_a[y] = remap[a] if a >= 0 else -1
        n_b[y] = remap[b] if b >= 0 else -1
        if y > 0:  # BOTTOM has no starts
            _derive_starts(arena, y, st)
    for k in range(kept):
        runs.node[k] = remap[runs.node[k]]
    st[ARENA] = new
    st[LIVE] = 0
