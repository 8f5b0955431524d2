"""Row navigation: ``PREV(col [, n])`` and ``NEXT(col [, n])`` in FILTERs (docs/language.md,
"Row navigation"; docs/semantics.md, "Row navigation").

``PREV(v, n)`` is the value of ``v`` n rows earlier in the event's substream (the stream after
PARTITION BY, in ORDER BY order, ties by source then input ordinal), NULL when there is no such
row; ``NEXT`` looks n rows later. No engine evaluates it inside an expression: each distinct
(column, offset) becomes a derived column ``__cerql_d<k>`` (planner/derived.py) that first holds
the column's own value per source, exactly as any derived column, and that the stream builder
then shifts by the offset within each PARTITION BY partition in evaluation order, once the
sources are unioned (exec/stream.py ``navigated`` locally, spark/lower.py ``with_navigation`` on
Spark with ``lag``/``lead``). The predicate reads it as a column: ``v > PREV(v)`` becomes
``v > __cerql_d0``, ``b.v > PREV(b.v)`` becomes ``b.v > b.__cerql_d0``.

Input: one expression of the query and where it stands. Output: the expression with each call
replaced by its column, the derived columns and ``ast.Navigation`` entries added; or a
positioned AnalysisError for what has no meaning (an offset that is not a positive integer
constant, navigation inside navigation, navigation of an expression) or is not supported
(PARTITION BY and ORDER BY keys, which the order navigation reads is made of).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from sqlglot import exp

from cerql import ast
from cerql.errors import AnalysisError
from cerql.parser import written
from cerql.parser.sqlexpr import expr_position

NAMES = ("prev", "next")
MAX_OFFSET = 2**31 - 1  # Spark's lag/lead take an int
_HINT = f"write PREV(column) or PREV(column, n), n a positive integer constant up to {MAX_OFFSET} (NEXT alike)"


def is_call(node: exp.Expression) -> bool:
    """Whether ``node`` is a PREV or NEXT call (sqlglot reads both as unknown functions)."""
    return isinstance(node, exp.Anonymous) and str(node.name).lower() in NAMES


def calls(tree: exp.Expression) -> list[exp.Expression]:
    return [node for node in tree.walk() if is_call(node)]


def refuse(sql: ast.SqlExpr, text: str, where: str) -> None:
    """A navigation call in ``sql``, which stands where navigation has no meaning, is an error."""
    found = calls(sql.tree)
    if found:
        node = found[0]
        raise AnalysisError.at(text, expr_position(sql, node), f"{str(node.name).upper()} cannot be used in {where}",
                               "NAVIGATION_NOT_SUPPORTED", "PREV and NEXT are read in FILTERs and SELECT items: "
                               "compute the key from the event's own columns")


def _offset(node: exp.Expression, sql: ast.SqlExpr, text: str) -> int:
    """The call's n: a positive integer constant, 1 when absent."""
    args = node.expressions
    name = str(node.name).upper()
    if len(args) not in (1, 2):
        raise AnalysisError.at(text, expr_position(sql, node), f"{name} takes a column and an optional offset, "
                               f"not {len(args)} argument(s)", "INVALID_NAVIGATION", _HINT)
    if len(args) == 1:
        return 1
    n = args[1]
    value = None
    if isinstance(n, exp.Literal) and not n.is_string:
        try:
            value = int(n.this)
        except ValueError:
            value = None
    if value is None or value < 1 or value > MAX_OFFSET:
        at = expr_position(sql, n if isinstance(n, exp.Column) else node)  # sqlglot places no literal
        raise AnalysisError.at(text, at, f"{name}'s offset must be a positive integer constant, "
                               f"not '{n.sql(dialect='spark')}'", "INVALID_NAVIGATION_OFFSET", _HINT)
    return value


def _column(node: exp.Expression, sql: ast.SqlExpr, text: str, qualified: bool, var: str | None) -> exp.Column:
    """The navigated column: a column, of a named variable outside brackets (``qualified``), of
    the bracket's own event inside ``var[...]``."""
    name = str(node.name).upper()
    target = node.expressions[0]
    inner = next((c for c in target.walk() if is_call(c)), None)
    if inner is not None:
        raise AnalysisError.at(text, expr_position(sql, inner), f"{str(inner.name).upper()} inside {name}: "
                               "navigation cannot be nested", "NESTED_NAVIGATION",
                               "add the offsets: PREV(PREV(v)) is PREV(v, 2)")
    if not isinstance(target, exp.Column) or isinstance(target.this, exp.Star):
        at = expr_position(sql, node if isinstance(target, exp.Literal) else target)  # sqlglot places no literal
        raise AnalysisError.at(text, at, f"{name} reads a column, not "
                               f"'{target.sql(dialect='spark')}'", "NAVIGATION_OF_EXPRESSION",
                               "navigate each column and compute afterwards: PREV(a) + PREV(b), not PREV(a + b)")
    if qualified and not target.table:
        raise AnalysisError.at(text, expr_position(sql, target), f"{name}({target.name}) outside brackets must "
                               "name the variable", "NAVIGATION_NEEDS_VARIABLE",
                               f"write {name}(b.{target.name}), b the variable whose event it reads around")
    if var is not None and target.table and target.table != var:
        raise AnalysisError.at(text, expr_position(sql, target), f"'{target.sql(dialect='spark')}' refers to another "
                               f"variable inside {var}[...]", "QUALIFIED_COLUMN_IN_BRACKETS",
                               f"inside brackets {name} reads the bracket's own event: {name}({target.name}); "
                               f"compare variables outside brackets: FILTER {target.sql(dialect='spark')} > "
                               f"{name}({target.sql(dialect='spark')})")
    return target


def rewrite(sql: ast.SqlExpr, text: str, qualified: bool,
            column_for: Callable[[exp.Column, int, exp.Expression], exp.Column], var: str | None = None) -> ast.SqlExpr:
    """``sql`` with each PREV/NEXT call replaced by ``column_for(navigated column, signed
    offset, call)``, the derived column that holds it (qualified as the navigated column).
    ``qualified``: ``sql`` stands outside brackets (a FILTER across variables, a SELECT item),
    where a column names its variable; else it stands in ``var[...]``."""
    found = calls(sql.tree)
    if not found:
        return sql
    for node in found:  # every check first, outermost first: nested calls are refused whole
        _column(node, sql, text, qualified, var)
        _offset(node, sql, text)

    def replace(node: exp.Expression) -> exp.Expression:
        if not is_call(node):
            return node
        sign = -1 if str(node.name).lower() == "prev" else 1
        return column_for(node.expressions[0], sign * _offset(node, sql, text), node)

    tree = sql.tree.copy()
    for call in tree.find_all(exp.AggFunc):  # sum(PREV(b.v)) stays where it was written once it
        if calls(call) and written.EXTENT not in call.meta:  # reads a column (aggregates.as_columns)
            where = written.extent(call, sql.source)
            if where is not None:
                call.meta[written.EXTENT] = where
    return dataclasses.replace(sql, tree=tree.transform(replace))


def entry(name: str, column: exp.Column, offset: int, at: int) -> ast.Navigation:
    """The ``ast.Navigation`` of derived column ``name``."""
    return ast.Navigation(column=name, source=written.strip_qualifiers(column).sql(dialect="spark"),
                          offset=offset, at=at)


__all__ = ["calls", "entry", "is_call", "refuse", "rewrite"]
