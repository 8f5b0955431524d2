"""The automaton engines for queries with FILTER predicates across variables (DESIGN.md 4.7).

Input: a :class:`cerql.plan.QueryPlan` whose automaton was compiled with those predicates taken
as true and with every variable their FILTERs read marked (planner/resolve.py), and the
:class:`cerql.exec.stream.Stream`. Output: the results, as :class:`cerql.exec.reference.Result`
values, the same as the reference evaluator's. ``cerql.run`` calls it on the whole stream, the
Spark task (exec/arrow_task.py) on each substream once it has all of its rows.

Why this shape: the automaton checks one event at a time, so a predicate between two events
cannot be one of its conditions. Seed 002's registers would carry the earlier values along the
runs; until then the relaxed automaton enumerates every valuation that satisfies the rest of the
pattern (strategy ALL, no CONSUME BY, WITHIN applied), each result is kept when every such FILTER
holds on its events (the reference evaluator's own check, so the two cannot drift apart), and
CONSUME BY, the projection and the strategy are then applied end by end as DESIGN.md 4.3 orders
them. The filter is part of the pattern, so strategies choose among results that pass.

The cost is the relaxed pattern's: every ALL result it has is enumerated (up to
``kernel.candidate_limit`` at one event) and the predicates are evaluated once per result and
combination of the variables' events. A selective predicate over a broad pattern pays for the
broad pattern; ``cerql.explain`` says so.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

from cerql import ast
from cerql.exec import driver, kernel, reference
from cerql.exec.reference import Result, Valuation
from cerql.exec.stream import Stream
from cerql.plan import QueryPlan


def _own(bound: frozenset[str], marker: str, v: Valuation) -> Valuation | None:
    """A FILTER's own valuation within a result (see ``_passes``), or None if it took no part."""
    mine = {p for var, p in v.labels if var == marker}
    if not mine:
        return None
    return Valuation(v.start, v.end, frozenset((var, p) for var, p in v.labels if p in mine and var in bound))


def _passes(sub: reference.Substream, condition, own: Valuation | None) -> bool:
    """Whether a FILTER holds on a result, given its own valuation there (``_own``): a result
    the FILTER's pattern took no part in (another OR branch) is not constrained by it."""
    return own is None or sub.holds(condition, own)


def evaluate(plan: QueryPlan, stream: Stream, batch_size: int = driver.DEFAULT_BATCH) -> list[Result]:
    """Every result of the query: the relaxed automaton's results that pass the FILTERs."""
    relaxed = dataclasses.replace(plan, strategy="ALL", consume="NONE",
                                  max_matches_per_event=kernel.candidate_limit(plan.max_matches_per_event))
    by_substream: dict[int, dict[int, list[Valuation]]] = defaultdict(lambda: defaultdict(list))
    for r in driver.match_arrays(relaxed, stream, batch_size).results():
        by_substream[r.substream][r.end].append(Valuation(r.start, r.end, r.labels))
    checks = [(f.condition, bound, marker) for f, marker, bound in plan.post_filters]
    results: list[Result] = []
    for k in sorted(by_substream):
        lo, hi = stream.bounds[k]
        sub = reference.Substream(plan, stream, lo, hi)
        results_k = [v for vs in by_substream[k].values() for v in vs]
        owns = []
        for condition, bound, marker in checks:  # each FILTER's own valuations, then its
            own = {id(v): _own(bound, marker, v) for v in results_k}  # predicates all at once
            for leaf in ast.walk(condition):
                if isinstance(leaf, ast.CrossPredicate):
                    sub.prepare_cross(leaf.expr.text, [o for o in own.values() if o is not None])
            owns.append((condition, own))
        kept = {end: [v for v in valuations if all(_passes(sub, cond, own[id(v)]) for cond, own in owns)]
                for end, valuations in by_substream[k].items()}
        results.extend(reference.choose(plan, k, kept))
    return results
