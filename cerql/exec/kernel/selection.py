"""LAST at one end event, on the arena itself: the winning data set is found by a search that
follows the greatest selected positions, and only the results with that set are enumerated.

Why: ``strategies.admit`` picks a winner among every result ALL would give, and those can be
exponentially many (``A ; B+ ; C`` over a run of B's) although LAST keeps one data set D per
end event. D1 <last D2 when the greatest position of D1 Δ D2 is in D2 (docs/language.md,
"Selection strategies"), that is when D2, read from its last event back, is lexicographically
greater (an extension of D1 by earlier positions is greater too). Every path of the arena
from a final run's node to BOTTOM is one result, read from its last event back, and whether it
is alive (inside the window, after CONSUME BY) depends only on where it starts. So the winner is found level by level: from the
nodes the paths that agree with the winner so far continue at, a best-first search over
``arena.top`` (the greatest first selected position under a node, an upper bound for its live
paths) finds the greatest position any live path selects next, and the nodes selecting it are
where the paths continue. A node is searched once per level (``arena.seen``). The winner is
complete when no live path selects anything more. Then the results with exactly that D are
enumerated, entering only live branches whose ``top`` can still reach the next position of D.

On the chains the stepping loop builds (the newest node at the top of each union) each level
costs a few nodes, so the work follows the output, not the window or the candidates.
"""

from __future__ import annotations

from numba import njit

from cerql.exec.kernel.arena import alive, chain_find
from cerql.exec.kernel.state import (COUNT, FULL, LIVE, NEXT, NLAB, NRES, NSTART, OK, STAMP, START, STEPS, TOO_MANY,
                                     TOO_MANY_CANDIDATES, TOO_MANY_STEPS, WORK, candidate_limit)
from cerql.exec.kernel.strategies import admit, next_order

# what a search returns when it took more than st[STEPS] steps at the event (st[WORK] counts them)
STOPPED = -2


@njit(nogil=True, cache=True)
def _push(heap, size, node, top):
    """Add ``node`` to the max-heap ``heap[0:size]`` keyed by ``top``; returns the new size."""
    at = size
    heap[at] = node
    while at > 0:
        up = (at - 1) // 2
        if top[heap[up]] >= top[heap[at]]:
            break
        heap[up], heap[at] = heap[at], heap[up]
        at = up
    return size + 1


@njit(nogil=True, cache=True)
def _pop(heap, size, top):
    """Remove the heap's first node; returns the new size."""
    size -= 1
    heap[0] = heap[size]
    at = 0
    while True:
        left = 2 * at + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and top[heap[left + 1]] > top[heap[left]]:
            child = left + 1
        if top[heap[at]] >= top[heap[child]]:
            break
        heap[at], heap[child] = heap[child], heap[at]
        at = child
    return size


@njit(nogil=True, cache=True)
def last_data_set(roots, n_roots, consumed, windowed, cutoff, arena, st):
    """The LAST winner among the live paths under ``roots[0:n_roots]`` (live nodes): its
    positions, last event first, in ``arena.want``; returns how many, or STOPPED past st[STEPS]
    nodes searched at the event."""
    heap, frontier, following = arena.remap, arena.stack_node, arena.stack_len
    n_pos, n_label, n_a, n_b, top, seen = arena.pos, arena.label, arena.a, arena.b, arena.top, arena.seen
    n_maxpos, n_maxval, want = arena.maxpos, arena.maxval, arena.want
    for q in range(n_roots):
        frontier[q] = roots[q]
    n_front = n_roots
    m = 0
    while True:
        st[STAMP] += 1
        stamp = st[STAMP]
        size = 0
        for q in range(n_front):
            x = frontier[q]
            if seen[x] != stamp:
                seen[x] = stamp
                size = _push(heap, size, x, top)
        best = -1
        n_next = 0
        while size > 0:
            n = heap[0]
            if top[n] < best or top[n] < 0:
                break  # nothing left can select best, or anything at all
            size = _pop(heap, size, top)
            st[WORK] += 1
            if st[WORK] > st[STEPS]:
                return STOPPED
            if n_pos[n] < 0:  # union: its live branches
                for c in (n_a[n], n_b[n]):
                    if seen[c] != stamp and alive(c, consumed, windowed, cutoff, n_maxpos, n_maxval):
                        seen[c] = stamp
                        size = _push(heap, size, c, top)
            elif n_label[n] & ~START == 0:  # the first event, not selected: its continuation
                c = n_a[n]
                if seen[c] != stamp:
                    seen[c] = stamp
                    size = _push(heap, size, c, top)
            else:  # selects n_pos[n] = top[n], the greatest position left: the winner's next
                best = n_pos[n]
                following[n_next] = n_a[n]
                n_next += 1
        if best < 0:
            return m
        want[m] = best
        m += 1
        for q in range(n_next):
            frontier[q] = following[q]
        n_front = n_next


@njit(nogil=True, cache=True)
def _positions(n, pick, n_pos, n_label, n_a, into):
    """The selected positions of the path ``pick`` chooses under node n (last event first) in
    ``into``; returns how many."""
    k = 0
    while n > 0:
        if n_pos[n] < 0:
            n = pick[n]
        else:
            if n_label[n] & ~START:
                into[k] = n_pos[n]
                k += 1
            n = n_a[n]
    return k


@njit(nogil=True, cache=True)
def next_data_set(roots, n_roots, first, consumed, windowed, cutoff, arena, st):
    """The NEXT winner among the live paths under ``roots[0:n_roots]`` (those from start number
    ``first`` only, when it is >= 0): its positions, last event first, in ``arena.want``;
    returns how many, -1 for no live path, or STOPPED when its steps (two per node up to the
    greatest root, and the positions compared) pass st[STEPS].

    For runs with registers, where the automaton keeps every candidate (their FILTER decides at
    the end, so none can be dropped for another). Two paths through one node share what lies
    above it, and those positions are greater than any below, so which of them is
    ``<next``-greater is decided below the node: each node has one best path, the better of its
    children's (a union) or its continuation's (an output node). Children come before parents
    in the arena, so one pass down marks the nodes the roots reach (live, and holding the start
    when one is given) and one pass up picks each node's best path, comparing two paths'
    positions (O(length)). The work is polynomial in the arena, which the window bounds, where
    enumerating the candidates is exponential (``A+`` with an aggregate: 2^n of them)."""
    n_pos, n_label, n_a, n_b, minpos, seen = arena.pos, arena.label, arena.a, arena.b, arena.minpos, arena.seen
    n_maxpos, n_maxval, starts, pick = arena.maxpos, arena.maxval, arena.starts, arena.remap
    mine, theirs, want = arena.path, arena.depth, arena.want
    first_pos = n_pos[starts[first]] if first >= 0 else -1
    st[STAMP] += 1
    stamp = st[STAMP]
    high = 0
    for q in range(n_roots):
        seen[roots[q]] = stamp
        high = max(high, roots[q])
    st[WORK] += 2 * high
    if st[WORK] > st[STEPS]:
        return STOPPED
    for x in range(high, 0, -1):  # down: the nodes the roots reach
        if seen[x] != stamp:
            continue
        pick[x] = -1  # no live path yet
        if n_pos[x] >= 0:
            if n_a[x] > 0:
                seen[n_a[x]] = stamp
            continue
        for c in (n_a[x], n_b[x]):
            if alive(c, consumed, windowed, cutoff, n_maxpos, n_maxval) and (first < 0 or minpos[c] <= first_pos):
                seen[c] = stamp
    for x in range(1, high + 1):  # up: each reached node's best live path (pick: its child)
        if seen[x] != stamp:
            continue
        if n_pos[x] >= 0:
            c = n_a[x]
            if c == 0:  # a start: its one path, when it is live and the one asked for
                if alive(x, consumed, windowed, cutoff, n_maxpos, n_maxval) and (first < 0 or n_pos[x] == first_pos):
                    pick[x] = 0
            elif seen[c] == stamp and pick[c] >= 0:
                pick[x] = c
            continue
        a, b = n_a[x], n_b[x]
        a_ok = a > 0 and seen[a] == stamp and pick[a] >= 0
        b_ok = b > 0 and seen[b] == stamp and pick[b] >= 0
        if a_ok and b_ok:
            la = _positions(a, pick, n_pos, n_label, n_a, mine)
            lb = _positions(b, pick, n_pos, n_label, n_a, theirs)
            pick[x] = b if next_order(theirs, 0, lb, mine, 0, la) > 0 else a
            st[WORK] += la + lb
            if st[WORK] > st[STEPS]:
                return STOPPED
        elif a_ok:
            pick[x] = a
        elif b_ok:
            pick[x] = b
    m = -1
    for q in range(n_roots):
        r = roots[q]
        if pick[r] < 0:
            continue
        lr = _positions(r, pick, n_pos, n_label, n_a, mine)
        if m < 0 or next_order(mine, 0, lr, want, 0, m) > 0:
            for k in range(lr):
                want[k] = mine[k]
            m = lr
    return m


@njit(nogil=True, cache=True)
def write_result(path, plen, i, pos, arena, out, st):
    """Write the result whose nodes are ``path[0:plen]`` (last event first), ending at event i
    (position pos), to the output buffer. Returns OK or FULL."""
    n_pos, n_label = arena.pos, arena.label
    lab_pos, lab_mask = out.lab_pos, out.lab_mask
    r = st[NRES]
    lo = st[NLAB]
    if r >= out.end.shape[0] or lo + plen > lab_pos.shape[0]:
        return FULL
    w = lo
    for q in range(plen):
        m = path[q]
        lab = n_label[m] & ~START
        if lab != 0:
            lab_pos[w] = n_pos[m]
            lab_mask[w] = lab
            w += 1
    out.end[r] = i
    out.endpos[r] = pos
    out.start[r] = n_pos[path[plen - 1]]
    out.off[r] = lo
    out.length[r] = w - lo
    st[NRES] = r + 1
    st[NLAB] = w
    return OK


@njit(nogil=True, cache=True)
def first_live_start(roots, n_roots, consumed, windowed, cutoff, arena, st):
    """The number (in ``arena.starts``) of the earliest start of the live results under
    ``roots[0:n_roots]`` (live nodes), or -1 for none. NEXT's winner starts there when every
    result's first event is selected (its smallest position is then its start).

    The starts of a substream are numbered in position order (``arena.starts``), and st[LIVE]
    moves past those the window or CONSUME BY has removed (each once: they never come back).
    A node whose starts are every one from its smallest number to its greatest (``dense``)
    answers at once: the first live start in that range. Other nodes are searched depth-first
    over their live children, entering a node only when its smallest start (``minpos``) is
    before the best found so far; each node once (``arena.seen``). The stepping loop builds
    dense nodes wherever every start reaches the same state (a Kleene closure's chains, a
    sequence's), so the search mostly stops at the roots. Returns STOPPED past st[STEPS] nodes
    searched at the event."""
    stack, n_pos, n_a, n_b, minpos, seen = arena.stack_node, arena.pos, arena.a, arena.b, arena.minpos, arena.seen
    n_maxpos, n_maxval, ming, dense, starts = arena.maxpos, arena.maxval, arena.ming, arena.dense, arena.starts
    low, maxg = arena.low, arena.maxg
    live = st[LIVE]
    while live < st[NSTART] and not alive(starts[live], consumed, windowed, cutoff, n_maxpos, n_maxval):
        live += 1
    st[LIVE] = live
    st[STAMP] += 1
    stamp = st[STAMP]
    best, best_g = -1, -1
    size = 0
    for q in range(n_roots):
        if seen[roots[q]] != stamp:
            seen[roots[q]] = stamp
            stack[size] = roots[q]
            size += 1
    while size > 0:
        size -= 1
        n = stack[size]
        st[WORK] += 1
        if st[WORK] > st[STEPS]:
            return STOPPED
        if n == 0 or (best >= 0 and minpos[n] >= best):
            continue
        if dense[n]:  # its first live start: the first live one of its range (n is live)
            g = max(live, ming[n])
            if best < 0 or n_pos[starts[g]] < best:
                best = n_pos[starts[g]]
                best_g = g
            continue
        if n_pos[n] < 0 and low[n] >= 0 and maxg[n] >= live:
            # a chain link: its first live start is at or below the lowest link holding a start
            # numbered from ``live`` on (every higher child passed holds later starts only); the
            # skip pointers reach it in O(log) steps instead of a walk down the chain
            c = chain_find(n, live, arena)
            if c != n and seen[c] != stamp:
                seen[c] = stamp
                n = c
            elif c != n:
                continue
        if n_pos[n] < 0:  # union: its live children, the one with the smaller minpos on top
            a, b = n_a[n], n_b[n]
            if b >= 0 and a >= 0 and minpos[b] < minpos[a]:
                a, b = b, a
            for c in (b, a):
                if alive(c, consumed, windowed, cutoff, n_maxpos, n_maxval) and seen[c] != stamp:
                    seen[c] = stamp
                    stack[size] = c
                    size += 1
        elif seen[n_a[n]] != stamp:  # an output node (not a start: a start is dense)
            seen[n_a[n]] = stamp
            stack[size] = n_a[n]
            size += 1
    while best_g > live and n_pos[starts[best_g - 1]] == best:  # a start of the same event, other labels
        best_g -= 1
    return best_g


@njit(nogil=True, cache=True)
def last_start_at(g, arena, st):
    """The greatest start number at the position of start g: starts of one event with different
    labels (``A AS x OR A AS y``) are numbered one after the other."""
    n_pos, starts = arena.pos, arena.starts
    while g + 1 < st[NSTART] and n_pos[starts[g + 1]] == n_pos[starts[g]]:
        g += 1
    return g


@njit(nogil=True, cache=True)
def results_with(root, m, first, last, i, pos, r0, consumed, cutoff, options, arena, out, st):
    """Write the live results under ``root`` that LAST or NEXT can keep: those whose data set is
    ``arena.want[0:m]`` (``m`` >= 0), all kept; else (NEXT, ``first`` >= 0: the numbers
    ``first``..``last`` of the starts at one event, from :func:`first_live_start`) those that
    start there, each decided on by ``strategies.admit`` as it is written; ``m`` and ``first``
    together are NEXT's data set among one start's results. A branch is entered only when it is live and can
    still hold such a result (``top`` reaches D's next position; ``minpos`` is at most the
    start's position). A ``bare`` node that holds the start (``dense`` over its number) leads
    to it by unions only: the walk jumps to the start, instead of down a chain of starts.
    Returns OK, FULL, TOO_MANY (more than max_matches results at the event),
    TOO_MANY_CANDIDATES or TOO_MANY_STEPS (past st[STEPS] nodes walked at the event)."""
    windowed, max_matches, sel = options.windowed, options.max_matches, options.selected
    n_pos, n_label, n_a, n_b, top, minpos = arena.pos, arena.label, arena.a, arena.b, arena.top, arena.minpos
    n_maxpos, n_maxval, want = arena.maxpos, arena.maxval, arena.want
    bare, dense, ming, maxg, starts, low = arena.bare, arena.dense, arena.ming, arena.maxg, arena.starts, arena.low
    first_pos = n_pos[starts[first]] if first >= 0 else -1
    stack_node, stack_len, stack_k, path = arena.stack_node, arena.stack_len, arena.depth, arena.path
    by_data = m >= 0
    top_ = 0
    stack_node[0] = root
    stack_len[0] = 0
    stack_k[0] = 0
    while top_ >= 0:
        n = stack_node[top_]
        plen = stack_len[top_]
        k = stack_k[top_]
        top_ -= 1
        complete = False
        while True:
            st[WORK] += 1
            if st[WORK] > st[STEPS]:
                return TOO_MANY_STEPS
            if n == 0:
                complete = k == m or not by_data
                break
            if n_pos[n] < 0:
                a, b = n_a[n], n_b[n]
                a_ok = alive(a, consumed, windowed, cutoff, n_maxpos, n_maxval)
                b_ok = alive(b, consumed, windowed, cutoff, n_maxpos, n_maxval)
                if by_data and k < m:
                    a_ok = a_ok and top[a] >= want[k]
                    b_ok = b_ok and top[b] >= want[k]
                if first >= 0:
                    if first == last and bare[n] and dense[n] and ming[n] <= first <= maxg[n]:
                        n = starts[first]  # unions only, down to the start
                        continue
                    if low[n] >= 0 and maxg[n] >= last:  # down a chain to the link of the starts
                        c = chain_find(n, last, arena)
                        if c != n:
                            n = c
                            continue
                    a_ok = a_ok and minpos[a] <= first_pos
                    b_ok = b_ok and minpos[b] <= first_pos
                if a_ok and b_ok:
                    top_ += 1
                    stack_node[top_] = b
                    stack_len[top_] = plen
                    stack_k[top_] = k
                elif not a_ok:
                    if not b_ok:
                        break
                    a = b
                n = a
            else:
                if by_data and n_label[n] & sel:
                    if k == m or n_pos[n] != want[k]:
                        break  # selects another position than the winner's
                    k += 1
                path[plen] = n
                plen += 1
                n = n_a[n]
        if not complete:
            continue
        code = _keep(path, plen, by_data, i, pos, r0, max_matches, arena, out, st)
        if code != OK:
            return code
    return OK


@njit(nogil=True, cache=True)
def _keep(path, plen, by_data, i, pos, r0, max_matches, arena, out, st):
    """Write the result ``path[0:plen]`` that :func:`results_with` found, and keep it: every one
    with the winning data set (``by_data``), or NEXT's better one among a start's results
    (``strategies.admit``). Returns OK, FULL, TOO_MANY (more than max_matches results at the
    event) or TOO_MANY_CANDIDATES (more compared than ``candidate_limit`` allows)."""
    if write_result(path, plen, i, pos, arena, out, st) != OK:
        return FULL
    if by_data:
        if st[NRES] - r0 > max_matches:
            return TOO_MANY
    else:
        admit(NEXT, r0, out, st)
        st[COUNT] += 1
        if st[COUNT] > candidate_limit(max_matches):
            return TOO_MANY_CANDIDATES
    return OK
