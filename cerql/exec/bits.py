"""Which rows of a stream can take part in a match.

Every engine drops the same rows before matching (docs/semantics.md, "Rows that take no part"
and "On Spark"), each in its own medium: the local engine and the SQL-cell function on Arrow
tables (``cerql.exec.stream``), Spark in column expressions (``cerql.spark.lower.kept_rows``).
This module says which rows, once for all of them:

- a row with a NULL in one of :func:`non_null_columns` (the first ordering column and the
  partition keys) is in no substream and has no place in the order;
- unless the query counts positions, a row whose condition bits contain none of
  :func:`firing_masks` fires no transition but the TRUE gaps, so it can be neither marked nor
  needed (every gap of a pattern without `:`, `:+`, STRICT or `n EVENTS` admits any number of
  events) and the results do not change when it is gone.

A query that counts positions cannot forget such a row, but it can forget its content: the row
only moves every run along the TRUE gaps (an *inert* event). :func:`inert_steps` says how many
inert events in a row have the effect of any longer run of them, so Spark drops the inert rows
before they reach Python, sends each kept row's position in its substream, and the task puts
back at most that many inert events per gap (``cerql.exec.task``);
:func:`gap_masks` says when this applies.

What a result's label bits stand for is the automaton's (``cerql.automaton.label_bits``).
"""

from __future__ import annotations


def non_null_columns(plan) -> tuple[str, ...]:
    """The stream columns a row must have non-NULL to take part in a match."""
    return (plan.order_columns[0],) + tuple(plan.substream_columns)


def firing_masks(plan) -> list[int] | None:
    """The condition sets of which a row must have every bit of one to be kept, or None to
    keep every row (the query counts positions, or a TRUE transition marks events)."""
    return None if plan.uses_positions else plan.automaton.firing_masks()


def inert_steps(automaton) -> int | None:
    """The least k >= 1 such that k inert events in a row leave every run where any longer
    run of them does (the TRUE steps reach a fixed point after k), or None when they never do
    (a cycle of TRUE steps), when a TRUE step can end a match (an inert event would then
    have results), or when inert events move the initial state (the number of rows before a
    substream's first kept row is not sent, and must not matter). An inert event moves a set of automaton states to the targets of their
    TRUE transitions; that map is a union over states, so checking single states suffices."""
    if automaton.right_sides():  # the right sides of UNLESS move on inert events of their own
        return None
    true = {}
    for t in automaton.transitions:
        if not t.required:
            true.setdefault(t.source, set()).add(t.target)
    if any(automaton.final & targets for targets in true.values()):
        return None
    if true.get(automaton.initial) != {automaton.initial}:  # rows before a substream's first kept
        return None                                         # one would count: Spark does not say how many

    def step(states: frozenset) -> frozenset:
        return frozenset(x for q in states for x in true.get(q, ()))

    worst = 1
    for q in range(automaton.n_states):
        seen = [frozenset({q})]
        while True:
            nxt = step(seen[-1])
            if nxt == seen[-1]:
                worst = max(worst, len(seen) - 1)
                break
            if nxt in seen:  # a cycle: never settles
                return None
            seen.append(nxt)
    return worst


def gap_masks(plan) -> list[int] | None:
    """For a query that counts positions: the condition sets a kept row must have every bit of
    one of (as :func:`firing_masks`), when the other rows can be replaced by the gaps between
    positions (:func:`inert_steps`); else None."""
    if not plan.uses_positions or inert_steps(plan.automaton) is None:
        return None
    return plan.automaton.firing_masks()
