"""Which rows of a stream can take part in a match, and what a result's label bits stand for.

Every engine drops the same rows before matching (DESIGN.md 3 and 6.2), each in its own
medium: the local engine and the SQL-cell function on Arrow tables (``cerql.exec.stream``),
Spark in column expressions (``cerql.spark.lower.kept_rows``). This module says which rows,
once for all of them:

- a row with a NULL in one of :func:`non_null_columns` (the first ordering column and the
  partition keys) is in no substream and has no place in the order;
- unless the query counts positions, a row whose condition bits contain none of
  :func:`firing_masks` fires no transition but the TRUE gaps, so it can be neither marked nor
  needed (every gap of a pattern without `:`, `:+`, STRICT or `n EVENTS` admits any number of
  events) and the results do not change when it is gone.

Label bits: bit 0 of a label is START, bit k + 1 the k-th selected variable
(``cerql.exec.automaton``); :func:`label_bits` is that map.
"""

from __future__ import annotations

from typing import Iterable


def non_null_columns(plan) -> tuple[str, ...]:
    """The stream columns a row must have non-NULL to take part in a match."""
    return (plan.order_columns[0],) + tuple(plan.substream_columns)


def firing_masks(plan) -> list[int] | None:
    """The condition sets of which a row must have every bit of one to be kept, or None to
    keep every row (the query counts positions, or a TRUE transition marks events)."""
    return None if plan.uses_positions else plan.automaton.firing_masks()


def label_bits(labels: Iterable[str]) -> dict[str, int]:
    """``{variable: its label bit}`` for the selected variables in ``labels`` order."""
    return {v: 1 << (k + 1) for k, v in enumerate(labels)}
