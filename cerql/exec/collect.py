"""What ``cerql.run`` keeps of an engine's results: LIMIT's first rows, and a guard on the rest.

Input: the results of a local engine, part by part in stream order (substream after substream,
each in increasing end position): the kernel's arrays (``driver.Matches``) or, from the
reference evaluator and the post-filter, :class:`cerql.exec.results.Result` values. Output:
the results as rows of the stream (:class:`cerql.exec.output.ResultRows`), which
``cerql.exec.output.build`` renders. The kernel's arrays stay arrays: only LIMIT's collector
and the engines that make Result values work per result in Python.

Why: ``cerql.run`` returns every result as one pandas DataFrame in memory. A query with many
results (``A ; B`` without a window has a quadratic number) would otherwise grow until the
process is killed (about 0.5 KB per result for three one-event variables of five columns). So results past ``max_output_rows``
(``cerql.maxOutputRows``, default 1 000 000) fail the query
with TOO_MANY_OUTPUT_ROWS, a CeqlError that says what to do. A result's size is the events it
holds, which a Kleene variable makes as many as the window (or the substream) allows: 40 000
results of 2 000 events each are 80 million struct cells, past 6 GB before Arrow or NumPy gave
up (issue 38). So the events the results hold (one per result and selected event, as the
engines' label entries count them) are counted too, part by part as they come, and past
``max_output_events`` (``cerql.maxOutputEvents``, default 10 000 000, about 1 GB rendered at
four columns: ~90 bytes an event) the query fails with TOO_MANY_OUTPUT_EVENTS before anything
is rendered. With LIMIT n only results that can
still be among the first n (docs/language.md, "LIMIT": PARTITION BY columns, match_end, match_start,
match_id) are held, so a LIMIT bounds memory whatever the query would otherwise return; the
engine's arrays become Python objects a few thousand events at a time, so that results of
many events are dropped before they are all made objects.
"""

from __future__ import annotations

import bisect

import numpy as np

from cerql.errors import MAX_OUTPUT_EVENTS_CONF, MAX_OUTPUT_ROWS_CONF, ExecutionError
from cerql.automaton import label_bits
from cerql.exec.output import ResultRows, sort_key
from cerql.exec.results import Result
from cerql.exec.stream import Stream
from cerql.plan import QueryPlan

MAX_OUTPUT_ROWS = 1_000_000
MAX_OUTPUT_EVENTS = 10_000_000
OBJECT_EVENTS = 1 << 16  # with LIMIT, the engine's label entries made Python objects at a time
BIG = np.iinfo(np.int64).max


def too_many_output_rows(limit: int) -> ExecutionError:
    return ExecutionError(
        f"The query has more than {limit:,} results, the most "
        f"cerql.run returns (max_output_rows, {MAX_OUTPUT_ROWS_CONF})",
        error_class="TOO_MANY_OUTPUT_ROWS",
        hint="add LIMIT n, a selection strategy (SELECT NEXT/LAST/MAX/ANY) or a shorter WITHIN window; "
        "run it on Spark (cerql.cer_sql), which writes any number of rows to a table or file; or "
        "raise the limit with cerql.run(..., max_output_rows=N)",
        params={"limit": limit, "conf": MAX_OUTPUT_ROWS_CONF},
    )


def too_many_output_events(limit: int) -> ExecutionError:
    return ExecutionError(
        f"The query's results hold more than {limit:,} events, the most "
        f"cerql.run returns (max_output_events, {MAX_OUTPUT_EVENTS_CONF}): each result counts "
        "the events its variables hold",
        error_class="TOO_MANY_OUTPUT_EVENTS",
        hint="add LIMIT n, a shorter WITHIN window (a Kleene variable such as B+ holds every event "
        "it matches in the window) or a selection strategy with fewer results (SELECT NEXT/LAST/ANY); "
        "run it on Spark (cerql.cer_sql), which writes results to a table or file batch by batch; or "
        f"raise the limit with cerql.run(..., max_output_events=N) (CLI --conf {MAX_OUTPUT_EVENTS_CONF}=N)",
        params={"limit": limit, "conf": MAX_OUTPUT_EVENTS_CONF},
    )


def events_of(part) -> int:
    """The events a part of the results holds: one per result and event it selects (a label
    entry of the kernel's arrays; the distinct positions of a Result's labels)."""
    if isinstance(part, list):
        return sum(len({p for _, p in r.labels}) for r in part)
    return len(part.label_pos)


def result_rows(plan: QueryPlan, stream: Stream, parts, max_rows: int = MAX_OUTPUT_ROWS,
                max_events: int = MAX_OUTPUT_EVENTS) -> ResultRows:
    """The results of an engine's ``parts`` that ``cerql.run`` returns, as rows of the stream."""
    if plan.limit is None:  # every result: counted, then turned into rows without Python objects
        count, events, rows = 0, 0, []
        for part in parts:
            count += len(part)
            if count > max_rows:
                raise too_many_output_rows(max_rows)
            events += events_of(part)
            if events > max_events:
                raise too_many_output_events(max_events)
            rows.append(from_results(part, stream, plan.automaton.labels) if isinstance(part, list)
                        else from_matches(part))
        return ResultRows.concat(rows)
    collector = Collector(plan, stream, max_rows, max_events)
    for part in parts:
        collector.add(part)
    return from_results(collector.results(), stream, plan.automaton.labels)


def from_matches(matches) -> ResultRows:
    """The rows of a ``driver.Matches``: positions of one substream are consecutive stream
    rows, so a position's row is the end row less the positions between them."""
    end_row = np.asarray(matches.end_row, np.int64)
    start_row = end_row - (matches.end - matches.start)
    owner = np.repeat(np.arange(len(end_row)), matches.length)
    entry_row = end_row[owner] - (matches.end[owner] - matches.label_pos)
    return ResultRows(end_row, start_row, owner, entry_row, np.asarray(matches.label_mask, np.int64))


def from_results(results: list[Result], stream: Stream, labels) -> ResultRows:
    """The rows of Result values: a loop in Python, over results the engine that made them
    already holds as objects."""
    if not results:
        return ResultRows.none()
    bit_of = label_bits(labels)
    lo = np.array([b[0] for b in stream.bounds], np.int64)
    base = lo[np.array([r.substream for r in results], np.int64)]
    owner, at, mask = [], [], []
    for i, r in enumerate(results):
        masks: dict[int, int] = {}
        for var, p in r.labels:
            masks[p] = masks.get(p, 0) | bit_of[var]
        owner += [i] * len(masks)
        at += masks.keys()
        mask += masks.values()
    owner = np.array(owner, np.int64)
    return ResultRows(base + np.array([r.end for r in results], np.int64),
                      base + np.array([r.start for r in results], np.int64), owner,
                      base[owner] + np.array(at, np.int64), np.array(mask, np.int64))


class Collector:
    """Results of one query, bounded (see module docstring). With LIMIT n, a substream holding
    more than 2n results keeps its n first by (match_end, match_start) and every tie of the
    n-th, and later results beyond that point are dropped as they come; substreams whose
    partition key comes after n held results are dropped whole. So about 2n results are held
    (more only when many tie on match_end and match_start), and the guards count those and
    the events they hold."""

    def __init__(self, plan: QueryPlan, stream: Stream, max_rows: int = MAX_OUTPUT_ROWS,
                 max_events: int = MAX_OUTPUT_EVENTS):
        self.plan, self.stream, self.max_rows, self.max_events = plan, stream, max_rows, max_events
        self.limit = plan.limit
        self.by_substream: dict[int, list[Result]] = {}
        self.count = 0
        self.events = 0  # the events the held results hold (events_of)
        self.cutoff: dict[int, tuple] = {}  # substream -> greatest (end, start) key still wanted
        self.cutoff_end: dict[int, int] = {}  # substream -> last position whose value is not past it
        self.closed: set[int] = set()       # substreams none of whose results can be in LIMIT
        # the first ordering column's values as Python objects: LIMIT compares results by them
        self._order = stream.table.column(plan.order_columns[0]).to_pylist() if plan.limit is not None else None

    def add(self, results) -> None:
        """Take a part of the results: a list, or an engine's arrays not yet made Python
        objects (``driver.Matches``), which without LIMIT are counted before they are made."""
        if self.limit == 0:
            return
        if not isinstance(results, list):
            if self.limit is None and self.count + len(results) > self.max_rows:
                raise too_many_output_rows(self.max_rows)
            if self.limit is None and self.events + len(results.label_pos) > self.max_events:
                raise too_many_output_events(self.max_events)
            for part in results.event_slices(OBJECT_EVENTS):  # objects of a few events at a time
                if self.limit is not None and (self.cutoff or self.closed):
                    part = part.subset(self._before_cutoff(part))
                self._add(part.results())
        else:
            self._add(results)

    def _add(self, results: list[Result]) -> None:
        for r in results:
            k = r.substream
            if k in self.closed or (k in self.cutoff and self._key(r) > self.cutoff[k]):
                continue
            kept = self.by_substream.setdefault(k, [])
            kept.append(r)
            self.count += 1
            self.events += events_of([r])
            if self.limit is not None and len(kept) > 2 * self.limit:
                self._trim(k)
        if self.limit is not None and self.count > 2 * self.limit:
            self._prune()
        if self.count > self.max_rows:
            raise too_many_output_rows(self.max_rows)
        if self.events > self.max_events:
            raise too_many_output_events(self.max_events)

    def results(self) -> list[Result]:
        return [r for k in sorted(self.by_substream) for r in self.by_substream[k]]

    # -- LIMIT
    def _key(self, r: Result) -> tuple:
        lo = self.stream.bounds[r.substream][0]
        return sort_key(self._order[lo + r.end]), sort_key(self._order[lo + r.start])

    def _before_cutoff(self, matches) -> np.ndarray:
        """Which of an engine's results (arrays) can still be among LIMIT's first n, told
        apart on positions before they become objects: the ordering values of a substream do
        not decrease with position, so a result ending after ``cutoff_end`` of its substream
        ends at a greater value than the n-th kept result does."""
        keys = matches.substream.tolist()
        last = np.array([-1 if k in self.closed else self.cutoff_end.get(k, BIG) for k in keys], np.int64)
        return matches.end <= last

    def _trim(self, k: int) -> None:
        """Keep substream k's first n results by (end, start) and the ties of the n-th."""
        kept = sorted(self.by_substream[k], key=self._key)
        self.cutoff[k] = last = self._key(kept[self.limit - 1])
        lo, hi = self.stream.bounds[k]
        self.cutoff_end[k] = bisect.bisect_right(range(lo, hi), last[0],
                                                 key=lambda row: sort_key(self._order[row])) - 1
        trimmed = [r for r in kept if self._key(r) <= last]
        self.count -= len(kept) - len(trimmed)
        self.events -= events_of(kept) - events_of(trimmed)
        self.by_substream[k] = trimmed

    def _prune(self) -> None:
        """Drop the substreams whose partition key comes after keys holding n results."""
        width = len(self.plan.partition_columns)

        def key(k):
            return tuple(sort_key(v) for v in self.stream.keys[k][:width])

        before, last_key = 0, None
        for k in sorted(self.by_substream, key=key):
            if before >= self.limit and key(k) != last_key:
                dropped = self.by_substream.pop(k)
                self.count -= len(dropped)
                self.events -= events_of(dropped)
                self.closed.add(k)
                continue
            last_key = key(k)
            before += len(self.by_substream[k])

