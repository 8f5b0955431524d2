"""What every engine's results are, and the guards that stop a query whose results outgrow it.

Every engine gives its results as the same values, so tests compare them and ``cerql.run``
renders them alike: a :class:`Result` (substream, interval, selected (variable, position)
pairs), built from :class:`Valuation` values by the post-filter (the reference evaluator has
its own valuations, and gives Result values too: tests compare them with the engines'). The
kernel's results travel as arrays until a caller wants the values: a :class:`MatchChunk` per
batch. The guards (TOO_MANY_MATCHES_PER_EVENT, TOO_MANY_CANDIDATES_PER_EVENT,
TOO_MANY_RUNS_PER_EVENT) are shared so that every engine fails a query alike. Why a module of
their own: they lived in the reference evaluator, so every engine imported the oracle to name
its results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from cerql.errors import MAX_MATCHES_CONF, ExecutionError

Labels = frozenset  # of (variable, position) pairs


@dataclass(frozen=True, order=True)
class Valuation:
    """Positions are 0-based within the substream; ``labels`` holds (variable, position)."""

    start: int
    end: int
    labels: Labels

    def positions(self) -> frozenset[int]:
        return frozenset(p for _, p in self.labels)


@dataclass(frozen=True, order=True)
class Result:
    """One output row before rendering: substream k, interval, selected (variable, position)."""

    substream: int
    start: int
    end: int
    labels: Labels

    def data(self) -> frozenset[int]:
        """D, the union of the selected positions (what strategies compare)."""
        return frozenset(p for _, p in self.labels)


class MatchChunk(NamedTuple):
    """Results of the kernel as int64 arrays (driver.Run.feed gives a list of them per batch).

    Result r ends at batch row ``end_row[r]`` (position ``end[r]`` in its substream), starts at
    position ``start[r]``, and its selected events are ``label_pos[offset[r]:offset[r] +
    length[r]]`` (positions, last event first) with their label bits ``label_mask``.
    """

    end_row: np.ndarray
    end: np.ndarray
    start: np.ndarray
    offset: np.ndarray
    length: np.ndarray
    label_pos: np.ndarray
    label_mask: np.ndarray


def too_many_matches(count: str, limit: int) -> ExecutionError:
    """The maxMatchesPerEvent failure (docs/semantics.md, "Limits"), shared by every engine. The message
    starts with the error class in brackets, as Spark's do, because on Spark it reaches the
    driver only as the text of a failed task."""
    return ExecutionError(
        f"One event completes {count} matches, more than "
        f"maxMatchesPerEvent ({limit:,})",
        error_class="TOO_MANY_MATCHES_PER_EVENT",
        hint="narrow the pattern with a selection strategy (SELECT NEXT/LAST/MAX/ANY) or a shorter "
        "WITHIN window, or raise the limit: the Spark conf cerql.maxMatchesPerEvent, or "
        "max_matches_per_event= of cerql.run",
    )


def too_many_candidates(count: int, limit: int) -> ExecutionError:
    """Where MAX still chooses among every result ALL would give at an end event (a FILTER
    aggregate or comparison across variables), the automaton engine fails when one event has
    more than ``limit`` of them (kernel/state.py candidate_limit). Otherwise the automaton drops
    the results a superset beats (determinizer.Determinizer's dominance), and NEXT and LAST search
    for their data set (kernel/selection.py)."""
    return ExecutionError(
        f"One event has {count:,} or more candidate matches to choose "
        f"from for NEXT/MAX, more than {limit:,} (100 x maxMatchesPerEvent, at least 1,000,000)",
        error_class="TOO_MANY_CANDIDATES_PER_EVENT",
        hint="MAX chooses among every candidate when a FILTER holds an aggregate or compares "
        "variables (a superset may fail it where a subset holds); add or shorten WITHIN: without a "
        "window every earlier event is a candidate, and their combinations grow exponentially; "
        "SELECT NEXT or LAST finds its match without choosing among them; raising "
        "cerql.maxMatchesPerEvent raises the limit",
    )


def too_many_candidate_events(count: int, limit: int) -> ExecutionError:
    """Where candidates are enumerated and then checked (a FILTER the automaton takes as true,
    an UNLESS inside the pattern, exec/post_filter.py) or compared (MAX with registers), their
    size is bounded at one end event, not only their number: more than ``limit`` events in
    them (kernel/state.py candidate_events) fails before they fill memory."""
    return ExecutionError(
        f"One event's candidate matches hold {count:,} or more events, more "
        f"than {limit:,} (20 x maxMatchesPerEvent, at least 200,000), before a FILTER across variables or "
        f"aggregate, an UNLESS inside the pattern or MAX chooses among them",
        error_class="TOO_MANY_CANDIDATES_PER_EVENT",
        hint="a FILTER that compares variables or aggregates them (other than against a constant), an "
        "UNLESS inside the pattern, and MAX with such a FILTER, enumerate every match of the pattern "
        "without them and check each: add or shorten WITHIN, or bound the iteration (B+ has a candidate "
        "for every subset of its events); raising the Spark conf cerql.maxMatchesPerEvent (or "
        "max_matches_per_event= of cerql.run) raises the limit",
        params={"count": count, "limit": limit, "conf": MAX_MATCHES_CONF},
    )


def too_many_steps(count: int, limit: int, strategy: str) -> ExecutionError:
    """NEXT and LAST search their match on the partial matches at each end event
    (exec/kernel/selection.py) in steps that grow with the window; past ``limit`` steps at one
    event (kernel/state.py search_steps) the query fails instead of running for minutes."""
    return ExecutionError(
        f"{strategy}'s search for its match at one event took {count:,} or more "
        f"steps over the partial matches, more than {limit:,} (100 x maxMatchesPerEvent, at least 1,000,000)",
        error_class="TOO_MANY_STEPS_PER_EVENT",
        hint="the search grows with the partial matches in the window: add or shorten WITHIN (without it the "
        "window is the whole substream), or partition the stream (PARTITION BY); a FILTER sum or avg keeps "
        "partial matches apart for every distinct value; raising the Spark conf cerql.maxMatchesPerEvent (or "
        "max_matches_per_event= of cerql.run) raises the limit",
        params={"count": count, "limit": limit, "conf": MAX_MATCHES_CONF},
    )


def too_many_runs(count: int, limit: int) -> ExecutionError:
    """Runs that carry different register values (exec/kernel/registers.py) cannot be merged;
    the automaton engine fails when one event leaves more than ``limit`` of them."""
    return ExecutionError(
        f"After one event {count:,} partial matches carry different values of a "
        f"FILTER aggregate or comparison, more than maxMatchesPerEvent ({limit:,})",
        error_class="TOO_MANY_RUNS_PER_EVENT",
        hint="a sum or avg over a + variable takes a new value for every subset of its events: add or "
        "shorten WITHIN, bound the iteration, or raise the limit: the Spark conf cerql.maxMatchesPerEvent, "
        "or max_matches_per_event= of cerql.run",
        params={"count": count, "limit": limit, "conf": MAX_MATCHES_CONF},
    )
