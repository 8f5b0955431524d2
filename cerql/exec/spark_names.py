"""Spark's automatic name of an unaliased SELECT item, from its sqlglot tree.

Input: a SELECT item (a sqlglot expression, no alias) and the SQL text it was read from. Output:
the column name Spark 4 gives it, or None where this module does not know it (the caller then
keeps its own name; docs/semantics.md, "MATCH_RECOGNIZE", lists those).

Why: the query around a MATCH_RECOGNIZE item runs locally (exec/mr_outer.py) or as Spark SQL,
and both must name their columns alike. Spark names an unaliased item by the analyzed
expression's "pretty" SQL: a column as written without its qualifier; binary operators in
parentheses, ``(n + 1)``; string literals unquoted; a function by the name it was called by,
lower-cased (``ucase(sym)``, ``std(n)``), some by their class's own name (``CEIL(x)``), with the
default arguments Spark fills in (``round(x, 0)``); a CAST of a column at the top is the
column's name. The rules below are the ones checked against Spark in
tests/spark/test_mr_outer_spark.py.
"""

from __future__ import annotations

import re

from sqlglot import exp

_BINARY = {
    exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.IntDiv: "div",
    exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<=", exp.EQ: "=", exp.NullSafeEQ: "<=>",
    exp.And: "AND", exp.Or: "OR", exp.BitwiseAnd: "&", exp.BitwiseOr: "|", exp.BitwiseXor: "^",
}
# Written name (lower case) -> Spark's name, where Spark prints its own, not the written one.
_SPARK_SPELLING = {"ceil": "CEIL", "floor": "FLOOR", "sqrt": "SQRT", "power": "POWER", "exp": "EXP",
                   "regexp_like": "REGEXP_LIKE", "log": "LOG"}
# Spark's default for a left-out last argument: written name -> (arguments written, filled in).
_DEFAULTS = {"round": (1, "0"), "percentile": (2, "1"), "substr": (2, "2147483647"),
             "substring": (2, "2147483647"), "log": (1, None)}
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")


class _Unknown(Exception):
    """A construct whose Spark name this module does not give."""


def spark_name(item: exp.Expression, source: str | None = None) -> str | None:
    """Spark's name of the unaliased SELECT item ``item`` read from ``source``; None if unknown."""
    node = item.unnest()
    if isinstance(node, (exp.Cast, exp.TryCast)) and isinstance(node.this.unnest(), exp.Column) \
            and not _is_typed_literal(node):
        node = node.this.unnest()  # Spark: a CAST of a column is named as the column
    try:
        return _name(node, source)
    except _Unknown:
        return None


def _is_typed_literal(node: exp.Expression) -> bool:
    """``DATE '2020-01-01'`` (sqlglot reads it as a Cast; ``CAST(...)`` in Spark SQL is a TryCast)."""
    return type(node) is exp.Cast and isinstance(node.this, exp.Literal) and node.this.is_string \
        and node.to.this in (exp.DataType.Type.DATE, exp.DataType.Type.TIMESTAMP)


def _name(node: exp.Expression, source: str | None) -> str:
    node = node.unnest()
    kind = type(node)
    if kind in _BINARY and not node.meta:  # an operator; ``mod(n, 2)`` is a call
        return f"({_name(node.this, source)} {_BINARY[kind]} {_name(node.expression, source)})"
    if isinstance(node, exp.Column):
        if isinstance(node.this, exp.Star):
            raise _Unknown
        return node.name
    if isinstance(node, (exp.Literal, exp.Null, exp.Boolean)) or _is_typed_literal(node):
        return _literal(node)
    if isinstance(node, exp.Neg):
        inner = node.this
        if isinstance(inner, exp.Literal) and not inner.is_string:
            return "-" + _literal(inner)  # Spark's parser folds the sign into the number
        return f"(- {_name(inner, source)})"
    return _operator(node, source)


def _operator(node: exp.Expression, source: str | None) -> str:
    """Operators Spark prints in their own way (NOT, IS NULL, IN, BETWEEN, LIKE, CASE, FILTER...)."""
    if isinstance(node, exp.NEQ):
        return f"(NOT ({_name(node.this, source)} = {_name(node.expression, source)}))"
    if isinstance(node, exp.NullSafeNEQ):
        return f"(NOT ({_name(node.this, source)} <=> {_name(node.expression, source)}))"
    if isinstance(node, exp.Not):
        inner = node.this.unnest()
        if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
            return f"({_name(inner.this, source)} IS NOT NULL)"
        return f"(NOT {_name(inner, source)})"
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        return f"({_name(node.this, source)} IS NULL)"
    if isinstance(node, exp.BitwiseNot):
        return f"~{_name(node.this, source)}"
    if isinstance(node, exp.In) and node.expressions and not node.args.get("query"):
        return f"({_name(node.this, source)} IN ({_names(node.expressions, source)}))"
    if isinstance(node, exp.Between):
        return f"between({_names([node.this, node.args['low'], node.args['high']], source)})"
    if type(node) is exp.Like and not node.args.get("escape"):
        shown = f"{_name(node.this, source)} LIKE {_name(node.expression, source)}"
        return f"(NOT {shown})" if node.args.get("negate") else shown
    if isinstance(node, exp.DPipe):
        return f"concat({_names([node.this, node.expression], source)})"
    if isinstance(node, exp.Case):
        return _case(node, source)
    if isinstance(node, exp.If) and node.args.get("false") is not None:
        return f"(IF({_names([node.this, node.args['true'], node.args['false']], source)}))"
    if isinstance(node, exp.Filter) and isinstance(node.expression, exp.Where):
        return f"{_name(node.this, source)} FILTER (WHERE {_name(node.expression.this, source)})"
    if isinstance(node, exp.Cast):
        raise _Unknown  # a CAST inside: Spark prints its own type names
    if isinstance(node, exp.Func) or type(node) in _BINARY:  # ``mod(n, 2)``: an operator called
        return _function(node, source)
    raise _Unknown


def _names(nodes: list[exp.Expression], source: str | None) -> str:
    return ", ".join(_name(n, source) for n in nodes)


def _case(node: exp.Case, source: str | None) -> str:
    """Spark writes a simple CASE as the searched one: ``CASE WHEN (n = 1) THEN a ... END``."""
    base = node.this
    parts = ["CASE"]
    for branch in node.args.get("ifs") or []:
        condition = _name(branch.this, source)
        if base is not None:
            condition = f"({_name(base, source)} = {condition})"
        parts.append(f"WHEN {condition} THEN {_name(branch.args['true'], source)}")
    default = node.args.get("default")
    if default is not None:
        parts.append(f"ELSE {_name(default, source)}")
    return " ".join(parts + ["END"])


def _literal(node: exp.Expression) -> str:
    """Spark's pretty literal: numbers as Spark reads them, strings unquoted, ``true``, ``NULL``,
    ``DATE '2020-01-01'``."""
    if isinstance(node, exp.Null):
        return "NULL"
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.Cast):  # a typed literal (_is_typed_literal)
        value = node.this.this
        date = node.to.this == exp.DataType.Type.DATE
        if not (_DATE if date else _TIMESTAMP).fullmatch(value):
            raise _Unknown  # Spark prints its own normal form of the value
        return f"{'DATE' if date else 'TIMESTAMP'} '{value}'"
    if node.is_string:
        return node.this
    text = node.this
    if "e" in text.lower():
        value = float(text)  # a DOUBLE: Java's Double.toString, which Python's repr is in this range
        if not 1e-3 <= abs(value) < 1e7:
            raise _Unknown
        return repr(value)
    return text


def _function(node: exp.Expression, source: str | None) -> str:
    written = _written_name(node, source)
    if written is None:
        raise _Unknown
    args = _arguments(node)
    if isinstance(node, exp.Count) and len(args) == 1 and isinstance(args[0], exp.Star):
        return "count(1)"
    distinct = isinstance(node.this, exp.Distinct) if "this" in node.arg_types else False
    shown = [_name(a, source) for a in args]
    if written in _DEFAULTS and not distinct:
        count, filled = _DEFAULTS[written]
        if len(shown) == count:
            shown = ["E()"] + shown if filled is None else shown + [filled]
    name = _SPARK_SPELLING.get(written, written)
    return f"{name}({'DISTINCT ' if distinct else ''}{', '.join(shown)})"


def _written_name(node: exp.Expression, source: str | None) -> str | None:
    """The name the function was called by, lower-cased: from the text (sqlglot keeps where
    the name stands, not how it was spelled: ``ucase`` reads as Upper); else sqlglot's own name
    when it is the only one (count, sum, avg, min, max, percentile)."""
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    start, end = node.meta.get("start"), node.meta.get("end")
    if source is not None and start is not None and end is not None and end < len(source):
        name = source[start:end + 1]
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            return name.lower()
    if isinstance(node, (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max)):
        return type(node).__name__.lower()  # each has that one name
    if isinstance(node, exp.Quantile):
        return "percentile"
    return None


def _arguments(node: exp.Expression) -> list[exp.Expression]:
    """The call's arguments in the order written (sqlglot's ``arg_types`` order), DISTINCT's
    expressions in its place."""
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    out: list[exp.Expression] = []
    for key in node.arg_types:
        value = node.args.get(key)
        if isinstance(value, exp.Distinct):
            out += value.expressions
        elif isinstance(value, list):
            out += [v for v in value if isinstance(v, exp.Expression)]
        elif isinstance(value, exp.Expression) and not isinstance(value, exp.DataType):
            out.append(value)
        elif value not in (None, False) and key not in ("big_int", "safe", "coalesce", "flatten", "ignore_nulls"):
            raise _Unknown  # a flag Spark's name might show
    return out


__all__ = ["spark_name"]
