"""Aggregates over a variable's events, computed by the local engines (planner/aggregates.py).

Input: the kind of aggregate and the column's values at the variable's events, in stream order
(None for ``count(var)``, which gets the events). Output: the value Spark's aggregate of the same
name gives over those rows, so that ``cerql.run`` and ``cer_sql`` agree: NULLs skipped by sum,
avg, min, max, count(col) and collect_list, kept by first and last; NaN above every number for
min and max, as Spark orders it. A sum of integers is a BIGINT that must not overflow: Spark 4
(ANSI mode) raises ARITHMETIC_OVERFLOW when an addition in stream order leaves the BIGINT range,
and so does this module (Python's integers would otherwise grow past what Arrow can hold).
"""

from __future__ import annotations

import math

from cerql.errors import ExecutionError

BIGINT_MIN, BIGINT_MAX = -(2**63), 2**63 - 1


def sum_overflow(detail: str = "") -> ExecutionError:
    """Spark's ANSI error for a BIGINT sum that leaves the range, raised by this module and by the
    kernel's sum registers (exec/driver.py)."""
    return ExecutionError(f"[ARITHMETIC_OVERFLOW] sum() overflows BIGINT{detail}", error_class="ARITHMETIC_OVERFLOW",
                          hint="cast the column to DOUBLE or DECIMAL before the query", params={"kind": "sum"})


def _is_nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def value(kind: str, events: list, values: list | None):
    """The aggregate of ``values`` (the column at ``events``), or of ``events`` for count(var)."""
    if values is None:
        return len(events)
    present = [v for v in values if v is not None]
    if kind == "count":
        return len(present)
    if kind == "collect_list":
        return present
    if kind == "first":
        return values[0] if values else None
    if kind == "last":
        return values[-1] if values else None
    if not present:
        return None
    if kind == "sum":
        total = present[0]
        for v in present[1:]:
            total = total + v
            if isinstance(total, int) and not BIGINT_MIN <= total <= BIGINT_MAX:
                raise sum_overflow(f" after adding {v} (total {total})")
        return total
    if kind == "avg":
        total = 0.0
        for v in present:
            total += v
        return total / len(present)
    numbers = [v for v in present if not _is_nan(v)]
    if kind == "max":
        return math.nan if len(numbers) < len(present) else max(numbers)
    if kind == "min":
        return min(numbers) if numbers else math.nan
    raise ValueError(f"unknown aggregate {kind}")  # pragma: no cover - planner/aggregates.py refuses it
