"""The automaton engines for queries with FILTER predicates across variables (DESIGN.md 4.7).

Input: a :class:`cerql.plan.QueryPlan` whose automaton was compiled with those predicates taken
as true and with every variable their FILTERs read marked (planner/rules.py), and the
:class:`cerql.exec.stream.Stream`. Output: the results, as :class:`cerql.exec.results.Result`
values, the same as the reference evaluator's, batch by batch. ``cerql.run`` feeds it the
kernel's candidates over its stream; the Spark task (spark/arrow_task.py) those of each Arrow
batch, over the rows it keeps back to the window edge (:class:`CandidateFilter`).

Why this shape: the automaton checks one event at a time, so a predicate between two events
cannot be one of its conditions. Seed 002's registers carry values along the runs for the
comparisons the kernel can check (planner/registers.py); for the rest (aggregates, both
variables on one side, FILTERs inside the pattern or under +) the relaxed automaton enumerates
every valuation that satisfies the rest of the pattern (strategy ALL, no CONSUME BY, WITHIN
applied), each result is kept when every such FILTER holds on its events (the reference
evaluator's own check, so the two cannot drift apart), and CONSUME BY, the projection and the
strategy are then applied end by end as DESIGN.md 4.3 orders them. The filter is part of the
pattern, so strategies choose among results that pass. A FILTER under + or :+ is checked on
each repetition, which the relaxed automaton marks by its first event (``_owns``).

The cost is the relaxed pattern's: every ALL result it has is enumerated (up to
``kernel.candidate_limit`` at one event) and the predicates are evaluated once per result and
combination of the variables' events. A selective predicate over a broad pattern pays for the
broad pattern; ``cerql.explain`` says so.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections import defaultdict
from typing import TypeVar

import numpy as np
import pyarrow as pa

from cerql import ast
from cerql.exec import driver, kernel, reference
from cerql.exec.results import Result, Valuation
from cerql.exec.stream import Stream
from cerql.exec.values import evaluate_predicate
from cerql.plan import QueryPlan, TaskPlan
from cerql.exec.bits import label_bits

P = TypeVar("P", bound=TaskPlan)  # ``relaxed`` keeps the kind of plan it is given
BATCH = 1 << 13  # rows per kernel call: a batch's candidates are held until they are checked


def _owns(bound: dict[str, str], marker: str, first: str | None, v: Valuation) -> list[Valuation]:
    """A FILTER's own valuations within a result: the events its pattern matched (``marker``)
    with the labels of the variables that pattern binds (``bound`` maps a label to the variable
    it stands for: a variable an AS around the FILTER binds again is read from its private
    label, planner/rules.py ``rebound_variables``); none if it took no part (another OR
    branch). Under + or :+ one per repetition: repetitions follow one another, so the events
    from one first event (``first``) up to the next are one repetition's."""
    mine = sorted(p for var, p in v.labels if var == marker)
    if not mine:
        return []
    groups = [mine]
    if first is not None:
        starts = sorted(p for var, p in v.labels if var == first)
        cuts = [bisect.bisect_left(mine, s) for s in starts[1:]]
        groups = [mine[a:b] for a, b in zip([0] + cuts, cuts + [len(mine)])]
    owns = []
    for group in groups:
        inside = set(group)
        owns.append(Valuation(group[0], group[-1],
                              frozenset((bound[var], p) for var, p in v.labels if p in inside and var in bound)))
    return owns


def relaxed(plan: P) -> P:
    """What the kernel runs for a post-filtered plan: every candidate (ALL, nothing consumed),
    up to the candidate limit at one event; CONSUME BY and the strategy come after the check."""
    return dataclasses.replace(plan, strategy="ALL", consume="NONE",
                               max_matches_per_event=kernel.candidate_limit(plan.max_matches_per_event))


class CandidateFilter:
    """Checks the relaxed automaton's candidates as the kernel enumerates them, then applies
    CONSUME BY, the projection and the strategy end by end.

    Candidates are checked in the batch whose event completes them, and forgotten once
    checked: an end position's candidates all come in one batch, and CONSUME BY only carries
    the last consumed position of the current substream forward. So memory holds one batch's
    candidates and the rows the window can reach, never the substream's candidates."""

    def __init__(self, plan: TaskPlan):
        self.plan = plan
        self.substream: object = None
        self.consumed = -1

    def choose(self, k, view: reference.Substream, by_end: dict[int, list[Valuation]]) -> list[Result]:
        """The results among substream k's candidates ``by_end`` (end position -> valuations,
        positions within the substream), checked on ``view``'s rows. Substreams come in order."""
        if k != self.substream:
            self.substream, self.consumed = k, -1
        candidates = [v for vs in by_end.values() for v in vs]
        owns = []
        for pf in self.plan.post_filters:  # each FILTER's own valuations, then its predicates at once
            own = {id(v): _owns(pf.labels, pf.marker, pf.first, v) for v in candidates}
            for leaf in ast.walk(pf.filter.condition):
                if isinstance(leaf, ast.CrossPredicate):
                    view.prepare_cross(leaf.expr.text, [o for os in own.values() for o in os])
            owns.append((pf.filter.condition, own))
        kept = {end: [v for v in valuations
                      if all(view.holds(cond, o) for cond, own in owns for o in own[id(v)])]
                for end, valuations in by_end.items()}
        view.known.clear()  # the cache of this batch's values: memory stays with the batch
        view.count = 0
        results, self.consumed = reference.choose_from(self.plan, k, kept, self.consumed)
        return results


def _certainly_false(cond, own_rows, table, plan, n: int):
    """Which candidates ``cond`` is false for, known from one row per variable: a predicate
    across variables whose variables each have exactly one event in the FILTER's own valuation
    is evaluated on those rows at once (an empty variable makes it true, several leave it to the
    exact check); AND and OR combine; anything else is not known to be false."""
    if isinstance(cond, ast.FilterAnd):
        return (_certainly_false(cond.left, own_rows, table, plan, n)
                | _certainly_false(cond.right, own_rows, table, plan, n))
    if isinstance(cond, ast.FilterOr):
        return (_certainly_false(cond.left, own_rows, table, plan, n)
                & _certainly_false(cond.right, own_rows, table, plan, n))
    out = np.zeros(n, bool)
    if not isinstance(cond, ast.CrossPredicate):
        return out
    cross = plan.cross_predicates[cond.expr.text]
    if cross.aggregates or not cross.variables or any(v not in own_rows for v in cross.variables):
        return out
    single = np.ones(n, bool)
    for var in cross.variables:
        single &= own_rows[var][1] == 1
    idx = np.flatnonzero(single)
    if len(idx):
        columns = {f"{var}.{col}": table.column(col).take(own_rows[var][0][idx]) for var, col in cross.columns}
        out[idx] = ~evaluate_predicate(cross.fn, pa.table(columns))
    return out


def prune(plan: TaskPlan, matches: "driver.Matches", table: pa.Table, rows: np.ndarray) -> np.ndarray:
    """Which of the relaxed automaton's candidates (arrays, before they become objects) may
    pass the FILTERs; ``rows[q]`` is the row of ``table`` of label entry q. A candidate is
    dropped only when a FILTER over its whole own valuation (not under + or :+) is certainly
    false on it (``_certainly_false``); the exact check decides the rest. Selective FILTERs
    over broad patterns keep few candidates, so few become Python objects."""
    n = len(matches)
    keep = np.ones(n, bool)
    if n == 0:
        return keep
    bit = label_bits(matches.automaton.labels)
    owner = np.repeat(np.arange(n), matches.length)
    mask = matches.label_mask
    for pf in plan.post_filters:
        if pf.first is not None or pf.marker not in bit:
            continue
        own = (mask & bit[pf.marker]) != 0
        own_rows = {}
        for var in set(pf.labels.values()):
            var_bits = sum(bit[label] for label, v in pf.labels.items() if v == var and label in bit)
            hit = own & ((mask & var_bits) != 0)
            count = np.bincount(owner[hit], minlength=n)
            row = np.zeros(n, np.int64)
            row[owner[hit]] = rows[hit]
            own_rows[var] = (row, count)
        keep &= ~_certainly_false(pf.filter.condition, own_rows, table, plan, n)
    return keep


def group_by_substream(results) -> dict[int, dict[int, list[Valuation]]]:
    """Results as substream -> end position -> valuations, substreams in order of appearance."""
    out: dict[int, dict[int, list[Valuation]]] = {}
    for r in results:
        out.setdefault(r.substream, defaultdict(list))[r.end].append(Valuation(r.start, r.end, r.labels))
    return out


def result_batches(plan: QueryPlan, stream: Stream, batch_size: int = BATCH):
    """The query's results, one list per batch: the relaxed automaton's candidates that pass
    the FILTERs, checked as they end (see :class:`CandidateFilter`)."""
    check = CandidateFilter(plan)
    views: dict[int, reference.Substream] = {}
    for matches in driver.match_batches(relaxed(plan), stream, batch_size):
        # a label entry's stream row: its result's end row, less the positions between them
        entry_end = np.repeat(matches.end_row - matches.end, matches.length)
        matches = matches.subset(prune(plan, matches, stream.table, entry_end + matches.label_pos))
        results: list[Result] = []
        for k, by_end in group_by_substream(matches.results()).items():
            if k not in views:
                views.clear()  # substreams come in order: an earlier one has no candidates left
                lo, hi = stream.bounds[k]
                views[k] = reference.Substream(plan, stream, lo, hi)
            results.extend(check.choose(k, views[k], by_end))
        yield results


def evaluate(plan: QueryPlan, stream: Stream, batch_size: int = BATCH) -> list[Result]:
    """Every result of the query: the relaxed automaton's results that pass the FILTERs."""
    return [r for part in result_batches(plan, stream, batch_size) for r in part]
