"""One task's share of a query: sorted Arrow batches in, result rows out, as Arrow.

Input: a :class:`cerql.plan.TaskPlan` (spark/lower.py ``task_plan``) and, batch after batch,
the rows of one task in evaluation order (partition key, ordering columns, source, ordinal),
each row with the stream columns,
``__cerql_source`` (optional with one source), ``__cerql_ordinal`` and its condition bits in ``__cerql_bits`` (bit k set when
the row satisfies ``plan.automaton.conditions[k]``), and, when Spark dropped the inert rows of a
query that counts positions (``cerql.exec.bits.gap_masks``), in ``__cerql_pos`` a number that
grows by one from row to row of the task's sorted input (dropped rows included), so that the
difference between two rows of a substream is their distance in it. Output: per batch, an Arrow table of the
results that end in it, in the output schema (docs/language.md, "The output schema"), without SELECT expressions
(the caller evaluates them on the result, as Spark does).

This is what ``mapInArrow`` runs on Spark (spark/lower.py), what a streaming bucket runs over its
rows (spark/streaming/processor.py) and what the SQL-cell function runs (spark/sql_cells.py); it
imports no pyspark, so it lives with the engine. The kernel reports positions within
substreams; the task maps them to rows of the current batch or of the rows it kept from earlier
batches. It keeps only the rows a later result can still reference:
those of the current substream from the window edge on (and after the last consumed position),
so memory is bounded by the window, not by the partition (docs/semantics.md, "On Spark").

Gaps: where positions jump over dropped rows, the task puts back at most
``cerql.exec.bits.inert_steps`` inert events (copies of the next row with no condition bit,
valued at the last skipped positions), which move the runs as the whole gap would: a run that
needs contiguity dies, STRICT sees the gap, an ``n EVENTS`` window measures the real positions.
The kernel's positions then count the events it was given, which keep the order and the gaps,
and the window is measured on the real positions as values.
"""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cerql.exec import kernel
from cerql.automaton import label_bits
from cerql.exec.bits import inert_steps
from cerql.exec.driver import Matches, Run, bits_dtype, concat_chunks, open_run
from cerql.exec import output
from cerql.exec.candidate_rows import CandidateRows
from cerql.exec.post_filter import (CandidateFilter, chosen, decided_by_prune, group_by_substream, prune, relaxed,
                                    search_order, unless_cut)
from cerql.exec.results import MatchChunk
from cerql.exec.spark_keys import group_codes, is_nested, same_values
from cerql.exec.stream import window_values
from cerql.exec.window import first_reachable, reach_floor
from cerql.plan import TaskPlan

BITS_COLUMN = "__cerql_bits"
POSITION_COLUMN = "__cerql_pos"  # a row's number in the task's sorted input, when Spark dropped inert rows
RISING_COLUMN = "__cerql_rising"  # the sums known to rise over the whole input (registers.RegisterSpec.rise)
REACH_COLUMN = "__cerql_reach"  # + k: the k-th UNLESS inside the pattern's reach per row (driver.Run.reach)


class MatchTask:
    """The state of one query over the batches of one task (see module docstring)."""

    def __init__(self, plan: TaskPlan):
        if any(o.var is None for o in plan.outputs):
            raise ValueError("SELECT expressions are evaluated by the caller; plan them out first")
        self.plan = plan
        self.run: Run | None = None
        self.kept: pa.Table | None = None      # rows of the current substream from earlier batches
        self.kept_values: np.ndarray | None = None
        self.kept_pos0 = 0                     # substream position of kept's first row
        self.next_pos = 0                      # substream position of the next row
        self.last_key: tuple | None = None
        self.label_bit = label_bits(plan.automaton.labels)  # variable -> its bit in a label mask
        self.bits_dtype = bits_dtype(len(plan.automaton.conditions))
        # post-filtered plans: the candidates' check, and the number of substreams begun so far
        self.check = CandidateFilter(plan) if plan.post_filters else None
        self.decided = decided_by_prune(plan)  # post_filter.chosen gives the results, on arrays
        self.substreams = 0
        self.gap_fill = inert_steps(plan.automaton)  # inert events put back per gap, when gaps come
        self.filled = False                          # the batches come with positions (and gaps)
        self.last_pos = -1                           # number of the last row seen
        self.result_ends = np.zeros(0, np.int64)     # per result of the last batch, its end's row (kept rows first)

    def restart(self) -> None:
        """Forget the substream going on: the next batch starts a new one, whatever its key
        (the kernel resets its runs, arena and positions at a substream's first row), while the
        automaton built so far (the lazily determinized transitions) is kept. The streaming
        processor (spark/streaming/processor.py) runs one task over the rows of each bucket in turn."""
        self.kept, self.kept_values, self.kept_pos0, self.next_pos = None, None, 0, 0
        self.last_key, self.last_pos, self.filled, self.substreams = None, -1, False, 0
        if self.check is not None:
            self.check = CandidateFilter(self.plan)

    # -- substreams
    def _starts(self, table: pa.Table) -> np.ndarray:
        if not self.plan.substream_columns:
            starts = np.zeros(table.num_rows, dtype=bool)
            starts[0] = self.last_key is None
            return starts
        starts = key_changes(table, self.plan.substream_columns)
        starts[0] = self.last_key is None or not same_key(self._key(table, 0), self.last_key)
        return starts

    def _key(self, table: pa.Table, row: int) -> tuple:
        return tuple(table.column(c)[row].as_py() for c in self.plan.substream_columns)

    def process(self, batch) -> pa.Table:
        """Feed one batch; return the results that end in it."""
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        n = table.num_rows
        if n == 0:
            self.result_ends = np.zeros(0, np.int64)
            return self._empty(table)
        plan = self.plan
        starts = self._starts(table)
        if POSITION_COLUMN in table.column_names:
            table, starts = self._fill_gaps(table, starts)
            n = table.num_rows
        idx = np.arange(n)
        sub_start = np.maximum.accumulate(np.where(starts, idx, -1))  # batch row of the substream start
        positions = np.where(sub_start < 0, self.next_pos + idx, idx - sub_start)
        values = self._values(table, positions)
        if self.run is None:
            self.run = self._open_run(table, values.dtype)
        bits = table.column(BITS_COLUMN).to_numpy().astype(self.bits_dtype)  # same bits, unsigned
        sides = self.run.registers.sides(table) if plan.registers else None
        parts = self.run.feed_parts(bits, starts, values, sides)
        first = next(parts, None)  # the run computes the reach before its first part
        if self.run.reach is not None:  # kept with the rows, for the check of later results
            for k, reach in enumerate(self.run.reach):
                table = table.append_column(f"{REACH_COLUMN}{k}", pa.array(reach, pa.int64()))

        kept = self.kept if (self.kept is not None and not starts[0]) else None
        n_kept = kept.num_rows if kept is not None else 0
        combined = pa.concat_tables([kept, table.select(kept.column_names)]) if kept is not None else table
        begun = self.substreams
        self.substreams += int(starts.sum())
        chunks = []
        for part in itertools.chain([] if first is None else [first], parts):
            if self.check is None:
                chunks.append(part)
                continue
            # each part checked as it comes, the kernel's buffer dropped after it; a part that
            # ends with the best candidates of an event with more (NEXT, LAST) is settled at once
            open_end = self.run.open_end
            checked = self._post_filter(combined, n_kept, sub_start, begun, starts, [part])
            if open_end >= 0:
                self.run.settle(any(bool((c.end_row == open_end).any()) for c in checked))
            chunks.extend(checked)
        out = self._results(plan, combined, n_kept, sub_start, chunks)
        self._keep(table, combined, n_kept, starts, sub_start, values)
        self.next_pos = int(self.run.st[kernel.POS])
        self.last_key = self._key(table, n - 1)
        return out

    def _open_run(self, table: pa.Table, value_dtype) -> Run:
        """The task's run, opened at its first rows: the plan's, or for a post-filtered plan the
        relaxed one's, whose candidates ``_post_filter`` checks; the sums Spark found rising
        over the whole input (``RISING_COLUMN``, spark/lower.py) marked so."""
        plan = self.plan
        if self.check is None:
            run = open_run(plan, value_dtype)
        else:
            run = open_run(relaxed(plan), value_dtype, candidates=True, unless_cut=unless_cut(plan),
                           order=search_order(plan))
        if RISING_COLUMN in table.column_names:
            run.registers.rise(int(table.column(RISING_COLUMN)[0].as_py() or 0))
        return run

    # -- FILTER predicates across variables: candidates checked as they end (exec/post_filter.py)
    def _post_filter(self, combined, n_kept, sub_start, begun, starts, chunks) -> list:
        """The results among the relaxed automaton's candidates in ``chunks`` (a part of this
        batch's), in the kernel's layout. A candidate's rows are in ``combined`` (the kept rows,
        then the batch), so the check reads them there: nothing beyond the window is held.
        ``begun``: the substreams the task had begun before the batch."""
        end, endpos, start, off, length, lab_pos, lab_mask = concat_chunks(chunks)
        if not len(end):
            return chunks
        serial = begun + np.cumsum(starts)  # each batch row's substream, numbered from the task's first
        # a substream is named by the batch row it starts at, -1 for the one going on from before
        matches = Matches(self.plan.automaton, sub_start[end], end, endpos, start, off, length, lab_pos, lab_mask)
        entry_rows = self._row_index(np.repeat(end, length), lab_pos, sub_start, n_kept)
        inside = len(self.plan.automaton.unless_inside)
        reach = np.array([combined.column(f"{REACH_COLUMN}{k}").to_numpy() for k in range(inside)],
                         np.int64).reshape(inside, combined.num_rows)
        matches = matches.subset(prune(self.plan, matches, combined, entry_rows, reach))
        if self.decided:  # the pruned candidates are the results, in the kernel's layout
            return [chosen(self.plan, matches).chunk()]
        first_pos = self.next_pos  # position of batch row 0 in the substream going on
        predicates = self._predicates(combined)  # once: each substream's view slices them
        out = []
        for k, by_end in group_by_substream(matches.results()).items():
            first = n_kept + k if k >= 0 else 0
            offset = 0 if k >= 0 else self.kept_pos0
            view = CandidateRows(self.plan, combined.slice(first),
                                 {cond: rows[first:] for cond, rows in predicates.items()}, offset,
                                 reach[:, first:])
            results = self.check.choose(int(serial[k]) if k >= 0 else begun, view, by_end)
            if results:
                shift = k if k >= 0 else -first_pos  # batch row of a position
                out.append(self._chunk(results, shift))
        return out

    def _predicates(self, rows: pa.Table) -> dict:
        """Each FILTER predicate's value per row, from the condition bits Spark computed."""
        bits = rows.column(BITS_COLUMN).to_numpy().astype(self.bits_dtype)
        return {cond: (bits >> k) & 1 == 1 for k, cond in enumerate(self.plan.automaton.conditions)
                if isinstance(cond, str)}

    def _chunk(self, results, shift: int) -> MatchChunk:
        """Results of one substream as the kernel gives them (see driver.Run._take); the
        batch row of a position is the position + ``shift``."""
        end, start, off, length, lab_pos, lab_mask = [], [], [], [], [], []
        for r in results:
            masks: dict[int, int] = {}
            for var, p in r.labels:
                masks[p] = masks.get(p, 0) | self.label_bit[var]
            end.append(r.end)
            start.append(r.start)
            off.append(len(lab_pos))
            length.append(len(masks))
            for p in sorted(masks):
                lab_pos.append(p)
                lab_mask.append(masks[p])
        end_row = np.array(end, np.int64) + shift
        return MatchChunk(end_row, *(np.array(a, np.int64) for a in (end, start, off, length, lab_pos, lab_mask)))

    def _values(self, table: pa.Table, positions: np.ndarray) -> np.ndarray:
        w = self.plan.window
        if self.filled and (w is None or w.kind == "events"):  # the real positions
            return table.column(POSITION_COLUMN).to_numpy().astype(np.int64)
        if w is None or w.kind == "events":
            return positions.astype(np.int64)
        return window_values(self.plan, table)

    # -- the gaps Spark left where it dropped inert rows
    def _fill_gaps(self, table: pa.Table, starts: np.ndarray) -> tuple[pa.Table, np.ndarray]:
        """The batch with up to ``gap_fill`` inert events before each row whose position is
        not the one after the last (see module docstring), and where substreams start."""
        if self.gap_fill is None:
            raise ValueError("positions were sent for a query whose gaps cannot be filled (bits.gap_masks)")
        self.filled = True
        pos = table.column(POSITION_COLUMN).to_numpy().astype(np.int64)
        before = np.empty_like(pos)
        before[0] = self.last_pos
        before[1:] = pos[:-1]
        before[starts] = pos[starts] - 1  # no gap before a substream's first row: the initial
        self.last_pos = int(pos[-1])      # state is a fixed point of inert events (bits.inert_steps)
        fill = np.minimum(pos - before - 1, self.gap_fill)
        if not fill.any():
            return table, starts
        count = fill + 1
        rows = np.repeat(np.arange(len(pos)), count)
        group_end = np.cumsum(count)
        offset = np.arange(len(rows)) - np.repeat(group_end - 1, count)  # -fill..0 in a group
        inert = offset < 0
        filled = table.take(rows)
        bits = filled.column(BITS_COLUMN)
        filled = filled.set_column(filled.column_names.index(BITS_COLUMN), BITS_COLUMN,
                                   pc.if_else(pa.array(inert), pa.scalar(0, bits.type), bits))
        filled = filled.set_column(filled.column_names.index(POSITION_COLUMN), POSITION_COLUMN,
                                   pa.array(pos[rows] + offset).cast(table.schema.field(POSITION_COLUMN).type))
        new_starts = np.zeros(len(rows), bool)
        new_starts[(group_end - count)[starts]] = True
        return filled, new_starts

    # -- rows kept for later batches
    def _keep(self, table, combined, n_kept, starts, sub_start, values) -> None:
        n = table.num_rows
        last_start = sub_start[n - 1]
        w = self.plan.window
        # the window edge is found on values (real positions, when there are gaps)
        measured = w is not None and (w.kind != "events" or self.filled)
        if last_start >= 0:  # the last substream began in this batch
            rows = table.slice(last_start)
            vals = values[last_start:]
            pos0 = 0
        else:
            rows = combined
            vals = values if not (measured and n_kept) else np.concatenate([self.kept_values, values])
            pos0 = self.kept_pos0 if n_kept else self.next_pos
        st, amount = self.run.st, self.run.options.amount
        first = int(st[kernel.CONSUMED]) + 1 - pos0  # later results start after the last output
        # a later result ends at the next position (n EVENTS) or at a value no less than the
        # last one: the rows it can reach are those exec/window.py says
        if w is not None:
            if w.kind == "events":
                edge = int(reach_floor(st[kernel.POS], amount)) - pos0
            else:
                edge = first_reachable(vals, vals[-1], amount)
            first = max(first, edge)
        first = min(max(first, 0), rows.num_rows)
        self.kept = rows.slice(first)
        self.kept_values = vals[first:] if measured else None
        self.kept_pos0 = pos0 + first

    # -- result rows
    def _row_index(self, ends, positions, sub_start, n_kept):
        """Rows of ``combined`` for substream positions of results ending at batch rows ends."""
        s = sub_start[ends]
        return np.where(s >= 0, n_kept + s + positions, positions - self.kept_pos0)

    def _results(self, plan, combined, n_kept, sub_start, chunks) -> pa.Table:
        end, endpos, start, off, length, lab_pos, lab_mask = concat_chunks(chunks)
        self.result_ends = n_kept + end
        if len(end) == 0:
            return self._empty(combined)
        end_row = self.result_ends
        start_row = self._row_index(end, start, sub_start, n_kept)
        owner = np.repeat(np.arange(len(end)), length)
        entry_row = self._row_index(end[owner], lab_pos, sub_start, n_kept) if len(owner) else owner
        return output.build(plan, combined, output.ResultRows(end_row, start_row, owner, entry_row, lab_mask))

    def _empty(self, table: pa.Table) -> pa.Table:
        return self.output_schema(table.schema).empty_table()

    def output_schema(self, schema: pa.Schema) -> pa.Schema:
        """The result schema for input batches of ``schema``."""
        return output.schema(self.plan, schema)


def key_changes(table: pa.Table, columns) -> np.ndarray:
    """Per row, whether its partition key (``columns``) differs from the row before's (row 0:
    False). NaN keys are one key, and NULL keys (which a CEQL task never sees; MATCH_RECOGNIZE's
    PARTITION BY keeps them), as Spark groups them; a struct or array key (MATCH_RECOGNIZE's)
    compared as Spark groups it (exec/spark_keys.py)."""
    n = table.num_rows
    changes = np.zeros(n, dtype=bool)
    for c in columns:
        col = table.column(c)
        if n > 1 and is_nested(col.type):
            codes = group_codes(col)
            changes[1:] |= codes[1:] != codes[:-1]
        elif n > 1:
            a, b = col.slice(1), col.slice(0, n - 1)
            change = pc.or_(pc.fill_null(pc.not_equal(a, b), False), pc.xor(pc.is_null(a), pc.is_null(b)))
            if pa.types.is_floating(col.type):
                change = pc.and_(change, pc.invert(pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False)))
            changes[1:] |= np.asarray(change.to_numpy(zero_copy_only=False), bool)
    return changes


def same_key(a: tuple, b: tuple) -> bool:
    """Partition keys equal, NaN equal to NaN (Spark groups NaNs together), NULL to NULL, and
    structs and arrays alike inside (exec/spark_keys.py)."""
    return same_values(a, b)
