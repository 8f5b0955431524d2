"""Compile a CEQL pattern into a complex event automaton (seed 000, section 6; seed 001, section 3).

Input: the pattern of an analyzed query and the selected variables. Output: an
:class:`cerql.automaton.Automaton` (epsilon-free) whose transitions test condition bits and
mark events with START and the selected variables.

The construction is Thompson's, one fragment per operator, then epsilon removal:

- an atom ``T`` is one transition testing T's bit and marking the event with the variable T;
- ``p AS x`` adds x to the marks of every atom transition of p;
- ``p FILTER x[P]`` adds P's bit to the atom transitions of p that mark x (a unary filter is
  pushed to the atoms it constrains); ``f1 AND f2`` is two filters and ``f1 OR f2`` two copies;
- ``p ; q`` goes through a gap state with a TRUE self-loop that marks nothing, ``p : q`` does
  not; ``p+`` and ``p :+`` loop back the same way; ``p OR q`` is a union;
- ``NOT (T)`` is one transition testing the negated atom (a condition of its own) that marks
  no variable; ``p AND q`` and ``p ALL q`` are products of the two fragments
  (``_Builder.product``); ``p UNLESS q`` around the whole pattern compiles p, and q into an
  automaton of its own on the same conditions (``Automaton.unless``), whose results the kernel
  turns into a bound on where p's results may start (exec/kernel/stepping.py); an UNLESS inside
  the pattern arrives replaced by its left side (planner/rules.py), its right side compiled the
  same way (``Automaton.unless_inside``) for the check after enumeration (exec/post_filter.py).

A fresh initial state with a TRUE self-loop lets a match start anywhere; the transitions leaving
it mark START. Marks of unselected variables are dropped (projection), and states are paired with
a flag "some selected variable is marked" so that a result selecting nothing never reaches a final
state (docs/semantics.md, "Results"). States that cannot reach a final state are removed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from cerql import ast
from cerql.errors import UnsupportedError
from cerql.automaton import START, Automaton, Transition, label_bits


@dataclass
class _Edge:
    source: int
    target: int
    epsilon: bool = False
    required: frozenset = frozenset()   # condition keys
    marks: frozenset = frozenset()      # variable names


@dataclass
class _Builder:
    """An epsilon-NFA under construction; fragments are (entry, exit) state pairs."""

    n_states: int = 0
    edges: list[_Edge] = field(default_factory=list)
    relax_cross: bool = False  # a predicate across variables constrains nothing (checked later)
    first_marks: dict = field(default_factory=dict)  # AS variable -> variable marking its first events

    def state(self) -> int:
        self.n_states += 1
        return self.n_states - 1

    def epsilon(self, source: int, target: int) -> None:
        self.edges.append(_Edge(source, target, epsilon=True))

    def gap(self, source: int, target: int) -> None:
        """source -> gap state (any events skipped) -> target."""
        g = self.state()
        self.epsilon(source, g)
        self.edges.append(_Edge(g, g))
        self.epsilon(g, target)

    def build(self, node) -> tuple[int, int]:
        if isinstance(node, ast.Atom):
            entry, exit_ = self.state(), self.state()
            self.edges.append(_Edge(entry, exit_, required=frozenset({node}), marks=frozenset({node.type})))
            return entry, exit_
        if isinstance(node, ast.As):
            first = len(self.edges)
            entry, exit_ = self.build(node.pattern)
            if node.var in self.first_marks:
                entry = self.mark_first(entry, self.first_marks[node.var])
            for e in self.edges[first:]:
                if e.required:  # atom transitions only, never gaps
                    e.marks = e.marks | {node.var}
            return entry, exit_
        if isinstance(node, ast.Filter):
            return self.filter(node.pattern, node.condition)
        if isinstance(node, (ast.Seq, ast.Contiguous)):
            l_entry, l_exit = self.build(node.left)
            r_entry, r_exit = self.build(node.right)
            if isinstance(node, ast.Seq):
                self.gap(l_exit, r_entry)
            else:
                self.epsilon(l_exit, r_entry)
            return l_entry, r_exit
        if isinstance(node, (ast.KleenePlus, ast.ContiguousPlus)):
            entry, exit_ = self.build(node.pattern)
            if isinstance(node, ast.KleenePlus):
                self.gap(exit_, entry)
            else:
                self.epsilon(exit_, entry)
            return entry, exit_
        if isinstance(node, ast.Or):
            entry, exit_ = self.state(), self.state()
            for side in (node.left, node.right):
                s_entry, s_exit = self.build(side)
                self.epsilon(entry, s_entry)
                self.epsilon(s_exit, exit_)
            return entry, exit_
        if isinstance(node, ast.Not):
            entry, exit_ = self.state(), self.state()
            self.edges.append(_Edge(entry, exit_, required=frozenset({node})))  # in the interval, binds nothing
            return entry, exit_
        if isinstance(node, (ast.And, ast.All)):
            return self.product(node)
        if isinstance(node, ast.Unless):  # compile_pattern takes those around the pattern (_split_unless)
            raise TypeError("an UNLESS inside the pattern is checked on enumerated results: "
                            "planner/rules.py relaxed_automaton replaces it by its left side")
        raise TypeError(f"not a pattern node: {type(node).__name__}")  # pragma: no cover

    def product(self, node) -> tuple[int, int]:
        """``p AND q`` and ``p ALL q`` as products of their fragments (seed 003, section 5):
        each event moves both sides at once, the product's transition testing both sides'
        conditions and marking both sides' variables. AND moves both sides along the same kind
        of step (both take the event into their results, or both skip it), so both sides'
        results have the same positions. ALL also lets a side wait before it starts and after
        it ends (a TRUE step that marks nothing), so the results of p and q may lie anywhere,
        in either order, overlapping or not; the product starts and ends only on an event that
        one side takes, since a match begins and ends with an event of its own."""
        everything = isinstance(node, ast.All)
        sides = []
        for side in (node.left, node.right):
            entry, exit_ = self.build(side)
            sides.append((entry, exit_))
        closures = _closures(self.n_states, self.edges)
        consuming: dict[int, list[_Edge]] = {}
        for e in self.edges:
            if not e.epsilon:
                consuming.setdefault(e.source, []).append(e)
        before, after = "before", "after"  # ALL: a side that has not started, or has ended

        def moves(k: int, state):
            """(takes the event, required, marks, next state) for side k in ``state``."""
            entry, exit_ = sides[k]
            if state == before:
                yield False, frozenset(), frozenset(), before
                state = entry
            elif state == after:
                yield False, frozenset(), frozenset(), after
                return
            elif everything and exit_ in closures[state]:
                yield False, frozenset(), frozenset(), after
            for c in closures[state]:
                for e in consuming.get(c, ()):
                    yield bool(e.required), e.required, e.marks, e.target

        def done(k: int, state) -> bool:
            return state == after or (state != before and sides[k][1] in closures[state])

        start = (before, before) if everything else (sides[0][0], sides[1][0])
        index = {start: self.state()}
        exit_ = self.state()
        todo = [start]
        while todo:
            pair = todo.pop()
            for took0, req0, marks0, next0 in moves(0, pair[0]):
                for took1, req1, marks1, next1 in moves(1, pair[1]):
                    if not everything and took0 != took1:
                        continue
                    if not (took0 or took1) and (pair == start or (next0, next1) == (after, after)):
                        continue  # a match neither starts nor ends on a skipped event
                    target = (next0, next1)
                    if target not in index:
                        index[target] = self.state()
                        todo.append(target)
                    self.edges.append(_Edge(index[pair], index[target], required=req0 | req1, marks=marks0 | marks1))
        for pair, state in index.items():
            if pair != start and done(0, pair[0]) and done(1, pair[1]) and pair != (after, after):
                self.epsilon(state, exit_)
        return index[start], exit_

    def mark_first(self, entry: int, var: str) -> int:
        """A new entry for the fragment at ``entry`` whose transitions are copies of the
        fragment's first ones, marking ``var`` too: so ``var`` holds the first event of every
        match of the fragment, not the events its own loops go back to ``entry`` for. A fragment
        consumes at least one event, so its exit is not in ``entry``'s closure and edges added
        later around the fragment do not change which transitions are first."""
        closure = _closures(self.n_states, self.edges)[entry]
        new = self.state()
        for e in [e for e in self.edges if e.required and e.source in closure]:
            self.edges.append(_Edge(new, e.target, required=e.required, marks=e.marks | {var}))
        return new

    def filter(self, pattern, condition) -> tuple[int, int]:
        if isinstance(condition, ast.FilterOr):
            return self.build(ast.Or(ast.Filter(pattern, condition.left), ast.Filter(pattern, condition.right)))
        if isinstance(condition, ast.FilterAnd):
            return self.build(ast.Filter(ast.Filter(pattern, condition.left), condition.right))
        if isinstance(condition, ast.CrossPredicate):
            if self.relax_cross:
                return self.build(pattern)
            raise UnsupportedError("Predicates across variables are not supported yet",
                                   error_class="CROSS_VARIABLE_PREDICATE")
        first = len(self.edges)
        fragment = self.build(pattern)
        for e in self.edges[first:]:
            if e.required and condition.var in e.marks:
                e.required = e.required | {condition.predicate.text}
        return fragment


def _closures(n_states: int, edges: list[_Edge]) -> list[set[int]]:
    eps: dict[int, list[int]] = {}
    for e in edges:
        if e.epsilon:
            eps.setdefault(e.source, []).append(e.target)
    closures = []
    for s in range(n_states):
        seen, todo = {s}, [s]
        while todo:
            for t in eps.get(todo.pop(), ()):
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        closures.append(seen)
    return closures


def _limit_error(message: str, error_class: str, hint: str, pattern) -> UnsupportedError:
    span = pattern.span
    return UnsupportedError(message, error_class=error_class, hint=hint,
                            line=span.line if span else None, column=span.column if span else None)


UNLESS_MARK = "__cerql_unless"  # the variable an UNLESS right side's automaton selects (its events)


def _split_unless(node) -> tuple:
    """(p, (q1, q2, ...)) for ``p UNLESS q1 UNLESS q2`` around the whole pattern, through the
    FILTERs and ASs around it (they concern p's events only: q's variables are not visible
    outside it); (node, ()) otherwise."""
    if isinstance(node, ast.Unless):
        left, rights = _split_unless(node.left)
        return left, rights + (node.right,)
    if isinstance(node, (ast.Filter, ast.As)):
        inner, rights = _split_unless(node.pattern)
        return (dataclasses.replace(node, pattern=inner) if rights else node), rights
    return node, ()


def compile_pattern(pattern, selected, relax_cross: bool = False, first_marks=None, inside=()) -> Automaton:
    """The CEA of ``pattern`` projected on the ``selected`` variables (see module docstring).
    With ``relax_cross``, predicates across variables are taken as true: the automaton then
    accepts a superset of the valuations, which the caller filters (exec/post_filter.py).
    ``first_marks`` maps an AS variable to one that marks only the first event of each match of
    its pattern (``_Builder.mark_first``), which tells a filter the repetitions of a ``+`` apart.
    An UNLESS around the whole pattern gives its right sides as ``Automaton.unless``, each
    selecting all of its events (``UNLESS_MARK``), all on one list of conditions. ``inside``
    holds the right sides of the UNLESS inside the pattern, which the caller has replaced by
    their left sides (planner/rules.py): they become ``Automaton.unless_inside``, compiled the
    same way."""
    left, rights = _split_unless(pattern)
    automaton = _compile(left, selected, relax_cross, first_marks, ())
    if not rights and not inside:
        return automaton
    conditions = automaton.conditions
    compiled = []
    for right in rights + tuple(inside):
        other = _compile(ast.As(right, UNLESS_MARK, right.span), [UNLESS_MARK], False, None, conditions)
        conditions = other.conditions
        compiled.append(other)
    _check_conditions(conditions, pattern)
    compiled = [dataclasses.replace(c, conditions=conditions) for c in compiled]
    return dataclasses.replace(automaton, conditions=conditions, unless=tuple(compiled[:len(rights)]),
                               unless_inside=tuple(compiled[len(rights):]))


def _check_conditions(conditions, pattern) -> None:
    if len(conditions) > 64:
        raise _limit_error(f"The pattern tests {len(conditions)} distinct conditions; at most 64 are supported",
                           "TOO_MANY_CONDITIONS", "use fewer distinct event types and FILTER predicates",
                           pattern)


def _compile(pattern, selected, relax_cross: bool, first_marks, known: tuple) -> Automaton:
    """compile_pattern's automaton of one pattern; its conditions extend ``known`` (in order)."""
    b = _Builder(relax_cross=relax_cross, first_marks=dict(first_marks or {}))
    initial = b.state()
    b.edges.append(_Edge(initial, initial))  # a match may start anywhere
    entry, exit_ = b.build(pattern)
    b.epsilon(initial, entry)

    conditions: list = list(known)
    for e in b.edges:
        for c in sorted(e.required, key=lambda c: (isinstance(c, str), str(c))):
            if c not in conditions:
                conditions.append(c)
    _check_conditions(conditions, pattern)
    selected = list(dict.fromkeys(selected))
    if len(selected) > 62:
        raise _limit_error(f"The query selects {len(selected)} variables; at most 62 are supported",
                           "TOO_MANY_VARIABLES", "select fewer variables, or group events under one AS",
                           pattern)
    bit = {c: 1 << k for k, c in enumerate(conditions)}
    label_bit = label_bits(selected)

    # epsilon removal: a state takes the consuming edges of its closure
    closures = _closures(b.n_states, b.edges)
    consuming: dict[int, list[_Edge]] = {}
    for e in b.edges:
        if not e.epsilon:
            consuming.setdefault(e.source, []).append(e)
    raw = []  # (source, required bits, label bits, target) over builder states
    for s in range(b.n_states):
        for c in closures[s]:
            for e in consuming.get(c, ()):
                required = sum(bit[k] for k in e.required)
                label = sum(label_bit.get(v, 0) for v in e.marks)
                if s == initial and e.required:
                    label |= START
                raw.append((s, required, label, e.target))
    accepting = {s for s in range(b.n_states) if exit_ in closures[s]}

    # pair states with the flag "a selected variable is marked"; keep reachable states
    selected_bits = ~START
    index: dict[tuple[int, bool], int] = {(initial, False): 0}
    todo = [(initial, False)]
    by_source: dict[int, list[tuple]] = {}
    for t in raw:
        by_source.setdefault(t[0], []).append(t)
    product = []
    while todo:
        s, flag = todo.pop()
        for _, required, label, target in by_source.get(s, ()):
            nxt = (target, flag or bool(label & selected_bits))
            if nxt not in index:
                index[nxt] = len(index)
                todo.append(nxt)
            product.append((index[(s, flag)], required, label, index[nxt]))
    final = {i for (s, flag), i in index.items() if flag and s in accepting}

    # keep only states from which a final state can be reached
    alive, changed = set(final), True
    while changed:
        changed = False
        for src, _, _, dst in product:
            if dst in alive and src not in alive:
                alive.add(src)
                changed = True
    alive.add(0)
    renumber = {old: new for new, old in enumerate(sorted(alive))}
    transitions = tuple(sorted({Transition(renumber[s], r, l, renumber[d])
                                for s, r, l, d in product if s in alive and d in alive},
                               key=lambda t: (t.source, t.label, t.required, t.target)))
    return Automaton(len(renumber), 0, frozenset(renumber[f] for f in final), transitions,
                     tuple(conditions), tuple(selected))
