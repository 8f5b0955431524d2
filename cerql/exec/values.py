"""Running compiled expressions on Arrow tables.

Input: a function from planner/arrow_expr.py (``table -> value``) and a table. Output: a whole
Arrow array, or a NumPy bool array for predicates (NULL counts as false, DESIGN.md 4.1).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cerql.errors import UnsupportedError
from cerql.exec.aggregate import BIGINT_MAX


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


def signed_columns(table: pa.Table) -> pa.Table:
    """Unsigned 64-bit columns as BIGINT, Spark's type for them (Spark has no unsigned types and
    ``createDataFrame`` reads a pandas uint64 column as bigint). Spark turns a value above
    2**63 - 1 into NULL without a word; cerql refuses it instead of losing it."""
    for k, field in enumerate(table.schema):
        if not pa.types.is_uint64(field.type):
            continue
        column = table.column(k)
        top = pc.max(column).as_py() if len(column) else None
        if top is not None and top > BIGINT_MAX:
            raise UnsupportedError(
                f"Column '{field.name}' is unsigned 64-bit and holds {top}, above BIGINT's maximum 2**63 - 1",
                error_class="UNSUPPORTED_COLUMN_TYPE", params={"column": field.name},
                hint="Spark has no unsigned 64-bit type (it would read the value as NULL): cast the column "
                     "to float64 or to a decimal before the query, or subtract an offset")
        table = table.set_column(k, field.with_type(pa.int64()), pc.cast(column, pa.int64()))
    return table
