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

from numba import njit

from cerql.exec.kernel.state import ARENA, CONSUMED, NACT


@njit(nogil=True, cache=True)
def alive(n, consumed, windowed, cutoff, maxpos, maxval):
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
        if alive(node, consumed, windowed, cutoff, n_maxpos, n_maxval):
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

