"""WITHIN as the engines apply it: the values a window is measured on, its amount in their
type, and which rows a later result can still reach (docs/semantics.md, "Limits": the rows
a Spark task keeps).

A result spans at most the window: its first event's value (a position for ``n EVENTS``, a
time or an ordering value otherwise) is at least its last event's value less the amount (the
kernel's cutoff, exec/kernel/stepping.py, keeps to the same rule in its own loop). So once an
engine has processed a substream's rows up to an ``edge`` (the least value a later result can
end at), a row is still reachable exactly when its value is at least ``edge - amount``:
:func:`reachable`. The Spark task keeps its rows from there (exec/task.py), a streaming bucket
its rows and state chunks (spark/streaming/processor.py, state.py); this module is the one
place that says so.
"""

from __future__ import annotations

import math

import numpy as np

from cerql.exec.stream import Stream
from cerql.plan import QueryPlan, TaskPlan


def kernel_window(plan: TaskPlan, dtype) -> tuple[bool, int | float]:
    """(windowed, amount) for window values of ``dtype``: on integer values (positions,
    microseconds, integer columns) a fractional amount n means start >= end - floor(n)."""
    w = plan.window
    if w is None:
        return False, 0
    amount = float(w.amount) if w.kind == "column" else w.amount
    if np.dtype(dtype).kind in "iu":
        return True, int(math.floor(amount))
    return True, float(amount)


def stream_values(plan: QueryPlan, stream: Stream) -> np.ndarray:
    """The kernel's window values over a whole stream: positions within the substream for
    n EVENTS, the ordering column's values for a time or column window, zeros without one."""
    n = stream.table.num_rows
    w = plan.window
    if w is None:
        return np.zeros(n, np.int64)
    if w.kind == "events":
        values = np.arange(n, dtype=np.int64)
        for lo, hi in stream.bounds:
            values[lo:hi] -= lo
        return values
    return stream.window_values


def reach_floor(edge, amount):
    """The least value a row may have and still be in a result that ends at ``edge`` or
    later (module docstring)."""
    return edge - amount


def reachable(values: np.ndarray, edge, amount) -> np.ndarray:
    """Per row of ``values``, whether a result ending at ``edge`` or later can still hold it."""
    return values >= reach_floor(edge, amount)


def first_reachable(values: np.ndarray, edge, amount) -> int:
    """The index of the first reachable row of ascending ``values``: the rows from it on are
    those :func:`reachable` keeps."""
    return int(np.searchsorted(values, reach_floor(edge, amount), side="left"))


def last_edge(value, amount):
    """The last edge at which a row of ``value`` is still reachable: past it, the row leaves
    the window."""
    return value + amount
