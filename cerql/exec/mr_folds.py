"""Spark's aggregates over a variable's rows beyond count/sum/avg/min/max, as folds in row order.

Input: an aggregate's kind (``mr_functions.aggregate_kind``: ``stddev_samp``, ``min_by``,
``count_distinct``...) and the Arrow types of its arguments. Output: a :class:`Fold`: Spark's
result type, the state over no rows, the state after one more row (the arguments' Python values
at that row), and the value of a state. exec/mr_measures.py runs a fold over each match's rows of
a variable, exec/mr_history.py keeps its state as a thread register; so a state is immutable and
hashable, and two equal states have the same future.

Spark's rules, as Spark 4 (ANSI) gives them (docs/semantics.md, "MATCH_RECOGNIZE"):

- ``stddev_samp`` (``stddev``, ``std``), ``stddev_pop``, ``var_samp`` (``variance``),
  ``var_pop``: DOUBLE, the argument cast to DOUBLE, NULLs skipped; NULL over no rows, and the
  sample ones NULL over one row. The state is Spark's running (count, mean, sum of squared
  deviations), updated as Spark updates it (Welford's step), so a value is Spark's to the bit
  when Spark reads the rows in the same order;
- ``count_if``: BIGINT, the rows where the condition is true (0 over none);
- ``bool_and`` (``every``), ``bool_or`` (``some``, ``any``): BOOLEAN, NULLs skipped, NULL over
  no rows;
- ``min_by(x, y)`` / ``max_by(x, y)``: x at the row of the least / greatest y (NaN above every
  number), rows whose y is NULL skipped; among rows whose y ties, the last, as Spark keeps
  it when it reads the rows in row order; x may be NULL; NULL when no row has a y;
- ``collect_list`` (``array_agg``): ARRAY of the non-NULL values in row order (empty over no
  rows), its elements not nullable, as Spark types it;
- ``count(DISTINCT x)``, ``sum(DISTINCT x)``, ``avg(DISTINCT x)``: over the distinct non-NULL
  values (NaN equal to NaN, -0.0 to 0.0, as Spark groups), with the types and errors of count,
  sum and avg (exec/aggregate.py). A DOUBLE sum adds the values in the order of their first row,
  where Spark adds them in its hash table's order: the last bits may differ;
- ``percentile(x, p)``, ``percentile(x, array(p, ...))``, ``median(x)`` (= ``percentile(x,
  0.5)``): DOUBLE (ARRAY<DOUBLE> for an array of p), exact: the values, NULLs skipped, sorted (NaN
  above every number), position ``(n - 1) * p``, linear between the two values around it; NULL
  over no rows (and for an empty array of p). ``p`` is a constant in [0, 1], never NULL;
- ``skewness``, ``kurtosis``: DOUBLE from the running (count, mean, 2nd, 3rd, 4th central
  moments), updated as Spark updates them; NULL over no rows or when every value is the same;
- ``corr(x, y)``, ``covar_pop``, ``covar_samp`` and ``regr_*(y, x)``: over the rows where neither
  argument is NULL, from the running co-moment ``(x - mean x)(y - mean y)`` and each argument's
  second moment, updated as Spark does; ``regr_count`` BIGINT (0 over none), ``regr_avgx`` /
  ``regr_avgy`` avg's type of x / y, the others DOUBLE: NULL over no rows, ``covar_samp`` over one,
  ``corr`` when either argument is constant, ``regr_slope`` / ``regr_intercept`` / ``regr_r2``
  when x is constant (``regr_r2`` is 1 when only y is);
- ``bit_and``, ``bit_or``, ``bit_xor``: the integer type of x, NULLs skipped, NULL over no rows;
- ``try_sum``, ``try_avg``: sum's and avg's types, NULL where they would raise an overflow: an
  integer sum that leaves BIGINT at any row, a decimal total its type cannot hold at the end, a
  decimal average its type cannot hold; NULL over no rows;
- ``listagg`` (``string_agg``): the non-NULL values in row order joined by the separator (a
  constant; none when it is absent or NULL), STRING (BINARY for binary values), NULL when no
  value is present.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import Any, Callable

import pyarrow as pa
from sqlglot import exp

from cerql.exec import aggregate
from cerql.expr import BIGINT_MAX, BIGINT_MIN

MOMENTS = ("stddev_samp", "stddev_pop", "var_samp", "var_pop")
DISTINCT = ("count_distinct", "sum_distinct", "avg_distinct")
PERCENTILES = ("percentile", "median")
HIGHER = ("skewness", "kurtosis")
PAIRS = ("corr", "covar_pop", "covar_samp", "regr_sxx", "regr_syy", "regr_sxy", "regr_slope", "regr_intercept",
         "regr_r2")
REGR_LISTS = ("regr_count", "regr_avgx", "regr_avgy")
BITS = ("bit_and", "bit_or", "bit_xor")
TRIES = ("try_sum", "try_avg")
KINDS = (MOMENTS + ("count_if", "bool_and", "bool_or", "min_by", "max_by", "collect_list") + DISTINCT + PERCENTILES
         + HIGHER + PAIRS + REGR_LISTS + BITS + TRIES + ("listagg",))
TWO_ARGUMENTS = ("min_by", "max_by") + PAIRS + REGR_LISTS

_EMPTY: dict[str, Any] = {**{k: (0.0, 0.0, 0.0) for k in MOMENTS}, "count_if": 0, "bool_and": None,
                          "bool_or": None, "min_by": (None, None), "max_by": (None, None), "collect_list": (),
                          **{k: (frozenset(), ()) for k in DISTINCT}, **{k: () for k in PERCENTILES + REGR_LISTS},
                          **{k: (0.0,) * 5 for k in HIGHER}, **{k: (0.0,) * 9 for k in PAIRS},
                          **{k: None for k in BITS}, **{k: (0, 0, False) for k in TRIES}, "listagg": ()}
_EXACT = Context(prec=200)


class FoldTypeError(Exception):
    """An argument of a type the aggregate does not take (Spark's DATATYPE_MISMATCH)."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.message, self.hint = message, hint


def empty(kind: str):
    """The state of ``kind`` over no rows (the same whatever the arguments' types)."""
    return _EMPTY[kind]


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_null(t)


def result_type(kind: str, types: tuple[pa.DataType, ...], params: tuple = ()) -> pa.DataType:
    """Spark's type of the aggregate over arguments of ``types`` (and constant ``params``: a
    percentile's p, listagg's separator); FoldTypeError when it takes no such argument."""
    first = types[0]
    if kind in MOMENTS + HIGHER + PAIRS + REGR_LISTS + PERCENTILES + TRIES:
        for t in types:
            if not _numeric(t):
                raise FoldTypeError(f"{kind}() takes numbers, not {t}", f"cast the argument: {kind}(CAST(x AS DOUBLE))")
    if kind in MOMENTS + HIGHER + PAIRS:
        return pa.float64()
    if kind in PERCENTILES:
        return _percentile_type(kind, params)
    if kind in ("count_if", "bool_and", "bool_or"):
        if not (pa.types.is_boolean(first) or pa.types.is_null(first)):
            raise FoldTypeError(f"{kind}() takes a condition, not {first}", f"write a comparison: {kind}(A.x > 0)")
        return pa.int64() if kind == "count_if" else pa.bool_()
    if kind in ("min_by", "max_by"):
        return first
    if kind == "collect_list":
        return pa.list_(pa.field("item", first, nullable=False))  # Spark: ARRAY<T> without NULLs
    if kind in ("count_distinct", "regr_count"):
        return pa.int64()
    if kind in BITS:
        if not pa.types.is_signed_integer(first):
            raise FoldTypeError(f"{kind}() takes integers, not {first}", f"cast the argument: {kind}(CAST(x AS BIGINT))")
        return first
    if kind == "listagg":
        return _listagg_type(first, params)
    if kind in ("regr_avgx", "regr_avgy"):
        first = types[1] if kind == "regr_avgx" else first
        return aggregate.decimal_avg_type(first) if pa.types.is_decimal(first) else pa.float64()
    if not _numeric(first):
        raise FoldTypeError(f"{kind.split('_')[0]}() takes numbers, not {first}", "aggregate a numeric column")
    if kind in ("sum_distinct", "try_sum"):
        if pa.types.is_integer(first):
            return pa.int64()
        return aggregate.decimal_sum_type(first) if pa.types.is_decimal(first) else pa.float64()
    return aggregate.decimal_avg_type(first) if pa.types.is_decimal(first) else pa.float64()


def _percentile_type(kind: str, params: tuple) -> pa.DataType:
    """DOUBLE, or ARRAY<DOUBLE> for an array of percentages; each in [0, 1] and not NULL."""
    p = params[0] if kind == "percentile" else 0.5
    for one in (p if isinstance(p, tuple) else (p,)):
        if one is None:
            raise FoldTypeError("The percentage must not be null", "write a number in [0, 1]: percentile(A.x, 0.5)")
        if not 0.0 <= one <= 1.0:
            raise FoldTypeError(f"The percentage must be between [0.0, 1.0] (current value = {one})",
                                "write a number in [0, 1]: percentile(A.x, 0.5)")
    return pa.list_(pa.field("item", pa.float64(), nullable=False)) if isinstance(p, tuple) else pa.float64()


def _listagg_type(first: pa.DataType, params: tuple) -> pa.DataType:
    """STRING over strings, BINARY over binary values, the separator of the same kind."""
    binary = pa.types.is_binary(first) or pa.types.is_large_binary(first)
    if not (binary or pa.types.is_string(first) or pa.types.is_large_string(first) or pa.types.is_null(first)):
        raise FoldTypeError(f"listagg() takes strings or binary values, not {first}",
                            "cast the argument: listagg(CAST(A.x AS STRING), ',')")
    separator = params[0] if params else None
    if separator is not None and isinstance(separator, bytes) != binary:
        raise FoldTypeError("listagg()'s separator is not of its values' type",
                            "a STRING separator for strings, a BINARY one (X'2C') for binary values")
    return pa.binary() if binary else pa.string()


@dataclass(frozen=True)
class Fold:
    """One aggregate over arguments of known types (module docstring); ``params`` are its constant
    arguments' values (a percentile's p, listagg's separator)."""

    kind: str
    types: tuple[pa.DataType, ...]
    result_type: pa.DataType
    params: tuple = ()

    @property
    def empty(self):
        return _EMPTY[self.kind]

    def step(self, state, args: tuple):
        """The state after one more row whose arguments are ``args`` (Python values)."""
        kind, x = self.kind, args[0]
        if kind in ("min_by", "max_by"):
            return _by(kind, state, x, args[1])
        if x is None or (kind in TWO_ARGUMENTS and args[1] is None):
            return state
        if kind in MOMENTS:
            n, mean, m2 = state
            x = float(x)
            n1 = n + 1.0
            delta = x - mean
            delta_n = delta / n1
            return n1, mean + delta_n, m2 + delta * (delta - delta_n)
        if kind in HIGHER:
            return _higher_step(state, float(x))
        if kind in PAIRS:
            return _pair_step(state, float(x), float(args[1]))
        if kind in REGR_LISTS:
            return state + ((x, args[1]),)
        if kind in TRIES:
            return _try_step(kind, self.types[0], state, x)
        if kind == "count_if":
            return state + 1 if x else state
        if kind == "bool_and":
            return bool(x) if state is None else state and bool(x)
        if kind == "bool_or":
            return bool(x) if state is None else state or bool(x)
        if kind in BITS:
            return x if state is None else (state & x if kind == "bit_and" else state | x if kind == "bit_or" else state ^ x)
        if kind in ("collect_list", "listagg") + PERCENTILES:
            return state + (x,)
        keys, values = state
        key = _distinct_key(x)
        return state if key in keys else (keys | {key}, values + (x,))

    def value(self, state):
        """The aggregate's Python value for ``state`` (of ``result_type``)."""
        kind = self.kind
        if kind in MOMENTS:
            n, _, m2 = state
            sample = kind in ("stddev_samp", "var_samp")
            if n == 0 or (sample and n == 1):
                return None
            var = m2 / (n - 1.0) if sample else m2 / n
            if kind.startswith("stddev"):
                return math.sqrt(var) if not var < 0 else math.nan
            return var
        if kind in HIGHER:
            return _higher_value(kind, state)
        if kind in PAIRS:
            return _pair_value(kind, state)
        if kind in PERCENTILES:
            return _percentile_value(state, self.params[0] if kind == "percentile" else 0.5)
        if kind in REGR_LISTS:
            return _regr_list_value(kind, state, self.types)
        if kind in TRIES:
            return _try_value(kind, self.types[0], self.result_type, state)
        if kind == "listagg":
            return _joined(state, self.params[0] if self.params else None, pa.types.is_binary(self.result_type))
        if kind in ("min_by", "max_by"):
            return state[1]
        if kind == "collect_list":
            return list(state)
        if kind in DISTINCT:
            values = list(state[1])
            if kind == "count_distinct":
                return len(values)
            if not values:
                return None
            return aggregate.value(kind.split("_")[0], [], values, self.types[0])
        return state


def fold(kind: str, types: tuple[pa.DataType, ...], params: tuple = ()) -> Fold:
    """The Fold of ``kind`` over arguments of ``types`` and constant ``params`` (FoldTypeError
    when it takes none such)."""
    return Fold(kind, tuple(types), result_type(kind, tuple(types), tuple(params)), tuple(params))


def evaluated(trees: list[exp.Expression], one: Callable[[exp.Expression], Any]) -> list:
    """The constant arguments ``trees`` (mr_functions.aggregate_parameters) evaluated by ``one``;
    an ``array(...)`` of them element by element (the local engine builds no arrays)."""
    return [[one(e) for e in t.expressions] if isinstance(t, exp.Array) else one(t) for t in trees]


def parameters(kind: str, values: list) -> tuple:
    """The constant arguments' Python values as a Fold keeps them: a percentile's p as a float (a
    tuple of floats for an array), listagg's separator as is."""
    if kind != "percentile":
        return tuple(values)
    p = values[0]
    if isinstance(p, list):
        return (tuple(None if v is None else float(v) for v in p),)
    return (None if p is None else float(p),)


def _higher_step(state, x: float):
    """Count, mean and 2nd to 4th central moments after one more value (Spark's update: each
    moment from the ones below it already updated)."""
    n, mean, m2, m3, m4 = state
    n1 = n + 1.0
    delta = x - mean
    delta_n = delta / n1
    m2 = m2 + delta * (delta - delta_n)
    delta2, delta_n2 = delta * delta, delta_n * delta_n
    m3 = m3 - 3.0 * delta_n * m2 + delta * (delta2 - delta_n2)
    m4 = m4 - 4.0 * delta_n * m3 - 6.0 * delta_n2 * m2 + delta * (delta * delta2 - delta_n * delta_n2)
    return n1, mean + delta_n, m2, m3, m4


def _higher_value(kind: str, state):
    n, _, m2, m3, m4 = state
    if n == 0 or m2 == 0:
        return None
    if kind == "skewness":
        return math.sqrt(n) * m3 / math.sqrt(m2 * m2 * m2)
    return n * m4 / (m2 * m2) - 3.0


def _pair_step(state, a: float, b: float):
    """(count, mean a, mean b, co-moment, a's and b's second moments as corr keeps them, as
    var_pop keeps them, and the co-moment as regr_slope keeps it) after one more pair."""
    n, mean_a, mean_b, ck, mk_a, mk_b, m2_a, m2_b, ck_b = state
    n1 = n + 1.0
    da, db = a - mean_a, b - mean_b
    da_n, db_n = da / n1, db / n1
    new_a, new_b = mean_a + da_n, mean_b + db_n
    return (n1, new_a, new_b, ck + da * (b - new_b), mk_a + da * (a - new_a), mk_b + db * (b - new_b),
            m2_a + da * (da - da_n), m2_b + db * (db - db_n), ck_b + db * (a - new_a))


def _pair_value(kind: str, state):
    """corr/covar of (x, y) = (a, b); regr_*(y, x) of (y, x) = (a, b)."""
    n, mean_a, mean_b, ck, mk_a, mk_b, m2_a, m2_b, ck_b = state
    if n == 0 or (kind == "covar_samp" and n == 1):
        return None
    if kind == "corr":
        return None if mk_a * mk_b == 0 else ck / math.sqrt(mk_a * mk_b)
    if kind in ("covar_pop", "covar_samp"):
        return ck / (n if kind == "covar_pop" else n - 1.0)
    if kind in ("regr_sxx", "regr_syy", "regr_sxy"):
        return {"regr_sxx": m2_b, "regr_syy": m2_a, "regr_sxy": ck}[kind]
    if m2_b == 0:
        return None
    if kind == "regr_r2":
        return 1.0 if m2_a == 0 else (ck / math.sqrt(mk_a * mk_b)) ** 2
    slope = ck_b / m2_b
    return slope if kind == "regr_slope" else mean_a - slope * mean_b


def _percentile_value(values: tuple, p):
    """Spark's exact percentile: NULL over no values or no percentages."""
    if not values or p == ():
        return None
    first: dict = {}  # equal values (-0.0 and 0.0) count as the first of them, as Spark keys them
    ordered = sorted((first.setdefault(_distinct_key(float(v)), float(v)) for v in values), key=_order_key)

    def at(q: float) -> float:
        position = (len(ordered) - 1) * q
        lower, higher = math.floor(position), math.ceil(position)
        low, high = ordered[lower], ordered[higher]
        if lower == higher or _order_key(low) == _order_key(high):
            return low
        return low + (position - lower) * (high - low)

    return [at(q) for q in p] if isinstance(p, tuple) else at(p)


def _regr_list_value(kind: str, pairs: tuple, types):
    """regr_count, or avg (of sum's exactness) of x (regr_avgx) or y over the pairs."""
    if kind == "regr_count":
        return len(pairs)
    if not pairs:
        return None
    which = 1 if kind == "regr_avgx" else 0
    return aggregate.value("avg", [], [p[which] for p in pairs], types[which])


def _try_step(kind: str, t: pa.DataType, state, x):
    """(count, total, overflowed): integers summed exactly (try_sum) or as doubles (try_avg),
    decimals as exact units of their scale, doubles as doubles."""
    count, total, overflowed = state
    if pa.types.is_decimal(t):
        return count + 1, total + int(x.scaleb(t.scale, context=_EXACT)), False
    if pa.types.is_integer(t) and kind == "try_sum":
        total = total + x
        return count + 1, total, overflowed or not BIGINT_MIN <= total <= BIGINT_MAX
    return count + 1, total + float(x), False


def _try_value(kind: str, t: pa.DataType, result: pa.DataType, state):
    count, total, overflowed = state
    if count == 0 or overflowed:
        return None
    if not pa.types.is_decimal(t):
        return total if kind == "try_sum" else total / count
    if abs(total) >= 10 ** aggregate.decimal_sum_type(t).precision:
        return None
    if kind == "try_sum":
        return Decimal(total).scaleb(-t.scale, context=_EXACT)
    scaled = total * 10 ** (result.scale - t.scale)
    rounded, rest = divmod(abs(scaled), count)
    rounded = (rounded + (2 * rest >= count)) * (1 if scaled >= 0 else -1)
    if abs(rounded) >= 10 ** result.precision:
        return None
    return Decimal(rounded).scaleb(-result.scale, context=_EXACT)


def _joined(values: tuple, separator, binary: bool):
    if not values:
        return None
    sep = separator if separator is not None else (b"" if binary else "")
    return sep.join(values)


def _by(kind: str, state, x, y):
    """min_by/max_by: (the least/greatest y so far as a sort key, its x)."""
    if y is None:
        return state
    key = _order_key(y)
    best = state[0]
    if best is None or (key >= best if kind == "max_by" else key <= best):
        return key, x
    return state


def _order_key(y):
    """Spark's order of a value: NaN above every number, -0.0 equal to 0.0."""
    if isinstance(y, float):
        return (1, 0.0) if math.isnan(y) else (0, y + 0.0)
    return (0, y)


def _distinct_key(x):
    """Spark's grouping of a value: NaN equal to NaN, -0.0 equal to 0.0."""
    if isinstance(x, float):
        return ("nan",) if math.isnan(x) else (x + 0.0,)
    return x


__all__ = ["BITS", "DISTINCT", "Fold", "FoldTypeError", "HIGHER", "KINDS", "MOMENTS", "PAIRS", "PERCENTILES", "REGR_LISTS",
           "TRIES", "TWO_ARGUMENTS", "empty", "evaluated", "fold", "parameters", "result_type"]
