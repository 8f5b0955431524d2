"""FILTER comparisons between two single-event variables, for the kernel's registers (seed 002).

Input: a pattern and its single-event variables. Output: the comparisons the kernel can check
as the second variable is bound (``Candidate``); planner/rules.py ``check_with_registers`` has
the resolver compile their sides (planner/resolve.py) and the kernel compares them
(exec/kernel/registers.py ``step_registers``).

Why: the automaton reads one event at a time, so ``b.price > a.price`` used to be checked on
every enumerated result of the pattern without it (exec/post_filter.py). Seed 002 carries the
earlier event's value on the run in a register and checks the predicate on the transition that
binds the later one; runs with equal registers still merge, so the automaton keeps
output-linear enumeration, what it enumerates already passed, and its work per event grows
with the distinct register values alive in the window instead of with the candidates.

A conjunct qualifies when it is:

- an AND-conjunct of a FILTER over the whole pattern (``top_filters``), so it constrains every
  valuation and a result's valuation is the FILTER's own (nothing is around it, so no AS binds
  its variables again; a FILTER under such an AS stays with the post-filter, which reads the
  FILTER's own events from private labels, planner/rules.py ``rebound_variables``);
- a comparison ``left op right`` (=, !=, <, <=, >, >=, ``==``) whose left side reads columns of
  one variable x only and whose right side of one other variable y only, without aggregates;
- for !=, over variables that hold at most one event. For the others x and y may hold several
  (``A AS a ; B+ AS b FILTER b.p > a.p``): it holds for every pair of their events, which the
  kernel decides from one value per side (the least or greatest so far, or the common value
  under =), so the registers stay one value per side. An unbound variable leaves it vacuously
  true, as the kernel never compares then; NULL on either side of a pair fails it.

An aggregate compared with a constant, ``sum(b.volume) > 10000``, ``count(b) >= 3``,
``avg(b.price) <= 2.5`` (count, sum, avg, min, max; the aggregate alone on one side, no column on
the other), in the same AND-conjuncts, is one too (seed 004's registers, digest 4.3): the run
carries the aggregate's accumulator over the variable's events bound so far (count, sum or
least/greatest value, and how many values it has; a count compared with k stops counting past
k + 1, which every later event leaves on the same side of k), and the kernel compares it with the
constant when the run reaches a final state; the variable may hold any number of events.

A comparison in a FILTER repeated by ``+`` or ``:+``, ``(A AS a ; B AS b FILTER b.x > a.x)+``, holds
in each repetition on that repetition's events (docs/semantics.md, "Predicates across
variables"). It is one too (``repeated_candidates``) when the FILTER is the body of the
repetition (or a FILTER of it, inward) and both its variables are bound there and nowhere else
in the pattern: the automaton marks the first event of each repetition, where the kernel clears
the check's registers before that event binds anything, so each repetition is compared on its
own events. Runs then meet again after each repetition, where enumerating every split of a
result into repetitions and checking each grew exponentially with the window.

At most ``plan.MAX_REGISTERS`` per query; the others stay with the post-filter.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from sqlglot import exp

from cerql import ast
from cerql.plan import MAX_REGISTERS
from cerql.planner.aggregates import KINDS
from cerql.planner.equality import conjuncts, top_filters

OPS = {exp.EQ: "=", exp.NEQ: "!=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
FLIPPED = {"=": "=", "!=": "!=", ">": "<", ">=": "<=", "<": ">", "<=": ">="}  # a op b == b FLIPPED[op] a
IN_REGISTERS = ("count", "sum", "avg", "min", "max")  # aggregates.KINDS the kernel accumulates


@dataclass(frozen=True)
class Candidate:
    """A comparison the kernel could check: ``left(x) op right(y)``."""

    leaf: ast.CrossPredicate
    op: str
    x: str
    y: str
    left: exp.Expression
    right: exp.Expression
    single: bool                            # x and y hold at most one event each
    aggregate: str | None = None            # count/sum/avg/min/max of ``left`` over x (x == y),
                                            # compared with the constant ``right``; ``left`` is
                                            # None for count(x)
    scope: object = None                    # the + or :+ whose repetitions it holds in, else None


def _only_variable(side: exp.Expression) -> str | None:
    """The one variable whose columns the side reads, or None (none, several, an aggregate)."""
    if any(isinstance(node, exp.AggFunc) for node in side.walk()):
        return None
    qualifiers = {col.table for col in side.find_all(exp.Column)}
    if len(qualifiers) != 1 or "" in qualifiers:
        return None
    return qualifiers.pop()


def _aggregate(tree: exp.Expression, op: str, leaf) -> Candidate | None:
    """``agg(x.col) op constant`` (either way round) as a Candidate, else None."""
    for call, other, op_ in ((tree.this, tree.expression, op), (tree.expression, tree.this, FLIPPED[op])):
        while isinstance(call, exp.Paren):
            call = call.this
        kind = KINDS.get(type(call))
        arg = call.this if kind in IN_REGISTERS else None
        if not isinstance(arg, exp.Column):  # the analysis refused other arguments (aggregates.check)
            continue
        if next(other.find_all(exp.Column), None) is not None or next(other.find_all(exp.AggFunc), None) is not None:
            continue
        x = arg.table or arg.name
        column = arg if arg.table else None
        if column is None and kind != "count":
            continue
        return Candidate(leaf, op_, x, x, column, other, False, kind)
    return None


def _comparisons(filters):
    """(leaf, tree, op) of each AND-conjunct of ``filters`` that is a comparison."""
    for f in filters:
        for leaf in conjuncts(f.condition):
            if not isinstance(leaf, ast.CrossPredicate):
                continue
            tree = leaf.expr.tree
            while isinstance(tree, exp.Paren):
                tree = tree.this
            if type(tree) in OPS:
                yield leaf, tree, OPS[type(tree)]


def candidates(pattern, single: set[str]) -> list[Candidate]:
    """The comparisons of the top FILTERs the kernel can check (see the module docstring),
    then those of FILTERs repeated by + or :+ (``repeated_candidates``); ``single``: the
    variables that hold at most one event."""
    out = []
    for leaf, tree, op in _comparisons(top_filters(pattern)):
        found = _aggregate(tree, op, leaf)
        if found is not None:
            out.append(found)
            continue
        x, y = _only_variable(tree.this), _only_variable(tree.expression)
        if x is None or y is None or x == y or (op == "!=" and not (x in single and y in single)):
            continue
        out.append(Candidate(leaf, op, x, y, tree.this, tree.expression, x in single and y in single))
    return (out + repeated_candidates(pattern))[:MAX_REGISTERS]


def _binders(node) -> Counter:
    """How many atoms and ASs under ``node`` bind each variable (not a NOT's atom, nor what
    an UNLESS's right side binds, which bind nothing in a result)."""
    out: Counter = Counter()
    if isinstance(node, ast.Not):
        return out
    if isinstance(node, ast.Atom):
        out[node.type] += 1
        return out
    if isinstance(node, ast.As):
        out[node.var] += 1
    if isinstance(node, ast.Unless):
        return _binders(node.left)
    if isinstance(node, ast.Filter):
        return out + _binders(node.pattern)
    for child in ast.children(node):
        out += _binders(child)
    return out


def repeated_candidates(pattern) -> list[Candidate]:
    """The comparisons of FILTERs repeated by + or :+ that the kernel can check per repetition
    (see the module docstring): in the top FILTERs of a repetition's body, between two
    variables the body binds and nothing else in the pattern does, without aggregates (they are
    checked once, at the end of the result), != only between variables of one event in a
    repetition. Each carries its + or :+ as ``scope``."""
    from cerql.planner.analyze import ONE, _cardinality  # one event per repetition, as analysis counts it

    everywhere = _binders(pattern)
    out = []
    for node in ast.walk(pattern):
        if not isinstance(node, (ast.KleenePlus, ast.ContiguousPlus)):
            continue
        body = node.pattern
        inside = _binders(body)
        for leaf, tree, op in _comparisons(top_filters(body)):
            if any(isinstance(n, exp.AggFunc) for n in tree.walk()):
                continue
            x, y = _only_variable(tree.this), _only_variable(tree.expression)
            if x is None or y is None or x == y or any(inside[v] == 0 or inside[v] != everywhere[v] for v in (x, y)):
                continue
            single = _cardinality(body, x) == ONE and _cardinality(body, y) == ONE
            if op == "!=" and not single:
                continue
            out.append(Candidate(leaf, op, x, y, tree.this, tree.expression, single, scope=node))
    return out
