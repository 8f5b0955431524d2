"""GROUP BY, HAVING and aggregates of the query around a MATCH_RECOGNIZE item, without Spark.

Input: the outer query's SELECT (a sqlglot tree), the item's rows its WHERE keeps and the
column resolver of exec/mr_outer.py. Output: the SELECT list's values, one row per group, the
groups HAVING keeps, and ORDER BY keys over them (:class:`Grouped`). exec/mr_outer.py applies
DISTINCT, ORDER BY and LIMIT after it, as Spark does.

Spark's rules (Spark 4, ANSI mode, default confs; docs/semantics.md, "MATCH_RECOGNIZE"):

- the groups: the GROUP BY expressions; ``GROUP BY 2`` is the SELECT list's second item
  (``spark.sql.groupByOrdinal``); a name no column of the item has is the SELECT alias of that
  name (``spark.sql.groupByAliases``); ``GROUP BY ALL`` the SELECT items without an aggregate.
  Keys compare as Spark groups them: NULLs are one group, NaN equals NaN, -0.0 equals 0.0 (and
  the key reads 0.0, as Spark normalizes it). An aggregate or HAVING without GROUP BY makes one
  group, even over no rows (count 0, sum NULL); GROUP BY over no rows, no group;
- a SELECT item, HAVING and ORDER BY read grouping expressions (matched as written, parentheses
  aside, columns by the names they resolve to), aggregates and constants; any other column is
  Spark's MISSING_AGGREGATION. In HAVING and ORDER BY a name is first the SELECT item of that
  name (the first one), as Spark resolves it, then a grouping column;
- the aggregates are the MEASURES' ones: count, sum, avg, min, max by exec/aggregate.py's
  ``grouped``, the others by the folds of exec/mr_folds.py, with Spark's result types; ``FILTER
  (WHERE ...)`` too. Refused (LOCAL_OUTER_QUERY): the aggregates whose value depends on the order
  Spark reads the rows, which the query around the item does not fix (collect_list, listagg,
  min_by, max_by, first, last, any_value...), and those the engine does not compute. Rows are
  aggregated in the item's row order: a DOUBLE sum, avg or moment over values whose sums round
  may differ from Spark's in its last bits, since Spark adds up each partition first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from cerql import mr_functions as mx
from cerql.errors import AnalysisError, UnsupportedError
from cerql.exec import aggregate, mr_folds
from cerql.exec.mr_measures import aggregate_type
from cerql.exec.spark_names import spark_name
from cerql.expr import ExprError, compile_expr, evaluate
from cerql.expr.literals import literal_scalar

HINT = "run the query on Spark, where the query around MATCH_RECOGNIZE is Spark SQL: spark.cer_sql(query)"
# The aggregates whose value depends on the order of the rows they read (Spark's order of the
# item's rows is not fixed): collect_list's array, listagg's string, min_by/max_by among ties.
ORDER_DEPENDENT = ("collect_list", "listagg", "min_by", "max_by")
_PLAIN = ("count", "sum", "avg", "min", "max")
_KEY, _AGGREGATE, _OUTPUT = "__cerql_key{}", "__cerql_agg{}", "__cerql_out{}"


def refuse(what: str) -> UnsupportedError:
    """The local engine's refusal of a construct of the query around the item."""
    return UnsupportedError(f"{what} around MATCH_RECOGNIZE runs on Spark only", error_class="LOCAL_OUTER_QUERY",
                            hint=HINT)


def evaluated(node: exp.Expression, table: pa.Table, resolve) -> pa.Array:
    """``node``'s values over ``table`` (cerql/expr), its errors as CeqlErrors. A number literal
    that is the whole expression (``sum(1.5)``, ``SELECT 1.5``) is typed as Spark types it (a
    DECIMAL for ``1.5``): cerql.expr reads a bare decimal literal as a DOUBLE, for CEQL's
    register checks (its ``compile_expr``), which the query around the item does not have."""
    bare = node.unnest()
    negative = isinstance(bare, exp.Neg)
    bare = bare.this if negative else bare
    if isinstance(bare, exp.Literal) and not bare.is_string:
        try:
            value = literal_scalar(bare, negative)
        except ExprError as err:
            raise err.cls(err.message, error_class=err.error_class, hint=err.hint) from None
        return pa.array([value.as_py()] * table.num_rows, value.type)
    try:
        return evaluate(compile_expr(node, resolve), table)
    except ExprError as err:
        raise err.cls(err.message, error_class=err.error_class, hint=err.hint) from None


def is_aggregate(node: exp.Expression) -> bool:
    """Any aggregate call, one the engine computes or not (first/last too), or ``agg FILTER (...)``."""
    return isinstance(node, exp.Filter) or mx.is_aggregate(node) or isinstance(node, exp.AggFunc)


def has_aggregate(node: exp.Expression) -> bool:
    return any(is_aggregate(n) for n in node.walk())


def is_aggregate_query(tree: exp.Select) -> bool:
    """GROUP BY, HAVING or an aggregate in the SELECT list: Spark aggregates the rows."""
    return bool(tree.args.get("group") or tree.args.get("having")) or any(has_aggregate(i) for i in tree.expressions)


def output_name(item: exp.Expression, source: str | None = None) -> str:
    """The name of a SELECT item's column read from the text ``source``: its alias, its column's
    name as written, else Spark's automatic name (exec/spark_names.py), or the item's text where
    that module does not know Spark's."""
    if isinstance(item, (exp.Alias, exp.Column)):
        return item.alias_or_name
    return spark_name(item, source) or item.sql("spark")


# -- groups of rows
def group_value(v):
    """A value as Spark compares grouping keys: NaN equal to NaN, -0.0 to 0.0 (nested too)."""
    if isinstance(v, float):
        return ("NaN",) if v != v else v + 0.0
    if isinstance(v, list):
        return tuple(group_value(x) for x in v)
    if isinstance(v, dict):
        return tuple((k, group_value(x)) for k, x in v.items())
    return v


def unsigned_zeros(values: pa.Array) -> pa.Array:
    """``values`` with each -0.0 (nested too) read 0.0, as Spark normalizes grouping keys."""
    t = values.type
    if pa.types.is_floating(t):
        return pc.if_else(pc.equal(values, pa.scalar(0, t)), pa.scalar(0.0, t), values)
    if "float" in str(t) or "double" in str(t):
        return pa.array([_plus_zero(v) for v in values.to_pylist()], t)
    return values


def _plus_zero(v):
    if isinstance(v, float):
        return v + 0.0
    if isinstance(v, list):
        return [_plus_zero(x) for x in v]
    if isinstance(v, dict):
        return {k: _plus_zero(x) for k, x in v.items()}
    return v


@dataclass(frozen=True)
class Groups:
    """Rows in groups: ``ids`` each row's group (numbered by first row), ``first`` each group's
    first row, ``count`` how many."""

    ids: np.ndarray
    first: np.ndarray
    count: int


def group_rows(keys: list[pa.Array], rows: int) -> Groups:
    """The groups of rows whose ``keys`` are equal as Spark groups them; over no keys, one group
    (of every row, possibly none)."""
    if not keys:
        return Groups(np.zeros(rows, np.int64), np.zeros(1, np.int64), 1)
    if any("map<" in str(k.type) for k in keys):
        raise refuse("Grouping by a MAP value")
    columns = [[group_value(v) for v in k.to_pylist()] for k in keys]
    seen: dict[tuple, int] = {}
    ids = np.fromiter((seen.setdefault(key, len(seen)) for key in zip(*columns)), np.int64, rows)
    first = np.zeros(len(seen), np.int64)
    first[ids[::-1]] = np.arange(rows - 1, -1, -1)
    return Groups(ids, first, len(seen))


# -- the query
@dataclass(frozen=True)
class Grouped:
    """An aggregate query's result before DISTINCT, ORDER BY and LIMIT: the SELECT list's
    columns for the groups HAVING keeps, and an ORDER BY key's values for them."""

    selected: pa.Table
    order_key: Callable[[exp.Expression], pa.Array]


def run_grouped(tree: exp.Select, table: pa.Table, resolve, source: str | None = None) -> Grouped:
    """The aggregate query ``tree`` (read from the text ``source``) over ``table`` (the rows its
    WHERE keeps; module docstring)."""
    items = _expanded(tree.expressions, table)
    keys = grouping(tree.args.get("group"), items, table)
    values = [evaluated(k, table, resolve) for k in keys]
    scope = _Scope(table, resolve, group_rows(values, table.num_rows), keys, values)
    names = [output_name(item, source) for item in items]
    columns = [scope.values(item.this if isinstance(item, exp.Alias) else item, None) for item in items]
    selected = pa.table(columns, names=names)
    aliases: dict[str, str] = {}
    for name, column in zip(names, columns):
        aliases.setdefault(name.lower(), scope.field(_OUTPUT, column))
    scope.shadowing = {i.alias.lower() for i in items if isinstance(i, exp.Alias) and not (
        isinstance(i.this, exp.Column) and i.this.name.lower() == i.alias.lower())}
    having = tree.args.get("having")
    order = tree.args.get("order")
    if having is not None and order is not None and any(has_aggregate(o.this) for o in order.expressions):
        # Spark 4 fails on this one (UNSUPPORTED_EXPR_FOR_OPERATOR) where it could answer
        raise refuse("An aggregate in ORDER BY with HAVING")
    keep = pa.array(np.ones(selected.num_rows, bool))
    if having is not None:
        keep = _true(scope.values(having.this, aliases), "HAVING")
    return Grouped(selected.filter(keep), lambda node: scope.values(node, aliases).filter(keep))


def _true(values: pa.Array, clause: str) -> pa.Array:
    """Where a condition is true (NULL is not), as HAVING keeps groups and FILTER rows."""
    if pa.types.is_null(values.type):
        return pa.array(np.zeros(len(values), bool))
    if not pa.types.is_boolean(values.type):
        raise AnalysisError(f"{clause} takes a condition, not a {values.type}", error_class="DATATYPE_MISMATCH",
                            hint=f"write a comparison in {clause}: count(*) > 2, x IS NOT NULL")
    return pc.fill_null(values, False)


def _expanded(items: list[exp.Expression], table: pa.Table) -> list[exp.Expression]:
    """The SELECT list with ``*`` and ``alias.*`` as the item's columns (exec/mr_outer.py has
    checked the qualifier)."""
    out: list[exp.Expression] = []
    for item in items:
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
            out += [exp.column(name, quoted=True) for name in table.column_names]
        else:
            out.append(item)
    return out


def grouping(group: exp.Group | None, items: list[exp.Expression], table: pa.Table) -> list[exp.Expression]:
    """The grouping expressions: GROUP BY's, ordinals and aliases read as the SELECT items they
    name (module docstring); none without GROUP BY."""
    if group is None:
        return []
    if group.args.get("rollup") or group.args.get("cube") or group.args.get("grouping_sets") or any(
            isinstance(e, (exp.Rollup, exp.Cube, exp.GroupingSets)) for e in group.expressions):
        raise refuse("GROUPING SETS, ROLLUP or CUBE")
    bare = [i.this if isinstance(i, exp.Alias) else i for i in items]
    if group.args.get("all"):
        return [b for b in bare if not has_aggregate(b)]
    columns = {name.lower() for name in table.column_names}
    aliases = {i.alias.lower(): i.this for i in items if isinstance(i, exp.Alias)}
    keys = []
    for e in group.expressions:
        if isinstance(e, exp.Literal) and not e.is_string and e.this.isdigit():
            position = int(e.this)
            if not 1 <= position <= len(bare):
                raise AnalysisError(f"GROUP BY position {position} is not in the select list (1 to {len(bare)})",
                                    error_class="GROUP_BY_POS_OUT_OF_RANGE", hint="GROUP BY a SELECT item's position")
            e = bare[position - 1]
            if has_aggregate(e):
                raise AnalysisError(f"GROUP BY {position} refers to an aggregate, {e.sql('spark')}",
                                    error_class="GROUP_BY_POS_AGGREGATE", hint="GROUP BY a SELECT item without one")
        elif isinstance(e, exp.Column) and not e.table and e.name.lower() not in columns and e.name.lower() in aliases:
            e = aliases[e.name.lower()]
        if has_aggregate(e):
            raise AnalysisError(f"GROUP BY {e.sql('spark')} holds an aggregate", error_class="GROUP_BY_AGGREGATE",
                                hint="aggregates go in the SELECT list, HAVING or ORDER BY")
        keys.append(e)
    return keys


def canonical(node: exp.Expression, resolve) -> str | None:
    """``node``'s text with each column named as it resolves and parentheses dropped: equal for
    two ways of writing one grouping expression; None when a column does not resolve."""
    tree = node.copy()
    for column in list(tree.find_all(exp.Column)):
        if isinstance(column.this, exp.Star):
            return None
        try:
            real = exp.column(resolve(column).lower(), quoted=True)
        except AnalysisError:
            return None
        if column is tree:
            tree = real
        else:
            column.replace(real)
    for paren in list(tree.find_all(exp.Paren)):
        if paren is tree:
            tree = paren.this
        else:
            paren.replace(paren.this)
    return tree.sql("spark")


class _Scope:
    """The groups of one aggregate query and the per-group columns computed so far (``fields``):
    the grouping keys, the aggregates (each once), the SELECT list's outputs."""

    def __init__(self, table: pa.Table, resolve, groups: Groups, keys: list[exp.Expression], values: list[pa.Array]):
        self.table, self.resolve, self.groups = table, resolve, groups
        self.fields: dict[str, pa.Array] = {}
        self.keys: dict[str, str] = {}
        for key, value in zip(keys, values):
            self.keys.setdefault(canonical(key, resolve), self.field(_KEY, unsigned_zeros(value.take(groups.first))))
        self.aggregates: dict[str, str] = {}
        self.shadowing: set[str] = set()  # HAVING's and ORDER BY's aggregates may not read these names
        self.order = np.argsort(groups.ids, kind="stable")  # the rows group by group, each in row order

    def field(self, pattern: str, values: pa.Array) -> str:
        name = pattern.format(len(self.fields))
        self.fields[name] = values
        return name

    def values(self, node: exp.Expression, aliases: dict[str, str] | None) -> pa.Array:
        """``node`` per group: its grouping expressions, aggregates and (``aliases``: HAVING,
        ORDER BY) SELECT outputs read from the fields."""
        lifted = self.lift(node.copy(), aliases)
        table = pa.table(self.fields) if self.fields else pa.table(
            {"__cerql_groups": pa.array(np.zeros(self.groups.count, np.int8))})
        return evaluated(lifted, table, lambda column: column.name)

    def lift(self, node: exp.Expression, aliases: dict[str, str] | None) -> exp.Expression:
        """``node`` (a copy, changed in place) over the fields (module docstring)."""
        if aliases is not None and isinstance(node, exp.Column) and not node.table and node.name.lower() in aliases:
            return exp.column(aliases[node.name.lower()])
        key = self.keys.get(canonical(node, self.resolve)) if not isinstance(node, exp.Literal) else None
        if key is not None:
            return exp.column(key)
        if is_aggregate(node):
            return exp.column(self.aggregate(node, aliases is not None))
        if isinstance(node, exp.Column):
            self.resolve(node)  # an unknown column is UNKNOWN_COLUMN
            raise AnalysisError(f"'{node.sql('spark')}' is neither grouped nor aggregated",
                                error_class="MISSING_AGGREGATION",
                                hint="add it to GROUP BY, or aggregate it: max(x), any_value on Spark")
        if isinstance(node, exp.Star):
            raise refuse("A * outside the SELECT list")
        for child in list(node.iter_expressions()):
            new = self.lift(child, aliases)
            if new is not child:
                child.replace(new)
        return node

    def aggregate(self, node: exp.Expression, after_select: bool) -> str:
        """The field of an aggregate's values per group, computed once per aggregate."""
        key = canonical(node, self.resolve) or node.sql("spark")
        if key not in self.aggregates:
            if after_select and any(c.name.lower() in self.shadowing for c in node.find_all(exp.Column)):
                raise refuse(f"{node.sql('spark')}, whose column has a SELECT alias's name,")
            self.aggregates[key] = self.field(_AGGREGATE, aggregate_values(node, self.table, self.resolve,
                                                                           self.groups, self.order))
        return self.aggregates[key]


# -- aggregates
def aggregate_values(node: exp.Expression, table: pa.Table, resolve, groups: Groups, order: np.ndarray) -> pa.Array:
    """One aggregate call (``FILTER (WHERE ...)`` too) over each group's rows, in row order."""
    condition = None
    if isinstance(node, exp.Filter):
        node, condition = node.this, node.expression.this
    kind, args = _checked(node)
    rows = order
    if condition is not None:
        keep = np.asarray(_true(evaluated(condition, table, resolve), "FILTER").to_numpy(zero_copy_only=False), bool)
        rows = order[keep[order]]
    offsets = np.zeros(groups.count + 1, np.int64)
    np.cumsum(np.bincount(groups.ids[rows], minlength=groups.count), out=offsets[1:])
    if kind == "count" and isinstance(args[0], exp.Star):
        return pa.array(np.diff(offsets), pa.int64())
    rows_read = table.take(pa.array(rows, pa.int64()))  # as Spark, the argument is read where FILTER holds
    values = [evaluated(a, rows_read, resolve) for a in args]
    if kind in mr_folds.DISTINCT and values[0].type.num_fields > 0:  # lists, structs: unhashable in a fold
        raise refuse(f"The aggregate {node.sql('spark')} of a {values[0].type} column")
    if kind in _PLAIN:
        _check_plain(node, kind, values[0].type)
        result = aggregate.grouped(kind, offsets, values[0], aggregate_type(kind, values[0].type))
    else:
        result = _folded(node, kind, values, offsets)
    if kind in _ZERO_SENSITIVE and pa.types.is_floating(values[0].type):
        _refuse_signed_zero_ties(node, values[0], offsets, result)
    return result


# Aggregates that keep one of equal values: of -0.0 and 0.0, the one Spark reads first.
_ZERO_SENSITIVE = ("min", "max", "median", "percentile", "sum_distinct", "avg_distinct")


def _refuse_signed_zero_ties(node: exp.Expression, values: pa.Array, offsets: np.ndarray, result: pa.Array):
    """Refused when a group's value is a zero and the group has both -0.0 and 0.0: the zero's sign
    is then the one Spark reads first, in an order the query around the item does not fix."""
    numbers = np.asarray(values.fill_null(1.0).to_numpy(zero_copy_only=False), np.float64)
    owner = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    zero = numbers == 0.0
    negative = np.bincount(owner[zero & np.signbit(numbers)], minlength=len(offsets) - 1)
    positive = np.bincount(owner[zero & ~np.signbit(numbers)], minlength=len(offsets) - 1)
    for group in np.flatnonzero((negative > 0) & (positive > 0)):
        value = result[int(group)].as_py()
        if any(v == 0.0 for v in (value if isinstance(value, list) else [value]) if v is not None):
            raise refuse(f"The aggregate {node.sql('spark')} over both -0.0 and 0.0 (the zero's sign is the one "
                         "Spark reads first)")


def _checked(node: exp.Expression) -> tuple[str, list[exp.Expression]]:
    """(kind, arguments) of an aggregate the local engine computes as Spark; else refused."""
    kind = mx.aggregate_kind(node)
    shown = node.sql("spark")
    if kind is None:
        why = mx.refusal(node)[0] if mx.is_aggregate(node) else "the local engine does not compute it"
        raise refuse(f"The aggregate {shown} ({why})")
    if kind in ORDER_DEPENDENT:
        raise refuse(f"The aggregate {shown} (its value depends on the order Spark reads the rows, which the "
                     "query around the item does not fix)")
    args = mx.aggregate_arguments(node)
    count = isinstance(node, exp.Count)
    if (count and node.args.get("expressions")) or len(args) != mx.aggregate_arity(kind) or (
            count and isinstance(args[0], exp.Column) and isinstance(args[0].this, exp.Star)):
        raise refuse(f"The aggregate {shown} (of these arguments)")
    if any(has_aggregate(a) for a in args):
        raise AnalysisError(f"{shown} has an aggregate in its argument", error_class="NESTED_AGGREGATE_FUNCTION",
                            hint="aggregate the rows once; a subquery on Spark aggregates twice")
    if isinstance(args[0], exp.Star) and kind != "count":
        raise refuse(f"The aggregate {shown}")
    return kind, args


def _check_plain(node: exp.Expression, kind: str, t: pa.DataType):
    """sum/avg take numbers; min/max the types Arrow orders as Spark does."""
    number = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_null(t)
    ordered = number or pa.types.is_string(t) or pa.types.is_boolean(t) or pa.types.is_date(t) or \
        pa.types.is_timestamp(t)
    if (kind in ("sum", "avg") and not number) or (kind in ("min", "max") and not ordered):
        raise refuse(f"The aggregate {node.sql('spark')} of a {t} column")


def _folded(node: exp.Expression, kind: str, values: list[pa.Array], offsets: np.ndarray) -> pa.Array:
    """An aggregate of exec/mr_folds.py: its fold over each group's rows in row order."""
    one_row = pa.table({"__cerql_constant": pa.array([0], pa.int8())})

    def constant(tree: exp.Expression):
        def no_column(column: exp.Column) -> str:
            raise refuse(f"The aggregate {node.sql('spark')} with a column as its constant argument")
        return evaluated(tree, one_row, no_column).to_pylist()[0]

    params = mr_folds.evaluated(mx.aggregate_parameters(node), constant)
    try:
        f = mr_folds.fold(kind, tuple(v.type for v in values), mr_folds.parameters(kind, params))
    except mr_folds.FoldTypeError as err:
        raise AnalysisError(err.message, error_class="DATATYPE_MISMATCH", hint=err.hint) from None
    columns = [v.to_pylist() for v in values]
    out = []
    for g in range(len(offsets) - 1):
        state = f.empty
        for i in range(int(offsets[g]), int(offsets[g + 1])):
            state = f.step(state, tuple(c[i] for c in columns))
        out.append(f.value(state))
    return pa.array(out, f.result_type)


__all__ = ["Grouped", "Groups", "HINT", "ORDER_DEPENDENT", "aggregate_values", "canonical", "evaluated", "group_rows",
           "group_value", "grouping", "has_aggregate", "is_aggregate", "is_aggregate_query", "output_name", "refuse",
           "run_grouped", "unsigned_zeros"]
