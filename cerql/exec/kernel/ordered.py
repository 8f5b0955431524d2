"""NEXT and LAST where a check after the kernel decides which candidates are results (a FILTER
aggregate or comparison across variables, an UNLESS inside the pattern: exec/post_filter.py):
one end event's data sets handed over in the strategy's order, best first, a few at a time.

Why: the winner is the greatest data set D among the candidates that pass, and a candidate
passes or not whatever the others are. Enumerating every candidate and then choosing costs
their number, which is exponential in the window (``A ; B+ ; C`` over a run of B's: 2^n), even
when the greatest one passes. Handed over in order, the check stops at the first D that has a
passing candidate: what it costs follows the candidates that fail before the winner.

The data sets are the paths of the arena, read position by position. Their order
(docs/language.md, "Selection strategies") is lexicographic: LAST reads D from its last event
back and the greater position wins at the first difference; NEXT reads D from its first event on
and the smaller position wins. Either way a D that goes on beats one that ends there (it holds
the position where they differ). So the data sets in order are a depth-first walk of the trie of
their position sequences, children in that order and a D that ends at a trie node after them.
The paths sharing a prefix are kept together as the set of nodes they continue at (a trie
node's *frontier*); a child's frontier is found from its parent's by a walk over unions and
unselected events up to the next selected ones. LAST walks the arena as it is built (children
below parents); NEXT walks it upwards, over the parents of the nodes the roots reach, built once
per call (:func:`_upward`).

The kernel cannot call the check: it writes the results with the next data sets into the
buffer and returns NEED_CHECK; the driver has the check run, and sets st[ORDER] to DECIDED when
one of them passed. Each call walks the trie again from the start, skipping the data sets handed
over before (st[ORDER] - 1), and hands over twice as many candidates as the call before, so the
walks cost about twice the last one.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from cerql.exec.kernel.arena import alive
from cerql.exec.kernel.selection import results_with
from cerql.exec.kernel.state import LAST, NLAB, NRES, OK, OPEN, STAMP, STEPS, TOO_MANY_STEPS, WORK


@njit(nogil=True, cache=True)
def _grow(array, need):
    """``array``, or a copy at least twice as long when it is shorter than ``need``."""
    if need <= array.shape[0]:
        return array
    out = np.empty(max(need, 2 * array.shape[0]), array.dtype)
    out[:array.shape[0]] = array
    return out


@njit(nogil=True, cache=True)
def _visit(stack, size, node, mark, stamp):
    """Push ``node`` on the walk's stack ``stack[0:size]`` unless this walk (``stamp``) has
    marked it already; returns the stack (grown when full) and its new size."""
    if mark[node] != stamp:
        mark[node] = stamp
        stack = _grow(stack, size + 1)
        stack[size] = node
        size += 1
    return stack, size


@njit(nogil=True, cache=True)
def _number(node, nodes, n, seen, stamp, number):
    """Give ``node`` the next number (``nodes[0:n]`` are numbered, ``number`` maps them back)
    unless this walk (``stamp``) has met it; returns the nodes (grown when full) and how many."""
    if seen[node] != stamp:
        seen[node] = stamp
        nodes = _grow(nodes, n + 1)
        number[node] = n
        nodes[n] = node
        n += 1
    return nodes, n


@njit(nogil=True, cache=True)
def _upward(roots, n_roots, consumed, windowed, cutoff, arena, st):
    """The part of the arena the roots reach over live branches, numbered 0.. (``arena.remap``
    holds each node's number): the nodes, each one's parents (``first[k]:first[k + 1]`` in
    ``parents``), whether it is a root, and the starts (where NEXT's walk begins)."""
    n_pos, n_a, n_b, seen, number = arena.pos, arena.a, arena.b, arena.seen, arena.remap
    n_maxpos, n_maxval = arena.maxpos, arena.maxval
    st[STAMP] += 1
    stamp = st[STAMP]
    nodes = np.empty(64, np.int64)
    child = np.empty(64, np.int64)
    parent = np.empty(64, np.int64)
    n, n_edges = 0, 0
    for q in range(n_roots):
        nodes, n = _number(roots[q], nodes, n, seen, stamp, number)
    k = 0
    while k < n:  # breadth first: each reached node's live children
        x = nodes[k]
        k += 1
        for c in (n_a[x], n_b[x] if n_pos[x] < 0 else -1):
            if c <= 0 or (n_pos[x] < 0 and not alive(c, consumed, windowed, cutoff, n_maxpos, n_maxval)):
                continue
            nodes, n = _number(c, nodes, n, seen, stamp, number)
            child = _grow(child, n_edges + 1)
            parent = _grow(parent, n_edges + 1)
            child[n_edges] = number[c]
            parent[n_edges] = number[x]
            n_edges += 1
    st[WORK] += n + n_edges
    first = np.zeros(n + 1, np.int64)
    for e in range(n_edges):
        first[child[e] + 1] += 1
    for k in range(n):
        first[k + 1] += first[k]
    fill = first[:n].copy()
    parents = np.empty(max(n_edges, 1), np.int64)
    for e in range(n_edges):
        parents[fill[child[e]]] = parent[e]
        fill[child[e]] += 1
    is_root = np.zeros(n, np.bool_)
    for q in range(n_roots):
        is_root[number[roots[q]]] = True
    n_starts = 0
    starts = np.empty(n, np.int64)
    for k in range(n):
        x = nodes[k]
        if n_pos[x] >= 0 and n_a[x] == 0:
            starts[n_starts] = k
            n_starts += 1
    return nodes, first, parents, is_root, starts[:n_starts]


@njit(nogil=True, cache=True)
def hand_over(roots, n_roots, strategy, skip, target, i, pos, r0, consumed, cutoff, options, arena, out, st):
    """Write the live results under ``roots[0:n_roots]`` whose data sets come after the first
    ``skip`` in ``strategy``'s order (NEXT or LAST), data set by data set, until at least
    ``target`` results (or a quarter of ``options.max_work`` events) are written. Returns
    (code, data sets passed): code OPEN when it stopped there, OK when no data set is left, or
    what :func:`cerql.exec.kernel.selection.results_with` stopped with (FULL, TOO_MANY,
    TOO_MANY_STEPS); TOO_MANY_STEPS too past st[STEPS] steps of its own walk."""
    windowed, sel = options.windowed, options.selected
    n_pos, n_label, n_a, n_b, want = arena.pos, arena.label, arena.a, arena.b, arena.want
    n_maxpos, n_maxval = arena.maxpos, arena.maxval
    down = strategy == LAST
    if down:
        nodes, first, parents = roots, roots, roots  # not read: LAST walks the arena itself
        is_root = np.zeros(1, np.bool_)
        entries = roots[:n_roots]
        mark = arena.seen
    else:
        nodes, first, parents, is_root, entries = _upward(roots, n_roots, consumed, windowed, cutoff, arena, st)
        mark = np.zeros(nodes.shape[0], np.int64)
    stamp = st[STAMP] if down else 0
    pool = np.empty(64, np.int64)      # per trie level: the selected nodes its frontier reaches, in order
    stack = np.empty(64, np.int64)     # the walk from a frontier
    lv_lo = np.empty(64, np.int64)     # level d's nodes are pool[lv_lo[d]:lv_hi[d]]; lv_at[d]: the
    lv_hi = np.empty(64, np.int64)     # first of its next child's
    lv_at = np.empty(64, np.int64)
    lv_end = np.zeros(64, np.bool_)    # a data set ends at level d (its frontier reaches no more)
    prefix = np.empty(64, np.int64)    # the positions of the trie node's data set, in the walk's order
    passed = 0
    l0 = st[NLAB]
    d = 0
    top = 0                            # pool[0:top] in use
    g_lo, g_hi = 0, 0                  # the group of level d - 1 whose frontier level d is
    expand = True
    while True:
        if expand:
            expand = False
            if down:
                st[STAMP] += 1
                stamp = st[STAMP]
            else:
                stamp += 1
            size = 0
            ends = False
            if d == 0:
                for q in range(entries.shape[0]):
                    x = entries[q]
                    stack, size = _visit(stack, size, x, mark, stamp)
            else:
                for q in range(g_lo, g_hi):
                    g = pool[q]
                    if down:
                        c = n_a[g]
                        stack, size = _visit(stack, size, c, mark, stamp)
                    else:
                        ends = ends or is_root[g]
                        for e in range(first[g], first[g + 1]):
                            c = parents[e]
                            stack, size = _visit(stack, size, c, mark, stamp)
            lo = top
            while size > 0:
                size -= 1
                x = stack[size]
                st[WORK] += 1
                if st[WORK] > st[STEPS]:
                    return TOO_MANY_STEPS, passed
                y = x if down else nodes[x]
                if down and y == 0:
                    ends = True
                    continue
                if n_pos[y] >= 0 and n_label[y] & sel:
                    pool = _grow(pool, top + 1)
                    pool[top] = x
                    top += 1
                    continue
                if down:
                    if n_pos[y] >= 0:
                        nxt = (n_a[y], -1)
                    else:
                        nxt = (n_a[y] if alive(n_a[y], consumed, windowed, cutoff, n_maxpos, n_maxval) else -1,
                               n_b[y] if alive(n_b[y], consumed, windowed, cutoff, n_maxpos, n_maxval) else -1)
                    for c in nxt:
                        if c >= 0:
                            stack, size = _visit(stack, size, c, mark, stamp)
                else:
                    ends = ends or is_root[x]
                    for e in range(first[x], first[x + 1]):
                        c = parents[e]
                        stack, size = _visit(stack, size, c, mark, stamp)
            key = np.empty(top - lo, np.int64)
            for q in range(lo, top):
                p = n_pos[pool[q] if down else nodes[pool[q]]]
                key[q - lo] = -p if down else p  # LAST: the greater position first; NEXT: the smaller
            order = np.argsort(key, kind="mergesort")
            group = pool[lo:top].copy()
            for q in range(top - lo):
                pool[lo + q] = group[order[q]]
            if d >= lv_lo.shape[0]:
                lv_lo, lv_hi, lv_at = _grow(lv_lo, d + 1), _grow(lv_hi, d + 1), _grow(lv_at, d + 1)
                lv_end = _grow(lv_end, d + 1)
            lv_lo[d], lv_hi[d], lv_at[d], lv_end[d] = lo, top, lo, ends
        if lv_at[d] < lv_hi[d]:  # the next child: every node of the level selecting the next position
            a = lv_at[d]
            p = n_pos[pool[a] if down else nodes[pool[a]]]
            b = a + 1
            while b < lv_hi[d] and n_pos[pool[b] if down else nodes[pool[b]]] == p:
                b += 1
            lv_at[d] = b
            prefix = _grow(prefix, d + 1)
            prefix[d] = p
            g_lo, g_hi = a, b
            top = lv_hi[d]
            d += 1
            expand = True
            continue
        if lv_end[d] and d > 0:  # the data set prefix[0:d], after every one that goes on from it
            passed += 1
            if passed > skip:
                for k in range(d):  # last event first
                    want[k] = prefix[k] if down else prefix[d - 1 - k]
                r1 = st[NRES]
                for q in range(n_roots):
                    code = results_with(roots[q], d, -1, -1, i, pos, r0, consumed, cutoff, options, arena, out, st)
                    if code != OK:
                        return code, passed
                if st[NRES] > r1 and (st[NRES] - r0 >= target or 4 * (st[NLAB] - l0) >= options.max_work):
                    return OPEN, passed
        d -= 1
        if d < 0:
            return OK, passed
        top = lv_hi[d]
