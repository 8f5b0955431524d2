"""The row pattern functions as they appear in a MATCH_RECOGNIZE expression's sqlglot tree.

Input: sqlglot nodes of the expressions in :mod:`cerql.mr_ast` (whose docstring fixes their
shape). Output: what a node is (a navigation, CLASSIFIER, MATCH_NUMBER, RUNNING/FINAL, an
aggregate over a variable's rows), its arguments and its qualifier. The planner's checks
(planner/mr_analyze.py) and the engine (exec/mr_define.py, exec/mr_measures.py) read the trees
through these functions, so the two agree on the shapes; the module imports only sqlglot.
"""

from __future__ import annotations

from sqlglot import exp

PREV, NEXT, FIRST, LAST = "PREV", "NEXT", "FIRST", "LAST"
PHYSICAL = (PREV, NEXT)  # offsets in the ordered partition
LOGICAL = (FIRST, LAST)  # offsets among the rows mapped to a variable
NAVIGATIONS = PHYSICAL + LOGICAL
CLASSIFIER, MATCH_NUMBER = "CLASSIFIER", "MATCH_NUMBER"
RUNNING, FINAL = "RUNNING", "FINAL"
ROW_PATTERN_FUNCTIONS = NAVIGATIONS + (CLASSIFIER, MATCH_NUMBER, RUNNING, FINAL)

# The aggregates over a variable's rows the engine computes, by sqlglot class.
AGGREGATES: dict[type, str] = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}


def function_name(node: exp.Expression) -> str | None:
    """The row pattern function ``node`` calls (upper case), or None. sqlglot's own First/Last
    (a tree not built by the MATCH_RECOGNIZE parser) count as FIRST/LAST with no offset."""
    if isinstance(node, exp.Anonymous):
        name = str(node.this).upper()
        return name if name in ROW_PATTERN_FUNCTIONS else None
    if isinstance(node, exp.First):
        return FIRST
    if isinstance(node, exp.Last):
        return LAST
    return None


def arguments(node: exp.Expression) -> list[exp.Expression]:
    """The arguments of a row pattern function call."""
    if isinstance(node, (exp.First, exp.Last)):
        return [node.this]
    return list(node.expressions)


def aggregate_kind(node: exp.Expression) -> str | None:
    """``count``, ``sum``, ``avg``, ``min`` or ``max`` when ``node`` is that aggregate, else None."""
    return AGGREGATES.get(type(node))


def is_aggregate(node: exp.Expression) -> bool:
    """Any aggregate function (exp.AggFunc), the engine's or not; FIRST/LAST are navigations."""
    return isinstance(node, exp.AggFunc) and not isinstance(node, (exp.First, exp.Last))


def qualifier(column: exp.Column) -> str | None:
    """The variable or SUBSET name that qualifies a column (``A`` in ``A.price``), or None."""
    return column.table or None


def is_star(node: exp.Expression) -> bool:
    """``*`` or ``A.*``."""
    return isinstance(node, exp.Star) or (isinstance(node, exp.Column) and isinstance(node.this, exp.Star))


def literal_offset(node: exp.Expression | None) -> int | None:
    """The value of an integer literal offset (parentheses allowed), else None."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return int(node.this)
        except ValueError:
            return None
    return None


def default_offset(name: str) -> int:
    """PREV/NEXT move one row by default; FIRST/LAST take the first/last row (offset 0)."""
    return 1 if name in PHYSICAL else 0


def walk(node: exp.Expression):
    """Every node under ``node``, itself first (sqlglot's walk, depth first)."""
    yield from node.walk()


def node_offset(expr, node: exp.Expression | None = None) -> int:
    """Offset in the query of ``node``, a part of ``expr.tree`` (an ``ast.SqlExpr``): a row
    pattern function's name, else its first name as sqlglot recorded it, else where its text is
    first written in the fragment, else where ``expr`` starts. The engine's errors use it; the
    planner's checks too, with ``parser.sqlexpr.expr_position`` for the rest."""
    fallback = expr.span.start if expr.span is not None else expr.offset
    if node is None:
        return fallback
    starts = [i.meta["start"] for i in node.find_all(exp.Identifier) if "start" in i.meta]
    source = expr.source.upper() if expr.source else ""
    name = function_name(node)
    if name is not None and source:
        at = source.rfind(name, 0, min(starts) if starts else len(source))
        if at >= 0:
            return expr.offset + at
    if starts:
        return expr.offset + min(starts)
    if source:
        at = source.find(node.sql(dialect="spark").upper())
        if at >= 0:
            return expr.offset + at
    return fallback


def canonical(name: str) -> str:
    """Variable and SUBSET names compare without case, as Spark compares identifiers."""
    return name.upper()


def members(name: str | None, variables, subsets) -> frozenset[int] | None:
    """The indices, in ``variables``, of the variables a qualifier stands for: a variable's own,
    a SUBSET's (``subsets``: canonical name -> its variables), or None for no qualifier (every
    variable)."""
    if name is None:
        return None
    key = canonical(name)
    if key in subsets:
        return frozenset(variables.index(v) for v in subsets[key])
    return frozenset([variables.index(key)])


__all__ = [
    "AGGREGATES", "CLASSIFIER", "FINAL", "FIRST", "LAST", "LOGICAL", "MATCH_NUMBER", "NAVIGATIONS", "NEXT",
    "PHYSICAL", "PREV", "ROW_PATTERN_FUNCTIONS", "RUNNING", "aggregate_kind", "arguments", "canonical",
    "default_offset", "function_name", "is_aggregate", "is_star", "literal_offset", "members", "node_offset", "qualifier", "walk",
]
