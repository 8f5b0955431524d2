"""The reference evaluator: the semantics of docs/language.md and docs/semantics.md, literally, by brute force.

Input: a :class:`cerql.plan.QueryPlan` and the :class:`cerql.exec.stream.Stream` it reads.
Output: the results, as :class:`Result` values (substream, interval, selected positions).
It is the oracle every faster engine is tested against, so it is written to be obviously
right: each pattern operator is a set operation on valuations (interval plus variable ->
set of positions), then WITHIN, CONSUME BY, projection and the strategy are applied per end
position in that order (docs/language.md, "Selection strategies"). Its only shortcut is sound: a valuation wider than
the window is dropped as soon as it exists, since every valuation built from it is wider
still. It refuses inputs whose valuations outgrow ``MAX_VALUATIONS``.

It shares no code with the engines beyond their common inputs and outputs: the AST, the plan
(cerql.plan, cerql.automaton), the Stream they all read (cerql.exec.stream, the order and
substreams of docs/language.md, "Events and the stream"), the Spark-SQL expression evaluator
(cerql.expr, cerql.exec.aggregate), the Result values every engine gives and the
TOO_MANY_MATCHES_PER_EVENT error (cerql.exec.results). The engines have their own check of
FILTERs on candidates (exec/candidate_rows.py) and their own choice among them
(exec/choice.py): the duplication is on purpose, so that the differential tests compare two
implementations of the semantics and not one function with itself;
tests/exec/test_reference_independence.py keeps it so.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from cerql import ast
from cerql.errors import ExecutionError
from cerql.exec import aggregate
from cerql.exec.results import Result, too_many_matches
from cerql.expr import evaluate_predicate
from cerql.plan import AGGREGATE_COLUMN, CrossPlan, QueryPlan, TaskPlan

if TYPE_CHECKING:  # the input every engine reads; the oracle only reads it
    from cerql.exec.stream import Stream

MAX_VALUATIONS = 2_000_000
# label entries the evaluator may build while joining (each pair joined costs the labels of
# both sides, duplicates included): what bounds its time and memory when few distinct
# valuations hold many events each (a Kleene closure over a long run: 3 A, 13 B, 3 C took 93 s)
MAX_LABEL_WORK = 10_000_000
# the label of a position no variable names (NOT's event): a valuation's positions are its
# labels' positions, and no variable is called "" (projection drops it)
UNNAMED = ""

def _too_large(what: str) -> ExecutionError:
    return ExecutionError(f"The reference evaluator stopped after {what}", error_class="REFERENCE_INPUT_TOO_LARGE",
                          hint="it is brute force, for tests on tiny inputs; add a WITHIN window, "
                          "shrink the input, or use engine='local'")


@dataclass(frozen=True, order=True)
class Valuation:
    """A partial match: positions are 0-based within the substream; ``labels`` holds
    (variable, position) pairs, the variable "" (UNNAMED) for NOT's event."""

    start: int
    end: int
    labels: frozenset

    def positions(self) -> frozenset[int]:
        return frozenset(p for _, p in self.labels)


class Substream:
    """Evaluation of the pattern over one substream (rows lo:hi of the stream)."""

    def __init__(self, plan: QueryPlan, stream: Stream, lo: int, hi: int):
        self.plan, self.n = plan, hi - lo
        self.atoms = {a: np.flatnonzero(rows[lo:hi]) for a, rows in stream.atoms.items()}
        self.preds = {t: rows[lo:hi] for t, rows in stream.predicates.items()}
        self.table = stream.table.slice(lo, hi - lo)
        values = stream.window_values
        self.values = None if values is None else values[lo:hi]
        self.count = self.work = 0

    def within(self, start: int, end: int) -> bool:
        w = self.plan.window
        if w is None:
            return True
        if w.kind == "events":
            return end - start <= w.amount
        return self.values[end] - self.values[start] <= w.amount

    def _spend(self, labels: int) -> None:
        """Count label entries built while joining, against MAX_LABEL_WORK."""
        self.work += labels
        if self.work > MAX_LABEL_WORK:
            raise _too_large(f"building {MAX_LABEL_WORK:,} label entries")

    def _guard(self, size: int) -> None:
        self.count += size
        if self.count > MAX_VALUATIONS:
            raise _too_large(f"{MAX_VALUATIONS:,} partial matches")

    def eval(self, node) -> set[Valuation]:
        out = getattr(self, "_" + type(node).__name__.lower())(node)
        self._guard(len(out))
        return out

    def _atom(self, node: ast.Atom) -> set[Valuation]:
        return {Valuation(int(i), int(i), frozenset({(node.type, int(i))})) for i in self.atoms[node]}

    def _as(self, node: ast.As) -> set[Valuation]:
        return {Valuation(v.start, v.end, v.labels | {(node.var, p) for p in v.positions()})
                for v in self.eval(node.pattern)}

    def _join(self, left: set[Valuation], right: set[Valuation], contiguous: bool) -> set[Valuation]:
        by_start = defaultdict(list)
        for r in right:
            by_start[r.start].append(r)
        out = set()
        for lv in left:
            starts = [lv.end + 1] if contiguous else [s for s in by_start if s > lv.end]
            built = 0
            for s in starts:
                for r in by_start.get(s, ()):
                    if self.within(lv.start, r.end):
                        out.add(Valuation(lv.start, r.end, lv.labels | r.labels))
                        built += len(lv.labels) + len(r.labels)
            self._spend(built)
        return out

    def _seq(self, node: ast.Seq) -> set[Valuation]:
        return self._join(self.eval(node.left), self.eval(node.right), contiguous=False)

    def _contiguous(self, node: ast.Contiguous) -> set[Valuation]:
        return self._join(self.eval(node.left), self.eval(node.right), contiguous=True)

    def _plus(self, node, contiguous: bool) -> set[Valuation]:
        once = {v for v in self.eval(node.pattern) if self.within(v.start, v.end)}
        result, frontier = set(once), set(once)
        while frontier:
            frontier = self._join(frontier, once, contiguous) - result
            self._guard(len(frontier))
            result |= frontier
        return result

    def _kleeneplus(self, node: ast.KleenePlus) -> set[Valuation]:
        return self._plus(node, contiguous=False)

    def _contiguousplus(self, node: ast.ContiguousPlus) -> set[Valuation]:
        return self._plus(node, contiguous=True)

    def _or(self, node: ast.Or) -> set[Valuation]:
        return self.eval(node.left) | self.eval(node.right)

    def _not(self, node: ast.Not) -> set[Valuation]:
        """Every position the atom (with its FILTER) does not match: in the interval, no label."""
        matched = {v.start for v in self.eval(node.atom)
                   if node.condition is None or self.holds(node.condition, v)}
        return {Valuation(i, i, frozenset({(UNNAMED, i)})) for i in range(self.n) if i not in matched}

    def _and(self, node: ast.And) -> set[Valuation]:
        """Pairs made of exactly the same positions (an interval and the positions in it)."""
        by_span = defaultdict(list)
        for r in self.eval(node.right):
            by_span[(r.start, r.end, r.positions())].append(r)
        return {Valuation(lv.start, lv.end, lv.labels | r.labels)
                for lv in self.eval(node.left) for r in by_span.get((lv.start, lv.end, lv.positions()), ())}

    def _all(self, node: ast.All) -> set[Valuation]:
        """Every pair, anywhere in the substream, that fits the window together."""
        right = self.eval(node.right)
        out = set()
        for lv in self.eval(node.left):
            for r in right:
                start, end = min(lv.start, r.start), max(lv.end, r.end)
                if self.within(start, end):
                    out.add(Valuation(start, end, lv.labels | r.labels))
                    self._spend(len(lv.labels) + len(r.labels))
            self._guard(len(right))
        return out

    def _unless(self, node: ast.Unless) -> set[Valuation]:
        """The left side's results whose interval holds no result of the right side."""
        spans = {(r.start, r.end) for r in self.eval(node.right)}
        return {v for v in self.eval(node.left)
                if not any(v.start <= s and e <= v.end for s, e in spans)}

    def _filter(self, node: ast.Filter) -> set[Valuation]:
        return {v for v in self.eval(node.pattern) if self.holds(node.condition, v)}

    def holds(self, cond, v: Valuation) -> bool:
        if isinstance(cond, ast.FilterAnd):
            return self.holds(cond.left, v) and self.holds(cond.right, v)
        if isinstance(cond, ast.FilterOr):
            return self.holds(cond.left, v) or self.holds(cond.right, v)
        if isinstance(cond, ast.CrossPredicate):
            return self.cross_holds(self.plan.cross_predicates[cond.expr.text], v)
        rows = self.preds[cond.predicate.text]
        return all(rows[p] for var, p in v.labels if var == cond.var)

    def _aggregates(self, agg, positions: list[list[int]]) -> list:
        """One aggregate's value for each list of positions (one valuation's events of its
        variable), with the column's values taken once for all of them."""
        if agg.column is None:
            return [aggregate.value(agg.kind, p, None) for p in positions]
        column = self.table.column(agg.column)
        flat = np.fromiter(itertools.chain.from_iterable(positions), np.int64)
        values = column.take(pa.array(flat, pa.int64())).to_pylist()
        out, at = [], 0
        for p in positions:
            out.append(aggregate.value(agg.kind, p, values[at:at + len(p)], column.type))
            at += len(p)
        return out

    def cross_holds(self, cross: CrossPlan, v: Valuation) -> bool:
        """A predicate across variables holds for every combination of the events of the
        variables it reads outside aggregates (x.col means each event of x, docs/semantics.md,
        "Predicates across variables"), so vacuously when one of them has no event here; an aggregate is one value over
        all of its variable's events here (cerql.exec.aggregate). NULL is false, as in WHERE."""
        events_of = {}
        for name, p in sorted(v.labels, key=lambda label: label[1]):
            events_of.setdefault(name, []).append(p)
        variables = cross.variables
        events = [events_of.get(var, []) for var in variables]
        if any(not e for e in events):
            return True
        columns, rows = {}, 1  # no variable outside aggregates: one row
        if variables:
            combos = np.array(list(itertools.product(*events)), dtype=np.int64)
            self._guard(len(combos))
            rows = len(combos)
            columns = {f"{var}.{col}": self.table.column(col).take(combos[:, variables.index(var)])
                       for var, col in cross.columns}
        for k, agg in enumerate(cross.aggregates):
            [value] = self._aggregates(agg, [events_of.get(agg.var, [])])
            columns[f"{AGGREGATE_COLUMN}{k}"] = pa.array([value] * rows, agg.type)
        table = pa.table(columns) if columns else pa.table({"row": [0]})  # a constant: one row
        return bool(evaluate_predicate(cross.fn, table).all())


# ------------------------------------ strategies (docs/language.md, "Selection strategies")
def _next_greater(d1: frozenset, d2: frozenset, pick) -> bool:
    """d1 < d2 in the order whose deciding position is pick(d1 ^ d2) (min: NEXT, max: LAST)."""
    diff = d1 ^ d2
    return bool(diff) and pick(diff) in d2


def select_strategy(strategy: str, results: list[Result]) -> list[Result]:
    """Keep the results of one end position that the strategy selects."""
    if strategy == "ALL" or not results:
        return results
    if strategy == "ANY":
        return [min(results, key=lambda r: (sorted(r.data()), r.start, sorted(r.labels)))]
    if strategy in ("NEXT", "LAST"):
        pick = min if strategy == "NEXT" else max
        best = results[0].data()
        for r in results[1:]:
            if _next_greater(best, r.data(), pick):
                best = r.data()
        return [r for r in results if r.data() == best]
    if strategy == "MAX":
        # a data set is kept unless a strict superset is among them: checked against the
        # maximal sets found so far, largest first (each set a bit mask), which is what makes
        # thousands of results with one end position cheap enough
        datas = {r.data() for r in results}
        maximal: list[int] = []
        kept = set()
        for d in sorted(datas, key=len, reverse=True):
            mask = sum(1 << p for p in d)
            if not any(mask & m == mask for m in maximal):
                maximal.append(mask)
                kept.add(d)
        return [r for r in results if r.data() in kept]
    if strategy == "STRICT":
        return [r for r in results if max(r.data()) - min(r.data()) + 1 == len(r.data())]
    raise ValueError(f"unknown strategy {strategy}")  # pragma: no cover - the grammar forbids it


def choose(plan: TaskPlan, k: int, by_end: dict[int, list[Valuation]]) -> list[Result]:
    """CONSUME BY, the projection and the strategy, end by end (docs/language.md, "Selection strategies"), over the
    valuations of substream k grouped by end position. The engines choose with their own code
    (exec/choice.py), on purpose."""
    selected = set(plan.selected)
    consumed = -1
    results: list[Result] = []
    for end in sorted(by_end):
        found = set()
        for v in by_end[end]:
            if plan.consume != "NONE" and v.start <= consumed:
                continue
            labels = frozenset(l for l in v.labels if l[0] in selected)
            if labels:
                found.add(Result(k, v.start, v.end, labels))
        chosen = select_strategy(plan.strategy, sorted(found))
        if len(chosen) > plan.max_matches_per_event:
            raise too_many_matches(f"{len(chosen):,}", plan.max_matches_per_event)
        if chosen and plan.consume != "NONE":
            consumed = end
        results.extend(chosen)
    return results


def evaluate(plan: QueryPlan, stream: Stream) -> list[Result]:
    """Every result of the query, in the order docs/language.md ("Selection strategies")
    gives: pattern, WITHIN, CONSUME BY, projection, strategy, in increasing end position within
    each substream."""
    results: list[Result] = []
    for k, (lo, hi) in enumerate(stream.bounds):
        sub = Substream(plan, stream, lo, hi)
        by_end = defaultdict(list)
        for v in sub.eval(plan.select.pattern):
            if sub.within(v.start, v.end):
                by_end[v.end].append(v)
        results.extend(choose(plan, k, by_end))
    return results
