"""The engine's choice among checked candidates: CONSUME BY, the projection and the strategy.

Input: a :class:`cerql.plan.TaskPlan` and one substream's candidate valuations grouped by end
position, each already through the FILTERs and UNLESS the automaton took as true
(exec/post_filter.py). Output: the results, as :class:`cerql.exec.results.Result` values, end by
end in the order docs/language.md ("Selection strategies") gives: CONSUME BY drops the
candidates that start at or before the last consumed position, the projection keeps the
selected variables' labels, and the strategy picks among what is left.

How it relates to the kernel: exec/kernel/strategies.py and exec/kernel/selection.py apply the
strategies inside the numba kernel, as the automaton runs, where the automaton can decide them
alone; post_filter.chosen applies them on the kernel's arrays where no choice depends on an
earlier one. This module is for the rest: the relaxed automaton's candidates, once checked,
as Python values, when CONSUME BY or MAX is asked for or a FILTER decides which candidates
remain (post_filter.CandidateFilter, on cerql.run and in the Spark task alike).

Why not the reference evaluator's own functions: the reference (exec/reference.py) is the
oracle the engines are tested against, so it keeps an implementation of its own. The two
compute the same thing on purpose, written apart, so that the differential tests compare two
readings of the semantics instead of one function with itself.
"""

from __future__ import annotations

import math

from cerql.exec.results import Result, Valuation, too_many_matches
from cerql.plan import TaskPlan


def _next_key(data: frozenset) -> list:
    """The order NEXT maximizes, as a key to minimize: of two data sets the greater holds the
    least position where they differ, so ascending positions compare lexicographically with the
    smaller position winning, and a set that ends first loses (padded with +inf)."""
    return sorted(data) + [math.inf]


def _last_key(data: frozenset) -> list:
    """The order LAST maximizes, as a key to maximize: the greater holds the largest position
    where they differ, so descending positions compare lexicographically with the larger one
    winning, and a set that ends first loses (padded with -inf)."""
    return sorted(data, reverse=True) + [-math.inf]


def _maximal(datas: set[frozenset]) -> set[frozenset]:
    """The data sets no other one strictly contains (MAX). Each set becomes a bit mask; a set is
    contained in a kept one when its mask is a subset of that one's, and the largest are kept
    first, so a set is compared with the maximal ones only."""
    kept: dict[frozenset, int] = {}
    for data in sorted(datas, key=len, reverse=True):
        mask = 0
        for p in data:
            mask |= 1 << p
        if all(mask & other != mask for other in kept.values()):
            kept[data] = mask
    return set(kept)


def by_strategy(strategy: str, results: list[Result]) -> list[Result]:
    """The results of one end position the strategy selects, in the order they came."""
    if strategy == "ALL" or not results:
        return results
    if strategy == "ANY":  # the least data set, then start, then labels: the same on every engine
        return [min(results, key=lambda r: (sorted(r.data()), r.start, sorted(r.labels)))]
    if strategy == "NEXT":
        best = min((r.data() for r in results), key=_next_key)
    elif strategy == "LAST":
        best = max((r.data() for r in results), key=_last_key)
    elif strategy == "MAX":
        keep = _maximal({r.data() for r in results})
        return [r for r in results if r.data() in keep]
    elif strategy == "STRICT":  # no gap: as many positions as the span holds
        return [r for r in results if len(r.data()) == max(r.data()) - min(r.data()) + 1]
    else:  # pragma: no cover - the grammar forbids it
        raise ValueError(f"unknown strategy {strategy}")
    return [r for r in results if r.data() == best]


def choose(plan: TaskPlan, k: int, by_end: dict[int, list[Valuation]], consumed: int) -> tuple[list[Result], int]:
    """The results among substream k's checked candidates ``by_end`` (end position ->
    valuations), ends in increasing order, after the ends already chosen: ``consumed`` is the
    last position CONSUME BY consumed before them (-1 for none), and the last one after them is
    returned with the results. An end with more results than ``max_matches_per_event`` fails
    as on every engine."""
    selected = set(plan.selected)
    consuming = plan.consume != "NONE"
    out: list[Result] = []
    for end in sorted(by_end):
        projected = set()
        for v in by_end[end]:
            if consuming and v.start <= consumed:
                continue
            labels = frozenset(label for label in v.labels if label[0] in selected)
            if labels:  # a candidate that selects nothing is no result (docs/semantics.md, "Results")
                projected.add(Result(k, v.start, v.end, labels))
        picked = by_strategy(plan.strategy, sorted(projected))
        if len(picked) > plan.max_matches_per_event:
            raise too_many_matches(f"{len(picked):,}", plan.max_matches_per_event)
        if picked and consuming:
            consumed = end
        out.extend(picked)
    return out, consumed
