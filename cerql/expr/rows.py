"""The rows a subexpression is evaluated on, and computing value by value.

Spark evaluates the right side of AND/OR, CASE/IF branches and COALESCE arguments only on the
rows where they decide the value, so an error (a division by zero, a malformed CAST) counts only
on those rows: :class:`_Env` carries the table and that mask, and :func:`_checked` runs Arrow's
overflow-checked kernels under it. The rest are the helpers every family uses to apply a Python
function per value (:func:`_map_checked`, once per distinct value) where Arrow has no kernel
with Spark's answer.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cerql.expr.errors import _overflow_error
from cerql.expr.kinds import Value, _bool


class _Env:
    """The table and the rows a subexpression is evaluated on (``live``: None for every row,
    else a NumPy bool mask): errors count only on live rows, as Spark evaluates the right side
    of AND/OR, CASE branches and COALESCE arguments only where they decide the value."""

    __slots__ = ("table", "live")

    def __init__(self, table: pa.Table, live: np.ndarray | None = None):
        self.table, self.live = table, live

    def where(self, mask: Value) -> "_Env":
        """These rows, narrowed to those where ``mask`` is true (NULL is not)."""
        if isinstance(mask, pa.Scalar):
            if mask.is_valid and mask.as_py():
                return self
            return _Env(self.table, np.zeros(self.table.num_rows, bool))
        m = _np_bool(mask)
        return _Env(self.table, m if self.live is None else self.live & m)

    def hit(self, bad) -> int | None:
        """The first live row where ``bad`` (a NumPy bool array, or a bool for every row) holds;
        -1 for a scalar that fails where every row is live, None when none fails."""
        if isinstance(bad, (bool, np.bool_)):
            if not bad:
                return None
            if self.live is None:
                return -1
            rows = np.flatnonzero(self.live)
            return int(rows[0]) if len(rows) else None
        if self.live is not None:
            bad = bad & self.live
        rows = np.flatnonzero(bad)
        return int(rows[0]) if len(rows) else None


def _np_bool(mask: Value) -> np.ndarray:
    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    if pa.types.is_null(mask.type):
        return np.zeros(len(mask), bool)
    return np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), bool)


def _bad_rows(mask: Value) -> np.ndarray | bool:
    """A boolean Arrow value as where-it-holds: a NumPy array, or a bool for a scalar."""
    if isinstance(mask, pa.Scalar):
        return bool(mask.is_valid and mask.as_py())
    return _np_bool(mask)


def _live_part(value: Value, env: _Env) -> Value:
    if env.live is None or isinstance(value, pa.Scalar):
        return value
    return value.filter(pa.array(env.live))


def _at(value: Value, row: int):
    if isinstance(value, pa.Scalar):
        return value.as_py()
    return value[max(row, 0)].as_py()


def _checked(env: _Env, node, checked_fn, plain_fn, args, kind=None) -> Value:
    """``checked_fn(*args)`` (Arrow's overflow-checked kernel); an overflow on a live row is
    Spark's ARITHMETIC_OVERFLOW (BINARY_ARITHMETIC_OVERFLOW for TINYINT and SMALLINT), on other
    rows nothing (the wrapped value is never used)."""
    try:
        return checked_fn(*args)
    except pa.ArrowInvalid as err:
        if "overflow" not in str(err).lower():
            raise
        if env.live is not None:
            try:
                checked_fn(*[_live_part(a, env) for a in args])
            except pa.ArrowInvalid:
                raise _overflow_error(node, kind) from None
            return plain_fn(*args)
        raise _overflow_error(node, kind) from None


_BAD = object()  # what a per-value function returns for a value Spark's operation fails on


def _map_values(value: Value, fn, kind: pa.DataType, distinct: bool = True):
    """``fn`` of each non-NULL value, as an Arrow value of ``kind``; each distinct value is
    computed once (``distinct``). A result ``_BAD`` is NULL here and listed in the returned
    mask by :func:`_map_checked`."""
    return _map_checked(value, fn, kind, distinct)[0]


def _map_checked(value: Value, fn, kind: pa.DataType, distinct: bool = True):
    """(``fn`` of each value as :func:`_map_values`, the rows where it gave ``_BAD``: a NumPy
    bool array, or a bool for a scalar)."""
    if isinstance(value, pa.Scalar):
        if not value.is_valid:
            return pa.scalar(None, kind), False
        out = fn(value.as_py())
        return (pa.scalar(None, kind), True) if out is _BAD else (pa.scalar(out, kind), False)
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    if distinct and len(value) > 64:
        encoded = pc.dictionary_encode(value)
        words, bad = _map_checked(encoded.dictionary, fn, kind, distinct=False)
        indices = encoded.indices
        out = words.take(indices)
        if isinstance(bad, np.ndarray) and bad.any():
            idx = np.asarray(pc.fill_null(indices, -1).to_numpy(zero_copy_only=False))
            rows = np.zeros(len(value), bool)
            rows[idx >= 0] = bad[idx[idx >= 0]]
            return out, rows
        return out, np.zeros(len(value), bool)
    results, bad = [], np.zeros(len(value), bool)
    for k, v in enumerate(value.to_pylist()):
        if v is None:
            results.append(None)
            continue
        r = fn(v)
        if r is _BAD:
            bad[k] = True
            r = None
        results.append(r)
    return pa.array(results, kind), bad


class _ScalarPairs(list):
    pass


def _pairs(a: Value, b: Value):
    if isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar):
        return _ScalarPairs([(a.as_py(), b.as_py())])
    n = len(a) if not isinstance(a, pa.Scalar) else len(b)
    xs = [a.as_py()] * n if isinstance(a, pa.Scalar) else a.to_pylist()
    ys = [b.as_py()] * n if isinstance(b, pa.Scalar) else b.to_pylist()
    return list(zip(xs, ys))


_ARITH_FN = {"+": (pc.add_checked, pc.add), "-": (pc.subtract_checked, pc.subtract),
             "*": (pc.multiply_checked, pc.multiply)}


def _np_valid(value: Value) -> np.ndarray:
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    return np.asarray(value.is_valid().to_numpy(zero_copy_only=False), bool)


def _table_of(*values):
    n = max((len(v) for v in values if not isinstance(v, pa.Scalar)), default=1)
    cols = [[v.as_py()] * n if isinstance(v, pa.Scalar) else v.to_pylist() for v in values]
    return list(zip(*cols))


def _shape(out: list, kind: pa.DataType, *inputs) -> Value:
    if all(isinstance(v, pa.Scalar) for v in inputs):
        return pa.scalar(out[0], kind)
    return pa.array(out, kind)


def _negated(node, fn):
    if not node.args.get("negate"):
        return fn
    return lambda env: pc.invert(_bool(fn(env)))
