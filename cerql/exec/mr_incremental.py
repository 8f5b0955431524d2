"""One PARTITION BY group of a MATCH_RECOGNIZE query matched as its rows arrive, holding only the
rows an undecided match may still need.

Why: on Spark a task receives its rows in Arrow batches (cerql/spark/mr_lower.py), sorted by
PARTITION BY, ORDER BY and input order, with the key expressions and row-local DEFINE bits
computed in the JVM. Holding a whole group before matching would make a task's memory grow
with the group (a year of one sensor's readings), while a match decides on a few rows. So a
:class:`GroupMatcher` keeps the rows from the first start row whose match is not known yet
(the matcher's ``head``, exec/kernel/pike.py "A partition in pieces") on, plus the few rows
before it that MEASURES or DEFINEs reach with PREV (``reach``), and gives the output of every
decided match as it goes: memory follows the longest live (partial) match, not the group.

Each run of the matcher starts again at ``head`` over the rows kept, which gives the matches one
run over the whole group gives (the kernel's docstring says why). A run is started only when the
rows that arrived since the last one are at least as many as the rows that run left undecided
(and at least ``min_run``, 65 536: a group that size or smaller is matched once, when it ends,
as a whole), so every row is matched at most about twice on average however long a match stays
live, a task holds at most about twice the longest live match or ``min_run`` rows, and a
live match of ``max_rows`` rows or more fails with MATCH_RECOGNIZE_MATCH_TOO_LONG naming the
conf (``cerql.matchRecognize.maxMatchRows``), instead of filling the executor's memory.

Rows a measure reads after a match (NEXT) must have arrived before the match is reported: a run
that is not the group's last matches only up to ``reach`` rows before the last row held.
"""

from __future__ import annotations

from typing import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from cerql import mr_ast
from cerql import mr_functions as mx
from cerql.errors import ExecutionError
from cerql.exec.mr_define import define_bits, given_bits
from cerql.exec.mr_engine import (Found, Matcher, collect_matches, describe_partition, input_columns, key_columns,
                                  match_sorted, output_rows, pattern_variables, result_table, row_spans)

MAX_MATCH_ROWS = 10_000_000
MAX_MATCH_ROWS_CONF = "cerql.matchRecognize.maxMatchRows"
MIN_RUN = 1 << 16  # rows gathered before a run of the matcher (module docstring)


def reach(clause: mr_ast.MatchRecognize) -> tuple[int, int]:
    """``(back, ahead)``: how many rows before a match's first row, and after its last, its
    DEFINEs and MEASURES can read (the sums of the PREV, and of the NEXT, offsets written in
    each expression: a bound for nested navigations). FIRST/LAST stay within the match."""
    back = ahead = 0
    for expr in [d.condition for d in clause.defines] + [m.expr for m in clause.measures]:
        behind = before = 0
        for node in mx.walk(expr.tree):
            name = mx.function_name(node)
            if name in mx.PHYSICAL:
                offset = mx.navigation_offset(node)
                if name == mx.PREV:
                    behind += int(offset)
                else:
                    before += int(offset)
        back, ahead = max(back, behind), max(ahead, before)
    return back, ahead


LIMIT_HINT = f"raise the Spark conf {MAX_MATCH_ROWS_CONF}, bound the pattern's quantifiers (A{{1,100}} for A+), " \
             "or partition more finely"


def match_too_long(limit: int, partition: str | None, hint: str = LIMIT_HINT) -> ExecutionError:
    where = f" in partition {partition}" if partition else ""
    return ExecutionError(
        f"A MATCH_RECOGNIZE match still undecided after {limit} rows{where}: the rows it may need are held "
        "in memory until it is", error_class="MATCH_RECOGNIZE_MATCH_TOO_LONG", hint=hint,
        params={"max_rows": limit})


class LocalBits:
    """The row-local DEFINE bits of the rows held, computed here (exec/mr_define.py), for a
    caller that has no JVM to compute them (the SQL cell) or leaves some DEFINEs to Python
    (spark/mr_bits.py ``local_defines``). Right on every row the matcher reads: the rows held
    start ``reach``'s PREV rows before the first start row tried (or at the group's first row),
    and a run that is not the last stops ``reach``'s NEXT rows short. ``defines``: those
    computed here (canonical variable -> condition); ``column``: the bits the caller computed
    for the other variables (each bit of ``defines``' variables set in it), or None."""

    def __init__(self, variables: tuple[str, ...], defines: dict, text: str, column: str | None = None):
        self.variables, self.defines, self.text, self.column = variables, defines, text, column

    def __call__(self, table: pa.Table, part_start: np.ndarray | None = None,
                 part_end: np.ndarray | None = None) -> np.ndarray:
        """The bits of ``table``'s rows: one group, or the groups of ``part_start``/``part_end``
        (per row, its group's first row and end)."""
        n = table.num_rows
        if part_start is None:
            part_start, part_end = np.zeros(n, np.int64), np.full(n, n, np.int64)
        bits = define_bits(table, part_start, part_end, self.variables, self.defines, self.text)
        return bits & given_bits(table, self.column) if self.column is not None else bits


def local_bits(clause: mr_ast.MatchRecognize, text: str, matcher: Matcher | None,
               only: frozenset[str] | None = None, column: str | None = None) -> LocalBits:
    """:class:`LocalBits` of the row-local DEFINEs: those the matcher does not check itself, or
    those of ``only``'s variables (canonical, row-local) when given, without a matcher; the rest
    are the caller's, in ``column``."""
    history = set(getattr(matcher, "history", ()))
    defines = {mx.canonical(d.variable): d.condition for d in clause.defines
               if mx.canonical(d.variable) not in history and (only is None or mx.canonical(d.variable) in only)}
    return LocalBits(pattern_variables(clause), defines, text, column)


def bits_column(bits: str | Callable[..., np.ndarray]) -> str | None:
    """The column of the DEFINE bits the caller computed, given ``bits`` as GroupMatcher and
    GroupPool take it (a column's name, or a :class:`LocalBits` with its ``column``)."""
    return bits if isinstance(bits, str) else getattr(bits, "column", None)


def bits_of(bits: str | Callable[..., np.ndarray], table: pa.Table, part_start: np.ndarray | None = None,
            part_end: np.ndarray | None = None) -> np.ndarray:
    """The DEFINE bits of ``table``'s rows, given ``bits`` as GroupMatcher and GroupPool take it:
    read from its column, or computed over the rows (one group, or those of ``part_start`` /
    ``part_end``)."""
    return given_bits(table, bits) if isinstance(bits, str) else bits(table, part_start, part_end)


class GroupMatcher:
    """One PARTITION BY group's result, batch by batch (module docstring). ``bits``: the column of
    the DEFINE bits, or a function computing them over the rows held (``local_bits``; the
    column its ``column`` names is not an input column either); ``keys``:
    as ``run_match_recognize`` takes them; ``max_rows``: the most rows one undecided match may
    hold (``limit_hint``: the hint of its error). ``feed`` each batch of the group's rows in
    order, then ``finish``; both yield result tables. ``peak``: the most rows held at once."""

    def __init__(self, clause: mr_ast.MatchRecognize, text: str, matcher: Matcher, *,
                 bits: str | Callable[[pa.Table], np.ndarray], keys: Sequence[str | None] | None = None,
                 max_rows: int = MAX_MATCH_ROWS, min_run: int = MIN_RUN, limit_hint: str = LIMIT_HINT):
        self.clause, self.text, self.matcher, self.bits, self.keys = clause, text, matcher, bits, keys
        self.max_rows, self.min_run, self.limit_hint = max_rows, min_run, limit_hint
        self.back, self.ahead = reach(clause)
        self.history = bool(getattr(matcher, "history", frozenset()))
        self.held: list[pa.Table] = []
        self.held_rows = 0
        self.base = 0          # the group's row number of the first row held
        self.head = 0          # the first start row (group row number) whose match is not known
        self.covered = 0       # the end of the matches reported so far
        self.numbered = 0      # matches reported so far
        self.undecided = 0     # rows the last run left from ``head`` on
        self.fresh = 0         # rows arrived since the last run
        self.peak = 0
        self.runs = 0          # runs of the matcher so far
        self.described: tuple[str | None] | None = None  # ``_partition``'s answer, once known
        self.first: pa.Table | None = None  # the group's first row (``_group_keys``)

    def feed(self, table: pa.Table) -> Iterator[pa.Table]:
        """The next rows of the group; yields the results they decide."""
        self._hold(table)
        over = self.base + self.held_rows - self.head > self.max_rows  # unless a run decides some
        if over or self.fresh >= max(self.undecided, self.min_run, 1):
            yield from self._run(final=False)
        if self.base + self.held_rows - self.head > self.max_rows:
            raise match_too_long(self.max_rows, self._partition(), self.limit_hint)

    def finish(self, table: pa.Table | None = None) -> Iterator[pa.Table]:
        """The group's last rows (if any): yields the rest of its result."""
        if table is not None:
            self._hold(table)
        if self.held_rows:
            yield from self._run(final=True)
        self.held, self.held_rows = [], 0

    def whole(self, table: pa.Table | None = None) -> pa.Table | None:
        """The group's last rows (if any), for a caller that matches several whole groups in one
        run (:class:`GroupPool`): all the group's rows when no run has started yet (what
        ``finish`` would match in one run), else None, and ``finish()`` gives the rest."""
        if table is not None:
            self._hold(table)
        if self.runs:
            return None
        held, self.held, self.held_rows = self.held, [], 0
        return pa.concat_tables(held) if len(held) > 1 else held[0] if held else None

    def _hold(self, table: pa.Table) -> None:
        if table.num_rows and self.first is None:
            self.first = table.slice(0, 1)
        if table.num_rows:
            self.held.append(table)
            self.held_rows += table.num_rows
            self.fresh += table.num_rows
            self.peak = max(self.peak, self.held_rows)

    def _partition(self) -> str | None:
        """The group's PARTITION BY values, for an error message (``sym='x'``): read once, from
        its first row (every row of the group has them)."""
        if self.described is None and self.held:
            rows, partition_keys, _ = key_columns(self.clause, self.held[0].slice(0, 1), self.text, self.keys)
            self.described = (describe_partition(rows, partition_keys, 0),)
        return self.described[0] if self.described is not None else None

    def _run(self, final: bool) -> Iterator[pa.Table]:
        table = pa.concat_tables(self.held).combine_chunks() if len(self.held) > 1 else self.held[0]
        self.held = [table]
        self.runs += 1
        n = table.num_rows
        begin = self.head - self.base
        usable = n if final else n - self.ahead
        self.fresh = 0
        if usable <= begin:
            self.undecided = n - begin
            return
        bits = bits_of(self.bits, table)[:usable]
        where = dict(first_row=0 if self.base == 0 else -1, begin=begin, final=final, numbered_from=self.numbered)
        if self.history:
            starts, ends, labels, head = self.matcher.match(bits, self._partition(), rows=table, **where)
        else:
            starts, ends, labels, head = self.matcher.match(bits, self._partition(), **where)
        head = usable if final else int(head)
        if len(starts) or self.clause.rows_per_match.mode == mr_ast.WITH_UNMATCHED:
            yield self._output(table, starts, ends, labels, (begin, head, self.covered - self.base))
        self.numbered += len(starts)
        if len(ends):
            self.covered = max(self.covered, self.base + int(np.max(ends)))
        self.head = self.base + head
        keep = max(0, head - self.back)
        if keep > 0:
            self.held = [table.slice(keep)]
            self.base += keep
            self.held_rows = n - keep
        self.undecided = n - head

    def _output(self, table: pa.Table, starts, ends, labels, unmatched: tuple[int, int, int]) -> pa.Table:
        inputs = input_columns(table.column_names, bits_column(self.bits), self.keys)
        rows, partition_keys, order_keys = key_columns(self.clause, table, self.text, self.keys)
        n = rows.num_rows
        found = Found(np.asarray(starts, np.int64), np.asarray(ends, np.int64), labels, 0, self.numbered + 1)
        matches = collect_matches([found], self.matcher)
        part = np.zeros(n, np.int64)
        out_rows = output_rows(self.clause, matches, part, np.array([0, n], np.int64), unmatched)
        result = result_table(self.clause, rows, part, np.full(n, n, np.int64), matches, out_rows, inputs,
                              partition_keys, order_keys, self.text)
        return self._group_keys(result, len(partition_keys))

    def _group_keys(self, result: pa.Table, count: int) -> pa.Table:
        """ONE ROW PER MATCH shows the PARTITION BY keys as the group's first row holds them
        (``result_table``), which the rows held may have dropped: its first ``count`` columns
        taken from that row (a group's keys are equal as Spark groups them, not always alike:
        -0.0 and 0.0)."""
        if self.clause.rows_per_match.all_rows or not count or not result.num_rows or self.first is None:
            return result
        first, partition_keys, _ = key_columns(self.clause, self.first, self.text, self.keys)
        at = pa.array(np.zeros(result.num_rows, np.int64))
        for i, key in enumerate(partition_keys[:count]):
            result = result.set_column(i, result.field(i), first.column(key.column).take(at))
        return result


class GroupPool:
    """Whole PARTITION BY groups of a task, each small enough to have been held until it ended
    (``GroupMatcher.whole``), matched together in one run once they hold ``min_run`` rows, or
    when ``flush`` is called: the matches and the result of each group are those its own
    GroupMatcher gives (groups are matched apart, MATCH_NUMBER from 1 in each), but the fixed
    cost of a run (the matcher's call, the DEFINEs' and the measures' preparation, the result
    table) is paid once for many groups instead of once per group: a task of 100 groups of
    10 000 rows spent more on those than on matching (docs/benchmarks.md, "MATCH_RECOGNIZE").
    Arguments as :class:`GroupMatcher` takes them."""

    def __init__(self, clause: mr_ast.MatchRecognize, text: str, matcher: Matcher, *,
                 bits: str | Callable[..., np.ndarray], keys: Sequence[str | None] | None = None,
                 min_run: int = MIN_RUN):
        self.clause, self.text, self.matcher, self.bits, self.keys = clause, text, matcher, bits, keys
        self.min_run = min_run
        self.groups: list[pa.Table] = []
        self.rows = 0

    def add(self, group: pa.Table) -> Iterator[pa.Table]:
        """One more whole group; yields the result of the groups held once they are enough."""
        if group.num_rows:
            self.groups.append(group)
            self.rows += group.num_rows
        if self.rows >= self.min_run:
            yield from self.flush()

    def flush(self) -> Iterator[pa.Table]:
        """The result of the groups held, if any."""
        if not self.groups:
            return
        groups, self.groups, self.rows = self.groups, [], 0
        sizes = np.array([g.num_rows for g in groups], np.int64)
        bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        table = pa.concat_tables(groups).combine_chunks() if len(groups) > 1 else groups[0]
        bits = bits_of(self.bits, table, *row_spans(bounds))
        inputs = input_columns(table.column_names, bits_column(self.bits), self.keys)
        rows, partition_keys, order_keys = key_columns(self.clause, table, self.text, self.keys)
        result = match_sorted(self.clause, rows, bounds, bits, self.matcher, inputs, partition_keys, order_keys,
                              self.text)
        if result.num_rows:
            yield result


__all__ = ["GroupPool", "GroupMatcher", "LIMIT_HINT", "LocalBits", "MAX_MATCH_ROWS", "MAX_MATCH_ROWS_CONF", "MIN_RUN", "bits_column", "bits_of",
           "local_bits",
           "match_too_long", "reach"]
