"""Aggregates over a variable's events in SELECT: what is accepted and its types.

Input: sqlglot trees of SELECT expressions. Output: the aggregate calls they make, checked
(``check``), typed (``result_type``), and written as Spark SQL over the hidden column that holds
the variable's events on Spark (``spark_sql``). The local engines compute the same values in
``cerql.exec.aggregate``.

An aggregate reads one column of one pattern variable, ``sum(b.volume)``, or counts its events,
``count(b)``. Its value is Spark's aggregate of that column over the variable's events in
stream order: ``sum``, ``avg``, ``min``, ``max`` and ``count(b.col)`` skip NULLs (NULL, or 0 for
count, when nothing is left), ``first``/``last`` take the first/last event's value as it is,
``collect_list`` the non-NULL values in order. A variable without events in a result gives the
value of no rows. Single-event variables count as sets of zero or one event (docs/semantics.md,
"Aggregates over a variable's events in SELECT").
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from cerql.exec.aggregate import decimal_avg_type, decimal_sum_type

KINDS = {exp.Sum: "sum", exp.Count: "count", exp.Avg: "avg", exp.Min: "min", exp.Max: "max",
         exp.First: "first", exp.Last: "last", exp.ArrayAgg: "collect_list"}
NUMERIC_ONLY = ("sum", "avg")


class AggregateError(Exception):
    """Why an aggregate call is refused, and the node to point at."""

    def __init__(self, message: str, node: exp.Expression, error_class: str, hint: str):
        super().__init__(message)
        self.message, self.node, self.error_class, self.hint = message, node, error_class, hint


def calls(tree: exp.Expression) -> list[exp.AggFunc]:
    """The aggregate calls of an expression, outermost first, in text order."""
    return [node for node in tree.find_all(exp.AggFunc) if not any(
        isinstance(p, exp.AggFunc) for p in _ancestors(node))]


def _ancestors(node: exp.Expression):
    p = node.parent
    while p is not None:
        yield p
        p = p.parent


def as_columns(tree: exp.Expression, prefix: str) -> exp.Expression:
    """A copy of ``tree`` with its k-th aggregate call (in ``calls`` order) made the column
    ``{prefix}{k}``: the value the engine computes for it. The column keeps where the call was
    written, when the call knows it (``meta["extent"]``, planner/navigation.py sets it)."""
    tree = tree.copy()
    for k, call in enumerate(calls(tree)):
        column = exp.column(f"{prefix}{k}")
        if "extent" in call.meta:  # parser/written.py's EXTENT (this module imports no parser)
            column.meta["extent"] = call.meta["extent"]
        tree = column if call is tree else tree
        call.replace(column)
    return tree


def argument(call: exp.AggFunc) -> tuple[str, str | None]:
    """(variable, column) an accepted call reads; column None for ``count(var)``."""
    col = call.this
    return (col.table, col.name) if col.table else (col.name, None)


def check(call: exp.AggFunc, variables) -> None:
    """Raise AggregateError unless ``call`` is one of KINDS over ``var.col`` (or ``count(var)``)."""
    kind = KINDS.get(type(call))
    name = call.sql(dialect="spark")
    if kind is None:
        raise AggregateError(f"Aggregate '{name}' is not supported", call, "UNSUPPORTED_AGGREGATE",
                             "use sum, count, avg, min, max, first, last or collect_list")
    col = call.this
    extra = [k for k, v in call.args.items() if v and k not in ("this", "big_int", "nulls_excluded")]  # flags
    if not isinstance(col, exp.Column) or extra or isinstance(call.parent, exp.IgnoreNulls) \
            or next(col.find_all(exp.AggFunc), None) is not None:
        raise AggregateError(f"Aggregate '{name}' must read one variable", call, "AGGREGATE_ARGUMENT",
                             "write e.g. sum(b.volume) or sum(b.price * b.volume) (columns of one variable), "
                             "or count(b) for its events")
    var = col.table or col.name
    if var not in variables:
        raise AggregateError(f"Unknown variable '{var}' in '{name}'", col, "UNKNOWN_VARIABLE",
                             f"the pattern defines {', '.join(variables)}")
    if not col.table and kind != "count":
        raise AggregateError(f"'{name}' needs a column of '{var}'", col, "AGGREGATE_ARGUMENT",
                             f"write {kind}({var}.column); only count({var}) counts events")


def result_type(kind: str, column_type: pa.DataType | None) -> pa.DataType:
    """Spark's result type of an aggregate of a column of ``column_type`` (None: count(var)).
    Over DECIMAL(p, s), ``sum`` is DECIMAL(p + 10, s) and ``avg`` DECIMAL(p + 4, s + 4), each
    bounded by 38 (Spark's ``DecimalType.bounded``)."""
    if kind == "count":
        return pa.int64()
    if kind in NUMERIC_ONLY and pa.types.is_decimal(column_type):
        return decimal_sum_type(column_type) if kind == "sum" else decimal_avg_type(column_type)
    if kind == "avg":
        return pa.float64()
    if kind == "sum":
        return pa.int64() if pa.types.is_integer(column_type) else pa.float64()
    if kind == "collect_list":
        return pa.list_(column_type)
    return column_type


def accepts(kind: str, column_type: pa.DataType) -> bool:
    """Whether the local engines and Spark agree on this aggregate of this type: sum and avg take
    numbers, decimals included (128-bit ones: Spark's DECIMAL holds at most 38 digits)."""
    if kind in NUMERIC_ONLY:
        return (pa.types.is_integer(column_type) or pa.types.is_floating(column_type)
                or pa.types.is_decimal128(column_type))
    return True


def spark_sql(kind: str, hidden: str, column: str | None, many: bool, value_type: pa.DataType,
              column_type: pa.DataType | None = None) -> str:
    """The aggregate as Spark SQL over ``hidden``: the variable's hidden column on Spark, an array
    of structs (``many``) or one nullable struct. ``value_type`` is the aggregate's result type,
    ``column_type`` the column's (needed for the avg of a decimal)."""
    if column is None:  # count(var)
        return f"CAST(size({hidden}) AS BIGINT)" if many else f"CAST(IF({hidden} IS NULL, 0, 1) AS BIGINT)"
    values = f"{hidden}.`{column}`" if many else f"filter(array({hidden}.`{column}`), v -> {hidden} IS NOT NULL)"
    present = f"filter({values}, v -> v IS NOT NULL)"
    if kind == "count":
        return f"CAST(size({present}) AS BIGINT)"
    if kind in NUMERIC_ONLY and pa.types.is_decimal(value_type):
        return _decimal_sql(kind, present, value_type, column_type)
    if kind == "sum":
        acc = "BIGINT" if pa.types.is_integer(value_type) else "DOUBLE"
        return f"aggregate({present}, CAST(NULL AS {acc}), (acc, v) -> coalesce(acc, CAST(0 AS {acc})) + v)"
    if kind == "avg":
        return (f"aggregate({present}, named_struct('s', CAST(0 AS DOUBLE), 'n', CAST(0 AS BIGINT)), "
                "(acc, v) -> named_struct('s', acc.s + v, 'n', acc.n + 1), "
                "acc -> IF(acc.n = 0, CAST(NULL AS DOUBLE), acc.s / acc.n))")
    if kind in ("min", "max"):
        return f"array_{kind}({present})"
    if kind == "first":
        return f"try_element_at({values}, 1)"
    if kind == "last":
        return f"try_element_at({values}, -1)"
    return present  # collect_list


def _decimal_sql(kind: str, present: str, value_type: pa.Decimal128Type, column_type: pa.DataType | None) -> str:
    """sum or avg of decimals as Spark's own sum and avg compute them (exec/aggregate.py).

    The running sum is Spark's sum type DECIMAL(P, s), P = min(38, p + 10), cast back after each
    addition (Spark widens ``acc + v`` by a digit; the cast fails where the sum leaves the type).
    At P = 38 Spark's ``+`` keeps only 37 digits and drops a fraction digit when s > 6, so there
    the sum counts units of 10**-s in DECIMAL(38, 0) instead (a value's units are its digits
    without the point). Spark's division of decimals loses fraction digits near 38 digits too, so
    avg divides by long division: the sum's digits and 10**(scale gained) are divided by the
    count digit by digit in BIGINT (the remainder stays below the count), the quotient is rounded
    half up from the last remainder and read back, shifted by an exponent, as Spark's avg type."""
    sum_type = decimal_sum_type(column_type) if kind == "avg" else value_type
    precision, scale = sum_type.precision, sum_type.scale
    if precision == 38 and scale > 6:
        acc = f"DECIMAL({precision},0)"
        add = f"CAST({{}} + CAST(replace(CAST(v AS STRING), '.', '') AS DECIMAL(38,0)) AS {acc})"
        total = f"CAST(concat(CAST({{}} AS STRING), 'E-{scale}') AS DECIMAL({precision},{scale}))"
    else:
        acc = f"DECIMAL({precision},{scale})"
        add, total = f"CAST({{}} + v AS {acc})", "{}"
    if kind == "sum":
        start = f"coalesce(acc, CAST(0 AS {acc}))"
        return f"aggregate({present}, CAST(NULL AS {acc}), (acc, v) -> {add.format(start)}, acc -> {total.format('acc')})"
    out = f"DECIMAL({value_type.precision},{value_type.scale})"
    digits = (f"concat(replace(CAST(abs(acc.s) AS STRING), '.', ''), "
              f"repeat('0', {value_type.scale - scale}))")
    quotient = (f"aggregate(split({digits}, ''), named_struct('q', '', 'r', CAST(0 AS BIGINT)), "
                "(d, c) -> named_struct('q', concat(d.q, CAST((d.r * 10 + CAST(c AS BIGINT)) div acc.n AS STRING)), "
                "'r', (d.r * 10 + CAST(c AS BIGINT)) % acc.n), "
                "d -> CAST(d.q AS DECIMAL(38,0)) + IF(2 * d.r >= acc.n, 1, 0))")
    return (f"aggregate({present}, named_struct('s', CAST(0 AS {acc}), 'n', CAST(0 AS BIGINT)), "
            f"(acc, v) -> named_struct('s', {add.format('acc.s')}, 'n', acc.n + 1), "
            f"acc -> IF(acc.n = 0, CAST(NULL AS {out}), "
            f"CAST(concat(IF(acc.s < 0, '-', ''), CAST({quotient} AS STRING), 'E-{value_type.scale}') AS {out})))")
