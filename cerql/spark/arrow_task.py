"""One task's share of a query: sorted Arrow batches in, result rows out, as Arrow.

Input: a :class:`cerql.plan.TaskPlan` (spark/lower.py ``task_plan``) and, batch after batch,
the rows of one task in evaluation order (partition key, ordering columns, source, ordinal),
each row with the stream columns,
``__cerql_source`` (optional with one source), ``__cerql_ordinal`` and its condition bits in ``__cerql_bits`` (bit k set when
the row satisfies ``plan.automaton.conditions[k]``). Output: per batch, an Arrow table of the
results that end in it, in the output schema of DESIGN.md section 5, without SELECT expressions
(the caller evaluates them on the result, as Spark does).

This is what ``mapInArrow`` runs on Spark (the function itself imports no pyspark). The kernel
reports positions within substreams; the task maps them to rows of the current batch or of the
rows it kept from earlier batches. It keeps only the rows a later result can still reference:
those of the current substream from the window edge on (and after the last consumed position),
so memory is bounded by the window, not by the partition (DESIGN.md 6.2).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cerql import ast
from cerql.exec import kernel
from cerql.exec.bits import label_bits
from cerql.exec.driver import Matches, RegisterSpec, Run, bits_dtype, concat_chunks, window_setup_for
from cerql.exec.output import match_ids
from cerql.exec.post_filter import CandidateFilter, group_by_substream, prune
from cerql.exec.post_filter import relaxed as post_filter_relaxed
from cerql.exec.reference import Substream
from cerql.exec.results import MatchChunk
from cerql.exec.stream import window_values
from cerql.plan import ORDINAL_COLUMN, SOURCE_COLUMN, TaskPlan

BITS_COLUMN = "__cerql_bits"
RISING_COLUMN = "__cerql_rising"  # the sums known to rise over the whole input (RegisterSpec.rise)


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
        self.substreams = 0

    # -- substreams
    def _starts(self, table: pa.Table) -> np.ndarray:
        n = table.num_rows
        starts = np.zeros(n, dtype=bool)
        if not self.plan.substream_columns:
            starts[0] = self.last_key is None
            return starts
        starts[0] = self.last_key is None or not _same_key(self._key(table, 0), self.last_key)
        for c in self.plan.substream_columns:
            col = table.column(c)
            if n > 1:
                a, b = col.slice(1), col.slice(0, n - 1)
                change = pc.fill_null(pc.not_equal(a, b), True)
                if pa.types.is_floating(col.type):  # NaN keys are one substream, as in Spark
                    change = pc.and_(change, pc.invert(pc.and_(pc.is_nan(a), pc.is_nan(b))))
                starts[1:] |= np.asarray(pc.fill_null(change, True).to_numpy(zero_copy_only=False), bool)
        return starts

    def _key(self, table: pa.Table, row: int) -> tuple:
        return tuple(table.column(c)[row].as_py() for c in self.plan.substream_columns)

    def process(self, batch) -> pa.Table:
        """Feed one batch; return the results that end in it."""
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        n = table.num_rows
        if n == 0:
            return self._empty(table)
        plan = self.plan
        starts = self._starts(table)
        idx = np.arange(n)
        sub_start = np.maximum.accumulate(np.where(starts, idx, -1))  # batch row of the substream start
        positions = np.where(sub_start < 0, self.next_pos + idx, idx - sub_start)
        values = self._values(table, positions)
        if self.run is None:
            windowed, amount = window_setup_for(plan, values.dtype)
            run_plan = plan if self.check is None else post_filter_relaxed(plan)
            registers = RegisterSpec(plan.registers, plan.automaton.labels)
            if RISING_COLUMN in table.column_names:
                registers.rise(int(table.column(RISING_COLUMN)[0].as_py() or 0))
            self.run = Run(plan.automaton, run_plan.strategy, run_plan.consume != "NONE",
                           run_plan.max_matches_per_event, windowed, amount, values.dtype, registers)
        bits = table.column(BITS_COLUMN).to_numpy().astype(self.bits_dtype)  # same bits, unsigned
        sides = self.run.registers.sides(table) if plan.registers else None
        chunks = self.run.feed(bits, starts, values, sides)

        kept = self.kept if (self.kept is not None and not starts[0]) else None
        n_kept = kept.num_rows if kept is not None else 0
        combined = pa.concat_tables([kept, table.select(kept.column_names)]) if kept is not None else table
        if self.check is not None:
            chunks = self._post_filter(combined, n_kept, starts, sub_start, chunks)
        out = self._results(plan, combined, n_kept, sub_start, chunks)
        self._keep(table, combined, n_kept, starts, sub_start, values)
        self.next_pos = int(self.run.st[kernel.POS])
        self.last_key = self._key(table, n - 1)
        return out

    # -- FILTER predicates across variables: candidates checked as they end (exec/post_filter.py)
    def _post_filter(self, combined, n_kept, starts, sub_start, chunks) -> list:
        """The results among the relaxed automaton's candidates of this batch, in the kernel's
        layout. A candidate's rows are in ``combined`` (the kept rows, then the batch), so the
        check reads them there: nothing beyond the window is held."""
        begun = self.substreams
        self.substreams += int(starts.sum())
        end, endpos, start, off, length, lab_pos, lab_mask = concat_chunks(chunks)
        if not len(end):
            return chunks
        serial = begun + np.cumsum(starts)  # each batch row's substream, numbered from the task's first
        # a substream is named by the batch row it starts at, -1 for the one going on from before
        matches = Matches(self.plan.automaton, sub_start[end], end, endpos, start, off, length, lab_pos, lab_mask)
        entry_rows = self._row_index(np.repeat(end, length), lab_pos, sub_start, n_kept)
        matches = matches.subset(prune(self.plan, matches, combined, entry_rows))
        first_pos = self.next_pos  # position of batch row 0 in the substream going on
        predicates = self._predicates(combined)  # once: each substream's view slices them
        out = []
        for k, by_end in group_by_substream(matches.results()).items():
            first = n_kept + k if k >= 0 else 0
            offset = 0 if k >= 0 else self.kept_pos0
            view = Substream.rows(self.plan, combined.slice(first),
                                  {cond: rows[first:] for cond, rows in predicates.items()}, offset)
            results = self.check.choose(int(serial[k]) if k >= 0 else begun, view, by_end)
            if results:
                shift = k if k >= 0 else -first_pos  # batch row of a position
                out.append(self._chunk(results, shift))
        return out

    def _predicates(self, rows: pa.Table) -> dict:
        """Each FILTER predicate's value per row, from the condition bits Spark computed."""
        bits = rows.column(BITS_COLUMN).to_numpy().astype(self.bits_dtype)
        return {cond: (bits >> k) & 1 == 1 for k, cond in enumerate(self.plan.automaton.conditions)
                if not isinstance(cond, ast.Atom)}

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
        if w is None or w.kind == "events":
            return positions.astype(np.int64)
        return window_values(self.plan, table)

    # -- rows kept for later batches
    def _keep(self, table, combined, n_kept, starts, sub_start, values) -> None:
        n = table.num_rows
        last_start = sub_start[n - 1]
        w = self.plan.window
        measured = w is not None and w.kind != "events"  # the window edge is found on values
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
        if w is not None:
            if w.kind == "events":
                edge = int(st[kernel.POS] - amount) - pos0
            else:
                edge = int(np.searchsorted(vals, vals[-1] - amount, side="left"))
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
        nres = len(end)
        if nres == 0:
            return self._empty(combined)
        end_row = n_kept + end
        start_row = self._row_index(end, start, sub_start, n_kept)
        owner = np.repeat(np.arange(nres), length)
        entry_row = self._row_index(end[owner], lab_pos, sub_start, n_kept) if len(owner) else owner
        # only the rows results show, as one chunk: work on ``combined`` would grow with it
        used, renumber = _used_rows(combined.num_rows, end_row, start_row, entry_row)
        combined = take_rows(combined, used)
        end_row, start_row, entry_row = (renumber(x) for x in (end_row, start_row, entry_row))
        columns, names = [], []
        for c in plan.partition_columns:
            columns.append(combined.column(c).take(end_row))
            names.append(c)
        ids = self._match_ids(combined, end_row, start_row, owner, entry_row, lab_mask)
        columns += [pa.array(ids, pa.int64()),
                    combined.column(plan.order_columns[0]).take(start_row),
                    combined.column(plan.order_columns[0]).take(end_row)]
        names += ["match_id", "match_start", "match_end"]
        for o in plan.outputs:
            has = (lab_mask & self.label_bit[o.var]) != 0
            r, rows = owner[has], entry_row[has]
            cols = list(o.columns or plan.columns)
            shown = combined.select(cols)
            if o.many:  # each result's events in stream order
                order = np.lexsort((rows, r))
                taken = shown.take(rows[order])
                structs = pa.StructArray.from_arrays([taken.column(c).combine_chunks() for c in cols], names=cols)
                offsets = np.zeros(nres + 1, np.int32)
                np.cumsum(np.bincount(r, minlength=nres), out=offsets[1:])
                columns.append(pa.ListArray.from_arrays(pa.array(offsets), structs))
            else:  # at most one event per result: one take, NULL where unbound
                at = np.zeros(nres, np.int64)
                at[r] = rows
                missing = np.ones(nres, bool)
                missing[r] = False
                taken = shown.take(at)  # row 0 exists: every result has its end row
                fields = [taken.column(c).combine_chunks() for c in cols]
                columns.append(pa.StructArray.from_arrays(fields, names=cols, mask=pa.array(missing)))
            names.append(o.name)
        return pa.Table.from_arrays(columns, names=names)

    def _match_ids(self, combined, end_row, start_row, owner, entry_row, lab_mask) -> np.ndarray:
        # Spark leaves the source column out when the query has one source
        src = (combined.column(SOURCE_COLUMN).to_numpy() if SOURCE_COLUMN in combined.column_names
               else np.zeros(combined.num_rows, np.int64))
        ordinal = combined.column(ORDINAL_COLUMN).to_numpy()
        # one label entry per (entry, variable marked on it), variables by label bit
        owners, variables, rows = [], [], []
        for k, bit in enumerate(self.label_bit.values()):
            has = (lab_mask & bit) != 0
            owners.append(owner[has])
            rows.append(entry_row[has])
            variables.append(np.full(int(has.sum()), k, np.int64))
        rows_all = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        return match_ids(src[start_row], ordinal[start_row], src[end_row], ordinal[end_row],
                         np.concatenate(owners) if owners else rows_all, np.concatenate(variables)
                         if variables else rows_all, src[rows_all], ordinal[rows_all])

    def _empty(self, table: pa.Table) -> pa.Table:
        return self.output_schema(table.schema).empty_table()

    def output_schema(self, schema: pa.Schema) -> pa.Schema:
        """The result schema for input batches of ``schema``."""
        plan = self.plan
        fields = [schema.field(c) for c in plan.partition_columns]
        order = schema.field(plan.order_columns[0]).type
        fields += [pa.field("match_id", pa.int64()), pa.field("match_start", order), pa.field("match_end", order)]
        for o in plan.outputs:
            struct = pa.struct([schema.field(c) for c in (o.columns or plan.columns)])
            fields.append(pa.field(o.name, pa.list_(struct) if o.many else struct))
        return pa.schema(fields)


def _same_key(a: tuple, b: tuple) -> bool:
    """Partition keys equal, NaN equal to NaN (Spark groups NaNs together)."""
    return all(x == y or (isinstance(x, float) and isinstance(y, float) and x != x and y != y)
               for x, y in zip(a, b))


def take_rows(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """``table.take(rows)`` as one chunk, for sorted ``rows``, touching only the record batches
    that hold them: Arrow's take on a table of many chunks costs time in the number of chunks,
    and the rows kept across batches (a whole substream without WITHIN) are many chunks."""
    batches = table.to_batches()
    if len(batches) <= 1:
        return table.take(rows).combine_chunks()
    bounds = np.cumsum([0] + [b.num_rows for b in batches])
    which = np.searchsorted(bounds, rows, side="right") - 1
    cuts = np.flatnonzero(np.diff(which)) + 1
    parts = [batches[w[0]].take(pa.array(g - bounds[w[0]]))
             for g, w in zip(np.split(rows, cuts), np.split(which, cuts)) if len(g)]
    if not parts:
        return table.schema.empty_table()
    return pa.Table.from_batches(parts, schema=table.schema).combine_chunks()


def _used_rows(n: int, *indexes: np.ndarray):
    """The sorted distinct rows among ``indexes`` (rows of a table of ``n`` rows) and a function
    renumbering rows into positions among them. A mask over the table when it is not much
    larger than the indexes (no sort), else ``np.unique`` and a binary search."""
    everything = np.concatenate(indexes)
    if n <= 8 * len(everything):
        mark = np.zeros(n, bool)
        mark[everything] = True
        position = np.cumsum(mark) - 1
        return np.flatnonzero(mark), lambda x: position[x]
    used = np.unique(everything)
    return used, lambda x: np.searchsorted(used, x)
