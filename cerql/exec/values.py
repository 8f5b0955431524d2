"""Running compiled expressions on Arrow tables.

Input: a function from planner/arrow_expr.py (``table -> value``) and a table. Output: a whole
Arrow array, or a NumPy bool array for predicates (NULL counts as false, DESIGN.md 4.1).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def evaluate(fn: Callable, table: pa.Table) -> pa.Array:
    """Run a compiled expression on a table; scalars are broadcast to the table's length."""
    value = fn(table)
    if isinstance(value, pa.Scalar):
        return pa.array([value.as_py()] * table.num_rows, type=value.type)
    if isinstance(value, pa.ChunkedArray):
        return value.combine_chunks()
    return value


def evaluate_predicate(fn: Callable, table: pa.Table):
    """A predicate as a NumPy bool array; NULL counts as false."""
    value = evaluate(fn, table)
    if pa.types.is_null(value.type):
        value = pa.array([False] * len(value), pa.bool_())
    return np.asarray(pc.fill_null(value, False).to_numpy(zero_copy_only=False), dtype=bool)


