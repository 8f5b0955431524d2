"""Row-local DEFINE conditions of MATCH_RECOGNIZE as one bit per variable per row.

Input: the rows sorted by partition and ORDER BY, where each row's partition starts and ends, the
pattern's variables (bit v is variable v) and their row-local DEFINEs (planner/mr_analyze.py
sorted them). Output: a uint64 per row with bit v set when the row satisfies variable v's
DEFINE; a variable without DEFINE is TRUE on every row (docs/semantics.md, "MATCH_RECOGNIZE").

``PREV(e, n)`` / ``NEXT(e, n)`` become references to columns shifted by n rows within the
partition (NULL outside it), qualifiers are dropped (in a row-local DEFINE every column is the
current row's), then the condition is evaluated by cerql's expression evaluator (cerql.expr,
Spark SQL semantics) over all rows at once; NULL counts as false. On Spark the same bits are
computed in the JVM (cerql/spark/mr_bits.py) and taken as they are (:func:`given_bits`).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pyarrow as pa
from sqlglot import exp

from cerql import mr_functions as mx
from cerql.ast import SqlExpr
from cerql.errors import AnalysisError, UnsupportedError
from cerql.expr import ExprError, compile_expr, evaluate, guard

SHIFTED = "__cerql_mr_d{}"  # the name of a (possibly shifted) input column the rewritten DEFINE reads


def define_bits(table: pa.Table, part_start: np.ndarray, part_end: np.ndarray, variables: tuple[str, ...],
                defines: Mapping[str, SqlExpr], text: str) -> np.ndarray:
    """The DEFINE bits of every row of ``table`` (sorted; row i's partition is rows
    ``part_start[i]`` to ``part_end[i] - 1``). ``defines`` maps canonical variable names to
    row-local conditions."""
    n = table.num_rows
    bits = np.zeros(n, np.uint64)
    lowered = {c.lower(): c for c in table.column_names}
    for v, variable in enumerate(variables):
        condition = defines.get(variable)
        if condition is None:
            bits |= np.uint64(1) << np.uint64(v)
            continue
        holds = evaluate_define(table, part_start, part_end, condition, lowered, text)
        bits |= holds.astype(np.uint64) << np.uint64(v)
    return bits


def given_bits(table: pa.Table, column: str) -> np.ndarray:
    """The DEFINE bits a caller computed (cerql/spark/mr_lower.py: in the JVM, as a signed
    BIGINT), as :func:`define_bits` gives them: a uint64 per row."""
    values = table.column(column).combine_chunks()
    if values.null_count:
        values = values.fill_null(0)
    return np.asarray(values.to_numpy(zero_copy_only=False)).astype(np.int64, copy=False).view(np.uint64)


def evaluate_define(table, part_start, part_end, condition: SqlExpr, lowered: dict[str, str], text: str) -> np.ndarray:
    """One row-local condition as a NumPy bool array (NULL: false)."""
    for column in condition.tree.find_all(exp.Column):
        if column.name.lower() not in lowered:
            raise AnalysisError.at(text, mx.node_offset(condition, column), f"Unknown column '{column.name}'",
                                   "UNKNOWN_COLUMN", f"the input has columns {', '.join(table.column_names)}")
    needed: dict[tuple[str, int], str] = {}
    tree = _rewrite(condition.tree.copy(), 0, lowered, needed, condition, text)
    inputs = _shifted_columns(table, part_start, part_end, needed)

    def positioned(err: ExprError):
        return err.cls.at(text, mx.node_offset(condition), err.message, err.error_class, err.hint)

    try:
        fn = guard(compile_expr(tree, lambda col: col.name), positioned)
    except ExprError as err:
        raise positioned(err) from None
    value = evaluate(fn, inputs)
    if pa.types.is_null(value.type):
        return np.zeros(table.num_rows, bool)
    if not pa.types.is_boolean(value.type):
        raise AnalysisError.at(text, mx.node_offset(condition), f"DEFINE condition '{condition.text}' is "
                               f"{value.type}, not boolean", "MATCH_RECOGNIZE_DEFINE_NOT_BOOLEAN",
                               "a DEFINE condition must be true or false for a row, e.g. price > PREV(price)")
    return np.asarray(value.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


def _rewrite(node: exp.Expression, shift: int, lowered, needed, condition, text) -> exp.Expression:
    """``node`` with PREV/NEXT folded into shifted column references (``needed`` collects them:
    (input column, shift) -> name), RUNNING dropped and qualifiers removed."""
    name = mx.function_name(node)
    if name == mx.RUNNING:
        replaced = _rewrite(mx.arguments(node)[0], shift, lowered, needed, condition, text)
        return node.replace(replaced) if node.parent is not None else replaced
    if name in mx.PHYSICAL:
        args = mx.arguments(node)
        offset = mx.literal_offset(args[1]) if len(args) > 1 else 1
        step = -offset if name == mx.PREV else offset
        replaced = _rewrite(args[0], shift + step, lowered, needed, condition, text)
        return node.replace(replaced) if node.parent is not None else replaced
    if name is not None or mx.is_aggregate(node):  # history-dependent: exec/mr_threads.py evaluates it
        raise UnsupportedError.at(text, mx.node_offset(condition, node), f"{node.sql(dialect='spark')} in DEFINE "
                                  "reads the rows mapped so far, which DEFINE bits cannot hold",
                                  "MATCH_RECOGNIZE_UNSUPPORTED",
                                  "run the clause with the matcher exec/mr_engine.matcher_for picks")
    if isinstance(node, exp.Column):
        key = (lowered[node.name.lower()], shift)
        field = needed.setdefault(key, SHIFTED.format(len(needed)))
        replaced = exp.column(field)
        return node.replace(replaced) if node.parent is not None else replaced
    for child in list(node.iter_expressions()):
        _rewrite(child, shift, lowered, needed, condition, text)
    return node


def _shifted_columns(table, part_start, part_end, needed) -> pa.Table:
    """The table of the rewritten condition's columns: each input column moved by its shift
    within the partition, NULL where that leaves it."""
    n = table.num_rows
    rows = np.arange(n, dtype=np.int64)
    arrays, names = [], []
    for (column, shift), field in needed.items():
        values = table.column(column)
        if shift:
            at = rows + shift
            outside = (at < part_start) | (at >= part_end)
            values = values.take(pa.array(np.where(outside, 0, at), mask=outside)) if n else values
        arrays.append(values)
        names.append(field)
    if not arrays:  # a condition of constants only: a table of the right length
        return pa.table({"__cerql_mr_rows": pa.array(np.zeros(n, np.int8))})
    return pa.table(arrays, names=names)


__all__ = ["define_bits", "evaluate_define", "given_bits"]
