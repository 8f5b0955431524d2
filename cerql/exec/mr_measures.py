"""MATCH_RECOGNIZE MEASURES, computed for many output rows at once.

Input: the rows sorted by partition and ORDER BY, the matches the matcher found (:class:`Matches`:
where each starts and ends and, per mapped row, its variable and whether it is excluded), and the
output rows as :class:`Rows` (for each: its match, its current row, and how many of the match's
rows RUNNING and FINAL see). Output: one Arrow array per measure (docs/semantics.md,
"MATCH_RECOGNIZE").

How: each navigation becomes an int64 array of row indices, one per output row (-1: NULL),
computed with NumPy from the matches. A column reference ``A.x`` (or ``x``: any variable) is
``LAST(A.x)``: the last row mapped to A among the rows the output row sees; ``FIRST(e, n)`` and
``LAST(e, n)`` the n-th from the first or last such row; ``PREV(e, n)`` / ``NEXT(e, n)`` move n
rows from the row their argument navigates to (``LAST(e)`` when it does not), within the
partition. The columns each navigation reads are gathered at its indices with ``take``, and the
scalar rest of the measure is evaluated by cerql's expression evaluator (cerql.expr, Spark SQL
semantics) over the table of gathered columns. Aggregates over a variable's rows (``count(*)``,
``count(A.*)``, ``count(A.x)``, ``sum``, ``avg``, ``min``, ``max``) are running aggregates
over each match's rows of that variable, in row order (kernel/running.py), read at the last row
each output row sees; the others (stddev, min_by, collect_list, DISTINCT...) run the folds of
exec/mr_folds.py over the same rows, in Python. An aggregate's argument is evaluated at each row
of the variable, PREV/NEXT in it at the rows they move to. CLASSIFIER() is the variable of the
navigated row, MATCH_NUMBER() the match's number.

Cost: linear in the output rows and the matches' rows, except a DECIMAL sum or avg, which is
exec/aggregate.py's exact ``grouped`` over each output row's rows: under RUNNING in ALL ROWS PER
MATCH, every prefix of a match, quadratic in its length; and collect_list and the DISTINCT
aggregates, whose fold copies its state at each row: quadratic in a variable's rows in a match.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from cerql import mr_functions as mx
from cerql.ast import SqlExpr
from cerql.errors import AnalysisError, UnsupportedError
from cerql.exec import aggregate, mr_folds
from cerql.exec.kernel.running import running_best, running_sum_float64, running_sum_int64
from cerql.expr import ExprError, compile_expr, evaluate, guard

FIELD = "__cerql_mr_m{}"  # a gathered column or computed part of a measure


@dataclass(frozen=True)
class Matches:
    """Every match of every partition, in output order, over the sorted rows. Match k maps rows
    ``start[k]`` to ``end[k] - 1`` (none when empty); its mapped rows' variables (indices into the
    pattern's variables) and exclusion flags are ``variable[offsets[k]:offsets[k + 1]]`` and
    ``excluded[...]``; ``number`` is MATCH_NUMBER, ``partition`` the partition's index."""

    start: np.ndarray
    end: np.ndarray
    number: np.ndarray
    partition: np.ndarray
    offsets: np.ndarray
    variable: np.ndarray
    excluded: np.ndarray


@dataclass(frozen=True)
class Rows:
    """The output rows: ``match`` (-1: an unmatched row, every measure NULL), ``row`` (the sorted
    row it shows), and how many of its match's rows, from the first, RUNNING (``running``) and
    FINAL (``final``) see."""

    match: np.ndarray
    row: np.ndarray
    running: np.ndarray
    final: np.ndarray


class MeasureContext:
    """What every measure of one query reads: the sorted table, partitions, matches and output
    rows, with the per-variable-set counts cached."""

    def __init__(self, table: pa.Table, part_start: np.ndarray, part_end: np.ndarray, matches: Matches, rows: Rows,
                 variables: tuple[str, ...], subsets: dict[str, frozenset[str]], text: str):
        self.table = table
        self.part_start, self.part_end = part_start, part_end
        self.matches, self.rows = matches, rows
        self.variables, self.subsets, self.text = variables, subsets, text
        self.lowered = {c.lower(): c for c in table.column_names}
        has = rows.match >= 0
        self.has_match = has
        m = np.where(has, rows.match, 0)
        self.lo = np.where(has, matches.offsets[m] if len(matches.offsets) > 1 else 0, 0).astype(np.int64)
        self.first_row = np.where(has, matches.start[m] if len(matches.start) else 0, 0).astype(np.int64)
        self._counts: dict[frozenset | None, tuple[np.ndarray, np.ndarray]] = {}

    # -- variable sets
    def members(self, name: str | None) -> frozenset[int] | None:
        """The variable indices a qualifier stands for (None: every variable)."""
        return mx.members(name, self.variables, self.subsets)

    def counts(self, members: frozenset | None) -> tuple[np.ndarray, np.ndarray]:
        """(cumulative count of the set's mapped rows before each flat position, the flat
        positions of the set's rows)."""
        if members not in self._counts:
            var = self.matches.variable
            inside = np.ones(len(var), bool) if members is None else np.isin(var, np.array(sorted(members), np.int64))
            cum = np.zeros(len(var) + 1, np.int64)
            np.cumsum(inside, out=cum[1:])
            self._counts[members] = (cum, np.flatnonzero(inside).astype(np.int64))
        return self._counts[members]

    def matches_segments(self, cum: np.ndarray) -> np.ndarray:
        """Where each match's rows of a set begin and end in the order of its positions."""
        return cum[self.matches.offsets]

    def bound(self, final: bool) -> np.ndarray:
        return np.where(self.has_match, self.rows.final if final else self.rows.running, 0).astype(np.int64)

    # -- navigation to rows
    def logical(self, members, from_last: bool, n: int, final: bool) -> np.ndarray:
        """The flat position of the n-th row (0: the first / last) of the set among the rows the
        output row sees, -1 when there is none."""
        cum, where = self.counts(members)
        lo, hi = self.lo, self.lo + self.bound(final)
        before, total = cum[lo], cum[hi] - cum[lo]
        rank = total - n if from_last else np.full(len(lo), n + 1, np.int64)  # 1-based within the output row's rows
        ok = (rank >= 1) & (rank <= total)
        at = np.where(ok, before + rank - 1, 0)
        return np.where(ok, where[at] if len(where) else -1, -1)

    def row_of(self, flat: np.ndarray) -> np.ndarray:
        """Sorted row index of a flat position (-1 stays -1)."""
        return np.where(flat >= 0, self.first_row + (flat - self.lo), -1)

    def physical(self, rows: np.ndarray, step: int) -> np.ndarray:
        """``rows`` moved by ``step`` within their partition (-1 outside it, or when -1)."""
        safe = np.where(rows >= 0, rows, 0)
        moved = safe + step
        ok = (rows >= 0) & (moved >= self.part_start[safe]) & (moved < self.part_end[safe]) if len(self.part_start) else rows >= 0
        return np.where(ok, moved, -1)

    def gather(self, column: str, rows: np.ndarray) -> pa.Array:
        values = self.table.column(column)
        if not len(rows):
            return values.slice(0, 0).combine_chunks() if isinstance(values, pa.ChunkedArray) else values.slice(0, 0)
        got = values.take(pa.array(np.where(rows >= 0, rows, 0), mask=rows < 0))
        return got.combine_chunks() if isinstance(got, pa.ChunkedArray) else got


def measure_values(measure_expr: SqlExpr, ctx: MeasureContext, default_final: bool) -> pa.Array:
    """One measure's value for every output row. ``default_final``: RUNNING or FINAL when the
    measure says neither (ONE ROW PER MATCH sees the whole match either way)."""
    fields: dict[str, pa.Array] = {}
    tree = _Rewriter(ctx, measure_expr, fields).rewrite(measure_expr.tree.copy(), default_final)
    n = len(ctx.rows.match)
    table = pa.table(fields) if fields else pa.table({"__cerql_mr_rows": pa.array(np.zeros(n, np.int8))})

    def positioned(err: ExprError):
        return err.cls.at(ctx.text, mx.node_offset(measure_expr), err.message, err.error_class, err.hint)

    try:
        fn = guard(compile_expr(tree, lambda col: col.name), positioned)
    except ExprError as err:
        raise positioned(err) from None
    value = evaluate(fn, table)
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    unmatched = ctx.rows.match < 0
    if unmatched.any():  # WITH UNMATCHED ROWS: every measure of an unmatched row is NULL
        value = pc.if_else(pa.array(unmatched), pa.nulls(len(value), value.type), value)
    return value


class _Rewriter:
    """Replaces each navigation, aggregate, CLASSIFIER and MATCH_NUMBER of a measure by a column
    of ``fields`` holding its value per output row."""

    def __init__(self, ctx: MeasureContext, expr: SqlExpr, fields: dict[str, pa.Array]):
        self.ctx, self.expr, self.fields = ctx, expr, fields

    def _field(self, values: pa.Array) -> exp.Column:
        name = FIELD.format(len(self.fields))
        self.fields[name] = values
        return exp.column(name)

    def _replace(self, node, new):
        return node.replace(new) if node.parent is not None else new

    def rewrite(self, node: exp.Expression, final: bool) -> exp.Expression:
        name = mx.function_name(node)
        if name in (mx.RUNNING, mx.FINAL):
            return self._replace(node, self.rewrite(mx.arguments(node)[0], name == mx.FINAL))
        if name == mx.MATCH_NUMBER:
            rows = self.ctx.rows
            padded = np.append(self.ctx.matches.number, 0)  # -1 (an unmatched row) reads the pad
            numbers = padded[rows.match]
            return self._replace(node, self._field(pa.array(numbers.astype(np.int64), pa.int64(), mask=rows.match < 0)))
        if name == mx.CLASSIFIER:
            args = mx.arguments(node)
            flat = self.ctx.logical(self.ctx.members(args[0].name if args else None), True, 0, final)
            labels = np.array(self.ctx.variables + (None,), dtype=object)
            var = self.ctx.matches.variable
            names = labels[np.where(flat >= 0, var[np.where(flat >= 0, flat, 0)] if len(var) else 0, -1)]
            return self._replace(node, self._field(pa.array(names.tolist(), pa.string())))
        if name in mx.NAVIGATIONS:
            rows, argument = self.navigate(node, final)
            return self._replace(node, self._gathered(argument, rows))
        if mx.is_aggregate(node):
            return self._replace(node, self._field(self.aggregate(node, final)))
        if isinstance(node, exp.Column):
            flat = self.ctx.logical(self.ctx.members(mx.qualifier(node)), True, 0, final)
            return self._replace(node, self._gathered(node, self.ctx.row_of(flat)))
        for child in list(node.iter_expressions()):
            self.rewrite(child, final)
        return node

    def navigate(self, node: exp.Expression, final: bool) -> tuple[np.ndarray, exp.Expression]:
        """(the sorted rows a navigation lands on, the expression it reads there)."""
        name = mx.function_name(node)
        args = mx.arguments(node)
        n = mx.navigation_offset(node)
        argument = args[0]
        if name in mx.LOGICAL:
            flat = self.ctx.logical(self._set_of(argument), name == mx.LAST, n, final)
            return self.ctx.row_of(flat), argument
        inner = mx.function_name(argument)
        if inner in mx.NAVIGATIONS:
            rows, argument = self.navigate(argument, final)
        else:
            rows = self.ctx.row_of(self.ctx.logical(self._set_of(argument), True, 0, final))
        return self.ctx.physical(rows, -n if name == mx.PREV else n), argument

    def _set_of(self, argument: exp.Expression):
        qualifiers = [mx.qualifier(c) for c in argument.find_all(exp.Column) if not mx.is_star(c)]
        return self.ctx.members(next((q for q in qualifiers if q), None))

    def _gathered(self, argument: exp.Expression, rows: np.ndarray) -> exp.Expression:
        """``argument`` with each column replaced by its values gathered at ``rows``."""
        tree = argument.copy()
        columns = [tree] if isinstance(tree, exp.Column) else list(tree.find_all(exp.Column))
        for column in columns:
            real = self._column(column)
            new = self._field(self.ctx.gather(real, rows))
            if column is tree:
                return new
            column.replace(new)
        return tree

    def _column(self, column: exp.Column) -> str:
        real = self.ctx.lowered.get(column.name.lower())
        if real is None:
            raise AnalysisError.at(self.ctx.text, mx.node_offset(self.expr, column), f"Unknown column '{column.name}'",
                                   "UNKNOWN_COLUMN", f"the input has columns {', '.join(self.ctx.table.column_names)}")
        return real

    def aggregate(self, node: exp.Expression, final: bool) -> pa.Array:
        """An aggregate over each output row's rows of one variable (or SUBSET, or all)."""
        ctx = self.ctx
        kind = mx.aggregate_kind(node)
        if kind is None:
            why, hint = mx.refusal(node)
            raise UnsupportedError.at(ctx.text, mx.node_offset(self.expr, node), f"{node.sql(dialect='spark')} is not "
                                      f"supported in MATCH_RECOGNIZE: {why}", "MATCH_RECOGNIZE_UNSUPPORTED", hint)
        args = mx.aggregate_arguments(node)
        argument = args[0] if args else None
        star = argument is None or mx.is_star(argument)
        members = ctx.members(argument.table or None) if star and isinstance(argument, exp.Column) else (
            None if star else self._set_of(node))
        cum, where = ctx.counts(members)
        if star:
            lo = ctx.lo
            return pa.array(cum[lo + ctx.bound(final)] - cum[lo], pa.int64())
        rows, seen_end, seen_count = self._running_inputs(cum, where, final)
        if kind in mr_folds.KINDS:
            return self._folded(node, kind, [self._values(a, rows) for a in args], ctx.matches_segments(cum),
                                seen_end, seen_count)
        values = self._values(argument, rows)
        if kind in ("sum", "avg") and pa.types.is_decimal(values.type):
            return self._grouped(kind, values, seen_end, seen_count)
        return _running(kind, values, ctx.matches_segments(cum), seen_end, seen_count)

    def _running_inputs(self, cum, where, final):
        """The rows of the set in every match (where-order), and per output row the end
        (exclusive) of the rows it sees in that order and how many they are."""
        ctx = self.ctx
        owner = np.searchsorted(ctx.matches.offsets, where, side="right") - 1 if len(where) else where
        rows = ctx.matches.start[owner] + (where - ctx.matches.offsets[owner]) if len(where) else where
        lo = ctx.lo
        seen_end = cum[lo + ctx.bound(final)]
        return rows, seen_end, seen_end - cum[lo]

    def _folded(self, node, kind, values: list[pa.Array], segments, seen_end, seen_count) -> pa.Array:
        """An aggregate of exec/mr_folds.py: its fold run over each match's rows of the set in row
        order, read after the last row each output row sees."""
        params = mr_folds.evaluated(mx.aggregate_parameters(node),
                                    lambda p: self._values(p, np.zeros(1, np.int64)).to_pylist()[0])
        try:
            f = mr_folds.fold(kind, tuple(v.type for v in values), mr_folds.parameters(kind, params))
        except mr_folds.FoldTypeError as err:
            raise AnalysisError.at(self.ctx.text, mx.node_offset(self.expr, node), err.message,
                                   "DATATYPE_MISMATCH", err.hint) from None
        columns = [v.to_pylist() for v in values]
        wanted = set((seen_end[seen_count > 0] - 1).tolist())
        after: dict[int, object] = {}
        for k in range(len(segments) - 1):
            state = f.empty
            for i in range(int(segments[k]), int(segments[k + 1])):
                state = f.step(state, tuple(c[i] for c in columns))
                if i in wanted:
                    after[i] = f.value(state)
        nothing = f.value(f.empty)
        return pa.array([after[int(e) - 1] if c > 0 else nothing for e, c in zip(seen_end, seen_count)],
                        f.result_type)

    def _grouped(self, kind, values, seen_end, seen_count):
        """exec/aggregate.py's grouped over each distinct range of rows an output row sees (a
        DECIMAL sum or avg: exact, in Python integers; under RUNNING in ALL ROWS PER MATCH every
        prefix of a match, a cost quadratic in its length)."""
        keys = np.stack([seen_end - seen_count, seen_end], axis=1)
        unique, inverse = np.unique(keys, axis=0, return_inverse=True) if len(keys) else (
            np.zeros((0, 2), np.int64), np.zeros(0, np.int64))
        first, last = unique[:, 0], unique[:, 1]
        sizes = last - first
        offsets = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=offsets[1:])
        within = np.arange(offsets[-1]) - np.repeat(offsets[:-1], sizes)
        at = np.repeat(first, sizes) + within
        out = aggregate.grouped(kind, offsets, values.take(pa.array(at, pa.int64())), aggregate_type(kind, values.type))
        return out.take(pa.array(np.asarray(inverse).reshape(-1).astype(np.int64)))

    def _values(self, argument: exp.Expression, rows: np.ndarray) -> pa.Array:
        """The aggregate's argument evaluated at ``rows``."""
        fields: dict[str, pa.Array] = {}
        tree = self._at_rows(argument.copy(), rows, fields)
        table = pa.table(fields) if fields else pa.table({"__cerql_mr_rows": pa.array(np.zeros(len(rows), np.int8))})

        def positioned(err: ExprError):
            return err.cls.at(self.ctx.text, mx.node_offset(self.expr, argument), err.message, err.error_class, err.hint)

        try:
            fn = guard(compile_expr(tree, lambda col: col.name), positioned)
        except ExprError as err:
            raise positioned(err) from None
        value = evaluate(fn, table)
        return value.combine_chunks() if isinstance(value, pa.ChunkedArray) else value

    def _at_rows(self, tree: exp.Expression, rows: np.ndarray, fields: dict[str, pa.Array]) -> exp.Expression:
        """``tree`` (a copy, changed in place) with each column made a field of ``fields``
        holding its values at ``rows``, and each PREV/NEXT (planner/mr_analyze.py allows only
        those, of columns, in an aggregate's argument) its argument at the rows it moves to."""
        if mx.function_name(tree) in mx.PHYSICAL:
            args = mx.arguments(tree)
            n = mx.navigation_offset(tree)
            moved = self.ctx.physical(rows, -n if mx.function_name(tree) == mx.PREV else n)
            return self._at_rows(args[0], moved, fields)
        if isinstance(tree, exp.Column):
            name = FIELD.format(len(fields))
            fields[name] = self.ctx.gather(self._column(tree), rows)
            return exp.column(name)
        for child in list(tree.iter_expressions()):
            new = self._at_rows(child, rows, fields)
            if new is not child:
                child.replace(new)
        return tree


def _running(kind: str, values: pa.Array, segments: np.ndarray, seen_end: np.ndarray, seen_count: np.ndarray) -> pa.Array:
    """Each output row's aggregate of the rows it sees, from the running aggregates of every
    match's rows (kernel/running.py): the value at the last row it sees."""
    valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), bool)
    last = np.where(seen_count > 0, seen_end - 1, 0)
    result_type = aggregate_type(kind, values.type)
    if kind in ("count", "sum", "avg") and len(values) and not pa.types.is_null(values.type):
        if kind == "sum" and pa.types.is_integer(values.type):
            numbers = np.asarray(values.cast(pa.int64()).fill_null(0).to_numpy(), np.int64)
            sums, counts, bad = running_sum_int64(numbers, valid, segments)
            if bad >= 0:  # exec/aggregate.py raises Spark's error, with the numbers
                segment = slice(segments[bad], segments[bad + 1])
                aggregate.value("sum", [], numbers[segment][valid[segment]].tolist())
                raise AssertionError("the running sum saw an overflow that Python's does not")  # pragma: no cover
        else:
            numbers = np.asarray(values.cast(pa.float64(), safe=False).fill_null(0.0).to_numpy(), np.float64) \
                if kind != "count" else np.zeros(len(values), np.float64)
            sums, counts = running_sum_float64(numbers, valid, segments, kind == "avg")
        count = np.where(seen_count > 0, counts[last], 0)
        if kind == "count":
            return pa.array(count, pa.int64())
        total = sums[last]
        if kind == "avg":
            with np.errstate(invalid="ignore", divide="ignore"):
                total = total / np.maximum(count, 1)
        return pa.array(total, mask=count == 0).cast(result_type)
    if kind == "count":
        return pa.array(np.zeros(len(seen_end), np.int64), pa.int64())
    if kind in ("sum", "avg"):
        return pa.nulls(len(seen_end), result_type)
    ranks = np.zeros(len(values), np.int64)
    if len(values):
        order = np.asarray(pc.sort_indices(values).to_numpy(), np.int64)  # NaN above every number, as Spark
        ranks[order] = np.arange(len(values))
    best = running_best(ranks, valid, segments, kind == "max")
    at = np.where(seen_count > 0, best[last] if len(best) else -1, -1)
    return values.take(pa.array(np.where(at >= 0, at, 0), mask=at < 0)).cast(result_type) if len(values) else \
        pa.nulls(len(seen_end), result_type)


def aggregate_type(kind: str, value_type: pa.DataType) -> pa.DataType:
    """Spark's type of an aggregate of a column of ``value_type``."""
    if kind == "count":
        return pa.int64()
    if kind == "sum":
        if pa.types.is_integer(value_type):
            return pa.int64()
        if pa.types.is_decimal(value_type):
            return aggregate.decimal_sum_type(value_type)
        return pa.float64()
    if kind == "avg":
        return aggregate.decimal_avg_type(value_type) if pa.types.is_decimal(value_type) else pa.float64()
    return value_type


__all__ = ["FIELD", "MeasureContext", "Matches", "Rows", "aggregate_type", "measure_values"]
