"""The automaton engines for queries with FILTER predicates across variables (docs/semantics.md,
"Predicates across variables") or with UNLESS inside the pattern (docs/language.md, "Negation and
conjunction").

Input: a :class:`cerql.plan.QueryPlan` whose automaton was compiled with those predicates taken
as true and with every variable their FILTERs read marked (planner/rules.py), and the
:class:`cerql.exec.stream.Stream`. Output: the results, as :class:`cerql.exec.results.Result`
values, the same as the reference evaluator's, batch by batch. ``cerql.run`` feeds it the
kernel's candidates over its stream; the Spark task (exec/task.py) those of each Arrow
batch, over the rows it keeps back to the window edge (:class:`CandidateFilter`).

Why this shape: the automaton checks one event at a time, so a predicate between two events
cannot be one of its conditions. Seed 002's registers carry values along the runs for the
comparisons the kernel can check (planner/registers.py); for the rest (aggregates, both
variables on one side, FILTERs inside the pattern or under +) the relaxed automaton enumerates
every valuation that satisfies the rest of the pattern (strategy ALL, no CONSUME BY, WITHIN
applied), each result is kept when every such FILTER holds on its events (exec/candidate_rows.py,
the engine's own check: the reference evaluator keeps one of its own, so the differential tests
compare two), and CONSUME BY, the projection and the strategy are then applied end by end as
docs/language.md ("Selection strategies") orders them (exec/choice.py). The filter is part of the
pattern, so strategies choose among results that pass. A FILTER under + or :+ is checked on
each repetition, which the relaxed automaton marks by its first event (``_owns``).

An UNLESS inside the pattern is checked the same way: the relaxed automaton runs its left side
in its place and marks the events that side matched; the automaton of its right side runs over
the same events (``driver.Run.reach``) and gives, per event, the latest start of one of its
results ending there or before; the part [first, last] the left side matched holds such a
result exactly when that reach at ``last`` is at least ``first``. The reach is one integer per
row: a Spark task keeps it for the rows the window can reach, ``result_batches`` for the whole
stream it reads. Outside + and :+ :func:`prune` decides it on arrays, and without CONSUME BY
and MAX :func:`chosen` applies the strategy on arrays too, so no candidate becomes an object.

The cost is the relaxed pattern's: every ALL result it has is enumerated (up to
``kernel.candidate_limit`` at one event, and candidates holding up to ``kernel.candidate_events``
events: past either the query fails naming cerql.maxMatchesPerEvent) and the predicates are
evaluated once per result and combination of the variables' events. A selective predicate over a
broad pattern pays for the broad pattern; ``cerql.explain`` says so. The kernel hands the
candidates over in parts of at most about half that budget of events (``driver.match_batches``
with ``candidates``), each checked and dropped before the next, so what is held follows the
budget, not the batch.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections import defaultdict
from typing import TypeVar

import numpy as np
import pyarrow as pa

from cerql import ast
from cerql.exec import choice, driver, kernel
from cerql.exec.candidate_rows import CandidateRows
from cerql.exec.results import Result, Valuation, too_many_matches
from cerql.exec.stream import Stream
from cerql.expr import evaluate_predicate
from cerql.plan import QueryPlan, TaskPlan
from cerql.automaton import label_bits

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

    def choose(self, k, view: CandidateRows, by_end: dict[int, list[Valuation]]) -> list[Result]:
        """The results among substream k's candidates ``by_end`` (end position -> valuations,
        positions within the substream), checked on ``view``'s rows. Substreams come in order.
        The candidates have been through :func:`prune`, which decides an UNLESS inside the
        pattern exactly where it is not under + or :+."""
        if k != self.substream:
            self.substream, self.consumed = k, -1
        candidates = [v for vs in by_end.values() for v in vs]
        owns = []
        for pf in self.plan.post_filters:  # each FILTER's own valuations, then its predicates at once
            if pf.unless is not None and pf.first is None:
                continue
            own = {id(v): _owns(pf.labels, pf.marker, pf.first, v) for v in candidates}
            if pf.unless is not None:
                owns.append((pf.unless, own))
                continue
            for leaf in ast.walk(pf.filter.condition):
                if isinstance(leaf, ast.CrossPredicate):
                    view.prepare_cross(leaf.expr.text, [o for os in own.values() for o in os])
            owns.append((pf.filter.condition, own))
        kept = {end: [v for v in valuations
                      if all(_holds(view, check, o) for check, own in owns for o in own[id(v)])]
                for end, valuations in by_end.items()}
        view.known.clear()  # the cache of this batch's values: memory stays with the batch
        view.count = 0
        results, self.consumed = choice.choose(self.plan, k, kept, self.consumed)
        return results


def _holds(view: CandidateRows, check, own: Valuation) -> bool:
    """A FILTER's condition on its own valuation, or (an int k) the k-th UNLESS inside the
    pattern on its left side's match: no result of its right side lies within [start, end],
    that is, the latest start of one ending at ``end`` or before (``view.reach``) is before
    ``start``."""
    if isinstance(check, int):
        return int(view.reach[check][own.end - view.offset]) < own.start
    return view.holds(check, own)


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


def _inside_unless_fails(own: np.ndarray, owner: np.ndarray, positions: np.ndarray, reach: np.ndarray,
                         n: int) -> np.ndarray:
    """Which candidates an UNLESS inside the pattern (not under + or :+) drops: those whose
    left side's match (label entries ``own``) holds a result of the right side, whose latest
    start up to the match's last event (``reach`` per label entry) is at or after its first."""
    first = np.full(n, np.iinfo(np.int64).max, np.int64)
    last_reach = np.full(n, -1, np.int64)
    np.minimum.at(first, owner[own], positions[own])
    np.maximum.at(last_reach, owner[own], reach[own])  # reach grows with the position
    return last_reach >= first


def prune(plan: TaskPlan, matches: "driver.Matches", table: pa.Table, rows: np.ndarray,
          reach: np.ndarray | None = None) -> np.ndarray:
    """Which of the relaxed automaton's candidates (arrays, before they become objects) may
    pass the checks; ``rows[q]`` is the row of ``table`` of label entry q, and ``reach[k]`` the
    k-th UNLESS inside's latest right-side start per row of ``table``. A candidate is dropped
    only when a check over its whole own valuation (not under + or :+) certainly fails on it:
    a FILTER certainly false (``_certainly_false``), an UNLESS that holds a result of its right
    side; the exact check decides the rest. Selective FILTERs over broad patterns keep few
    candidates, so few become Python objects."""
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
        if pf.unless is not None:
            keep &= ~_inside_unless_fails(own, owner, matches.label_pos, reach[pf.unless][rows], n)
            continue
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


def unless_cut(plan: TaskPlan) -> tuple[int, int] | None:
    """(label bits, k) of the first UNLESS inside the pattern not under + or :+, for the kernel
    to decide as it enumerates (driver.Run's ``unless_cut``): a path whose left side's events
    (the marker's label) span a result of the right side is not followed. It drops exactly the
    candidates :func:`prune` would drop for that UNLESS, before they are written, so the
    candidates follow the results of the pattern with the UNLESS, not those without it
    (``A ; ((B ; B) UNLESS C)`` without WITHIN: every (A, B, B) triple before)."""
    bit = label_bits(plan.automaton.labels)
    for pf in plan.post_filters:
        if pf.unless is not None and pf.first is None and pf.marker in bit:
            return bit[pf.marker], pf.unless
    return None


def search_order(plan: TaskPlan) -> tuple[str, int] | None:
    """(strategy, label bits of the selected variables) for a NEXT or LAST plan, whose kernel
    run hands an end event's many candidates over in the strategy's order, best data set first,
    so that the check stops at the first that passes (driver.Run's ``order``, kernel/ordered.py);
    None for the other strategies, which choose among them all."""
    bit = label_bits(plan.automaton.labels)
    selected = sum(bit[v] for v in plan.selected if v in bit)
    return (plan.strategy, selected) if plan.strategy in ("NEXT", "LAST") and selected else None


def decided_by_prune(plan: TaskPlan) -> bool:
    """Whether :func:`prune` decides every check and the strategy can be applied on arrays:
    each check an UNLESS inside the pattern, not under + or :+, without CONSUME BY (which ties
    one end's choice to the ones before) and a strategy other than MAX. The results are then
    :func:`chosen` from the pruned candidates, and none becomes a Python object."""
    return plan.consume == "NONE" and plan.strategy != "MAX" and all(
        pf.unless is not None and pf.first is None for pf in plan.post_filters)


def chosen(plan: TaskPlan, matches: "driver.Matches") -> "driver.Matches":
    """The results among pruned candidates (:func:`decided_by_prune`): projected, then the
    strategy end by end as choice.by_strategy applies it, on arrays: ANY keeps an end's
    first candidate, STRICT those whose positions have no gap, NEXT and LAST those with the
    winning data set (``_winners``). An end with more results than ``max_matches_per_event``
    fails as on every engine."""
    matches = projected(plan, matches)
    n = len(matches)
    if n == 0:
        return matches
    group = np.unique(matches.end_row, return_inverse=True)[1].reshape(-1)
    keep = np.ones(n, bool)
    if plan.strategy == "ANY":
        keep[:] = False
        keep[np.unique(group, return_index=True)[1]] = True
    elif plan.strategy == "STRICT":  # positions come last first: the span is first entry - last entry
        top = matches.label_pos[matches.offset]
        bottom = matches.label_pos[matches.offset + matches.length - 1]
        keep = top - bottom + 1 == matches.length
    elif plan.strategy in ("NEXT", "LAST"):
        keep = _winners(matches, group, plan.strategy == "NEXT")
    kept = np.bincount(group[keep], minlength=1)  # none kept (STRICT) counts as 0
    if kept.max() > plan.max_matches_per_event:
        raise too_many_matches(f"{int(kept.max()):,}", plan.max_matches_per_event)
    return matches.subset(keep) if not keep.all() else matches


def _winners(matches: "driver.Matches", group: np.ndarray, next_: bool) -> np.ndarray:
    """Per end (``group``), the candidates whose data set is NEXT's (or LAST's) greatest:
    d1 <next d2 when the least position of d1 ^ d2 is in d2, so walking the positions upwards
    the first difference goes to the smaller position, and a set that ends first loses (it
    is padded with +inf); LAST walks downwards, the larger position winning, a set that ends
    first padded with -inf. One pass per rank, over the candidates still tied."""
    big = np.iinfo(np.int64).max
    pad = big if next_ else -big
    alive = np.ones(len(matches), bool)
    longest = int(matches.length.max())
    for rank in range(longest):
        idx = np.flatnonzero(alive)
        length = matches.length[idx]
        inside = rank < length
        # positions come last first: the rank-th upwards is at offset + length - 1 - rank
        at = matches.offset[idx] + (length - 1 - rank if next_ else rank)
        value = np.where(inside, matches.label_pos[np.where(inside, at, 0)], pad)
        best = np.full(int(group.max()) + 1, pad, np.int64)
        (np.minimum if next_ else np.maximum).at(best, group[idx], value)
        alive[idx] = value == best[group[idx]]
        if not inside[alive[idx]].any():  # every set still tied has ended: they are equal
            break
    return alive


_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(31))


def projected(plan: TaskPlan, matches: "driver.Matches") -> "driver.Matches":
    """The candidates as results: the labels of unselected variables (the markers) dropped,
    then the entries left with no label, then the candidates left with no entry (they select
    nothing, docs/semantics.md, "Results"), and candidates that became equal kept once. Equal candidates are
    found by an order-free hash of their entries, then compared exactly."""
    keep_bits = sum(label_bits(matches.automaton.labels)[v] for v in plan.selected if v in matches.automaton.labels)
    n = len(matches)
    mask = matches.label_mask & keep_bits
    owner = np.repeat(np.arange(n), matches.length)
    entry = mask != 0
    length = np.bincount(owner[entry], minlength=n).astype(np.int64)
    offset = np.zeros(n, np.int64)
    np.cumsum(length[:-1], out=offset[1:])
    pos, mask, owner = matches.label_pos[entry], mask[entry], owner[entry]
    with np.errstate(over="ignore"):
        mixed = pos.astype(np.uint64) * _MIX[0] ^ mask.astype(np.uint64) * _MIX[1]
        mixed ^= mixed >> _MIX[2]
        mixed *= _MIX[0]
    digest = np.zeros(n, np.uint64)
    np.add.at(digest, owner, mixed)
    key = np.stack([matches.substream, matches.end_row, matches.start, length, digest.view(np.int64)], axis=1)
    _, first, group = np.unique(key, axis=0, return_index=True, return_inverse=True)
    keep = length > 0
    duplicate = np.ones(n, bool)
    duplicate[first] = False
    group = group.reshape(-1)

    def entries(r: int) -> set:
        return set(zip(pos[offset[r]:offset[r] + length[r]].tolist(), mask[offset[r]:offset[r] + length[r]].tolist()))

    for r in np.flatnonzero(duplicate & keep).tolist():  # equal hashes: equal entries, unless a collision
        keep[r] = entries(r) != entries(int(first[group[r]]))
    out = driver.Matches(matches.automaton, matches.substream, matches.end_row, matches.end, matches.start,
                         offset, length, pos, mask)
    return out.subset(keep)


def group_by_substream(results) -> dict[int, dict[int, list[Valuation]]]:
    """Results as substream -> end position -> valuations, substreams in order of appearance."""
    out: dict[int, dict[int, list[Valuation]]] = {}
    for r in results:
        out.setdefault(r.substream, defaultdict(list))[r.end].append(Valuation(r.start, r.end, r.labels))
    return out


def result_batches(plan: QueryPlan, stream: Stream, batch_size: int = BATCH):
    """The query's results, one list per batch: the relaxed automaton's candidates that pass
    the FILTERs, checked as they end (see :class:`CandidateFilter`); when :func:`prune` decides
    every check, :class:`cerql.exec.driver.Matches` parts instead, as driver.result_batches
    gives."""
    check = CandidateFilter(plan)
    decided = decided_by_prune(plan)
    views: dict[int, CandidateRows] = {}
    # per UNLESS inside the pattern, per stream row: the latest start of its right side's
    # results up to there (driver.Run.reach), as the stream's condition bits are held whole
    reach = np.full((len(plan.automaton.unless_inside), stream.table.num_rows), -1, np.int64)
    b0 = 0
    for matches in driver.match_batches(relaxed(plan), stream, batch_size, candidates=True,
                                        unless_cut=unless_cut(plan), order=search_order(plan)):
        if matches.reach is not None:
            reach[:, b0:b0 + matches.reach.shape[1]] = matches.reach
            b0 += matches.reach.shape[1]
        open_row, settle = matches.open_row, matches.settle
        # a label entry's stream row: its result's end row, less the positions between them
        entry_end = np.repeat(matches.end_row - matches.end, matches.length)
        matches = matches.subset(prune(plan, matches, stream.table, entry_end + matches.label_pos, reach))
        if decided:
            results = chosen(plan, matches)
            if settle is not None:
                settle(bool((results.end_row == open_row).any()))
            yield from results.slices(driver.RESULT_SLICE)
            continue
        results = []
        for k, by_end in group_by_substream(matches.results()).items():
            if k not in views:
                views.clear()  # substreams come in order: an earlier one has no candidates left
                lo, hi = stream.bounds[k]
                views[k] = CandidateRows.of_substream(plan, stream, lo, hi, reach[:, lo:hi])
            results.extend(check.choose(k, views[k], by_end))
        if settle is not None:
            k_open = int(np.searchsorted([lo for lo, _ in stream.bounds], open_row, side="right")) - 1
            settle(any(r.substream == k_open and r.end == open_row - stream.bounds[k_open][0] for r in results))
        yield results


def evaluate(plan: QueryPlan, stream: Stream, batch_size: int = BATCH) -> list[Result]:
    """Every result of the query: the relaxed automaton's results that pass the FILTERs."""
    return [r for part in result_batches(plan, stream, batch_size)
            for r in (part if isinstance(part, list) else part.results())]
