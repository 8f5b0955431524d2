"""The query around a MATCH_RECOGNIZE item, run without Spark over the item's result.

Input: the outer Spark SQL of a :class:`cerql.mr_ast.MatchRecognizeQuery` (the item replaced by
its placeholder table name) and the item's result as an Arrow table. Output: the query's result.

On Spark the outer query is Spark SQL over a temp view, whatever it holds. Without Spark,
``cerql.run`` runs the part whose answer it can give exactly as Spark would, in Spark's order:
WHERE; then GROUP BY (expressions, ordinals, aliases, ALL), aggregates and HAVING
(exec/mr_outer_groups.py, which gives their rules); the SELECT list of expressions (``*``,
``alias.*``); DISTINCT (rows equal as Spark groups them: NULL equal to NULL, NaN to NaN, -0.0 to
0.0, which reads 0.0); ORDER BY (ASC/DESC, NULLS FIRST/LAST, Spark's defaults; an output name,
an ordinal ``ORDER BY 2``, or an expression) and LIMIT; all evaluated with cerql's
Spark-semantics expression engine (cerql/expr). Anything else (a JOIN, a window, a subquery, a
set operation, GROUPING SETS/ROLLUP/CUBE, an aggregate whose value depends on the order of the
rows) is an UnsupportedError naming the construct (LOCAL_OUTER_QUERY), whose hint says that
``spark.cer_sql`` runs it: the local engine refuses rather than answer differently
(docs/semantics.md, "MATCH_RECOGNIZE").
"""

from __future__ import annotations

from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
import sqlglot.errors
from sqlglot import exp

from cerql.errors import AnalysisError
from cerql.exec.mr_engine import spark_sort_fields
from cerql.exec.mr_outer_groups import (evaluated, group_rows, has_aggregate, is_aggregate_query, output_name, refuse,
                                        run_grouped, unsigned_zeros)
from cerql.expr import compile_expr, evaluate_predicate

_REFUSED = {
    "joins": "JOIN", "windows": "WINDOW", "qualify": "QUALIFY", "laterals": "LATERAL VIEW", "offset": "OFFSET",
    "sort": "SORT BY", "cluster": "CLUSTER BY", "distribute": "DISTRIBUTE BY", "pivots": "PIVOT",
}


def _select(outer_sql: str, placeholder: str) -> tuple[exp.Select, str | None]:
    """The outer query's SELECT and the alias its FROM gives the placeholder; refusals for the
    rest."""
    try:
        tree = sqlglot.parse_one(outer_sql, read="spark")
    except sqlglot.errors.ParseError:
        raise refuse("A query that cerql's SQL reader (sqlglot) does not read") from None
    if not isinstance(tree, exp.Select):
        raise refuse(f"A {tree.key.upper()} query")
    for arg, what in _REFUSED.items():
        if tree.args.get(arg):
            raise refuse(what)
    distinct = tree.args.get("distinct")
    if distinct is not None and distinct.args.get("on") is not None:
        raise refuse("DISTINCT ON")
    source = tree.args.get("from_") or tree.args.get("from")
    table = source.this if source is not None else None
    if not isinstance(table, exp.Table) or table.name != placeholder or table.args.get("pivots"):
        raise refuse("A FROM other than the MATCH_RECOGNIZE item")
    if any(isinstance(node, (exp.Subquery, exp.Query, exp.Window)) for node in tree.find_all(exp.Expression)
           if node is not tree):
        raise refuse("A subquery or window")
    return tree, table.alias or None


def _resolver(table: pa.Table, alias: str | None):
    """Column reference -> the result's column: by name, case-insensitively as Spark, qualified
    by the alias or not."""
    lowered = {name.lower(): name for name in table.column_names}

    def resolve(column: exp.Column) -> str:
        qualifier = column.table
        if qualifier and (alias is None or qualifier.lower() != alias.lower()):
            raise AnalysisError(f"Unknown qualifier '{qualifier}' in '{column.sql('spark')}'",
                                   error_class="UNKNOWN_COLUMN", hint=f"the result is named {alias or 'nothing'}")
        name = lowered.get(column.name.lower())
        if name is None:
            raise AnalysisError(f"Unknown column '{column.name}'", error_class="UNKNOWN_COLUMN",
                                   hint=f"the MATCH_RECOGNIZE result has columns {', '.join(table.column_names)}")
        return name

    return resolve


def _check_stars(tree: exp.Select, alias: str | None):
    for item in tree.expressions:
        if isinstance(item, exp.Column) and isinstance(item.this, exp.Star) and item.table \
                and (alias or "").lower() != item.table.lower():
            raise AnalysisError(f"Unknown qualifier '{item.table}'", error_class="UNKNOWN_COLUMN",
                                hint=f"the result is named {alias or 'nothing'}")


def _projection(tree: exp.Select, table: pa.Table, resolve, source: str) -> pa.Table:
    """The SELECT list's columns, named as Spark names them (``output_name``)."""
    names, columns = [], []
    for item in tree.expressions:
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
            names += table.column_names
            columns += table.columns
            continue
        node = item.this if isinstance(item, exp.Alias) else item
        names.append(output_name(item, source))
        columns.append(evaluated(node, table, resolve))
    return pa.table(columns, names=names)


def _distinct(selected: pa.Table) -> pa.Table:
    """One row of each set of rows equal as Spark groups them (its first), floats' -0.0 read 0.0."""
    groups = group_rows(list(selected.columns), selected.num_rows)
    kept = selected.take(pa.array(groups.first, pa.int64()))
    return pa.table([unsigned_zeros(c.combine_chunks()) for c in kept.columns], names=kept.column_names)


def _output_column(node: exp.Expression, selected: pa.Table) -> pa.Array | None:
    """The output column an ORDER BY key names: by ordinal (``spark.sql.orderByOrdinal``), or by
    an unqualified name (case-insensitively, as Spark resolves ORDER BY first against the
    output); None when it names none."""
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
        position = int(node.this)
        if not 1 <= position <= selected.num_columns:
            raise AnalysisError(f"ORDER BY position {position} is not in the select list (1 to {selected.num_columns})",
                                error_class="ORDER_BY_POS_OUT_OF_RANGE", hint="ORDER BY a SELECT item's position")
        return selected.column(position - 1)
    if isinstance(node, exp.Column) and not node.table and not isinstance(node.this, exp.Star):
        at = [i for i, name in enumerate(selected.column_names) if name.lower() == node.name.lower()]
        if len(at) > 1:
            raise AnalysisError(f"ORDER BY {node.name} is ambiguous: the select list has {len(at)} columns of that "
                                "name", error_class="AMBIGUOUS_REFERENCE", hint="give them distinct aliases")
        if at:
            return selected.column(at[0])
    return None


def _sort(order: exp.Order, selected: pa.Table, key_values: Callable[[exp.Expression], pa.Array]) -> pa.Array:
    """Row order of ORDER BY, as Spark sorts (exec/mr_engine.py ``spark_sort_fields``): a key
    that names an output column reads it (``_output_column``), another is ``key_values``."""
    keys, arrays = [], {}
    for i, key in enumerate(order.expressions):
        node = key.this
        value = _output_column(node, selected)
        if value is None:
            value = key_values(node)
        descending = bool(key.args.get("desc"))
        nulls_first = key.args.get("nulls_first")
        if nulls_first is None:
            nulls_first = not descending
        for name, values, direction in spark_sort_fields(f"k{i}", value, descending, nulls_first):
            arrays[name] = values
            keys.append((name, direction))
    return pc.sort_indices(pa.table(arrays), sort_keys=keys)


def _distinct_key(selected: pa.Table) -> Callable[[exp.Expression], pa.Array]:
    """ORDER BY keys of a DISTINCT query: expressions of its output columns only."""
    lowered = {name.lower(): name for name in selected.column_names}

    def resolve(column: exp.Column) -> str:
        name = lowered.get(column.name.lower())
        if column.table or name is None:
            raise refuse(f"ORDER BY {column.sql('spark')}, not a column of the DISTINCT rows,")
        return name

    return lambda node: evaluated(node, selected, resolve)


def outer_view(outer_sql: str) -> tuple[str, str] | None:
    """``(view name, its SELECT)`` when the query is ``CREATE [OR REPLACE] TEMP VIEW v AS SELECT
    ...`` (``cerql.run`` then stores the result under that name, as for CEQL), else None."""
    try:
        tree = sqlglot.parse_one(outer_sql, read="spark")
    except sqlglot.errors.ParseError:
        return None  # Spark reads it; cerql.run refuses it (``_select``)
    if isinstance(tree, exp.Create) and str(tree.args.get("kind", "")).upper() == "VIEW" \
            and isinstance(tree.expression, exp.Select):
        target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        return target.name, tree.expression.sql("spark")
    return None


def run_outer(outer_sql: str, placeholder: str, result: pa.Table) -> pa.Table:
    """``outer_sql`` over ``result`` (the MATCH_RECOGNIZE item's rows, as table ``placeholder``)."""
    tree, alias = _select(outer_sql, placeholder)
    _check_stars(tree, alias)
    resolve = _resolver(result, alias)
    where = tree.args.get("where")
    if where is not None:
        if has_aggregate(where.this):
            raise AnalysisError("WHERE holds an aggregate", error_class="INVALID_WHERE_CONDITION",
                                hint="filter the groups with HAVING")
        result = result.filter(pa.array(evaluate_predicate(compile_expr(where.this, resolve), result)))
    order = tree.args.get("order")
    if is_aggregate_query(tree):
        grouped = run_grouped(tree, result, resolve, outer_sql)
        selected, key_values = grouped.selected, grouped.order_key
    else:
        if order is not None and any(has_aggregate(k) for k in order.expressions):
            raise refuse("An aggregate in the ORDER BY of a query without one in its SELECT list")
        selected = _projection(tree, result, resolve, outer_sql)
        key_values = lambda node: evaluated(node, result, resolve)  # noqa: E731
    if tree.args.get("distinct") is not None:
        selected = _distinct(selected)
        key_values = _distinct_key(selected)
    if order is not None:
        selected = selected.take(_sort(order, selected, key_values))
    limit = tree.args.get("limit")
    if limit is not None:
        selected = selected.slice(0, int(limit.expression.name))
    return selected


__all__ = ["outer_view", "run_outer"]
