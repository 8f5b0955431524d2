"""The query around a MATCH_RECOGNIZE item, run without Spark over the item's result.

Input: the outer Spark SQL of a :class:`cerql.mr_ast.MatchRecognizeQuery` (the item replaced by
its placeholder table name) and the item's result as an Arrow table. Output: the query's result.

On Spark the outer query is Spark SQL over a temp view, whatever it holds. Without Spark,
``cerql.run`` runs the part whose answer it can give exactly as Spark would: a SELECT list of
expressions (``*``, ``alias.*``), WHERE, ORDER BY (ASC/DESC, NULLS FIRST/LAST, Spark's defaults)
and LIMIT, evaluated with cerql's Spark-semantics expression engine (cerql/expr). Anything else
(GROUP BY, HAVING, a JOIN, DISTINCT, a window, a subquery, a set operation) is an
UnsupportedError naming the construct, whose hint says that ``spark.cer_sql`` runs it: the
local engine refuses rather than answer differently (docs/semantics.md, "MATCH_RECOGNIZE").
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp

from cerql.errors import AnalysisError, UnsupportedError
from cerql.exec.mr_engine import spark_sort_fields
from cerql.expr import ExprError, compile_expr, evaluate, evaluate_predicate

_REFUSED = {
    "group": "GROUP BY", "having": "HAVING", "joins": "JOIN", "distinct": "DISTINCT",
    "windows": "WINDOW", "qualify": "QUALIFY", "laterals": "LATERAL VIEW", "offset": "OFFSET",
}
_HINT = "run the query on Spark, where the query around MATCH_RECOGNIZE is Spark SQL: spark.cer_sql(query)"


def _refuse(what: str) -> UnsupportedError:
    return UnsupportedError(f"{what} around MATCH_RECOGNIZE runs on Spark only", error_class="LOCAL_OUTER_QUERY",
                            hint=_HINT)


def _select(outer_sql: str, placeholder: str) -> tuple[exp.Select, str | None]:
    """The outer query's SELECT and the alias its FROM gives the placeholder; refusals for the
    rest."""
    tree = sqlglot.parse_one(outer_sql, read="spark")
    if not isinstance(tree, exp.Select):
        raise _refuse(f"A {tree.key.upper()} query")
    for arg, what in _REFUSED.items():
        if tree.args.get(arg):
            raise _refuse(what)
    source = tree.args.get("from_") or tree.args.get("from")
    table = source.this if source is not None else None
    if not isinstance(table, exp.Table) or table.name != placeholder:
        raise _refuse("A FROM other than the MATCH_RECOGNIZE item")
    if any(isinstance(node, (exp.Subquery, exp.Window, exp.AggFunc)) for node in tree.find_all(exp.Expression)
           if node is not tree):
        raise _refuse("A subquery, window or aggregate")
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


def _value(node: exp.Expression, table: pa.Table, resolve) -> pa.Array:
    try:
        return evaluate(compile_expr(node, resolve), table)
    except ExprError as err:
        raise err.cls(err.message, error_class=err.error_class, hint=err.hint) from None


def _projection(tree: exp.Select, table: pa.Table, alias: str | None, resolve) -> pa.Table:
    names, columns = [], []
    for item in tree.expressions:
        star = item if isinstance(item, exp.Star) else item.this if isinstance(item, exp.Column) \
            and isinstance(item.this, exp.Star) else None
        if star is not None:
            if isinstance(item, exp.Column) and item.table and (alias or "").lower() != item.table.lower():
                raise AnalysisError(f"Unknown qualifier '{item.table}'", error_class="UNKNOWN_COLUMN",
                                       hint=f"the result is named {alias or 'nothing'}")
            names += table.column_names
            columns += table.columns
            continue
        node = item.this if isinstance(item, exp.Alias) else item
        names.append(item.alias_or_name if isinstance(item, (exp.Alias, exp.Column)) else item.sql("spark"))
        columns.append(_value(node, table, resolve))
    return pa.table(columns, names=names)


def _sort(tree: exp.Select, table: pa.Table, selected: pa.Table, resolve) -> pa.Array:
    """Row order of ORDER BY, as Spark sorts (exec/mr_engine.py ``spark_sort_fields``): keys read
    from the selected columns by output name first, else from the result (as Spark resolves
    ORDER BY)."""
    keys, arrays = [], {}
    for i, key in enumerate(tree.args["order"].expressions):
        node = key.this
        if isinstance(node, exp.Column) and not node.table and node.name in selected.column_names:
            value = selected[node.name]
        else:
            value = _value(node, table, resolve)
        descending = bool(key.args.get("desc"))
        nulls_first = key.args.get("nulls_first")
        if nulls_first is None:
            nulls_first = not descending
        for name, values, direction in spark_sort_fields(f"k{i}", value, descending, nulls_first):
            arrays[name] = values
            keys.append((name, direction))
    return pc.sort_indices(pa.table(arrays), sort_keys=keys)


def outer_view(outer_sql: str) -> tuple[str, str] | None:
    """``(view name, its SELECT)`` when the query is ``CREATE [OR REPLACE] TEMP VIEW v AS SELECT
    ...`` (``cerql.run`` then stores the result under that name, as for CEQL), else None."""
    tree = sqlglot.parse_one(outer_sql, read="spark")
    if isinstance(tree, exp.Create) and str(tree.args.get("kind", "")).upper() == "VIEW" \
            and isinstance(tree.expression, exp.Select):
        target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        return target.name, tree.expression.sql("spark")
    return None


def run_outer(outer_sql: str, placeholder: str, result: pa.Table) -> pa.Table:
    """``outer_sql`` over ``result`` (the MATCH_RECOGNIZE item's rows, as table ``placeholder``)."""
    tree, alias = _select(outer_sql, placeholder)
    resolve = _resolver(result, alias)
    where = tree.args.get("where")
    if where is not None:
        result = result.filter(pa.array(evaluate_predicate(compile_expr(where.this, resolve), result)))
    selected = _projection(tree, result, alias, resolve)
    if tree.args.get("order"):
        selected = selected.take(_sort(tree, result, selected, resolve))
    limit = tree.args.get("limit")
    if limit is not None:
        selected = selected.slice(0, int(limit.expression.name))
    return selected


__all__ = ["outer_view", "run_outer"]
