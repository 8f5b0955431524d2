"""The complex event automaton (CEA) a query compiles to: plan data, beside :mod:`cerql.plan`.

Input: built by ``cerql.planner.compile`` from the pattern. Output: the transition tables the
engines read (``QueryPlan.automaton``). A transition fires on an event when the event has every
condition bit of ``required`` (atoms and unary predicates, one bit each) and marks the event with
``label``: bit 0 is START (the first event of the match, which fixes the interval start), bit k+1
is the k-th selected variable. A label of 0 leaves the event out of the result (a gap, or an
event bound only to variables the query does not select), so runs that differ only in unselected
variables give the same output and are merged by determinization: that is projection
(docs/language.md, "SELECT").

Why here and not in cerql/exec: the automaton is what the planner produces and the plan holds,
so the planner and the plan import it without reaching into the engines; the engines' lazy
determinization of it is runtime (cerql/exec/determinizer.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

START = 1  # label bit of the first event of a match


def label_bits(labels: Iterable[str]) -> dict[str, int]:
    """``{variable: its label bit}`` for the selected variables in ``labels`` order."""
    return {v: 1 << (k + 1) for k, v in enumerate(labels)}


@dataclass(frozen=True)
class Transition:
    source: int
    required: int   # condition bits the event must have
    label: int      # START and selected-variable bits it marks the event with
    target: int


@dataclass(frozen=True)
class Automaton:
    """An epsilon-free CEA. ``conditions[k]`` is what condition bit k tests: an ``ast.Atom``
    or the canonical text of a unary predicate. ``labels[k]`` names label bit k + 1."""

    n_states: int
    initial: int
    final: frozenset[int]
    transitions: tuple[Transition, ...]
    conditions: tuple
    labels: tuple[str, ...]
    # the right sides of a top-level ``p UNLESS q``, on the same conditions: a result of this
    # automaton is dropped when one of theirs lies inside its interval (docs/semantics.md, "Negation and conjunction")
    unless: tuple["Automaton", ...] = ()
    # the right sides of the UNLESS inside the pattern (planner/rules.py, in post-filter order),
    # on the same conditions: their runs tell, per event, the latest start of a result of
    # theirs ending there or before, which exec/post_filter.py checks the results against
    unless_inside: tuple["Automaton", ...] = ()

    def right_sides(self) -> tuple["Automaton", ...]:
        """Every UNLESS right side's automaton: those around the pattern, then those inside."""
        return self.unless + self.unless_inside

    def firing_masks(self) -> list[int] | None:
        """The condition sets some transition requires, besides the TRUE gaps: an event that
        satisfies none of them can only be skipped. None when a TRUE transition marks events
        (every event could then be part of a result). UNLESS's right sides need their events
        too."""
        if any(not t.required and t.label for t in self.transitions):
            return None
        masks = {t.required for t in self.transitions if t.required}
        for other in self.right_sides():
            more = other.firing_masks()
            if more is None:
                return None
            masks.update(more)
        return sorted(masks)

    def variables_of(self, label: int) -> list[str]:
        """The selected variables a label marks."""
        return [v for k, v in enumerate(self.labels) if label >> (k + 1) & 1]

    def label_names(self, label: int) -> list[str]:
        return (["START"] if label & START else []) + self.variables_of(label)

    def condition_names(self, required: int) -> list[str]:
        return [_condition_text(c) for k, c in enumerate(self.conditions) if required >> k & 1]

    def describe(self) -> str:
        """One line per transition, for ``cerql.explain``."""
        lines = [f"automaton: {self.n_states} states, initial {self.initial}, "
                 f"final {sorted(self.final)}, {len(self.transitions)} transitions"]
        for t in self.transitions:
            cond = " AND ".join(self.condition_names(t.required)) or "TRUE"
            marks = ", ".join(self.label_names(t.label)) or "-"
            lines.append(f"  {t.source} -> {t.target}  on {cond}  mark {{{marks}}}")
        for k, other in enumerate(self.unless):
            lines.append(f"unless {k} (a result is dropped when one of these lies inside it):")
            lines += ["  " + line for line in other.describe().splitlines()]
        for k, other in enumerate(self.unless_inside):
            lines.append(f"unless inside {k} (where its results lie, checked against each result's part):")
            lines += ["  " + line for line in other.describe().splitlines()]
        return "\n".join(lines)

    def to_dot(self) -> str:
        """Graphviz source of the automaton."""
        out = ["digraph cea {", "  rankdir=LR;", '  start [shape=point];',
               f"  start -> {self.initial};"]
        for s in range(self.n_states):
            shape = "doublecircle" if s in self.final else "circle"
            out.append(f"  {s} [shape={shape}];")
        for t in self.transitions:
            cond = " & ".join(self.condition_names(t.required)) or "TRUE"
            marks = ",".join(self.label_names(t.label))
            text = f"{cond} / {{{marks}}}" if marks else cond
            out.append(f'  {t.source} -> {t.target} [label="{_dot_escape(text)}"];')
        out.append("}")
        return "\n".join(out)


def _condition_text(condition) -> str:
    if isinstance(condition, str):
        return f"[{condition}]"
    return str(condition)


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
