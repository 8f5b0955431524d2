"""Each event's value of one side of a register check (seed 002; planner/registers.py).

Input: the side's compiled function over "var.col" columns and a table of stream rows. Output:
NumPy arrays the kernel compares (exec/kernel/registers.py): int64 keys (the values, or the
bits of float64 values), float64 values, and validity. The function is the one the reference
evaluator's predicate applies to the same rows, so the kernel compares what it compares; only
the comparison itself moves into the kernel, with Arrow's rules (integers as int64, a float on
either side makes both float64, NaN compares false but for !=).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def side_values(fn, var: str, columns, floating: bool, table: pa.Table):
    """(keys, values, valid) of ``fn`` on each row of ``table`` taken as the event of ``var``."""
    n = table.num_rows
    value = fn(pa.table({f"{var}.{c}": table.column(c) for c in columns}, schema=None))
    if isinstance(value, pa.Scalar):
        value = pa.array([value.as_py()] * n, value.type)
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    valid = np.asarray(value.is_valid().to_numpy(zero_copy_only=False), np.bool_)
    if floating:
        # unchecked: Spark casts a BIGINT above 2**53 to the nearest DOUBLE, Arrow's checked cast refuses
        nums = np.asarray(pc.fill_null(pc.cast(value, pa.float64(), safe=False), 0.0).to_numpy(zero_copy_only=False),
                          np.float64)
        return nums.view(np.int64).copy(), nums, valid
    kind = value.type
    if pa.types.is_date(kind):
        value = pc.cast(value, pa.int32())
    keys = np.asarray(pc.fill_null(pc.cast(value, pa.int64()), 0).to_numpy(zero_copy_only=False), np.int64)
    return keys, keys.astype(np.float64), valid
