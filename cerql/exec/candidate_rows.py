"""The rows the relaxed automaton's candidates lie in, and the FILTER conditions checked on them.

Input: a :class:`cerql.plan.TaskPlan`, the rows of one substream from some position on (an Arrow
table), each unary FILTER predicate's value per row, and per UNLESS inside the pattern the latest
start of its right side's results per row (driver.Run.reach). Output: whether a FILTER's
condition holds on a valuation (a candidate's events of that FILTER, exec/post_filter.py
``_owns``), with predicates across variables evaluated by the Spark-SQL expression evaluator
(cerql.expr) and aggregates by cerql.exec.aggregate, as docs/semantics.md ("Predicates
across variables") defines them: x.col is each event of x, the predicate holds for every
combination of the events of the variables it reads outside aggregates (vacuously when one has
none here), an aggregate is one value over all of its variable's events, NULL is false.

``cerql.run`` builds one per substream over the stream (:meth:`CandidateRows.of_substream`);
the Spark task one per substream and batch over the rows it kept back to the window edge.

Why not the reference evaluator's ``Substream``: the reference (exec/reference.py) is the oracle
the engines are tested against and keeps its own check of the same conditions; the engine's is
written here, apart, on purpose, so that the differential tests compare two implementations.
This one adds what only the engine needs: rows that start past position 0, the UNLESS reach,
and :meth:`CandidateRows.prepare_cross`, which evaluates a predicate for many candidates at once.
"""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa

from cerql import ast
from cerql.errors import CeqlError, ExecutionError
from cerql.exec import aggregate
from cerql.exec.results import Valuation
from cerql.exec.stream import Stream
from cerql.expr import evaluate_predicate
from cerql.plan import AGGREGATE_COLUMN, CrossPlan, TaskPlan

# combinations of events one batch's checks may build for predicates across variables; past it
# the query fails as it did when this check was the reference evaluator's (same class and text)
MAX_COMBINATIONS = 2_000_000


def _too_many_combinations() -> ExecutionError:
    return ExecutionError(f"The reference evaluator stopped after {MAX_COMBINATIONS:,} partial matches",
                          error_class="REFERENCE_INPUT_TOO_LARGE",
                          hint="it is brute force, for tests on tiny inputs; add a WITHIN window, "
                          "shrink the input, or use engine='local'")


class CandidateRows:
    """One substream's rows from position ``offset`` on, where candidates are checked.

    ``known`` caches a predicate's value per valuation (filled by :meth:`prepare_cross`) and
    ``count`` the combinations built: post_filter.CandidateFilter clears both after each batch,
    so memory follows the batch."""

    def __init__(self, plan: TaskPlan, table: pa.Table, predicates: dict, offset: int = 0,
                 reach: np.ndarray | None = None):
        self.plan, self.table, self.predicates = plan, table, predicates
        self.offset = offset  # the position of table's first row
        self.reach = reach    # per UNLESS inside the pattern, per row of table
        self.known: dict[tuple, bool] = {}  # (predicate text, labels) -> value
        self.count = 0

    @classmethod
    def of_substream(cls, plan: TaskPlan, stream: Stream, lo: int, hi: int,
                     reach: np.ndarray | None = None) -> "CandidateRows":
        """Substream rows ``lo:hi`` of the stream, from its position 0."""
        return cls(plan, stream.table.slice(lo, hi - lo),
                   {text: rows[lo:hi] for text, rows in stream.predicates.items()}, 0, reach)

    def holds(self, cond, v: Valuation) -> bool:
        """Whether a FILTER condition holds on valuation ``v``: a unary predicate on every event
        of its variable, a predicate across variables as the module says."""
        if isinstance(cond, ast.FilterAnd):
            return self.holds(cond.left, v) and self.holds(cond.right, v)
        if isinstance(cond, ast.FilterOr):
            return self.holds(cond.left, v) or self.holds(cond.right, v)
        if isinstance(cond, ast.CrossPredicate):
            value = self.known.get((cond.expr.text, v.labels))
            if value is None:
                value = self.cross_holds(self.plan.cross_predicates[cond.expr.text], v)
            return value
        rows = self.predicates[cond.predicate.text]
        return all(rows[p - self.offset] for var, p in v.labels if var == cond.var)

    def prepare_cross(self, text: str, valuations: list[Valuation]) -> None:
        """Evaluate one predicate across variables for many valuations at once, where that is
        one row each: one event per variable it reads outside aggregates (the common case of
        single-event variables), or none. An aggregate is one value per valuation, computed as
        ``cross_holds`` computes it. ``holds`` then looks the values up instead of building a
        table per valuation; the other valuations are left to ``cross_holds``, and so is every
        valuation when a value fails to compute (an overflow, a malformed CAST): the
        valuation-at-a-time check raises the error where it belongs, after AND and OR have
        had their say."""
        cross = self.plan.cross_predicates[text]
        variables = cross.variables
        single, rows = [], []
        for v in valuations:
            event: dict[str, int | None] = {}
            for name, p in v.labels:
                event[name] = None if name in event else p  # None: several events
            if all(event.get(var) is not None for var in variables):
                single.append(v)
                rows.append([event[var] for var in variables])
        if not single:
            return
        columns = {}
        if variables:
            at = np.array(rows, dtype=np.int64) - self.offset
            columns = {f"{var}.{col}": self.table.column(col).take(at[:, variables.index(var)])
                       for var, col in cross.columns}
        try:
            for k, agg in enumerate(cross.aggregates):
                events = [sorted(p for name, p in v.labels if name == agg.var) for v in single]
                columns[f"{AGGREGATE_COLUMN}{k}"] = pa.array(self._aggregate(agg, events), agg.type)
            table = pa.table(columns) if columns else pa.table({"row": [0] * len(single)})
            values = evaluate_predicate(cross.fn, table).tolist()
        except CeqlError:
            return
        for v, value in zip(single, values):
            self.known[(text, v.labels)] = value

    def _aggregate(self, agg, events: list[list[int]]) -> list:
        """One aggregate's value per list of positions (a valuation's events of its variable,
        in stream order), with the column's values taken once for all of them."""
        if agg.column is None:
            return [aggregate.value(agg.kind, p, None) for p in events]
        column = self.table.column(agg.column)
        flat = np.fromiter(itertools.chain.from_iterable(events), np.int64) - self.offset
        values = column.take(pa.array(flat, pa.int64())).to_pylist()
        out, at = [], 0
        for p in events:
            out.append(aggregate.value(agg.kind, p, values[at:at + len(p)], column.type))
            at += len(p)
        return out

    def cross_holds(self, cross: CrossPlan, v: Valuation) -> bool:
        """A predicate across variables on one valuation: one row per combination of the events
        of the variables it reads outside aggregates, an aggregate's value on every row."""
        events_of: dict[str, list[int]] = {}
        for name, p in sorted(v.labels, key=lambda label: label[1]):
            events_of.setdefault(name, []).append(p)
        variables = cross.variables
        if any(not events_of.get(var) for var in variables):
            return True
        columns, n = {}, 1  # no variable outside aggregates: one row
        if variables:
            combos = np.array(list(itertools.product(*(events_of[var] for var in variables))),
                              dtype=np.int64) - self.offset
            self.count += len(combos)
            if self.count > MAX_COMBINATIONS:
                raise _too_many_combinations()
            n = len(combos)
            columns = {f"{var}.{col}": self.table.column(col).take(combos[:, variables.index(var)])
                       for var, col in cross.columns}
        for k, agg in enumerate(cross.aggregates):
            [value] = self._aggregate(agg, [events_of.get(agg.var, [])])
            columns[f"{AGGREGATE_COLUMN}{k}"] = pa.array([value] * n, agg.type)
        table = pa.table(columns) if columns else pa.table({"row": [0]})  # a constant: one row
        return bool(evaluate_predicate(cross.fn, table).all())
