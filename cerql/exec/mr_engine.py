"""The local MATCH_RECOGNIZE engine: one Arrow table in, the clause's result table out.

Input: a checked :class:`cerql.mr_ast.MatchRecognize`, the input table, the query text (for
positions) and a :class:`Matcher` for one partition's DEFINE bits: :func:`matcher_for` picks
:class:`PikeMatcher` (the numba Pike VM) when every DEFINE is row-local, else the thread matcher
of exec/mr_threads.py, which evaluates the history-dependent DEFINEs itself (this package never
imports the planner), so a caller writes::

    analysis, nfa, skip = planner.mr_analyze.compiled(clause, text)
    matcher = matcher_for(clause, text, nfa, skip, analysis.row_local)
    result = run_match_recognize(clause, table, text, matcher)

Output: the result as docs/semantics.md "MATCH_RECOGNIZE", "The local engine" lays it out.

The steps:

1. Partitions: rows with equal PARTITION BY values (NULLs equal) form a partition; partitions
   are numbered, and output, in the order of their first row in the input.
2. Order: each partition sorted by ORDER BY (ASC/DESC; NULLS FIRST for ASC and LAST for DESC
   unless written; NaN above every number, as Spark orders it); rows that tie keep their input
   order (a stable sort).
3. DEFINE bits for every row at once (exec/mr_define.py) for the row-local DEFINEs, or the
   caller's (``bits``, computed by Spark); a variable whose DEFINE the matcher evaluates
   (``Matcher.history``) gets its bit set on every row.
4. The matcher per partition: the matches' first rows, ends and one label per mapped row.
5. The output rows and the measures (exec/mr_measures.py).

PARTITION BY and ORDER BY items may be expressions: evaluated here by cerql.expr, unless the
caller gives their values (``keys``, as Spark does); the DEFINE bits likewise (``bits``).

Limits: the whole input is in memory (it is one Arrow table); the matcher holds one partition's
bits and its matches at a time; the output, with one label per mapped row of every match, is
built at once.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from cerql import mr_ast
from cerql import mr_functions as mx
from cerql.errors import AnalysisError, UnsupportedError
from cerql.expr import ExprError, compile_expr, evaluate, guard
from cerql.exec import spark_keys
from cerql.exec.kernel.pike import match_partition
from cerql.exec.mr_define import define_bits, given_bits
from cerql.exec.mr_history import History
from cerql.exec.mr_measures import Matches, MeasureContext, Rows, measure_values
from cerql.exec.mr_threads import MAX_THREADS, ThreadMatcher
from cerql.mr_plan import Nfa, Skip

_ORDINAL = "__cerql_mr_ordinal"
_PART = "__cerql_mr_partition"
_KEY = "__cerql_mr_key{}"  # a key expression's values, evaluated here


class Matcher(Protocol):
    """The compiled pattern for one partition. ``match(bits, partition)`` (a uint64 per row, bit
    v for variable v's DEFINE; ``partition`` names the partition in errors) returns the matches
    in order: their first rows, their ends (exclusive) and one label per mapped row, match after
    match; ``label_variable[label]`` is the label's variable (an index into the pattern's
    variables) and ``label_excluded[label]`` whether the row lies in an exclusion ``{- -}``.
    A matcher that evaluates some DEFINEs itself names their variables (canonical) in
    ``history`` (absent: none); it is then also given the partition's sorted rows (``rows``).
    The keywords hand it a stretch of a partition (exec/kernel/pike.py, "A partition in pieces"),
    and the fourth value returned is then the first start row whose match is not known yet."""

    label_variable: np.ndarray
    label_excluded: np.ndarray

    def match(self, bits: np.ndarray, partition: str | None = None, *, first_row: int = 0, begin: int = 0,
              final: bool = True, numbered_from: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]: ...


def matcher_for(clause: mr_ast.MatchRecognize, text: str, nfa: Nfa, skip: Skip, row_local: frozenset[str],
                max_threads: int = MAX_THREADS) -> "Matcher":
    """The matcher of ``clause``: the Pike kernel when every DEFINE is row-local (``row_local``
    names those variables, canonical, as planner/mr_analyze.py sorted them), else the thread
    matcher (exec/mr_threads.py) with the other DEFINEs; ``max_threads`` bounds its live threads
    per partition."""
    variables = pattern_variables(clause)
    defines = {mx.canonical(d.variable): d.condition for d in clause.defines}
    history = {v: c for v, c in defines.items() if v not in row_local}
    if not history:
        return PikeMatcher(nfa, skip)
    subsets = subset_members(clause)
    return ThreadMatcher(nfa, skip, History(variables, subsets, history, text), max_threads)


def pattern_variables(clause: mr_ast.MatchRecognize) -> tuple[str, ...]:
    """The pattern's variables, canonical, in PATTERN order (a label's variable is its index)."""
    return tuple(dict.fromkeys(mx.canonical(v) for v in clause.variables))


def subset_members(clause: mr_ast.MatchRecognize) -> dict[str, frozenset[str]]:
    """Each SUBSET's name (canonical) and its variables."""
    return {mx.canonical(s.name): frozenset(mx.canonical(v) for v in s.variables) for s in clause.subsets}


def columns_read(clause: mr_ast.MatchRecognize, row_local: frozenset[str], names: Sequence[str]) -> list[str]:
    """The input columns (of ``names``) the result needs once the row-local DEFINEs' bits are
    given (``row_local``: those variables, canonical): ALL ROWS PER MATCH shows every input
    column; ONE ROW PER MATCH reads only those its measures, its other DEFINEs and its PARTITION
    BY / ORDER BY items name. Why: on Spark every column the matcher is handed crosses from the
    JVM to Python, the larger part of the query's cost (docs/benchmarks.md, "MATCH_RECOGNIZE")."""
    if clause.rows_per_match.all_rows:
        return list(names)
    exprs = [m.expr for m in clause.measures] + list(clause.partition_by) + [k.expr for k in clause.order_by]
    exprs += [d.condition for d in clause.defines if mx.canonical(d.variable) not in row_local]
    read = {c.name.lower() for e in exprs for c in e.tree.find_all(exp.Column) if not mx.is_star(c)}
    return [n for n in names if n.lower() in read]


class PikeMatcher:
    """The :class:`Matcher` of the Pike-VM kernel (exec/kernel/pike.py) over a compiled NFA."""

    history: frozenset[str] = frozenset()

    def __init__(self, nfa: Nfa, skip: Skip):
        self.nfa, self.skip, self.tables = nfa, skip, nfa.tables()
        labels = np.arange(nfa.n_labels, dtype=np.int64)
        count = max(len(nfa.variables), 1)
        self.label_variable = labels % count
        self.label_excluded = labels >= len(nfa.variables)

    def match(self, bits: np.ndarray, partition: str | None = None, *, first_row: int = 0, begin: int = 0,
              final: bool = True, numbered_from: int = 0):
        found = match_partition(self.nfa, bits, self.skip, self.tables, partition, first_row=first_row,
                                begin=begin, final=final, numbered_from=numbered_from)
        return found.starts, found.ends, found.labels, found.head


def run_match_recognize(clause: mr_ast.MatchRecognize, table: pa.Table, text: str, matcher: Matcher, *,
                        bits: str | None = None, keys: Sequence[str | None] | None = None) -> pa.Table:
    """The result of ``clause`` over ``table`` (module docstring).

    What a caller computed already (cerql/spark/mr_lower.py, in the JVM, with Spark's meaning of
    the expressions), by column of ``table``; neither column is an input column of the output:

    - ``bits``: the DEFINE bits (a 64-bit integer per row, signed or not, bit v for variable v as
      exec/mr_define.py sets them; a variable whose DEFINE the caller left to the matcher, or
      that has none, set on every row). No DEFINE is evaluated here then.
    - ``keys``: per PARTITION BY item, then per ORDER BY item, the column holding its value, or
      None: the engine reads the column the item names, or evaluates its expression (cerql.expr).
    """
    variables = pattern_variables(clause)
    defines = {mx.canonical(d.variable): d.condition for d in clause.defines}
    inputs = input_columns(table.column_names, bits, keys)
    table, partition_keys, order_keys = key_columns(clause, table, text, keys)
    partition_columns = [k.column for k in partition_keys]
    order_columns = [k.column for k in order_keys]

    part = partition_ids(table, partition_columns)
    order = sort_order(table, part, clause.order_by, order_columns)
    rows = table.take(pa.array(order))
    part = part[order]
    part_start, part_end, bounds = _partition_bounds(part)

    history = frozenset(getattr(matcher, "history", frozenset()))
    row_local = {v: c for v, c in defines.items() if v not in history}
    bits = given_bits(rows, bits) if bits is not None else define_bits(rows, part_start, part_end, variables,
                                                                         row_local, text)
    return match_sorted(clause, rows, bounds, bits, matcher, inputs, partition_keys, order_keys, text)


def match_sorted(clause: mr_ast.MatchRecognize, rows: pa.Table, bounds: np.ndarray, bits: np.ndarray,
                 matcher: Matcher, inputs: list[str], partition_keys: list["Key"], order_keys: list["Key"],
                 text: str) -> pa.Table:
    """Steps 4 and 5 over rows already sorted, partition after partition (``bounds``: where
    each starts, then the end), with their DEFINE bits: the result table. Partition p's
    matches are numbered from 1 (MATCH_NUMBER)."""
    part = np.repeat(np.arange(len(bounds) - 1, dtype=np.int64), np.diff(bounds))
    part_start, part_end = row_spans(bounds)
    history = bool(getattr(matcher, "history", frozenset()))
    matches = _match_all(bits, bounds, matcher,
                         lambda p: describe_partition(rows, partition_keys, int(bounds[p])), rows if history else None)
    out_rows = output_rows(clause, matches, part, bounds)
    return result_table(clause, rows, part_start, part_end, matches, out_rows, inputs, partition_keys, order_keys,
                        text)


def input_columns(names: Sequence[str], bits: str | None, keys: Sequence[str | None] | None) -> list[str]:
    """The input columns among ``names``: not the caller's DEFINE bits or key columns
    (``run_match_recognize``'s ``bits`` and ``keys``), which the output does not show."""
    hidden = ({bits} | set(keys or ())) - {None}
    return [c for c in names if c not in hidden]


def output_rows(clause: mr_ast.MatchRecognize, matches: Matches, part: np.ndarray, bounds: np.ndarray,
                unmatched: tuple[int, int, int] | None = None) -> "Rows":
    """The output rows of ``matches`` in the clause's layout (ONE ROW or ALL ROWS PER MATCH);
    ``unmatched`` limits the unmatched rows WITH UNMATCHED ROWS reports (``_all_rows``)."""
    if not clause.rows_per_match.all_rows:
        return _one_row(matches)
    return _all_rows(matches, clause.rows_per_match.mode, part, bounds, unmatched)


def result_table(clause: mr_ast.MatchRecognize, rows: pa.Table, part_start: np.ndarray, part_end: np.ndarray,
                 matches: Matches, out_rows: "Rows", inputs: list[str], partition_keys: list["Key"],
                 order_keys: list["Key"], text: str) -> pa.Table:
    """The result table: the key columns, the measures and, ALL ROWS PER MATCH, the input
    columns, one row per ``out_rows`` row (step 5 of the module docstring). ``rows``: the sorted
    rows; ``part_start``/``part_end``: per row, its partition's first row and end."""
    variables = pattern_variables(clause)
    subsets = subset_members(clause)
    all_rows = clause.rows_per_match.all_rows
    ctx = MeasureContext(rows, part_start, part_end, matches, out_rows, variables, subsets, text)
    shown = np.where(out_rows.row >= 0, out_rows.row, 0)
    names, arrays = [], []
    for key in partition_keys:  # ONE ROW PER MATCH: as the partition's first row holds it, as in the JVM
        names.append(key.name)  # (MatchRecognizeFunction): its rows may differ, -0.0 and 0.0
        arrays.append(ctx.gather(key.column, shown if all_rows else part_start[shown]))
    for key in order_keys if all_rows else []:
        names.append(key.name)
        arrays.append(ctx.gather(key.column, shown))
    for measure in clause.measures:
        names.append(measure.name)
        arrays.append(measure_values(measure.expr, ctx, default_final=not all_rows))
    named = {k.column for k in partition_keys + order_keys}
    for column in [c for c in inputs if c not in named] if all_rows else []:
        names.append(column)
        arrays.append(ctx.gather(column, shown))
    if not arrays:
        return pa.table({})
    return pa.Table.from_arrays(arrays, names=names)


class Key(NamedTuple):
    """A PARTITION BY or ORDER BY item: ``name``, its output column's name (a column's own
    name; an expression's text as written, whitespace collapsed, as ``upper(sym)``), and the
    ``column`` of the working table that holds its values."""

    name: str
    column: str


def key_columns(clause: mr_ast.MatchRecognize, table: pa.Table, text: str, given: Sequence[str | None] | None):
    """``(table, partition keys, order keys)``: the table with a column for each key expression
    the caller did not compute (``__cerql_mr_key<i>``, evaluated by cerql.expr), and the keys."""
    items = [(e, "PARTITION BY") for e in clause.partition_by] + [(k.expr, "ORDER BY") for k in clause.order_by]
    given = list(given) if given is not None else [None] * len(items)
    lowered = {c.lower(): c for c in table.column_names}
    keys = []
    for i, ((expr, where), column) in enumerate(zip(items, given)):
        named = _column_of(expr, lowered, text, where)
        name = named if named is not None else _written(expr)
        if column is None and named is None:
            column = _KEY.format(i)
            table = table.append_column(column, _key_values(expr, table, lowered, text))
        keys.append(Key(name, column if column is not None else named))
        kind = table.schema.field(keys[-1].column).type
        if _holds_map(kind):
            raise unorderable_key(expr, where, str(kind), text)
    return table, keys[:len(clause.partition_by)], keys[len(clause.partition_by):]


def unorderable_key(expr, clause: str, type_name: str, text: str) -> AnalysisError:
    """The error of a PARTITION BY or ORDER BY item (``clause``) whose type cannot be sorted
    nor grouped: a map, or a value holding one (Spark's rule: spark/expressions.py
    ``orderable``). The same on every engine, and before any row is read (docs/semantics.md,
    "On Spark")."""
    return AnalysisError.at(text, mx.node_offset(expr), f"{clause} item '{_written(expr)}' has type {type_name}, which "
                            "cannot be sorted or grouped", "MATCH_RECOGNIZE_KEY_NOT_ORDERABLE",
                            "cast it to a string or pick a field (m['key'], s.field), in the key or in a subquery "
                            "before MATCH_RECOGNIZE")


def _holds_map(kind: pa.DataType) -> bool:
    """Whether an Arrow type is a map or holds one (in a struct's field or a list's values)."""
    if pa.types.is_map(kind):
        return True
    if pa.types.is_struct(kind):
        return any(_holds_map(kind.field(i).type) for i in range(kind.num_fields))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return _holds_map(kind.value_type)
    return False


def _written(expr) -> str:
    """The output name of a key expression: its text as written, whitespace collapsed (Spark's
    own name for a call written in lower case, ``upper(sym)``; Spark names ``x + 1`` as
    ``(x + 1)``), the rule of CEQL's key expressions (docs/semantics.md)."""
    return " ".join(expr.source.split()) if expr.source else expr.text


def _key_values(expr, table: pa.Table, lowered: dict[str, str], text: str):
    """A key expression's value on every row, by cerql.expr (Spark's meaning, or a CeqlError
    naming spark.cer_sql)."""
    for column in expr.tree.find_all(exp.Column):
        if not mx.is_star(column) and column.name.lower() not in lowered:
            raise AnalysisError.at(text, mx.node_offset(expr, column), f"Unknown column '{column.name}'",
                                   "UNKNOWN_COLUMN", f"the input has columns {', '.join(lowered.values())}")

    def positioned(err: ExprError):
        return err.cls.at(text, mx.node_offset(expr), err.message, err.error_class, err.hint)

    try:
        fn = guard(compile_expr(expr.tree, lambda col: lowered[col.name.lower()]), positioned)
    except ExprError as err:
        raise positioned(err) from None
    return evaluate(fn, table)


def _column_of(expr, lowered: dict[str, str], text: str, clause: str) -> str | None:
    """The input column a PARTITION BY or ORDER BY item names, None when it is an expression."""
    tree = expr.tree
    while isinstance(tree, exp.Paren):
        tree = tree.this
    if mx.is_star(tree):
        raise UnsupportedError.at(text, mx.node_offset(expr), f"{clause} takes columns and expressions, not "
                                  f"'{expr.text}'", "MATCH_RECOGNIZE_UNSUPPORTED", "name the columns")
    if not isinstance(tree, exp.Column):
        return None
    real = lowered.get(tree.name.lower())
    if real is None:
        raise AnalysisError.at(text, mx.node_offset(expr, tree), f"Unknown column '{tree.name}' in {clause}",
                               "UNKNOWN_COLUMN", f"the input has columns {', '.join(lowered.values())}")
    return real


def partition_ids(table: pa.Table, columns: list[str]) -> np.ndarray:
    """Each row's partition, numbered in the order of the partitions' first rows (NULLs equal;
    keys equal as Spark groups them, exec/spark_keys.py: -0.0 and 0.0, NaNs, structs and arrays)."""
    n = table.num_rows
    if not columns or n == 0:
        return np.zeros(n, np.int64)
    keys = np.stack([spark_keys.group_codes(table.column(column)) for column in columns], axis=1)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[np.asarray(inverse).reshape(-1)]


def spark_sort_fields(name: str, values, descending: bool, nulls_first: bool) -> list[tuple[str, pa.Array, str]]:
    """Arrow sort keys ``(field name, values, direction)`` that order ``values`` as Spark's
    ORDER BY does: NULLs first or last as asked, NaN above every number; a struct or an array
    by its rank in Spark's order (exec/spark_keys.py)."""
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if pa.types.is_dictionary(values.type):
        values = values.cast(values.type.value_type)
    if spark_keys.is_nested(values.type):
        values = spark_keys.ranks(values)
    direction = "descending" if descending else "ascending"
    null = np.asarray(values.is_null().to_numpy(zero_copy_only=False), bool)
    fields = [(f"{name}_null", pa.array(~null if nulls_first else null), "ascending")]  # False sorts first
    if pa.types.is_floating(values.type):
        fields.append((f"{name}_nan", pc.fill_null(pc.is_nan(values), False), direction))
    fields.append((f"{name}_value", values, direction))
    return fields


def sort_order(table: pa.Table, part: np.ndarray, keys: tuple[mr_ast.SortKey, ...], columns: list[str]) -> np.ndarray:
    """The row order: by partition, then ORDER BY (module docstring), then input order."""
    n = table.num_rows
    fields = {_PART: pa.array(part, pa.int64())}
    sort_keys = [(_PART, "ascending")]
    for k, (key, column) in enumerate(zip(keys, columns)):
        nulls_first = key.nulls_first if key.nulls_first is not None else not key.descending
        for name, values, direction in spark_sort_fields(f"k{k}", table.column(column), key.descending, nulls_first):
            fields[name] = values
            sort_keys.append((name, direction))
    fields[_ORDINAL] = pa.array(np.arange(n, dtype=np.int64))
    sort_keys.append((_ORDINAL, "ascending"))
    order = pc.sort_indices(pa.table(fields), sort_keys=sort_keys)
    return np.asarray(order.to_numpy(), np.int64)


def _partition_bounds(part: np.ndarray):
    """Per row, its partition's first row and end; and the partitions' bounds."""
    n = len(part)
    cuts = np.flatnonzero(np.diff(part)) + 1 if n else np.zeros(0, np.int64)
    bounds = np.concatenate([[0], cuts, [n]]).astype(np.int64) if n else np.zeros(1, np.int64)
    return (*row_spans(bounds), bounds)


def row_spans(bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, its partition's first row and end, from the partitions' ``bounds`` (where each
    starts, then the end)."""
    sizes = np.diff(bounds)
    return np.repeat(bounds[:-1], sizes), np.repeat(bounds[1:], sizes)


def describe_partition(rows: pa.Table, keys: list[Key], at: int) -> str | None:
    """The partition of sorted row ``at``, for an error message (``sym=a``)."""
    if not keys:
        return None
    return ", ".join(f"{k.name}={rows.column(k.column)[at].as_py()!r}" for k in keys)


def _match_all(bits: np.ndarray, bounds: np.ndarray, matcher: Matcher, describe, rows: pa.Table | None) -> Matches:
    """Every partition's matches, with sorted-row positions and MATCH_NUMBER from 1; ``rows``
    (the sorted table) is given to a matcher that evaluates DEFINEs itself, a partition at a time."""
    found = []
    for p in range(len(bounds) - 1):
        lo, hi = int(bounds[p]), int(bounds[p + 1])
        if rows is None:
            s, e, lab, _ = matcher.match(bits[lo:hi], describe(p))
        else:
            s, e, lab, _ = matcher.match(bits[lo:hi], describe(p), rows=rows.slice(lo, hi - lo))
        found.append(Found(np.asarray(s, np.int64) + lo, np.asarray(e, np.int64) + lo, lab, p, 1))
    return collect_matches(found, matcher)


class Found(NamedTuple):
    """A matcher's matches of one partition (or stretch of it), at positions of the rows the
    result is built over: ``partition`` its index, ``first_number`` the first's MATCH_NUMBER."""

    starts: np.ndarray
    ends: np.ndarray
    labels: np.ndarray
    partition: int
    first_number: int


def collect_matches(found: Sequence[Found], matcher: Matcher) -> Matches:
    """The measures' view (exec/mr_measures.py) of the matches found, in order."""
    def cat(parts, dtype=np.int64):
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)

    start = cat([np.asarray(f.starts, np.int64) for f in found])
    end = cat([np.asarray(f.ends, np.int64) for f in found])
    label = cat([np.asarray(f.labels, np.int64) for f in found])
    numbers = cat([np.arange(f.first_number, f.first_number + len(f.starts), dtype=np.int64) for f in found])
    partitions = cat([np.full(len(f.starts), f.partition, np.int64) for f in found])
    offsets = np.zeros(len(start) + 1, np.int64)
    np.cumsum(end - start, out=offsets[1:])
    variable = np.asarray(matcher.label_variable, np.int64)[label] if len(label) else np.zeros(0, np.int64)
    excluded = np.asarray(matcher.label_excluded, bool)[label] if len(label) else np.zeros(0, bool)
    return Matches(start, end, numbers, partitions, offsets, variable, excluded)


def _one_row(matches: Matches) -> Rows:
    length = matches.end - matches.start
    return Rows(np.arange(len(length), dtype=np.int64), np.where(length > 0, matches.end - 1, matches.start),
                length, length)


def _all_rows(matches: Matches, mode: str, part: np.ndarray, bounds: np.ndarray,
              unmatched: tuple[int, int, int] | None = None) -> Rows:
    """One output row per mapped row outside an exclusion, an empty match's row (SHOW EMPTY
    MATCHES and WITH UNMATCHED ROWS), and the unmatched rows (WITH UNMATCHED ROWS), in the
    order of the matches, each match's rows in row order, unmatched rows where they lie.
    ``unmatched = (lo, hi, covered)``: only rows in ``lo..hi-1`` may be reported unmatched, and
    those before ``covered`` are covered by earlier matches (exec/mr_incremental.py)."""
    m = len(matches.start)
    length = matches.end - matches.start
    owner = np.repeat(np.arange(m, dtype=np.int64), length)
    within = np.arange(len(owner), dtype=np.int64) - np.repeat(matches.offsets[:-1], length)
    keep = ~matches.excluded
    match = [owner[keep]]
    row = [matches.start[owner[keep]] + within[keep]]
    running = [within[keep] + 1]
    final = [length[owner[keep]]]
    if mode in (mr_ast.SHOW_EMPTY, mr_ast.WITH_UNMATCHED):
        empty = np.flatnonzero(length == 0)
        match.append(empty)
        row.append(matches.start[empty])
        running.append(np.zeros(len(empty), np.int64))
        final.append(np.zeros(len(empty), np.int64))
    match, row, running, final = (np.concatenate(a).astype(np.int64) for a in (match, row, running, final))
    order = np.argsort(match, kind="stable")
    match, row, running, final = match[order], row[order], running[order], final[order]
    if mode != mr_ast.WITH_UNMATCHED:
        return Rows(match, row, running, final)
    n = len(part)
    cover = np.zeros(n + 1, np.int64)
    np.add.at(cover, matches.start, 1)
    np.add.at(cover, matches.end, -1)
    covered = np.cumsum(cover[:-1]) > 0
    covered[matches.start[length == 0]] = True
    if unmatched is not None:
        lo, hi, before = unmatched
        covered[:max(lo, before)] = True
        covered[hi:] = True
    unmatched = np.flatnonzero(~covered).astype(np.int64)
    anchor = np.concatenate([matches.start[match], unmatched])
    partition = np.concatenate([part[matches.start[match]] if len(match) else np.zeros(0, np.int64), part[unmatched]])
    order = np.lexsort((anchor, partition))  # stable: a match's rows stay in order
    none = np.zeros(len(unmatched), np.int64)
    return Rows(np.concatenate([match, none - 1])[order], np.concatenate([row, unmatched])[order],
                np.concatenate([running, none])[order], np.concatenate([final, none])[order])


__all__ = ["Found", "Key", "Matcher", "PikeMatcher", "collect_matches", "columns_read", "input_columns", "describe_partition", "key_columns",
           "match_sorted", "matcher_for", "output_rows", "partition_ids", "pattern_variables", "result_table", "row_spans", "run_match_recognize",
           "sort_order", "subset_members", "unorderable_key"]
