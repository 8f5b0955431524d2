"""Registers: the FILTER comparisons and aggregates the kernel checks as events are bound.

A run with registers carries, per check, three int64 columns (and three float64 beside them):
what :func:`step_registers` updates on each transition and :func:`aggregates_hold` tests at a
final state. Runs meet only on equal (state, registers): :func:`run_key`. Kept apart from the
stepping loop, which calls it only when a query has registers, so the common case reads none of
this.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, types
from numba.np.unsafe.ndarray import to_fixed_tuple

from cerql.plan import MAX_REGISTERS

# Registers (seed 002): a FILTER comparison ``f(x) op g(y)`` holds when it holds for every pair of
# events of x and y (docs/semantics.md, "Predicates across variables"). The kernel checks it as
# events are bound: a run carries, per comparison and per side, whether the side has events,
# whether one of them makes every pair fail (NULL; two different values under =), and the one
# value a later event of the other side must be compared with (for >, >= the least f of x and the greatest g of y; for
# <, <= the reverse; for = and != the value). An event bound to x is compared with y's value when
# y has events, then joins x's side; likewise for y. Runs merge only when their deterministic
# state and registers are equal. Between single-event variables the comparison is done once both
# are bound and its registers are cleared (DONE), so those runs merge again.
# An aggregate check ``agg(x) op constant`` (seed 004) uses the same three columns for its
# accumulator over the events bound to x: how many values (capped where more would not change
# the answer), the sum or least/greatest value (int64, or the bits of a float64 with the float
# beside it). It is compared with the constant (the right side's value at any event) when the
# run is in a final state: a run that fails it gives no result. At most MAX_REGISTERS checks
# (the planner leaves the others to exec/post_filter.py).
# Runs with different registers cannot meet, so their number is bounded only by the distinct
# register values the events in reach can make: a count is capped where more would not change
# its answer, and a min or max is kept only as its side of the constant (below, equal, above
# or NaN), since a later value moves it only further that way; a sum or an average over a Kleene
# variable can take a new value with every subset of events. Past max_matches runs after one
# event the kernel stops with TOO_MANY_RUNS rather than filling memory.
X_HAS, X_BAD, Y_HAS, Y_BAD, DONE_BOTH = 1, 2, 4, 8, 16
OP_EQ, OP_NE, OP_GT, OP_GE, OP_LT, OP_LE = 0, 1, 2, 3, 4, 5
# what a register check is: a comparison between two variables, or an aggregate of one
COMPARE, AGG_COUNT_EVENTS, AGG_COUNT, AGG_SUM, AGG_AVG, AGG_MIN, AGG_MAX = 0, 1, 2, 3, 4, 5, 6
# A sum whose every value is known to be a non-negative number, with no total near BIGINT's edge
# (the local engine sees the whole stream; registers.RegisterSpec.for_stream): a sum above the
# constant stays above it as values join, so it is kept as one value above it and runs meet.
AGG_SUM_RISING = 7
# An integer sum that leaves the BIGINT range sets its count to OVERFLOWED: a run that reaches a
# final state so gives OVERFLOW, as Spark's ANSI sum raises ARITHMETIC_OVERFLOW at that addition.
OVERFLOWED = -1
INT64_MAX, INT64_MIN = np.int64(2**63 - 1), np.int64(-(2**63))
REGISTER_COLUMNS = 3 * MAX_REGISTERS  # per check: flags, x's value, y's value (or count, accumulator)
BIG = 1 << 62  # a count cap past any count
KEY_SIZE = 1 + REGISTER_COLUMNS  # a run's key: its state, then its registers (run_key)
KEY = types.UniTuple(types.int64, KEY_SIZE)


class RegisterPlan(NamedTuple):
    """The query's register checks (exec/registers.py RegisterSpec), one entry per check."""

    count: int            # how many checks (0: the query has no registers)
    kind: np.ndarray      # int64: COMPARE or an AGG_* code
    x_bits: np.ndarray    # int64: the label bit of the check's x variable (left side)
    y_bits: np.ndarray    # int64: the label bit of its y variable (right side; unused by aggregates)
    op: np.ndarray        # int64: an OP_* code
    floating: np.ndarray  # bool: compares float64 values (else int64 keys)
    single: np.ndarray    # bool: both variables hold one event (checked once, then forgotten)
    reset: np.ndarray     # int64: the label bit of the first event of each repetition the check holds
                          # in (its registers are cleared there, before the event binds), else 0


class Sides(NamedTuple):
    """Each event's values of both sides of every check: (events, MAX_REGISTERS) arrays, column p
    for check p, its left side as if the event were x (fx_*) and its right side as if it were y
    (gy_*; an aggregate's constant). Keys are int64 values or the bits of float64 values."""

    fx_key: np.ndarray
    fx_num: np.ndarray
    fx_ok: np.ndarray
    gy_key: np.ndarray
    gy_num: np.ndarray
    gy_ok: np.ndarray


@njit(nogil=True, cache=True)
def _less(a, b):
    """a < b in Spark's order of doubles: NaN above every number and equal to itself."""
    return a < b or (b != b and a == a)


@njit(nogil=True, cache=True)
def _holds(op, is_float, fk, fn, gk, gn):
    """f op g, on int64 keys or on float64 values as Spark compares doubles: NaN equals NaN and
    is above every number (-0.0 equals 0.0)."""
    if is_float:
        a, b = fn, gn
        same = a == b or (a != a and b != b)
        if op == OP_EQ:
            return same
        if op == OP_NE:
            return not same
        if op == OP_GT:
            return _less(b, a)
        if op == OP_GE:
            return same or _less(b, a)
        if op == OP_LT:
            return _less(a, b)
        return same or _less(a, b)
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
def _joins(op, is_float, side_x, key, num, vk, vn):
    """The value a side keeps after another event's value (vk, vn) joins it: for x the least
    under > and >=, the greatest under < and <=; for y the reverse (see MAX_REGISTERS)."""
    keep_least = (op == OP_GT or op == OP_GE) == side_x
    if is_float:  # in Spark's order: NaN is the greatest
        better = _less(vn, num) if keep_least else _less(num, vn)
    else:
        better = vk < key if keep_least else vk > key
    return (vk, vn) if better else (key, num)


@njit(nogil=True, cache=True)
def _bind(p, x_side, op, is_float, ok, vk, vn, regs_k, regs_f):
    """Bind one event's value (ok, vk, vn) to the x or y side of comparison p in regs_*;
    False when a pair with the other side's events fails."""
    flags = regs_k[3 * p]
    mine, other = (1, 2) if x_side else (2, 1)
    has, bad = (X_HAS, X_BAD) if x_side else (Y_HAS, Y_BAD)
    other_has, other_bad = (Y_HAS, Y_BAD) if x_side else (X_HAS, X_BAD)
    if flags & (other_has | other_bad):
        if not ok or flags & other_bad:
            return False
        ok_pair = (_holds(op, is_float, vk, vn, regs_k[3 * p + other], regs_f[3 * p + other]) if x_side
                   else _holds(op, is_float, regs_k[3 * p + other], regs_f[3 * p + other], vk, vn))
        if not ok_pair:
            return False
    if not ok:
        flags |= bad
    elif not flags & has:
        flags |= has
        regs_k[3 * p + mine], regs_f[3 * p + mine] = vk, vn
    elif op == OP_EQ:
        other_value = not _holds(OP_EQ, True, vk, vn, vk, regs_f[3 * p + mine])
        if other_value if is_float else (vk != regs_k[3 * p + mine]):
            flags |= bad  # two values: no value of the other side equals both
    # (!= is only planned between single-event variables: a side never gets a second value)
    else:
        regs_k[3 * p + mine], regs_f[3 * p + mine] = _joins(op, is_float, x_side, regs_k[3 * p + mine],
                                                            regs_f[3 * p + mine], vk, vn)
    regs_k[3 * p] = flags
    return True


@njit(nogil=True, cache=True)
def _count_cap(kind, is_float, gk, gn):
    """How far an aggregate check keeps counting values: a count compared with k is on the same
    side of k for every value above k, so it stops at k + 1; sum, min and max only need to know
    whether there is a value; avg needs every one."""
    if kind == AGG_AVG:
        return BIG
    if kind != AGG_COUNT_EVENTS and kind != AGG_COUNT:
        return 1
    if is_float:
        if not gn == gn or gn < 0.0:
            return 1
        if gn >= 1e18:
            return BIG
        return np.int64(np.floor(gn)) + 1
    if gk < 0:
        return 1
    return min(gk, BIG) + 1


@njit(nogil=True, cache=True)
def _side_of(kind, is_float, acc_k, acc_f, ck, cn):
    """A min or max accumulator as its side of the constant (ck, cn): one value that compares
    with the constant as the accumulator does, and stays so as later values join (see above),
    so runs that agree on the side meet. NaN, or a NaN constant, is kept as it is."""
    if is_float:
        if acc_f != acc_f or cn != cn or acc_f == cn:
            return acc_k, acc_f
        rep = -np.inf if acc_f < cn else np.inf
        return acc_k, rep
    if acc_k == ck:
        return acc_k, acc_f
    return (ck - 1 if acc_k < ck else ck + 1), acc_f


@njit(nogil=True, cache=True)
def _accumulate(p, kind, is_float, cap, value, const, scratch):
    """Add one event's ``value`` (ok, key, number) to aggregate check p's accumulator in the
    scratch registers; the ``const`` (ok, key, number) it is compared with lets a min or max keep
    only its side."""
    ok, vk, vn = value
    const_ok, ck, cn = const
    regs_k, regs_f, fbuf, kbuf = scratch
    if kind == AGG_COUNT_EVENTS:
        ok = True
    if not ok:
        return
    n = regs_k[3 * p]
    if n == OVERFLOWED:
        return
    if kind == AGG_SUM or kind == AGG_AVG or kind == AGG_SUM_RISING:
        if is_float or kind == AGG_AVG:
            regs_f[3 * p + 1] = (regs_f[3 * p + 1] + vn) if n > 0 else vn
            if kind == AGG_SUM_RISING and const_ok and regs_f[3 * p + 1] > cn:
                regs_f[3 * p + 1] = np.inf
        else:
            acc = regs_k[3 * p + 1]
            # tested before adding: compiled code may assume a signed sum never wraps around
            if n > 0 and ((vk > 0 and acc > INT64_MAX - vk) or (vk < 0 and acc < INT64_MIN - vk)):
                regs_k[3 * p] = OVERFLOWED
                return
            regs_k[3 * p + 1] = (acc + vk) if n > 0 else vk
            if kind == AGG_SUM_RISING and const_ok and regs_k[3 * p + 1] > ck:
                regs_k[3 * p + 1] = ck + 1
    elif kind == AGG_MIN or kind == AGG_MAX:
        if is_float:  # NaN is above every number, as Spark orders it
            acc = regs_f[3 * p + 1]
            if n == 0:
                acc = vn
            elif kind == AGG_MAX:
                if vn != vn or (acc == acc and vn > acc):
                    acc = vn
            elif acc != acc or (vn == vn and vn < acc):
                acc = vn
            regs_f[3 * p + 1] = acc
        else:
            acc = regs_k[3 * p + 1]
            if n == 0 or (vk > acc if kind == AGG_MAX else vk < acc):
                regs_k[3 * p + 1] = vk
        if const_ok:
            regs_k[3 * p + 1], regs_f[3 * p + 1] = _side_of(kind, is_float, regs_k[3 * p + 1], regs_f[3 * p + 1],
                                                            ck, cn)
    if is_float or kind == AGG_AVG:  # the run key holds the float's bits
        fbuf[0] = regs_f[3 * p + 1]
        regs_k[3 * p + 1] = kbuf[0]
    regs_k[3 * p] = min(n + 1, cap)


@njit(nogil=True, cache=True)
def aggregates_hold(k, i, regs, sides, act_rk, act_rf):
    """Whether run k's aggregates (registers ``act_rk``, ``act_rf``) pass their checks (at a final
    state, at event i)."""
    reg_kind, reg_op, reg_float = regs.kind, regs.op, regs.floating  # fields read once (see step_registers)
    gy_key, gy_num, gy_ok = sides.gy_key, sides.gy_num, sides.gy_ok
    for p in range(regs.count):
        kind = reg_kind[p]
        if kind == COMPARE:
            continue
        if not gy_ok[i, p]:
            return False
        n = act_rk[k, 3 * p]
        is_float = reg_float[p]
        if kind == AGG_COUNT_EVENTS or kind == AGG_COUNT:
            vk, vn = n, np.float64(n)
        else:
            if n == 0:  # no values: NULL, which fails
                return False
            vk, vn = act_rk[k, 3 * p + 1], act_rf[k, 3 * p + 1]
            if kind == AGG_AVG:
                vn = vn / n
                is_float = True
            elif not is_float:
                vn = np.float64(vk)
        if not _holds(reg_op[p], is_float, vk, vn, gy_key[i, p], gy_num[i, p]):
            return False
    return True


@njit(nogil=True, cache=True)
def overflowed(k, regs, act_rk):
    """Whether an integer sum of run k (registers ``act_rk``) left the BIGINT range (its count is
    OVERFLOWED)."""
    reg_kind = regs.kind
    for p in range(regs.count):
        if reg_kind[p] != COMPARE and act_rk[k, 3 * p] == OVERFLOWED:
            return True
    return False


@njit(nogil=True, cache=True)
def step_registers(k, lab, i, regs, sides, act_rk, act_rf, scratch):
    """The registers of active run k (``act_rk``, ``act_rf``) after a transition marking ``lab``
    on event i, in the scratch registers (``scratch``: int64 and float64 registers, and a float64
    buffer with its int64 view); False when a comparison fails on a pair of its events (the
    transition is dropped)."""
    # a bundle's fields as locals: each read of a field in the loop would count a reference
    reg_kind, reg_x, reg_y, reg_op, reg_float, reg_single = (regs.kind, regs.x_bits, regs.y_bits, regs.op,
                                                             regs.floating, regs.single)
    reg_reset = regs.reset
    fx_key, fx_num, fx_ok, gy_key, gy_num, gy_ok = sides
    tmp_k, tmp_f = scratch[0], scratch[1]
    for c in range(REGISTER_COLUMNS):
        tmp_k[c], tmp_f[c] = act_rk[k, c], act_rf[k, c]
    for p in range(regs.count):
        kind = reg_kind[p]
        if kind != COMPARE:
            if lab & reg_x[p] != 0:
                cap = _count_cap(kind, reg_float[p], gy_key[i, p], gy_num[i, p])
                _accumulate(p, kind, reg_float[p], cap, (fx_ok[i, p], fx_key[i, p], fx_num[i, p]),
                            (gy_ok[i, p], gy_key[i, p], gy_num[i, p]), scratch)
            continue
        if lab & reg_reset[p] != 0:  # a new repetition: the check starts over on its events
            tmp_k[3 * p], tmp_k[3 * p + 1], tmp_k[3 * p + 2] = 0, 0, 0
            tmp_f[3 * p + 1], tmp_f[3 * p + 2] = 0.0, 0.0
        if tmp_k[3 * p] & DONE_BOTH:
            continue
        op, is_float = reg_op[p], reg_float[p]
        if lab & reg_x[p] != 0:  # NaN is a value (Spark's order), only NULL fails every pair
            if not _bind(p, True, op, is_float, fx_ok[i, p], fx_key[i, p], fx_num[i, p], tmp_k, tmp_f):
                return False
        if lab & reg_y[p] != 0:
            if not _bind(p, False, op, is_float, gy_ok[i, p], gy_key[i, p], gy_num[i, p], tmp_k, tmp_f):
                return False
        both = X_HAS | X_BAD
        if reg_single[p] and tmp_k[3 * p] & both and tmp_k[3 * p] & (Y_HAS | Y_BAD):
            tmp_k[3 * p], tmp_k[3 * p + 1], tmp_k[3 * p + 2] = DONE_BOTH, 0, 0  # checked: forget the values
            tmp_f[3 * p + 1], tmp_f[3 * p + 2] = 0.0, 0.0
    return True


@njit(nogil=True, cache=True)
def output_bits(regs):
    """The label bits a transition writes into the arena: all but the checks' ``reset`` bits,
    which only tell the registers where a repetition starts."""
    keep = np.int64(-1)
    for p in range(regs.count):
        keep &= ~regs.reset[p]
    return keep


@njit(nogil=True, cache=True)
def run_key(d, regs_k, key_buf):
    """The key runs meet on: deterministic state d and every register column (KEY), made in
    ``key_buf`` (KEY_SIZE int64), so a change of MAX_REGISTERS changes the key with it."""
    key_buf[0] = d
    for c in range(REGISTER_COLUMNS):
        key_buf[c + 1] = regs_k[c]
    return to_fixed_tuple(key_buf, KEY_SIZE)
