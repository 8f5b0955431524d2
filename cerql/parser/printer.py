"""cerql.ast to canonical CEQL text.

Input: an AST node. Output: one line of CEQL with upper-case keywords and the fewest
parentheses that keep the tree, so ``parse(to_ceql(q)) == q``. One ``<node>_ceql`` method per
node class, in the manner of sqlglot's generator.

Why nodes are known here by class name only: ``str(node)`` of every node of cerql/ast.py is this
printer, so the AST imports it (when first printed); were the printer to import the AST back, the
two would be an import circle (tests/test_import_graph.py). The names below are those of
cerql/ast.py's classes, which tests/parser checks by printing every construct.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import TYPE_CHECKING

from sqlglot.dialects.spark import Spark

from cerql.parser.units import MICROS_PER_UNIT

if TYPE_CHECKING:  # for the annotations only (module docstring)
    from cerql import ast

KEYWORDS = frozenset(
    """select from where as or and filter partition by order within consume limit create replace
    temp temporary view typed interval events event asc desc all any next last max strict none unless not
    millisecond milliseconds second seconds minute minutes hour hours day days""".split()
)

# Words Spark SQL reads as keywords (NOT, NULL, CASE, ARRAY, ...): a variable or column with
# such a name must be back-quoted where sqlglot reads it.
SQL_KEYWORDS = frozenset(k.lower() for k in Spark.tokenizer_class.KEYWORDS if re.fullmatch(r"\w+", k))

# Binding strength of each node among its kind, patterns or FILTER conditions, loosest first
# (see ceql.lark); a node's operands are always of its own kind.
_LEVEL = {"Filter": 0, "Unless": 1, "Or": 2, "All": 3, "And": 4, "Contiguous": 5, "Seq": 6,
          "KleenePlus": 7, "ContiguousPlus": 7, "As": 7, "Atom": 8, "Not": 8,
          "FilterOr": 0, "FilterAnd": 1, "VarPredicate": 2, "CrossPredicate": 2}


def _is(node, class_name: str) -> bool:
    """Whether ``node`` is of the AST class ``class_name`` (module docstring)."""
    return type(node).__name__ == class_name

_UNITS = tuple((unit.upper(), MICROS_PER_UNIT[unit]) for unit in ("day", "hour", "minute", "second"))


def ident(name: str) -> str:
    """A name as CEQL text: bare when it is a plain word that is no keyword, else back-quoted."""
    if re.fullmatch(r"[^\W\d]\w*", name) and name.lower() not in KEYWORDS | SQL_KEYWORDS:
        return name
    return "`" + name.replace("`", "``") + "`"


def _plural(n, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}S"


def duration_ceql(micros: int) -> str:
    """Microseconds as ``1 MINUTE 30 SECONDS`` (largest units first)."""
    parts, rest = [], micros
    for unit, size in _UNITS:
        if rest >= size:
            parts.append(_plural(rest // size, unit))
            rest %= size
    if rest or not parts:
        ms = Decimal(rest) / 1000
        parts.append(_plural(ms if ms != ms.to_integral_value() else int(ms), "MILLISECOND"))
    return " ".join(parts)


class Printer:
    """Dispatches on the node class name: ``Seq`` -> ``seq_ceql``."""

    def sql(self, node) -> str:
        name = re.sub(r"(?<!^)(?=[A-Z])", "_", type(node).__name__).lower()
        return getattr(self, f"{name}_ceql")(node)

    # -- query
    def create_view_ceql(self, node: ast.CreateView) -> str:
        replace = "OR REPLACE " if node.replace else ""
        name = ".".join(ident(p) for p in node.name.split("."))
        return f"CREATE {replace}TEMP VIEW {name} AS {self.sql(node.select)}"

    def select_ceql(self, node: ast.Select) -> str:
        out = ["SELECT"]
        if node.strategy != "ALL":
            out.append(node.strategy)
        if _is(node.projection, "Star"):
            out.append("*")
        else:
            out.append(", ".join(self.sql(item) for item in node.projection))
        out.append("FROM " + ", ".join(self.sql(s) for s in node.sources))
        out.append("WHERE " + self.sql(node.pattern))
        if node.partition_by:
            out.append("PARTITION BY [" + ", ".join(self._key(c) for c in node.partition_by) + "]")
        if node.order_by:
            out.append("ORDER BY " + ", ".join(f"[{self._key(c)}]" if _is(c, "KeyExpr") else ident(c)
                                               for c in node.order_by))
        if node.within is not None:
            out.append("WITHIN " + self.sql(node.within))
        if node.consume != "NONE":
            out.append("CONSUME BY " + node.consume)
        if node.limit is not None:
            out.append(f"LIMIT {node.limit}")
        return " ".join(out)

    @staticmethod
    def _key(key: ast.Key) -> str:
        """A PARTITION BY / ORDER BY key; an expression keeps its result name as an alias."""
        return f"{key.expr.text} AS {ident(key.name)}" if _is(key, "KeyExpr") else ident(key)

    def source_ceql(self, node: ast.Source) -> str:
        out = ".".join(ident(p) for p in node.name.split("."))
        if node.alias:
            out += " AS " + ident(node.alias)
        if node.typed_by:
            out += " TYPED BY " + ident(node.typed_by)
        return out

    # -- select items
    def star_ceql(self, node: ast.Star) -> str:
        return "*"

    def select_var_ceql(self, node: ast.SelectVar) -> str:
        return ident(node.var)

    def select_var_columns_ceql(self, node: ast.SelectVarColumns) -> str:
        return ident(node.var) + "[" + ", ".join(ident(c) for c in node.columns) + "]"

    def select_expr_ceql(self, node: ast.SelectExpr) -> str:
        return node.expr.text + (" AS " + ident(node.alias) if node.alias else "")

    # -- windows
    def events_window_ceql(self, node: ast.EventsWindow) -> str:
        return f"{node.events} EVENTS"

    def time_window_ceql(self, node: ast.TimeWindow) -> str:
        col = f" [{ident(node.column)}]" if node.column else ""
        return duration_ceql(node.micros) + col

    def column_window_ceql(self, node: ast.ColumnWindow) -> str:
        return f"{node.amount!r} [{ident(node.column)}]"

    # -- patterns and conditions
    def _wrap(self, child, level: int, strict: bool = False) -> str:
        """The child's text, in parentheses when it binds more loosely than ``level`` (or as
        loosely, with ``strict``: the right operand of a left-associative operator)."""
        text = self.sql(child)
        child_level = _LEVEL[type(child).__name__]
        if child_level < level or (strict and child_level == level):
            return f"({text})"
        return text

    def atom_ceql(self, node: ast.Atom) -> str:
        return (ident(node.source) + ">" if node.source else "") + ident(node.type)

    def as_ceql(self, node: ast.As) -> str:
        return f"{self._wrap(node.pattern, 7)} AS {ident(node.var)}"

    def kleene_plus_ceql(self, node: ast.KleenePlus) -> str:
        return f"{self._wrap(node.pattern, 7)}+"

    def contiguous_plus_ceql(self, node: ast.ContiguousPlus) -> str:
        return f"{self._wrap(node.pattern, 7)} :+"

    def _binary(self, node, op: str) -> str:
        level = _LEVEL[type(node).__name__]
        return f"{self._wrap(node.left, level)} {op} {self._wrap(node.right, level, strict=True)}"

    def seq_ceql(self, node: ast.Seq) -> str:
        return self._binary(node, ";")

    def contiguous_ceql(self, node: ast.Contiguous) -> str:
        return self._binary(node, ":")

    def or_ceql(self, node: ast.Or) -> str:
        return self._binary(node, "OR")

    def and_ceql(self, node: ast.And) -> str:
        return self._binary(node, "AND")

    def all_ceql(self, node: ast.All) -> str:
        return self._binary(node, "ALL")

    def unless_ceql(self, node: ast.Unless) -> str:
        return self._binary(node, "UNLESS")

    def not_ceql(self, node: ast.Not) -> str:
        inner = self.sql(node.atom)
        if node.condition is not None:
            inner += f" FILTER {self.sql(node.condition)}"
        return f"NOT ({inner})"

    def filter_ceql(self, node: ast.Filter) -> str:
        return f"{self._wrap(node.pattern, 0)} FILTER {self.sql(node.condition)}"

    # -- conditions
    def var_predicate_ceql(self, node: ast.VarPredicate) -> str:
        return f"{ident(node.var)}[{node.predicate.text}]"

    def cross_predicate_ceql(self, node: ast.CrossPredicate) -> str:
        return node.expr.text

    def filter_and_ceql(self, node: ast.FilterAnd) -> str:
        return self._binary(node, "AND")

    def filter_or_ceql(self, node: ast.FilterOr) -> str:
        return self._binary(node, "OR")


def to_ceql(node) -> str:
    """Canonical CEQL text of any AST node."""
    return Printer().sql(node)
