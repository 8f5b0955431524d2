"""The evaluation choices: how the automaton engines evaluate a resolved query.

Input: an :class:`cerql.plan.Evaluation` that starts from the analyzed query (its pattern,
selected and single-event variables, PARTITION BY, whether it counts positions or consumes),
and a :class:`Catalog` that resolves the names and types these choices read (planner/resolve.py
is one, built from the sources' schemas; ``NAMES_AS_WRITTEN`` stands in when ``cerql.explain``
has no tables). Output: the same Evaluation with every choice recorded: hidden partition
columns, register checks, the automaton, and the FILTERs the local engine checks on its results.

Each choice is one rule ``rule(evaluation, catalog) -> evaluation``: pure, returning a new value
with that choice recorded (``dataclasses.replace``). ``optimize`` runs them in the order of the
``RULES`` tuple, as sqlglot's optimizer runs its rewrites (``sqlglot/optimizer/optimizer.py``);
each reads what the rules before it recorded, so the order is part of the semantics:

1. ``partition_on_equalities``: equalities across variables that can be partitioning leave the
   pattern and their columns split the substreams further (planner/equality.py), unless the
   query counts positions or consumes (both act across a substream);
2. ``check_with_registers``: comparisons between two variables and aggregates compared with a
   constant become the kernel's register checks (planner/registers.py), those the catalog can
   compile (numbers, dates, timestamps, booleans);
3. ``registers_alone``: if the registers leave no predicate across variables and the automaton
   marks both variables of each, the plain automaton of the rest runs and nothing is filtered;
4. ``automaton_and_post_filters``: otherwise the plain automaton when no FILTER compares
   variables, else the relaxed one (``relaxed_automaton``) whose results the local engine
   filters (exec/post_filter.py); the registers then only prune its runs.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Protocol

from sqlglot import exp

from cerql import ast
from cerql.errors import UnsupportedError, start_of
from cerql.plan import Evaluation, PostFilter, RegisterCheck
from cerql.planner.analyze import Analysis, pattern_variables
from cerql.planner.compile import compile_pattern
from cerql.planner.equality import equality_keys, without, without_conjuncts
from cerql.planner.registers import Candidate
from cerql.planner.registers import candidates as register_candidates


class Catalog(Protocol):
    """What the rules ask of the sources' schemas (planner/resolve.py implements it)."""

    def column(self, name: str) -> str:
        """A column as a query writes it, as the stream spells it (or a positioned error)."""

    def keyable(self, column: str) -> bool:
        """Whether a stream column may be a hidden partition key (planner/equality.py)."""

    def register_check(self, candidate: Candidate) -> RegisterCheck | None:
        """The kernel's check of a register candidate, or None when its sides do not compare."""


class NamesAsWritten:
    """The catalog of ``cerql.explain`` without tables: names as written, every equality a key,
    every register candidate checked (nothing is compiled: ``left`` and ``right`` are None).
    With tables, explain plans with the sources' catalog, as ``cerql.run`` does."""

    def column(self, name: str) -> str:
        return name

    def keyable(self, column: str) -> bool:
        return True

    def register_check(self, candidate: Candidate) -> RegisterCheck | None:
        kind = candidate.aggregate
        if kind == "count" and candidate.left is None:
            kind = "count_events"
        return RegisterCheck(candidate.leaf.expr.text, candidate.op, candidate.x, candidate.y, None, (), None, (),
                             floating=False, single=candidate.single, aggregate=kind)


NAMES_AS_WRITTEN = NamesAsWritten()


# -- predicates across variables, and the FILTERs the local engine checks
def _has_cross(condition) -> bool:
    return any(isinstance(leaf, ast.CrossPredicate) for leaf in ast.walk(condition))


def _condition_variables(condition) -> set[str]:
    """The variables a FILTER condition reads: bracket variables and column qualifiers."""
    out = set()
    for leaf in ast.walk(condition):
        if isinstance(leaf, ast.VarPredicate):
            out.add(leaf.var)
        elif isinstance(leaf, ast.CrossPredicate):  # a bare name is count(var)
            out.update(col.table or col.name for col in leaf.expr.tree.find_all(exp.Column))
    return out


def post_checks(pattern) -> tuple[tuple, frozenset[int]]:
    """What the local engine checks on enumerated results: the FILTERs with a predicate across
    variables and the UNLESS inside the pattern (not around it, where the kernel runs them),
    in the order met; and the ids of those repeated by + or :+.

    Filtering a result checks a FILTER on its own valuation, the result's events that the
    FILTER's pattern matched (``relaxed_automaton`` marks them); an UNLESS inside, on the
    events its left side matched. A repeated one has one valuation per repetition, which the
    relaxed automaton tells apart by marking the first event of each (exec/post_filter.py
    splits the events there)."""
    found: list = []
    repeated_ids: set[int] = set()

    def visit(node, repeated: bool, top: bool) -> None:
        if isinstance(node, ast.Filter) and _has_cross(node.condition) or isinstance(node, ast.Unless) and not top:
            found.append(node)
            if repeated:
                repeated_ids.add(id(node))
        if isinstance(node, (ast.Filter, ast.As)):
            visit(node.pattern, repeated, top)
        elif isinstance(node, (ast.KleenePlus, ast.ContiguousPlus)):
            visit(node.pattern, True, False)
        elif isinstance(node, ast.Unless):  # around the pattern: its left side is still around
            visit(node.left, repeated, top)
            visit(node.right, repeated, False)
        elif isinstance(node, (ast.Seq, ast.Contiguous, ast.Or, ast.And, ast.All)):
            visit(node.left, repeated, False)
            visit(node.right, repeated, False)

    visit(pattern, False, True)
    return tuple(found), frozenset(repeated_ids)


def filter_marker(k: int) -> str:
    """The variable the relaxed automaton binds to every event of the k-th post-checked
    FILTER's match (or UNLESS's left side's)."""
    return f"__cerql_filter{k}"


def first_marker(k: int) -> str:
    """The variable the relaxed automaton binds to the first event of each repetition of the
    k-th post-checked FILTER or UNLESS, when it is under + or :+."""
    return f"__cerql_filter{k}_first"


def rebound_variables(pattern) -> dict[int, frozenset[str]]:
    """Per FILTER (by id): the variables its condition reads that its pattern binds and an AS
    around it binds again, as in ``((A AS a ; A AS c) FILTER a.ts < c.ts) AS a``. The FILTER
    holds on its own valuation (docs/semantics.md, "Predicates across variables"), where a is
    the first A only, but a result's labels give a both A's, from the AS around; so the relaxed
    automaton gives these variables a private label inside the FILTER (``private_label``).
    Labels at a position come from its atom and the AS's around that atom, so only an AS around
    the FILTER can add to them, or the other side of an AND or ALL, whose variables label the
    events both sides take."""
    out: dict[int, frozenset[str]] = {}

    def visit(node, around: frozenset[str]) -> None:
        if isinstance(node, ast.Filter):
            out[id(node)] = around & _condition_variables(node.condition) & set(pattern_variables(node.pattern))
            visit(node.pattern, around)
            return
        if isinstance(node, (ast.And, ast.All)):  # the other side's labels join this side's events
            visit(node.left, around | set(pattern_variables(node.right)))
            visit(node.right, around | set(pattern_variables(node.left)))
            return
        if isinstance(node, ast.As):
            around = around | {node.var}
        for child in ast.children(node):
            visit(child, around)

    visit(pattern, frozenset())
    return out


def private_label(k: int, var: str) -> str:
    """The variable the relaxed automaton binds to the events ``var`` gets inside the k-th
    post-filtered FILTER, when an AS around that FILTER binds ``var`` again."""
    return f"__cerql_filter{k}_var_{var}"


def post_filter_specs(checks, repeated: frozenset[int], rebound: dict[int, frozenset[str]]) -> tuple[PostFilter, ...]:
    """One :class:`cerql.plan.PostFilter` per FILTER or UNLESS the local engine checks on
    enumerated results (``post_checks``). A FILTER's labels map each label of the relaxed
    automaton that its own valuation reads to its variable: the variables its pattern binds,
    through their private label where an AS around binds them again (``rebound_variables``).
    An UNLESS reads no variable: its check is where its right side's results lie, from the
    automaton's k-th ``unless_inside`` run, k counting the UNLESS in order."""
    specs = []
    inside = 0
    for k, node in enumerate(checks):
        first = first_marker(k) if id(node) in repeated else None
        if isinstance(node, ast.Unless):
            specs.append(PostFilter(node, filter_marker(k), {}, first, unless=inside))
            inside += 1
            continue
        private = rebound.get(id(node), frozenset())
        labels = {v: v for v in pattern_variables(node.pattern) if v not in private}
        labels.update((private_label(k, v), v) for v in sorted(private))
        specs.append(PostFilter(node, filter_marker(k), labels, first))
    return tuple(specs)


def _rewritten(node, wrap):
    """The pattern rebuilt bottom-up, each node's rebuilt copy replaced by ``wrap(node, copy)``."""
    if isinstance(node, (ast.Atom, ast.Not)):
        out = node
    elif isinstance(node, (ast.As, ast.KleenePlus, ast.ContiguousPlus, ast.Filter)):
        out = dataclasses.replace(node, pattern=_rewritten(node.pattern, wrap))
    else:  # Seq, Contiguous, Or, And, All, Unless
        out = dataclasses.replace(node, left=_rewritten(node.left, wrap), right=_rewritten(node.right, wrap))
    return wrap(node, out)


def _marked(node, markers: dict[int, str], private: dict[int, dict[str, str]]):
    """The pattern with each FILTER in ``markers`` (by identity) wrapped in ``AS marker``, each
    UNLESS in ``markers`` replaced by its left side in ``AS marker``, and inside each FILTER in
    ``private`` every atom of type v and every ``AS v`` wrapped in ``AS private[id][v]``, so
    that label holds the events v gets inside that FILTER."""
    def rebound(labels: dict[str, str]):
        def wrap(node, copy):
            name = node.type if isinstance(node, ast.Atom) else node.var if isinstance(node, ast.As) else None
            return ast.As(copy, labels[name]) if name in labels else copy
        return wrap

    def wrap(node, copy):
        if private.get(id(node)):
            copy = dataclasses.replace(copy, pattern=_rewritten(copy.pattern, rebound(private[id(node)])))
        if id(node) not in markers:
            return copy
        return ast.As(copy.left if isinstance(node, ast.Unless) else copy, markers[id(node)])

    return _rewritten(node, wrap)


def pattern_automaton(pattern, selected):
    """(automaton, post-filters) of a pattern: the plain automaton when no FILTER compares
    variables and no UNLESS is inside the pattern, else the relaxed one
    (``relaxed_automaton``) and what its results are checked for (``post_filter_specs``)."""
    checks, repeated = post_checks(pattern)
    if not checks:
        return compile_pattern(pattern, selected), ()
    specs = post_filter_specs(checks, repeated, rebound_variables(pattern))
    return relaxed_automaton(pattern, selected, specs), specs


def relaxed_automaton(pattern, selected, specs: tuple[PostFilter, ...]):
    """The automaton the local engine filters the results of (exec/post_filter.py): predicates
    across variables taken as true, each UNLESS inside the pattern replaced by its left side,
    and every event of the k-th check's match bound to ``filter_marker(k)``, so a result tells
    which of its events are that FILTER's own valuation or that UNLESS's left side's match (and
    whether it took part at all); under + or :+ the first event of each repetition is also
    bound to ``first_marker(k)``, and the events of a variable an AS around the FILTER binds
    again to its ``private_label``. It marks the selected variables, the markers and every
    variable the FILTERs read or bind; the UNLESS's right sides become its ``unless_inside``."""
    markers = {id(s.filter): s.marker for s in specs}
    firsts = {s.marker: s.first for s in specs if s.first is not None}
    private = {id(s.filter): {v: label for label, v in s.labels.items() if label != v} for s in specs}
    filters = [s.filter for s in specs if s.unless is None]
    extra = {v for f in filters for v in _condition_variables(f.condition)} | {v for s in specs for v in s.labels}
    hidden = [s.marker for s in specs] + list(firsts.values())
    marked = list(selected) + sorted(extra - set(selected)) + hidden
    inside = tuple(s.filter.right for s in specs if s.unless is not None)
    return compile_pattern(_marked(pattern, markers, private), marked, relax_cross=True, first_marks=firsts,
                           inside=inside)


def counts_positions(select: ast.Select) -> bool:
    """Whether the query counts positions of the substream: `:`, `:+`, STRICT or n EVENTS."""
    return select.strategy == "STRICT" or isinstance(select.within, ast.EventsWindow) or any(
        isinstance(n, (ast.Contiguous, ast.ContiguousPlus)) for n in ast.walk(select.pattern))


def _check_unless(pattern, text: str) -> None:
    """Refused inside UNLESS's right side: a FILTER across variables (that side's automaton
    has no registers, and no results of its own to filter) and another UNLESS."""
    for node in ast.walk(pattern):
        if not isinstance(node, ast.Unless):
            continue
        for inner in ast.walk(node.right):
            if isinstance(inner, ast.Filter) and _has_cross(inner.condition):
                leaf = next(n for n in ast.walk(inner.condition) if isinstance(n, ast.CrossPredicate))
                raise UnsupportedError.at(text, start_of(leaf.span),
                                          "A FILTER across variables inside the right side of UNLESS is not "
                                          "supported", "CROSS_FILTER_IN_UNLESS",
                                          "filter the right side's events one at a time: q FILTER x[...]")
            if isinstance(inner, ast.Unless):
                raise UnsupportedError.at(text, start_of(inner.span),
                                          "UNLESS inside the right side of another UNLESS is not supported",
                                          "UNLESS_IN_UNLESS",
                                          "the right side says what may not lie inside a result; NOT (T) "
                                          "excludes single events from it")


def start(analysis: Analysis, partition_columns: tuple[str, ...] | None = None) -> Evaluation:
    """The Evaluation of an analyzed query before any rule: the WHERE pattern, nothing chosen.
    ``partition_columns``: PARTITION BY as resolved against the schemas (as written without)."""
    select = analysis.select
    _check_unless(select.pattern, analysis.text)
    single = frozenset(v for v, n in analysis.cardinality.items() if n == 1)
    partition = tuple(select.partition_by) if partition_columns is None else tuple(partition_columns)
    return Evaluation(pattern=select.pattern, selected=tuple(analysis.selected), single=single,
                      partition_columns=partition, counts_positions=counts_positions(select),
                      consumes=select.consume != "NONE")


# -- the rules, in order
def partition_on_equalities(ev: Evaluation, catalog: Catalog) -> Evaluation:
    """Equalities across variables that ``equality_keys`` can turn into partitioning leave the
    pattern and their columns split the substreams further (those not already PARTITION BY
    columns are the hidden ``join_columns``), unless the query counts positions or consumes."""
    if ev.counts_positions or ev.consumes:
        return ev
    keys, pattern = equality_keys(ev.pattern, catalog.column, catalog.keyable)
    return dataclasses.replace(ev, pattern=pattern, equality_columns=keys,
                               join_columns=tuple(c for c in keys if c not in ev.partition_columns))


def reset_label(k: int) -> str:
    """The label the automaton gives the first event of each repetition of the k-th + or :+
    whose FILTER the registers check per repetition (``RegisterCheck.reset``); the kernel
    clears those checks there and never writes the label into a result."""
    return f"__cerql_repeat{k}_first"


def repeat_marker(k: int) -> str:
    """The variable around that + or :+'s body that ``reset_label`` marks the first event of
    (not selected: it labels nothing itself)."""
    return f"__cerql_repeat{k}"


def check_with_registers(ev: Evaluation, catalog: Catalog) -> Evaluation:
    """The register candidates of the pattern (planner/registers.py) that the catalog compiles
    into kernel checks; the others stay predicates across variables. A check held per
    repetition of a + or :+ gets the ``reset_label`` of that repetition (numbered in order)."""
    scopes: dict[int, int] = {}
    pairs = []
    for c in register_candidates(ev.pattern, set(ev.single)):
        check = catalog.register_check(c)
        if check is None:
            continue
        if c.scope is not None:
            k = scopes.setdefault(id(c.scope), len(scopes))
            check = dataclasses.replace(check, reset=reset_label(k))
        pairs.append((c.leaf, check, c.scope))
    return dataclasses.replace(ev, registers=tuple(check for _, check, _ in pairs),
                               register_leaves=tuple(leaf for leaf, _, _ in pairs),
                               register_scopes=tuple(scope for _, _, scope in pairs))


def _without_checked(pattern, dropped: set[int], scopes: dict[int, str]):
    """The pattern with the conjuncts in ``dropped`` (by identity) removed from every FILTER (a
    FILTER left with none is its pattern), and the body of each + or :+ in ``scopes`` (by
    identity) under ``AS scopes[id]``, whose first event of each repetition the automaton marks
    (``compile_pattern``'s first_marks)."""
    def wrap(node, copy):
        if isinstance(node, ast.Filter):
            condition = without_conjuncts(copy.condition, dropped)
            return copy.pattern if condition is None else dataclasses.replace(copy, condition=condition)
        if id(node) in scopes:
            return dataclasses.replace(copy, pattern=ast.As(copy.pattern, scopes[id(node)], copy.pattern.span))
        return copy

    return _rewritten(pattern, wrap)


def registers_alone(ev: Evaluation, catalog: Catalog) -> Evaluation:
    """The plain automaton of the pattern without the registers' predicates, when that leaves
    no predicate across variables and the automaton marks both variables of every check: the
    registers are then the whole check and nothing is filtered. A check held per repetition
    needs the automaton to mark each repetition's first event (``reset_label``)."""
    if not ev.registers:
        return ev
    scopes: dict[int, str] = {}
    resets: dict[str, str] = {}
    for check, scope in zip(ev.registers, ev.register_scopes or (None,) * len(ev.registers)):
        if scope is not None:
            marker = check.reset.removesuffix("_first")  # repeat_marker(k) of reset_label(k)
            scopes[id(scope)] = marker
            resets[marker] = check.reset
    dropped = {id(leaf) for leaf in ev.register_leaves}
    reduced = _without_checked(ev.pattern, dropped, scopes) if scopes else without(ev.pattern, dropped)
    if post_checks(reduced)[0] or not all(c.x in ev.selected and c.y in ev.selected for c in ev.registers):
        return ev
    labels = list(ev.selected) + sorted(set(resets.values()))
    return dataclasses.replace(ev, pattern=reduced, automaton=compile_pattern(reduced, labels, first_marks=resets))


def automaton_and_post_filters(ev: Evaluation, catalog: Catalog) -> Evaluation:
    """Unless a rule before chose the automaton: ``pattern_automaton`` decides (plain, or
    relaxed with post-filters), and the registers only prune the runs of the relaxed
    automaton, those whose two variables it marks."""
    if ev.automaton is not None:
        return ev
    automaton, specs = pattern_automaton(ev.pattern, ev.selected)
    pruning = [(leaf, c) for leaf, c in zip(ev.register_leaves, ev.registers)
               if c.x in automaton.labels and c.y in automaton.labels and c.reset is None]
    return dataclasses.replace(ev, registers=tuple(c for _, c in pruning),
                               register_leaves=tuple(leaf for leaf, _ in pruning),
                               automaton=automaton, post_filters=specs)


Rule = Callable[[Evaluation, Catalog], Evaluation]

RULES: tuple[Rule, ...] = (
    partition_on_equalities,
    check_with_registers,
    registers_alone,
    automaton_and_post_filters,
)


def optimize(ev: Evaluation, catalog: Catalog, rules: tuple[Rule, ...] = RULES) -> Evaluation:
    """``ev`` with every evaluation choice recorded: each rule of ``rules`` in order."""
    for rule in rules:
        ev = rule(ev, catalog)
    return ev
