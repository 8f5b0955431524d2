"""Checks of a MATCH_RECOGNIZE clause before anything runs, and the sort of each DEFINE.

Input: a :class:`cerql.mr_ast.MatchRecognize` and the query text (for positions). Output: an
:class:`MrAnalysis` (the variables, SUBSETs and DEFINEs by canonical name, and which DEFINEs are
row-local), or a positioned CeqlError with a hint (docs/semantics.md, "MATCH_RECOGNIZE"):

- a name that is neither a pattern variable nor a SUBSET, in MEASURES, DEFINE, CLASSIFIER(v) or
  AFTER MATCH SKIP TO; a SUBSET naming an unknown variable or reusing a name; a DEFINE of a
  variable the PATTERN does not have, or two DEFINEs of one; two measures of one name;
- FINAL or MATCH_NUMBER() in DEFINE (the standard forbids both there);
- ALL ROWS PER MATCH WITH UNMATCHED ROWS with an exclusion ``{- -}``;
- a DEFINE that cannot be boolean (a literal, arithmetic, a string function: knowable from the
  tree alone; a column's type is checked when the engine evaluates it);
- navigation misuse: an offset that is not a non-negative integer literal, PREV/NEXT inside
  PREV/NEXT, a navigation inside FIRST/LAST, columns of two variables in one navigation or
  aggregate, an aggregate inside a navigation, RUNNING/FINAL before something that is neither a
  navigation nor an aggregate;
- an aggregate with the wrong number of arguments (``max_by`` takes two), or ``*`` in another
  aggregate than count.

A DEFINE is *row-local* when it reads only the current row: columns unqualified, qualified by the
variable being defined (or a SUBSET that holds it: the current row is that variable's last), and
PREV/NEXT of those at constant offsets; the Pike kernel takes those as bits. Anything else
(FIRST/LAST, another variable's columns, aggregates, CLASSIFIER) depends on the rows mapped so
far: *history-dependent*, evaluated per thread by exec/mr_threads.py (``MrAnalysis.row_local``
leaves it out). What the engine does not evaluate, in MEASURES or DEFINE (FIRST/LAST,
CLASSIFIER, MATCH_NUMBER or RUNNING/FINAL inside an aggregate, where PREV/NEXT are allowed;
CLASSIFIER or MATCH_NUMBER inside a navigation; an aggregate ``mr_functions.aggregate_kind``
does not know, with ``mr_functions.refusal``'s reason and hint) is refused with
MATCH_RECOGNIZE_UNSUPPORTED naming the part.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from cerql import mr_ast
from cerql import mr_functions as mx
from cerql.ast import SqlExpr
from cerql.errors import AnalysisError, CeqlError, UnsupportedError, start_of
from cerql.mr_plan import Nfa, Skip
from cerql.parser import written
from cerql.parser.sqlexpr import expr_position
from cerql.planner.mr_compile import compile_pattern, compile_skip

MAX_VARIABLES = 64  # one bit per variable in a uint64 per row (exec/mr_define.py)
UNSUPPORTED = "MATCH_RECOGNIZE_UNSUPPORTED"

# Nodes whose value is never boolean: a DEFINE that is one of them is refused.
_NOT_BOOLEAN = (exp.Literal, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv, exp.Neg, exp.DPipe,
                exp.Concat, exp.Upper, exp.Lower, exp.Substring, exp.Length, exp.Abs, exp.Round, exp.Cast,
                exp.Coalesce)


@dataclass(frozen=True)
class MrAnalysis:
    """What the checks found. Names are canonical (``mr_functions.canonical``): ``variables`` in
    PATTERN order (variable v is bit v of the DEFINE bits), ``subsets`` each SUBSET's variables,
    ``defines`` each defined variable's condition, ``row_local`` the variables whose DEFINE reads
    only the current row (the others are history-dependent)."""

    variables: tuple[str, ...]
    subsets: dict[str, frozenset[str]]
    defines: dict[str, SqlExpr]
    row_local: frozenset[str]


def compiled(clause: mr_ast.MatchRecognize, text: str) -> tuple[MrAnalysis, Nfa, Skip]:
    """The checks, then the pattern's NFA and the AFTER MATCH SKIP of the kernel
    (planner/mr_compile.py): what exec/mr_engine.py's matcher_for takes. Names are passed to the
    compiler as PATTERN spells them, SKIP TO's and SUBSET's resolved to those spellings."""
    analysis = analyze(clause, text)
    written = {mx.canonical(v): v for v in clause.variables}
    subsets = tuple(mr_ast.Subset(mx.canonical(s.name), tuple(written[mx.canonical(v)] for v in s.variables))
                    for s in clause.subsets)
    after = clause.after_match
    if after.variable is not None:
        target = mx.canonical(after.variable)
        after = mr_ast.AfterMatchSkip(after.mode, written.get(target, target), after.span)
    return analysis, compile_pattern(clause.pattern, clause.variables), compile_skip(after, clause.variables, subsets)


def analyze(clause: mr_ast.MatchRecognize, text: str) -> MrAnalysis:
    """Check ``clause`` (module docstring) and sort its DEFINEs: the row-local ones in
    ``row_local``, the history-dependent ones left out of it."""
    variables = tuple(dict.fromkeys(mx.canonical(v) for v in clause.variables))
    if len(variables) < len(clause.variables):
        twice = next(v for v in clause.variables if [mx.canonical(w) for w in clause.variables].count(mx.canonical(v)) > 1)
        raise AnalysisError.at(text, start_of(clause.pattern.span),
                               f"PATTERN spells variable {twice} in more than one way",
                               "MATCH_RECOGNIZE_DUPLICATE_NAME",
                               "names compare without case: write each variable the same way everywhere")
    if len(variables) > MAX_VARIABLES:
        raise UnsupportedError.at(text, start_of(clause.pattern.span),
                                  f"PATTERN has {len(variables)} variables; at most {MAX_VARIABLES} are supported",
                                  UNSUPPORTED, "use fewer pattern variables")
    subsets = _subsets(clause, variables, text)
    names = set(variables) | set(subsets)
    defines = _defines(clause, variables, text)
    _check_after_match(clause, names, text)
    _check_rows_per_match(clause, text)
    scope = _Scope(text, variables, subsets)
    seen: dict[str, mr_ast.Measure] = {}
    for measure in clause.measures:
        key = measure.name.lower()
        if key in seen:
            raise AnalysisError.at(text, start_of(measure.span), f"Two measures are named '{measure.name}'",
                                   "MATCH_RECOGNIZE_DUPLICATE_MEASURE", "give each measure its own name after AS")
        seen[key] = measure
        scope.check(measure.expr, in_define=None)
    row_local = set()
    for name, condition in defines.items():
        scope.check(condition, in_define=name)
        _check_boolean(condition, text)
        if scope.history(condition, name) is None:
            row_local.add(name)
    return MrAnalysis(variables, subsets, defines, frozenset(row_local))


def _subsets(clause, variables, text) -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for subset in clause.subsets:
        name = mx.canonical(subset.name)
        if name in variables or name in out:
            raise AnalysisError.at(text, start_of(subset.span), f"SUBSET {subset.name} reuses the name of a "
                                   f"{'pattern variable' if name in variables else 'SUBSET'}",
                                   "MATCH_RECOGNIZE_DUPLICATE_NAME", "give the SUBSET a name of its own")
        members = []
        for v in subset.variables:
            if mx.canonical(v) not in variables:
                raise AnalysisError.at(
                    text, _name_in_span(text, subset.span, v), f"SUBSET {subset.name} names '{v}', which is not a "
                    "variable of PATTERN", "MATCH_RECOGNIZE_UNDEFINED_VARIABLE",
                    f"the pattern's variables are {', '.join(variables)}")
            members.append(mx.canonical(v))
        out[name] = frozenset(members)
    return out


def _defines(clause, variables, text) -> dict[str, SqlExpr]:
    out: dict[str, SqlExpr] = {}
    for define in clause.defines:
        name = mx.canonical(define.variable)
        if name not in variables:
            raise AnalysisError.at(text, start_of(define.span), f"DEFINE names '{define.variable}', which is not "
                                   "a variable of PATTERN", "MATCH_RECOGNIZE_UNDEFINED_VARIABLE",
                                   f"the pattern's variables are {', '.join(variables)}")
        if name in out:
            raise AnalysisError.at(text, start_of(define.span), f"Variable {define.variable} is defined twice",
                                   "MATCH_RECOGNIZE_DUPLICATE_DEFINE", "join the two conditions with AND")
        out[name] = define.condition
    return out


def _check_after_match(clause, names, text):
    skip = clause.after_match
    if skip.variable is not None and mx.canonical(skip.variable) not in names:
        raise AnalysisError.at(text, _name_in_span(text, skip.span, skip.variable),
                               f"AFTER MATCH SKIP {skip.mode} names '{skip.variable}', which is neither a pattern "
                               "variable nor a SUBSET", "MATCH_RECOGNIZE_UNDEFINED_VARIABLE",
                               f"name one of {', '.join(sorted(names))}")


def check_output_columns(clause: mr_ast.MatchRecognize, text: str) -> None:
    """ONE ROW PER MATCH gives the PARTITION BY columns and the measures: with neither, a match
    is a row of no columns, which an Arrow table (cerql.run's result) cannot count, so every
    surface refuses it (the front door's ``plan_row_pattern``)."""
    if clause.rows_per_match.all_rows or clause.partition_by or clause.measures:
        return
    raise AnalysisError.at(text, start_of(clause.pattern.span), "ONE ROW PER MATCH without PARTITION BY or MEASURES "
                           "gives rows of no columns", "MATCH_RECOGNIZE_NO_COLUMNS",
                           "add MEASURES (MATCH_NUMBER() AS match_number, say), or ALL ROWS PER MATCH")


def _check_rows_per_match(clause, text):
    if clause.rows_per_match.mode != mr_ast.WITH_UNMATCHED:
        return
    excluded = _find_exclusion(clause.pattern)
    if excluded is not None:
        raise AnalysisError.at(text, start_of(excluded.span, start_of(clause.rows_per_match.span)),
                               "ALL ROWS PER MATCH WITH UNMATCHED ROWS cannot be used with a pattern exclusion {- -}",
                               "MATCH_RECOGNIZE_UNMATCHED_WITH_EXCLUSION",
                               "remove the exclusion, or use SHOW EMPTY MATCHES / OMIT EMPTY MATCHES")


def _find_exclusion(pattern):
    return next((node for node in mr_ast.walk(pattern) if isinstance(node, mr_ast.Exclusion)), None)


def _check_boolean(condition: SqlExpr, text: str):
    bare = condition.tree
    while isinstance(bare, exp.Paren):
        bare = bare.this
    if isinstance(bare, exp.Boolean):
        return
    if isinstance(bare, _NOT_BOOLEAN) and not (isinstance(bare, exp.Cast) and bare.to.this == exp.DataType.Type.BOOLEAN):
        raise AnalysisError.at(text, _position(condition, bare), f"DEFINE condition '{condition.text}' is not boolean",
                               "MATCH_RECOGNIZE_DEFINE_NOT_BOOLEAN",
                               "a DEFINE condition must be true or false for a row, e.g. price > PREV(price)")


def _name_in_span(text: str, span, name: str) -> int:
    """Where ``name`` is written inside ``span`` (case-insensitive), else the span's start."""
    if span is None:
        return 0
    at = text.upper().find(name.upper(), span.start, span.end if span.end > span.start else len(text))
    return at if at >= 0 else span.start


def _position(expr: SqlExpr, node: exp.Expression) -> int:
    """The offset of ``node`` in the query: a row pattern function's name or a name-less node
    (mr_functions.node_offset), else parser.sqlexpr.expr_position."""
    if mx.function_name(node) is not None or not any(True for _ in node.find_all(exp.Identifier)):
        return mx.node_offset(expr, node)
    return expr_position(expr, node)


class _Scope:
    """The names an expression may use, and the checks of its row pattern functions."""

    def __init__(self, text: str, variables: tuple[str, ...], subsets: dict[str, frozenset[str]]):
        self.text = text
        self.variables = variables
        self.subsets = subsets

    def _error(self, cls: type[CeqlError], expr: SqlExpr, node, message: str, error_class: str, hint: str):
        return cls.at(self.text, _position(expr, node), message, error_class, hint)

    def _known(self, expr: SqlExpr, name: str, node):
        if mx.canonical(name) not in self.variables and mx.canonical(name) not in self.subsets:
            known = list(self.variables) + list(self.subsets)
            raise self._error(AnalysisError, expr, node, f"'{name}' is neither a pattern variable nor a SUBSET",
                              "MATCH_RECOGNIZE_UNDEFINED_VARIABLE",
                              f"qualify columns with one of {', '.join(known)}, or leave them unqualified (any row)")

    def check(self, expr: SqlExpr, in_define: str | None):
        """The checks of the module docstring on one MEASURES or DEFINE expression."""
        self._visit(expr, expr.tree, in_define, inside=None)

    def _visit(self, expr, node, in_define, inside):
        """``inside``: the innermost navigation or aggregate around ``node`` (its name), or None."""
        if isinstance(node, exp.Column):
            q = mx.qualifier(node)
            if q is not None:
                self._known(expr, q, node)
            return
        name = mx.function_name(node)
        if name in (mx.RUNNING, mx.FINAL):
            if in_define is not None and name == mx.FINAL:
                raise self._error(AnalysisError, expr, node, "FINAL cannot be used in DEFINE",
                                  "MATCH_RECOGNIZE_FINAL_IN_DEFINE",
                                  "DEFINE sees the match only up to the current row: drop FINAL (RUNNING is implied)")
            args = mx.arguments(node)
            target = args[0] if args else None
            if target is None or not (mx.function_name(target) in (*mx.NAVIGATIONS, mx.CLASSIFIER)
                                      or mx.is_aggregate(target)):
                raise self._error(AnalysisError, expr, node, f"{name} must be followed by a navigation "
                                  "(FIRST, LAST, PREV, NEXT), CLASSIFIER or an aggregate", "MATCH_RECOGNIZE_INVALID_NAVIGATION",
                                  f"write {name} LAST(A.x) or {name} count(A.*)")
            self._visit(expr, target, in_define, inside)
            return
        if name == mx.MATCH_NUMBER:
            if in_define is not None:
                raise self._error(AnalysisError, expr, node, "MATCH_NUMBER() cannot be used in DEFINE",
                                  "MATCH_RECOGNIZE_MATCH_NUMBER_IN_DEFINE",
                                  "the match number is known only once the match is found: use it in MEASURES")
            return
        if name == mx.CLASSIFIER:
            args = mx.arguments(node)
            if args:
                if len(args) > 1 or not isinstance(args[0], exp.Column) or args[0].table:
                    raise self._error(AnalysisError, expr, node, "CLASSIFIER takes one variable name or nothing",
                                      "MATCH_RECOGNIZE_INVALID_NAVIGATION", "write CLASSIFIER() or CLASSIFIER(A)")
                self._known(expr, args[0].name, args[0])
            return
        if name in mx.NAVIGATIONS:
            self._navigation(expr, node, name, in_define, inside)
            return
        if mx.is_aggregate(node):
            self._aggregate(expr, node, in_define, inside)
            return
        for child in node.iter_expressions():
            self._visit(expr, child, in_define, inside)

    def _navigation(self, expr, node, name, in_define, inside):
        args = mx.arguments(node)
        if not 1 <= len(args) <= 2:
            raise self._error(AnalysisError, expr, node, f"{name} takes an expression and an optional offset",
                              "MATCH_RECOGNIZE_INVALID_NAVIGATION", f"write {name}(A.x) or {name}(A.x, 2)")
        if len(args) == 2:
            offset = mx.literal_offset(args[1])
            if offset is None or offset < 0:
                raise self._error(AnalysisError, expr, args[1], f"The offset of {name} must be a non-negative "
                                  "integer constant", "MATCH_RECOGNIZE_INVALID_OFFSET", f"write {name}(A.x, 2)")
        if inside in mx.PHYSICAL and name in mx.PHYSICAL:
            raise self._error(AnalysisError, expr, node, f"{name} cannot be nested in {inside}",
                              "MATCH_RECOGNIZE_INVALID_NAVIGATION", "add the offsets: PREV(x, 3) instead of PREV(PREV(x), 2)")
        if inside in mx.LOGICAL:
            raise self._error(AnalysisError, expr, node, f"{name} cannot be nested in {inside}",
                              "MATCH_RECOGNIZE_INVALID_NAVIGATION", "only FIRST/LAST may be nested in PREV/NEXT")
        if inside == "aggregate" and name in mx.LOGICAL:
            raise self._error(UnsupportedError, expr, node, f"{name} inside an aggregate is not supported yet",
                              UNSUPPORTED, "aggregate the columns themselves, e.g. sum(A.x), or PREV/NEXT of them, "
                              "e.g. sum(A.x - PREV(A.x))")
        self._one_variable(expr, node, args[0], name)
        for sub in args[0].walk():
            if mx.function_name(sub) == mx.CLASSIFIER or (mx.function_name(sub) == mx.MATCH_NUMBER and in_define is None):
                raise self._error(UnsupportedError, expr, sub, f"{mx.function_name(sub)}() inside {name} is not "
                                  "supported yet", UNSUPPORTED, f"use {mx.function_name(sub)}() outside the navigation")
        self._visit(expr, args[0], in_define, name)

    def _aggregate(self, expr, node, in_define, inside):
        kind = mx.aggregate_kind(node)
        if kind is None:
            why, hint = mx.refusal(node)
            raise self._error(UnsupportedError, expr, node, f"The aggregate {node.sql(dialect='spark')} is not "
                              f"supported in MATCH_RECOGNIZE: {why}", UNSUPPORTED, hint)
        if inside is not None:
            raise self._error(AnalysisError, expr, node, f"An aggregate cannot be nested in {inside}",
                              "MATCH_RECOGNIZE_INVALID_NAVIGATION", "navigate to the rows, then aggregate outside")
        args = mx.aggregate_arguments(node)
        if not args:
            return
        if mx.is_star(args[0]):
            if kind != "count" or len(args) > 1:
                raise self._error(AnalysisError, expr, node, f"Only count takes *: {node.sql(dialect='spark')}",
                                  "MATCH_RECOGNIZE_INVALID_AGGREGATE", "write count(A.*), or name a column")
            if isinstance(args[0], exp.Column):
                self._known(expr, args[0].table, args[0])
            return
        wanted = mx.aggregate_arity(kind)
        if len(args) != wanted:
            raise self._error(AnalysisError, expr, node, f"{node.sql(dialect='spark')} takes {wanted} "
                              f"argument{'s' if wanted > 1 else ''}", "MATCH_RECOGNIZE_INVALID_AGGREGATE",
                              "e.g. max_by(A.x, A.y), count(DISTINCT A.x)")
        self._parameters(expr, node, kind)
        self._one_variable(expr, node, node, kind)
        for argument in args:
            for sub in argument.walk():
                name = mx.function_name(sub)
                if name in (mx.MATCH_NUMBER, mx.CLASSIFIER, mx.RUNNING, mx.FINAL, *mx.LOGICAL):
                    raise self._error(UnsupportedError, expr, sub, f"{name} inside an aggregate is not supported "
                                      "yet", UNSUPPORTED, "aggregate the columns, or PREV/NEXT of them: "
                                      "sum(A.x - PREV(A.x))")
            self._visit(expr, argument, in_define, "aggregate")

    def _parameters(self, expr, node, kind):
        """A percentile's p and listagg's separator are constants (Spark: foldable); percentile's
        frequency argument, which sqlglot drops, is refused."""
        for param in mx.aggregate_parameters(node):
            for sub in param.walk():
                if isinstance(sub, exp.Column) or mx.function_name(sub) is not None or mx.is_aggregate(sub):
                    raise self._error(AnalysisError, expr, sub, f"The {'percentage' if kind == 'percentile' else 'separator'}"
                                      f" of {kind} must be a constant", "DATATYPE_MISMATCH.NON_FOLDABLE_INPUT",
                                      "write a literal: percentile(A.x, 0.5), listagg(A.s, ',')")
        if kind == "percentile" and expr.source and any(
                name.lower() == "percentile" and count > 2 for name, _, count in written.calls(expr.tree, expr.source)):
            raise self._error(UnsupportedError, expr, node, "percentile's frequency argument is not supported",
                              UNSUPPORTED, "percentile(A.x, p) counts each row once")

    def _one_variable(self, expr, node, argument, what):
        """Every column a navigation or aggregate reads is of one variable (or all unqualified)."""
        qualifiers = {mx.canonical(q) if q else None
                      for q in (mx.qualifier(c) for c in argument.find_all(exp.Column) if not mx.is_star(c))}
        if len(qualifiers) > 1:
            raise self._error(AnalysisError, expr, node, f"The columns in {what} belong to different variables "
                              f"({', '.join(sorted(q or 'unqualified' for q in qualifiers))})",
                              "MATCH_RECOGNIZE_MIXED_VARIABLES",
                              "a navigation or aggregate reads the rows of one variable: split it in two")

    def history(self, condition: SqlExpr, name: str) -> tuple[str, exp.Expression] | None:
        """Why DEFINE ``name`` depends on the rows mapped before (what, where), or None when it is
        row-local."""
        own = {name} | {s for s, members in self.subsets.items() if name in members}
        for node in condition.tree.walk():
            fn = mx.function_name(node)
            if fn in mx.LOGICAL:
                return f"{fn}()", node
            if fn == mx.CLASSIFIER:
                return "CLASSIFIER()", node
            if fn in mx.PHYSICAL and len(mx.arguments(node)) == 0:
                return f"{fn}()", node
            if mx.is_aggregate(node):
                return "an aggregate", node
            if isinstance(node, exp.Column) and mx.qualifier(node) and mx.canonical(mx.qualifier(node)) not in own:
                return f"the columns of another variable ({node.table})", node
        return None


__all__ = ["MAX_VARIABLES", "MrAnalysis", "UNSUPPORTED", "analyze", "compiled"]
