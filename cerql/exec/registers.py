"""The kernel's view of a plan's register checks (seed 002; planner/registers.py).

:class:`RegisterSpec` turns ``plan.registers`` into the arrays the kernel reads
(``kernel.RegisterPlan``) and computes, per table of stream rows, each event's value of both
sides of every check (``sides``), with :func:`side_values`: the side's compiled function over
"var.col" columns, applied to the rows, as NumPy arrays the kernel compares
(exec/kernel/registers.py): int64 keys (the values, or the bits of float64 values), float64
values, and validity. The function is the one the reference evaluator's predicate applies to
the same rows, so the kernel compares what it compares; only the comparison itself moves into
the kernel, with Arrow's rules (integers as int64, a float on either side makes both float64,
NaN compares false but for !=). The driver builds one spec per run (``driver.open_run``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cerql.automaton import label_bits
from cerql.exec import kernel


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


class RegisterSpec:
    """The kernel's view of a plan's register checks (``plan.registers``, planner/registers.py):
    per check, what it is (a comparison or an aggregate), the label bits of its two variables, its
    operator, whether it compares floats and whether both variables hold one event; ``sides``
    computes each event's value of both sides for a table of stream rows."""

    OPS = {"=": kernel.OP_EQ, "!=": kernel.OP_NE, ">": kernel.OP_GT, ">=": kernel.OP_GE, "<": kernel.OP_LT,
           "<=": kernel.OP_LE}
    KINDS = {None: kernel.COMPARE, "count_events": kernel.AGG_COUNT_EVENTS, "count": kernel.AGG_COUNT,
             "sum": kernel.AGG_SUM, "avg": kernel.AGG_AVG, "min": kernel.AGG_MIN, "max": kernel.AGG_MAX}

    def __init__(self, checks, labels):
        bit = label_bits(labels)
        self.checks = tuple(checks)
        self.count = len(self.checks)
        self.x_bits = np.array([bit[c.x] for c in self.checks] or [0], np.int64)
        self.y_bits = np.array([bit[c.y] for c in self.checks] or [0], np.int64)
        self.ops = np.array([self.OPS[c.op] for c in self.checks] or [0], np.int64)
        self.kinds = np.array([self.KINDS[c.aggregate] for c in self.checks] or [0], np.int64)
        self.floats = np.array([c.floating for c in self.checks] or [False], np.bool_)
        self.singles = np.array([c.single for c in self.checks] or [False], np.bool_)
        self.resets = np.array([bit[c.reset] if c.reset else 0 for c in self.checks] or [0],
                               np.int64)
        # what the kernel reads: the same arrays (``rise`` changes kinds in place)
        self.plan = kernel.RegisterPlan(self.count, self.kinds, self.x_bits, self.y_bits, self.ops, self.floats,
                                        self.singles, self.resets)

    @classmethod
    def none(cls) -> "RegisterSpec":
        return cls((), ())

    def for_stream(self, sides) -> "RegisterSpec":
        """This spec, with each sum whose values over the whole stream are all non-negative
        numbers adding up to less than 2**62 (so no sum can overflow) made a rising sum
        (kernel.AGG_SUM_RISING). Only an engine that sees every value can know it: the local
        engine here, a Spark task from the column spark/lower.py computes (``rise``)."""
        mask = 0
        for p, check in enumerate(self.checks):
            if check.aggregate != "sum":
                continue
            values = sides.fx_num[:, p][sides.fx_ok[:, p]]  # as float64, integers too (registers.side_values)
            if np.all(values >= 0.0) and float(values.sum()) < 2.0**62:  # NaN fails >= 0
                mask |= 1 << p
        return self.rise(mask)

    def rise(self, mask: int) -> "RegisterSpec":
        """Make the sums of the checks in ``mask`` (bit p: check p) rising sums."""
        for p, check in enumerate(self.checks):
            if check.aggregate == "sum" and mask >> p & 1:
                self.kinds[p] = kernel.AGG_SUM_RISING
        return self

    @staticmethod
    def rising_candidates(checks) -> list[tuple[int, str]]:
        """(check index, column) of each sum that may be a rising sum: a sum of one column."""
        return [(p, c.left_columns[0]) for p, c in enumerate(checks)
                if c.aggregate == "sum" and len(c.left_columns) == 1]

    def empty_sides(self) -> kernel.Sides:
        shape = (1, kernel.MAX_REGISTERS)
        return kernel.Sides(*(np.zeros(shape, np.int64), np.zeros(shape, np.float64), np.zeros(shape, np.bool_)) * 2)

    def sides(self, table) -> kernel.Sides:
        """(f keys, f values, f valid, g keys, g values, g valid), each (rows, MAX_REGISTERS):
        column p holds check p's left side as if each row were its x, and its right side as if
        each row were its y. Keys are int64 values, or the bits of float64 values."""
        n = table.num_rows
        out = [np.zeros((n, kernel.MAX_REGISTERS), t) for t in (np.int64, np.float64, np.bool_) * 2]
        for p, check in enumerate(self.checks):
            for k, (fn, var, columns) in enumerate(((check.left, check.x, check.left_columns),
                                                    (check.right, check.y, check.right_columns))):
                keys, nums, ok = side_values(fn, var, columns, check.floating, table)
                out[3 * k][:, p], out[3 * k + 1][:, p], out[3 * k + 2][:, p] = keys, nums, ok
        return kernel.Sides(*out)
