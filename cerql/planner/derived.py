"""Columns derived per row: PARTITION BY and ORDER BY key expressions, aggregates of
expressions, and Spark-only functions in FILTER predicates across variables.

``PARTITION BY [upper(name) AS sym]`` splits the stream by a value computed from each event;
it becomes the column ``__cerql_d<k>`` of every row, on every engine, and results show it under
the key's name (``sym``, else the expression as written; ``Select.key_names``). An ORDER BY key
expression (``ORDER BY [to_timestamp(t)]``) likewise orders the stream, and ``WITHIN n [name]``
may name it.

An aggregate reads one column of one variable (planner/aggregates.py); ``sum(b.price *
b.volume)`` aggregates an expression over b's columns, which becomes the column
``__cerql_d<k>`` of every row, on every engine (Spark computes it on Spark, the local engine's
expressions in ``cerql.run``): ``sum(b.__cerql_d0)``.

A predicate across variables (``FILTER hour(b.ts) = hour(a.ts)``) is checked in Python, inside
the Spark task (registers, hidden partition keys, post-filters), so it can only use the
functions cerql's local engine runs (cerql/expr/). Yet most such predicates apply a
Spark function to one event at a time: ``hour(b.ts)`` depends on b's event alone. For a query
planned for Spark, each largest part of such a predicate that reads a single variable and that
the local engine cannot run becomes a column of every row, ``__cerql_d<k>``, computed by Spark
from the row's own columns before the shuffle; the predicate reads it as ``b.__cerql_d<k>``.
``hour(b.ts) = hour(a.ts)`` becomes ``b.__cerql_d0 = a.__cerql_d0``, which the planner's rules
then make a hidden partition key like any equality.

Input: a parsed query, before planner/analyze.py reads it. Output: the query with its
expressions rewritten and the derived columns (name, bare expression over the event's columns,
the expression it came from), or an UnsupportedError for a part
that mixes variables inside such a function (``datediff(b.ts, a.ts)``), which no single row
can compute. The derived columns are hidden from the results (planner/resolve.py).
"""

from __future__ import annotations

import dataclasses

from sqlglot import exp

from cerql import ast
from cerql.errors import AnalysisError, UnsupportedError
from cerql.parser import written
from cerql.parser.sqlexpr import as_written, expr_position
from cerql.plan import AGGREGATE_COLUMN, DERIVED_COLUMN
from cerql.planner import aggregates, navigation, safety
from cerql.expr import ExprError, compile_expr


def runs_locally(tree: exp.Expression, source: str | None = None) -> bool:
    """Whether the local engine compiles ``tree`` (aggregate calls count as their values; names
    and types are not checked here), written in ``source`` with the names of functions it
    evaluates (parser/written.py: sqlglot reads ``to_char`` as a CAST)."""
    if source is not None and written.unsupported_call(tree, source) is not None:
        return False
    try:
        compile_expr(aggregates.as_columns(tree, AGGREGATE_COLUMN), lambda col: col.name)
    except ExprError as err:
        return err.cls is not UnsupportedError
    return True


def _bare(tree: exp.Expression) -> exp.Expression:
    """``hour(b.ts)`` as ``hour(ts)``: the expression over one event's own columns (each column
    keeps where it was written: Spark is sent the text, parser/written.py)."""
    return written.strip_qualifiers(tree)


def _derived_column(tree: exp.Expression, variable: str,
                    derived: dict[str, tuple[str, exp.Expression]], source: str) -> exp.Column:
    """``variable.__cerql_d<k>``, the column that holds ``tree`` (over ``variable``'s columns) per
    row; the same expression written twice is one column. The column keeps where ``tree`` was
    written in ``source``. Two expressions are the same when their trees are, date patterns as
    written included (sqlglot prints ``date_format(ts, 'y')`` as it prints 'yyyy')."""
    bare = _bare(tree)
    where = written.extent(tree, source)
    if where is not None:
        bare.meta[written.EXTENT] = where
    same = (repr(bare), tuple(n.meta.get(written.WRITTEN_FORMAT) for n in bare.walk()))
    name, _ = derived.setdefault(same, (f"{DERIVED_COLUMN}{len(derived)}", bare))
    column = exp.column(name, table=variable)
    if where is not None:
        column.meta[written.EXTENT] = where
    return column


# an aggregate's argument that planner/aggregates.py accepts (a column) or refuses (DISTINCT, *) as it is
_TAKEN_AS_IS = (exp.Column, exp.Distinct, exp.Star)


def _variables(tree: exp.Expression) -> set[str]:
    return {col.table for col in tree.find_all(exp.Column)}


def _mixes(node: exp.Expression, source: str) -> bool:
    """A part no row can compute alone: several variables inside a Spark-only function."""
    return len(_variables(node)) > 1 and not runs_locally(node, source)


def _rewrite(sql: ast.SqlExpr, derived: dict[str, tuple[str, exp.Expression]], text: str) -> ast.SqlExpr:
    if runs_locally(sql.tree, sql.source):
        return sql

    def derive(node: exp.Expression) -> exp.Expression:
        if runs_locally(node, sql.source) or next(node.find_all(exp.AggFunc), None) is not None:
            return node
        variables = _variables(node)
        if len(variables) != 1:
            return node  # its parts may still be derived
        return _derived_column(node, variables.pop(), derived, sql.source)

    tree = sql.tree.copy().transform(derive)
    if not runs_locally(tree, sql.source):
        mixed = next(n for n in reversed(list(sql.tree.walk())) if _mixes(n, sql.source))  # the innermost
        raise UnsupportedError.at(
            text, expr_position(sql, mixed), f"'{mixed.sql(dialect='spark')}' needs a function cerql evaluates "
            "on Spark one event at a time, over several variables", "UNSUPPORTED_EXPRESSION",
            "in a FILTER across variables, apply such functions to one variable at a time "
            "(hour(b.ts) = hour(a.ts)), or compute the value as a column of the source")
    return dataclasses.replace(sql, tree=tree)


def _aggregate_arguments(sql: ast.SqlExpr, derived: dict[str, tuple[str, exp.Expression]]) -> ast.SqlExpr:
    """``sum(b.price * b.volume)`` as ``sum(b.__cerql_d<k>)``, the product derived per row: an
    aggregate reads one column of one variable (planner/aggregates.py), so an expression over
    one variable's columns becomes such a column, on every engine."""
    def derive(node: exp.Expression) -> exp.Expression:
        if type(node) not in aggregates.KINDS or node.this is None or isinstance(node.this, _TAKEN_AS_IS):
            return node
        variables = _variables(node.this)
        if len(variables) != 1 or next(node.this.find_all(exp.AggFunc), None) is not None:
            return node  # planner/aggregates.py explains what an aggregate reads
        node = node.copy()
        node.set("this", _derived_column(node.this, variables.pop(), derived, sql.source))
        return node

    if not any(type(call) in aggregates.KINDS and not isinstance(call.this, _TAKEN_AS_IS)
               for call in aggregates.calls(sql.tree)):
        return sql
    return dataclasses.replace(sql, tree=sql.tree.copy().transform(derive))


def _key_column(key: ast.KeyExpr, derived: dict[str, tuple[str, exp.Expression]], text: str) -> str:
    """The derived column that holds a PARTITION BY / ORDER BY key expression per row."""
    tree = key.expr.tree
    call = next(tree.find_all(exp.AggFunc), None)
    qualified = next((c for c in tree.find_all(exp.Column) if c.table), None)
    if call is not None or qualified is not None:
        node = call if call is not None else qualified
        raise AnalysisError.at(
            text, expr_position(key.expr, node), f"'{node.sql(dialect='spark')}' cannot be a PARTITION BY or ORDER "
            "BY key: a key is computed from each event's own columns", "INVALID_KEY_EXPRESSION",
            "name the event's columns bare ([upper(name) AS sym]); aggregates belong in SELECT or FILTER")
    return _derived_column(tree, "", derived, key.expr.source).name


def _keys(select: ast.Select, derived: dict[str, tuple[str, exp.Expression]], origin: dict[str, ast.SqlExpr],
          text: str) -> ast.Select:
    """PARTITION BY and ORDER BY with each key expression read from its derived column; the
    partition keys' names in ``key_names``; ``WITHIN n [name]`` naming an ORDER BY key
    expression reads its column."""
    keys = [k for k in select.partition_by + select.order_by if isinstance(k, ast.KeyExpr)]
    if not keys:
        return select
    column: dict[int, str] = {}
    for key in keys:
        safety.check(key.expr, text)
        navigation.refuse(key.expr, text, "a PARTITION BY or ORDER BY key")
        before = len(derived)
        column[id(key)] = _key_column(key, derived, text)
        for added in list(derived)[before:]:
            origin[added] = key.expr
    seen: dict[str, ast.Key] = {}
    for key in select.partition_by:
        name = key.name if isinstance(key, ast.KeyExpr) else key
        if name.lower() in seen:
            shown = key if isinstance(key, ast.KeyExpr) else seen[name.lower()]
            raise AnalysisError.at(text, expr_position(shown.expr, shown.expr.tree), f"PARTITION BY names the column '{name}' twice",
                                   "KEY_NAME_CLASH", "give the expression another name: [expression AS name]")
        seen[name.lower()] = key

    def read(keys_: tuple[ast.Key, ...]) -> tuple[str, ...]:
        return tuple(column[id(k)] if isinstance(k, ast.KeyExpr) else k for k in keys_)

    within = select.within
    if isinstance(within, (ast.TimeWindow, ast.ColumnWindow)) and within.column:
        named = {k.name.lower(): column[id(k)] for k in select.order_by if isinstance(k, ast.KeyExpr)}
        if within.column.lower() in named:
            within = dataclasses.replace(within, column=named[within.column.lower()])
    names = tuple((column[id(k)], k.name) for k in select.partition_by if isinstance(k, ast.KeyExpr))
    return dataclasses.replace(select, partition_by=read(select.partition_by), order_by=read(select.order_by),
                               within=within, key_names=names)


def _map_cross(node, fn, unary=None):
    """The pattern ``node`` with every CrossPredicate replaced by ``fn(predicate)`` (and every
    VarPredicate by ``unary(predicate)``, when given, those of ``NOT (T FILTER T[...])`` too)."""
    if isinstance(node, ast.CrossPredicate):
        return fn(node)
    if isinstance(node, ast.VarPredicate):
        return unary(node) if unary is not None else node
    if isinstance(node, (ast.Seq, ast.Contiguous, ast.Or, ast.And, ast.All, ast.Unless, ast.FilterAnd,
                         ast.FilterOr)):
        return dataclasses.replace(node, left=_map_cross(node.left, fn, unary), right=_map_cross(node.right, fn, unary))
    if isinstance(node, (ast.As, ast.KleenePlus, ast.ContiguousPlus)):
        return dataclasses.replace(node, pattern=_map_cross(node.pattern, fn, unary))
    if isinstance(node, ast.Filter):
        return dataclasses.replace(node, pattern=_map_cross(node.pattern, fn, unary),
                                   condition=_map_cross(node.condition, fn, unary))
    if isinstance(node, ast.Not) and node.condition is not None and unary is not None:
        return dataclasses.replace(node, condition=_map_cross(node.condition, fn, unary))
    return node


def _navigated(sql: ast.SqlExpr, derived: dict, navigated: dict[str, ast.Navigation], text: str,
               qualified: bool, var: str | None = None) -> ast.SqlExpr:
    """``sql`` with each PREV/NEXT call read from its derived column (planner/navigation.py):
    one column per navigated column and offset, whichever variable reads it."""
    def column_for(column: exp.Column, offset: int, call: exp.Expression) -> exp.Column:
        key = ("navigation", column.name.lower(), offset)
        if key not in derived:
            bare = _bare(column)
            where = written.extent(column, sql.source)
            if where is not None:
                bare.meta[written.EXTENT] = where
            derived[key] = (f"{DERIVED_COLUMN}{len(derived)}", bare)
        name = derived[key][0]
        navigated.setdefault(name, navigation.entry(name, column, offset, expr_position(sql, call)))
        out = exp.column(name, table=column.table or None)
        where = written.extent(call, sql.source)
        if where is not None:
            out.meta[written.EXTENT] = where
        return out

    return navigation.rewrite(sql, text, qualified, column_for, var)


def _refuse_navigated(bare: exp.Expression, navigated: dict[str, ast.Navigation], sql: ast.SqlExpr,
                      text: str) -> None:
    """A derived column computed from a PREV/NEXT column is an error: derived columns are
    computed per source, before the stream is ordered and navigation shifted
    (``sum(b.v - PREV(b.v))``, a Spark-only function of ``PREV(b.ts)`` across variables)."""
    if not any(col.name in navigated for col in bare.find_all(exp.Column)):
        return
    call = navigation.calls(sql.tree)[0]
    name = str(call.name).upper()
    raise AnalysisError.at(text, expr_position(sql, call), f"{name} inside an aggregate's expression or a "
                           "Spark-only function across variables is not supported", "NAVIGATION_NOT_SUPPORTED",
                           f"aggregate the navigated column alone (sum({name}(b.v)) - sum(b.v)), or test the "
                           f"function inside the variable's brackets (b[soundex({name}(name)) = 'A000'])")


def _refuse_spark_only_navigation(sql: ast.SqlExpr, navigated: dict[str, ast.Navigation], original: ast.SqlExpr,
                                  text: str) -> None:
    """A navigated column inside a function only Spark runs, in a FILTER across variables, would
    be derived per source before navigation (``_rewrite``): refused, as ``_refuse_navigated``
    refuses it, before ``_rewrite`` tries (its reading of the text cannot place the column)."""
    for col in sql.tree.find_all(exp.Column):
        if col.name not in navigated:
            continue
        for node in _ancestors(col):
            if not isinstance(node, exp.Func) or isinstance(node, exp.AggFunc):
                continue
            try:
                compile_expr(aggregates.as_columns(node, AGGREGATE_COLUMN), lambda c: c.name)
            except ExprError as err:
                if err.cls is UnsupportedError:
                    _refuse_navigated(col, navigated, original, text)


def _ancestors(node: exp.Expression):
    node = node.parent
    while node is not None:
        yield node
        node = node.parent


def _item(item: ast.SelectExpr, expr: ast.SqlExpr) -> ast.SelectExpr:
    """The SELECT item reading ``expr``; an unaliased item that became a bare derived column
    (``PREV(a.v)``) keeps the name Spark gives what was written, not the column's."""
    alias = item.alias
    if alias is None and isinstance(expr.tree, exp.Column) and not isinstance(item.expr.tree, exp.Column):
        alias = as_written(item.expr)
    return dataclasses.replace(item, expr=expr, alias=alias)


def derive_columns(query: ast.Query, text: str, spark: bool = False
                   ) -> tuple[ast.Query, list[tuple[str, exp.Expression, ast.SqlExpr]]]:
    """The query with parts of its expressions read from derived columns, and those columns:
    (name, bare expression over one event's columns, the expression it came from, for errors).
    On every engine a PARTITION BY or ORDER BY key expression (``[upper(name) AS sym]``) and an
    aggregate's argument that is an expression over one variable (``sum(b.price * b.volume)``);
    with ``spark``, also the Spark-only single-variable parts of
    FILTER predicates across variables. Each expression passes planner/safety.py first, as it
    was written. An unchanged query and no columns when there is nothing to derive."""
    derived: dict[str, tuple[str, exp.Expression]] = {}
    origin: dict[str, ast.SqlExpr] = {}
    navigated: dict[str, ast.Navigation] = {}

    def derive(sql: ast.SqlExpr, cross: bool) -> ast.SqlExpr:
        safety.check(sql, text)
        before = len(derived)
        out = _navigated(sql, derived, navigated, text, qualified=True)  # outside brackets
        out = _aggregate_arguments(out, derived)
        if cross and spark:
            _refuse_spark_only_navigation(out, navigated, sql, text)
            out = _rewrite(out, derived, text)
        for key in list(derived)[before:]:
            origin[key] = sql
            _refuse_navigated(derived[key][1], navigated, sql, text)
        return out

    def rewrite(predicate: ast.CrossPredicate) -> ast.CrossPredicate:
        expr = derive(predicate.expr, cross=True)
        return predicate if expr is predicate.expr else dataclasses.replace(predicate, expr=expr)

    def unary(predicate: ast.VarPredicate) -> ast.VarPredicate:
        if not navigation.calls(predicate.predicate.tree):
            return predicate
        before = len(derived)
        expr = _navigated(predicate.predicate, derived, navigated, text, qualified=False, var=predicate.var)
        for key in list(derived)[before:]:
            origin[key] = predicate.predicate
        return dataclasses.replace(predicate, predicate=expr)

    select = _keys(ast.select_of(query), derived, origin, text)
    pattern = _map_cross(select.pattern, rewrite, unary)
    projection = select.projection
    if not isinstance(projection, ast.Star):
        projection = tuple(_item(item, derive(item.expr, cross=False)) if isinstance(item, ast.SelectExpr) else item
                           for item in projection)
    if not derived:
        return query, []
    select = dataclasses.replace(select, pattern=pattern, projection=projection, navigation=tuple(navigated.values()))
    query = dataclasses.replace(query, select=select) if isinstance(query, ast.CreateView) else select
    return query, [(name, bare, origin[key]) for key, (name, bare) in derived.items()]


__all__ = ["derive_columns", "runs_locally"]
