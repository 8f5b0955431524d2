"""Static analysis: what a query means before any data is seen.

Input: a parsed :class:`cerql.ast.Query` and its text. Output: an :class:`Analysis` with the
variables, their scopes and cardinalities, what ``SELECT`` selects, and the query errors that
need no schema (docs/architecture.md, "The packages"): FILTER variables bound in the filtered
pattern, CONSUME BY ANY without PARTITION BY, variable names that clash with output columns,
known sources in ``S>T``. Errors are :class:`cerql.errors.AnalysisError` (or
``UnsupportedError``) with a position.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from sqlglot import exp

from cerql import ast
from cerql.errors import AnalysisError, UnsupportedError, start_of
from cerql.parser.sqlexpr import as_written, expr_position
from cerql.planner import aggregates, safety

MATCH_COLUMNS = ("match_id", "match_start", "match_end")
ONE, MANY = 1, 2  # at most one event per valuation, or possibly several


@dataclass(frozen=True)
class OutputVar:
    """A selected variable: its output column name and the stream columns it shows (None = all)."""

    name: str
    var: str
    columns: tuple[str, ...] | None
    many: bool


@dataclass(frozen=True)
class OutputExpr:
    """A selected Spark expression over qualified columns of single-event variables."""

    name: str
    expr: ast.SqlExpr


@dataclass(frozen=True)
class Analysis:
    """A query with its static facts. ``variables`` lists every variable (AS names and atom
    types) in order of first appearance; ``cardinality`` maps each to ONE or MANY."""

    text: str
    select: ast.Select
    view: ast.CreateView | None
    variables: tuple[str, ...]
    cardinality: dict[str, int]
    selected: tuple[str, ...]
    outputs: tuple[OutputVar | OutputExpr, ...]


def check_view(analysis: Analysis, exists) -> None:
    """``CREATE TEMP VIEW v`` without OR REPLACE fails with VIEW_EXISTS, as in Spark, when
    ``exists(v)`` says the name is taken (a table given to ``cerql.run``, a view of the session)."""
    view = analysis.view
    if view is not None and not view.replace and exists(view.name):
        raise AnalysisError.at(analysis.text, 0, f"Temporary view '{view.name}' already exists", "VIEW_EXISTS",
                               "write CREATE OR REPLACE TEMP VIEW")


def find_name(text: str, name: str, start: int = 0) -> int | None:
    """Offset of ``name`` written bare or back-quoted at or after ``start`` (clause positions
    the AST does not keep), or None."""
    m = re.compile(r"(?<![\w`])(`" + re.escape(name.replace("`", "``")) + r"`|" + re.escape(name) + r"(?![\w`]))",
                   re.IGNORECASE).search(text, start)
    return m.start() if m else None


def pattern_variables(node) -> list[str]:
    """Variables a pattern defines and shows outside it: atom types and AS names, in order of
    appearance. The atom of ``NOT (T)`` binds nothing, and the variables of UNLESS's right side
    are its own (docs/language.md, "Negation and conjunction")."""
    out: list[str] = []

    def visit(n) -> None:
        name = n.type if isinstance(n, ast.Atom) else n.var if isinstance(n, ast.As) else None
        if name is not None and name not in out:
            out.append(name)
        if isinstance(n, ast.Unless):
            visit(n.left)
        elif not isinstance(n, ast.Not):
            for child in ast.children(n):
                visit(child)

    visit(node)
    return out


def hidden_variables(node) -> set[str]:
    """Names that only the right side of an UNLESS under node binds: node does not show them."""
    inside = {v for n in ast.walk(node) if isinstance(n, ast.Unless) for v in pattern_variables(n.right)}
    return inside - set(pattern_variables(node))


def _positions(node) -> int:
    """ONE when every valuation of node spans exactly one position, else MANY."""
    if isinstance(node, (ast.Atom, ast.Not)):
        return ONE
    if isinstance(node, (ast.As, ast.Filter)):
        return _positions(node.pattern)
    if isinstance(node, ast.Or):
        return max(_positions(node.left), _positions(node.right))
    if isinstance(node, ast.And):  # the same positions on both sides
        return min(_positions(node.left), _positions(node.right))
    if isinstance(node, ast.Unless):
        return _positions(node.left)
    return MANY


def _cardinality(node, var: str) -> int:
    """0, ONE or MANY: how many events ``var`` can hold in one valuation of node."""
    if isinstance(node, ast.Atom):
        return ONE if node.type == var else 0
    if isinstance(node, ast.Not):
        return 0
    if isinstance(node, ast.As):
        inner = _cardinality(node.pattern, var)
        return max(inner, _positions(node.pattern)) if node.var == var else inner
    if isinstance(node, (ast.KleenePlus, ast.ContiguousPlus)):
        return MANY if _cardinality(node.pattern, var) else 0
    if isinstance(node, (ast.Seq, ast.Contiguous, ast.And, ast.All)):  # AND: each side may bind another event
        return min(MANY, _cardinality(node.left, var) + _cardinality(node.right, var))
    if isinstance(node, ast.Or):
        return max(_cardinality(node.left, var), _cardinality(node.right, var))
    if isinstance(node, ast.Unless):
        return _cardinality(node.left, var)
    return _cardinality(node.pattern, var)  # Filter


def _star_variables(node, under_as: bool = False) -> list[str]:
    """``*``: every AS variable plus the type of each atom under no AS (docs/language.md,
    "SELECT"); not the atom of a NOT, nor what UNLESS's right side binds (docs/language.md,
    "Negation and conjunction")."""
    if isinstance(node, ast.Atom):
        return [] if under_as else [node.type]
    if isinstance(node, ast.Not):
        return []
    if isinstance(node, ast.As):
        return [node.var] + _star_variables(node.pattern, True)
    if isinstance(node, ast.Unless):
        return _star_variables(node.left, under_as)
    out: list[str] = []
    for child in ast.children(node):
        if not isinstance(child, (ast.VarPredicate, ast.CrossPredicate, ast.FilterAnd, ast.FilterOr)):
            out += _star_variables(child, under_as)
    return out


def _condition_leaves(cond):
    if isinstance(cond, (ast.FilterAnd, ast.FilterOr)):
        yield from _condition_leaves(cond.left)
        yield from _condition_leaves(cond.right)
    else:
        yield cond


def _unless_only(name: str, node, text: str, at: int, where: str) -> None:
    """The error for a name that only UNLESS's right side binds, used outside it."""
    if name in hidden_variables(node):
        raise AnalysisError.at(text, at, f"Variable '{name}' is bound only inside the right side of UNLESS",
                               "UNLESS_VARIABLE_OUTSIDE",
                               f"UNLESS's right side only rules results out: its variables are not visible "
                               f"outside it; name {name} in a FILTER inside the parentheses after UNLESS, "
                               f"not {where}")


def _check_filters(pattern, text: str) -> None:
    for node in ast.walk(pattern):
        if isinstance(node, ast.Not) and node.condition is not None:
            for leaf in _condition_leaves(node.condition):
                _check_unary_predicate(leaf, text)
        if not isinstance(node, ast.Filter):
            continue
        bound = set(pattern_variables(node.pattern))
        for leaf in _condition_leaves(node.condition):
            names = [leaf.var] if isinstance(leaf, ast.VarPredicate) else [
                col.table for col in leaf.expr.tree.find_all(exp.Column) if col.table]
            for name in names:
                if name not in bound:
                    _unless_only(name, node.pattern, text, start_of(leaf.span), "in a FILTER outside it")
            if isinstance(leaf, ast.VarPredicate):
                if leaf.var not in bound:
                    raise AnalysisError.at(text, start_of(leaf.span),
                                           f"FILTER variable '{leaf.var}' is not bound in the filtered pattern",
                                           "UNBOUND_FILTER_VARIABLE",
                                           "a FILTER may name an AS variable or an event type that occurs in the "
                                           f"pattern to its left; known here: {', '.join(sorted(bound))}")
                _check_unary_predicate(leaf, text)
            else:
                _check_cross_predicate(leaf, bound, text)


def _check_unary_predicate(leaf: ast.VarPredicate, text: str) -> None:
    safety.check(leaf.predicate, text)
    tree = leaf.predicate.tree
    for col in tree.find_all(exp.Column):
        if col.table:
            raise UnsupportedError.at(text, expr_position(leaf.predicate, col),
                                      f"'{col.sql(dialect='spark')}' refers to another variable inside {leaf.var}[...]",
                                      "QUALIFIED_COLUMN_IN_BRACKETS",
                                      "inside var[...] columns are bare names of that variable's event; "
                                      "compare variables outside brackets: FILTER b.price > a.price")
    agg = next(tree.find_all(exp.AggFunc), None)
    if agg is not None:
        raise AnalysisError.at(text, expr_position(leaf.predicate, agg),
                               f"Aggregate '{agg.sql(dialect='spark')}' inside {leaf.var}[...]",
                               "AGGREGATE_IN_BRACKETS",
                               "a bracket predicate is checked on each event alone; aggregates over a variable "
                               "are written outside brackets (FILTER sum(b.volume) > 10), a later extension")


def _check_cross_predicate(leaf: ast.CrossPredicate, bound: set[str], text: str) -> None:
    safety.check(leaf.expr, text)
    tree = leaf.expr.tree
    counted: set[int] = set()  # count(var): a bare variable name inside an aggregate
    for call in aggregates.calls(tree):
        try:
            aggregates.check(call, sorted(bound))
        except aggregates.AggregateError as err:
            cls = UnsupportedError if err.error_class == "UNSUPPORTED_AGGREGATE" else AnalysisError
            if err.error_class == "UNKNOWN_VARIABLE":
                err.error_class, err.message = "UNBOUND_FILTER_VARIABLE", err.message.replace(
                    "Unknown variable", "FILTER variable") + " is not bound in the filtered pattern"
            raise cls.at(text, expr_position(leaf.expr, err.node), err.message, err.error_class, err.hint) from None
        counted.update(id(col) for col in call.find_all(exp.Column) if not col.table)
    for col in tree.find_all(exp.Column):
        if id(col) in counted:
            continue
        if not col.table:
            raise AnalysisError.at(text, expr_position(leaf.expr, col),
                                   f"Column '{col.name}' in FILTER is not qualified by a variable",
                                   "UNQUALIFIED_FILTER_COLUMN",
                                   f"write var[{col.name} ...] for one variable, "
                                   f"or var.{col.name} to compare variables")
        if col.table not in bound:
            raise AnalysisError.at(text, expr_position(leaf.expr, col),
                                   f"FILTER variable '{col.table}' is not bound in the filtered pattern",
                                   "UNBOUND_FILTER_VARIABLE",
                                   f"known here: {', '.join(sorted(bound))}")


def _outputs(select: ast.Select, variables, cardinality, text: str):
    if isinstance(select.projection, ast.Star):
        names = list(dict.fromkeys(_star_variables(select.pattern)))
        return tuple(OutputVar(v, v, None, cardinality[v] == MANY) for v in names)
    outputs = []
    for item in select.projection:
        if isinstance(item, ast.SelectVar) and bare_reference(item.var, select, variables) == "result":
            continue  # match_* and the PARTITION BY columns are in every result row already
        if isinstance(item, (ast.SelectVar, ast.SelectVarColumns)):
            if item.var not in variables:
                _unless_only(item.var, select.pattern, text, start_of(item.span), "in SELECT")
                raise AnalysisError.at(text, start_of(item.span), f"Unknown variable '{item.var}' in SELECT",
                                       "UNKNOWN_VARIABLE",
                                       f"the pattern defines {', '.join(variables)}; to select a column write var.col")
            cols = item.columns if isinstance(item, ast.SelectVarColumns) else None
            outputs.append(OutputVar(item.var, item.var, cols, cardinality[item.var] == MANY))
        else:
            outputs.append(_select_expr(item, select, variables, cardinality, text))
    return tuple(outputs)


def bare_reference(name: str, select: ast.Select, variables) -> str | None:
    """What a bare name in a SELECT expression refers to: ``"variable"`` (the variable's value:
    a struct, or an array of structs), ``"result"`` (``match_id``, ``match_start``,
    ``match_end`` or a PARTITION BY column of the result row), or None. A variable wins over a
    result column of the same name, as the pattern's names are the innermost scope."""
    if name in variables:
        return "variable"
    if name.lower() in MATCH_COLUMNS or name.lower() in {c.lower() for c in partition_names(select)}:
        return "result"
    return None


def partition_names(select: ast.Select) -> tuple[str, ...]:
    """The PARTITION BY columns' names in results: a key expression's own name
    (planner/derived.py made it a column), else the column's."""
    shown = dict(select.key_names)
    return tuple(shown.get(c, c) for c in select.partition_by)


def _select_expr(item: ast.SelectExpr, select: ast.Select, variables, cardinality, text: str) -> OutputExpr:
    safety.check(item.expr, text)
    tree = item.expr.tree
    inside: set[int] = set()  # columns read by aggregates: any variable, set or single
    for call in aggregates.calls(tree):
        try:
            aggregates.check(call, variables)
        except aggregates.AggregateError as err:
            cls = UnsupportedError if err.error_class == "UNSUPPORTED_AGGREGATE" else AnalysisError
            raise cls.at(text, expr_position(item.expr, err.node), err.message, err.error_class, err.hint) from None
        inside.update(id(col) for col in call.find_all(exp.Column))
    for col in tree.find_all(exp.Column):
        if id(col) in inside:
            continue
        if not col.table:
            if bare_reference(col.name, select, variables) is None:
                raise AnalysisError.at(text, expr_position(item.expr, col), f"Unknown name '{col.name}' in SELECT",
                                       "UNKNOWN_VARIABLE",
                                       f"a SELECT expression reads a variable's columns (a.price), a variable "
                                       f"itself (size(b), b[0].price), match_start, match_end, match_id or a "
                                       f"PARTITION BY column; the pattern defines {', '.join(variables)}")
            continue
        if col.table not in variables:
            _unless_only(col.table, select.pattern, text, expr_position(item.expr, col), "in SELECT")
            raise AnalysisError.at(text, expr_position(item.expr, col), f"Unknown variable '{col.table}' in SELECT",
                                   "UNKNOWN_VARIABLE",
                                   f"the pattern defines {', '.join(variables)}")
        if cardinality[col.table] == MANY:
            raise UnsupportedError.at(text, expr_position(item.expr, col),
                                      f"'{col.sql(dialect='spark')}': variable '{col.table}' can hold several events",
                                      "SET_VARIABLE_IN_EXPRESSION",
                                      f"aggregate it, e.g. sum({col.table}.{col.name}) or "
                                      f"collect_list({col.table}.{col.name}), pick one event "
                                      f"({col.table}[0].{col.name}, element_at({col.table}, -1).{col.name}), "
                                      f"or select {col.table} itself (an array of its events)")
    # Spark's naming: a column keeps its own name, any other expression is named as written, as
    # a key expression is
    name = item.alias or (tree.name if isinstance(tree, exp.Column) else as_written(item.expr))
    return OutputExpr(name, item.expr)


def _output_variables(outputs, variables):
    """The variables a result keeps: selected ones and those SELECT expressions read (as
    ``var.col``, inside aggregates, or whole)."""
    for o in outputs:
        if isinstance(o, OutputVar):
            yield o.var
        else:
            yield from (n for col in o.expr.tree.find_all(exp.Column) if (n := col.table or col.name) in variables)


def analyze(query: ast.Query, text: str) -> Analysis:
    """Check a parsed query and collect what later stages need (no schema, no data)."""
    view = query if isinstance(query, ast.CreateView) else None
    select = ast.select_of(query)

    refs: dict[str, ast.Source] = {}
    for source in select.sources:
        key = source.ref.lower()
        if key in refs:
            at = source.span.start if source.span else 0
            where = find_name(text, source.ref, at + (len(source.name) if source.alias else 0))
            raise AnalysisError.at(text, start_of(source.span, where),
                                   f"Source name '{source.ref}' is used twice in FROM", "DUPLICATE_SOURCE",
                                   "give one of them an alias: FROM s, s AS s2")
        refs[key] = source
    for node in ast.walk(select.pattern):
        if isinstance(node, ast.Atom) and node.source is not None and node.source.lower() not in refs:
            raise AnalysisError.at(text, start_of(node.span),
                                   f"Unknown source '{node.source}' in '{node.source}>{node.type}'",
                                   "UNKNOWN_SOURCE",
                                   f"FROM lists {', '.join(s.ref for s in select.sources)}")

    variables = tuple(pattern_variables(select.pattern))
    cardinality = {v: _cardinality(select.pattern, v) for v in variables}
    _check_filters(select.pattern, text)

    if select.consume == "ANY" and select.partition_by:
        consume = find_name(text, "CONSUME", select.pattern.span.end if select.pattern.span else 0)
        raise AnalysisError.at(text, start_of(select.span, consume),
                               "CONSUME BY ANY cannot be combined with PARTITION BY",
                               "CONSUME_ANY_WITH_PARTITION",
                               "CONSUME BY ANY needs one global order of results; use CONSUME BY PARTITION "
                               "to consume within each partition")

    window = select.within
    if isinstance(window, (ast.TimeWindow, ast.ColumnWindow)) and window.column and select.order_by:
        if window.column.lower() != select.order_by[0].lower():
            raise AnalysisError.at(text, start_of(window.span),
                                   f"WITHIN [{window.column}] is not the first ORDER BY column ({select.order_by[0]})",
                                   "WINDOW_COLUMN_NOT_ORDER",
                                   f"windows are measured on the first ordering column: ORDER BY {window.column}, "
                                   "or drop ORDER BY")

    outputs = _outputs(select, variables, cardinality, text)
    # Reserved names compare case-insensitively (Spark's default); outputs among themselves
    # compare exactly, so `A AS a ; A` selects both a and A (docs/semantics.md, "Results").
    reserved = {c.lower() for c in partition_names(select)} | set(MATCH_COLUMNS)
    seen: set[str] = set()
    for out in outputs:
        if out.name.lower() in reserved or out.name in seen:
            raise AnalysisError.at(text, _definition_offset(select, out, text),
                                   f"Output column '{out.name}' clashes with a PARTITION BY, match_* or "
                                   "another output column",
                                   "OUTPUT_NAME_CLASH",
                                   "rename the variable or alias the expression")
        seen.add(out.name)
    selected = tuple(dict.fromkeys(_output_variables(outputs, variables)))
    if not selected:
        # A decision (docs/semantics.md, "Results"): a SELECT list that reads no variable
        # (constants, match_*, PARTITION BY columns) shows one row per result of SELECT *: the
        # results keep SELECT *'s variables for their identity, and SELECT only picks columns.
        selected = tuple(dict.fromkeys(_star_variables(select.pattern)))
    if not selected:
        # A pattern that binds no variable (WHERE NOT (A)) still has matches, and SELECT *
        # promises every match: its results are the events the match covers, as CORE returns
        # them, under a hidden variable no SELECT item shows (docs/language.md, "SELECT").
        hidden = match_variable(select.pattern)
        select = dataclasses.replace(select, pattern=ast.As(select.pattern, hidden, select.pattern.span))
        variables += (hidden,)
        cardinality[hidden] = max(ONE, _positions(select.pattern.pattern))
        selected = (hidden,)
    return Analysis(text, select, view, variables, cardinality, selected, outputs)


#: The hidden variable of a pattern that binds none (``match_variable``).
MATCH_VARIABLE = "__match"


def match_variable(pattern) -> str:
    """A name for the hidden variable that holds every event of a match of a pattern that
    binds no variable: ``__match``, unless a name inside the pattern (UNLESS's right side,
    which hides its variables) is already that."""
    taken = {n.var for n in ast.walk(pattern) if isinstance(n, ast.As)} | {
        n.type for n in ast.walk(pattern) if isinstance(n, ast.Atom)}
    name, k = MATCH_VARIABLE, 1
    while name in taken:
        name, k = f"{MATCH_VARIABLE}{k}", k + 1
    return name


def _definition_offset(select: ast.Select, out, text: str) -> int:
    """Where an output name was written: its SELECT item, AS clause or atom."""
    if not isinstance(select.projection, ast.Star):
        for item in select.projection:
            if getattr(item, "alias", None) == out.name and item.span:
                return find_name(text, out.name, item.span.start + 1) or item.span.start
            if getattr(item, "var", None) == out.name:
                return item.span.start if item.span else 0
    for node in ast.walk(select.pattern):
        if isinstance(node, ast.As) and node.var == out.name and node.span:
            quoted = text[node.span.end - 1] == "`"
            return node.span.end - len(out.name) - (2 if quoted else 0)
        if isinstance(node, ast.Atom) and node.type == out.name and node.span:
            return node.span.start
    return select.span.start if select.span else 0

