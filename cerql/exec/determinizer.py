"""The lazy determinization of the complex event automaton (cerql/automaton.py), at run time.

Input: an :class:`cerql.automaton.Automaton` and the symbols (an event's condition bits) the
stream reaches. Output: deterministic states and their successors, by label, which the driver
turns into the transition tables the kernel reads.

:class:`Determinizer` builds the deterministic automaton on the fly (seed 001, section 4; seed
000, section 6): a deterministic state is a set of CEA states, and the successors of a state on a
symbol (an event's condition bits) are grouped by label, so every distinct output is produced by
exactly one deterministic run (I/O-determinism). Only pairs (state, symbol) the stream reaches are
ever computed.
"""

from __future__ import annotations

from cerql.automaton import START, Automaton, Transition


class Determinizer:
    """The deterministic automaton of a CEA, built state by state as the stream needs it.

    Deterministic state 0 is ``{initial}``. ``successors(d, bits)`` lists ``(label, d2)`` pairs,
    one per distinct label, with the label-0 pair (the event is not in the output) first.

    With ``dominance`` (NEXT and MAX without registers), a state is a pair (S, U) as in seed
    000's MAX construction (Algorithm 7): S holds the CEA states of the runs with the current
    output, U those of runs with the same first event whose output beats it *whatever both do
    from now on*. A run of S that reaches a state of U is dropped, and (S, U) is final only when
    no final state is in U: every result it would give is beaten by one that ends at the same
    event, starts at the same event and so lives exactly as long under WITHIN and CONSUME BY.

    - ``"MAX"``: U holds the runs whose output is a strict superset of the current one. If the
      current output selects the event, those runs must select it too; if not, they may do
      either, and the current runs that select it become superset runs themselves.
    - ``"NEXT"``: U holds the runs whose output is ``<next``-greater (docs/language.md,
      "Selection strategies": the least position where two outputs differ is in the greater).
      That holds forever once it holds, since later events only add greater positions: the
      runs of U stay in U whatever they do, and when the current output skips the event, the
      current runs that select it join U. So
      of the outputs with one first event that reach one CEA state, only the ``<next``-greatest
      goes on: NEXT keeps one run per start where ALL keeps one per subset (``SELL ; BUY ;
      SELL``: the first BUY after each SELL, not every one).

    The seed's construction also lets the run that has not started yet collect the runs that
    start at a skipped event; those start earlier, can leave the window first, and are not
    tracked here (the strategy's own comparison handles results with different first events).
    LAST has no such rule: which of two outputs is ``<last``-greater changes with the events
    each selects next (it searches the arena instead, kernel/selection.py). Without
    ``dominance`` U stays empty, which is the plain subset construction.
    """

    def __init__(self, automaton: Automaton, dominance: str | None = None):
        if dominance not in (None, "MAX", "NEXT"):
            raise ValueError(f"no dominance for {dominance!r}")
        self.automaton = automaton
        self.dominance = dominance
        self.by_source: dict[int, list[Transition]] = {}
        for t in automaton.transitions:
            self.by_source.setdefault(t.source, []).append(t)
        self.states: list[tuple[frozenset[int], frozenset[int]]] = []
        self.index: dict[tuple[frozenset[int], frozenset[int]], int] = {}
        self.final: list[bool] = []
        self.state_of(frozenset({automaton.initial}), frozenset())

    def state_of(self, members: frozenset[int], supersets: frozenset[int]) -> int:
        key = (members, supersets)
        d = self.index.get(key)
        if d is None:
            d = self.index[key] = len(self.states)
            self.states.append(key)
            final = self.automaton.final
            self.final.append(bool(members & final) and not supersets & final)
        return d

    def _moves(self, states, bits: int) -> dict[int, set[int]]:
        """The targets of ``states``' transitions that fire on ``bits``, by label."""
        targets: dict[int, set[int]] = {}
        for s in states:
            for t in self.by_source.get(s, ()):
                if t.required & bits == t.required:
                    targets.setdefault(t.label, set()).add(t.target)
        return targets

    def successors(self, d: int, bits: int) -> list[tuple[int, int]]:
        members, supersets = self.states[d]
        targets = self._moves(members, bits)
        if not self.dominance:
            return [(label, self.state_of(frozenset(targets[label]), frozenset())) for label in sorted(targets)]
        # Which runs beat the current output after the event, by whether the current output
        # selects the event. Current runs that select it beat the output that skips it (under
        # both orders); a run that starts at the event has another first event and is left out.
        beyond = self._moves(supersets, bits)
        selecting = {label for label in list(targets) + list(beyond) if label & ~START}
        if self.dominance == "MAX":  # a superset of an output that selects the event selects it
            kept_if_selecting = set().union(*(beyond.get(label, ()) for label in selecting))
        else:  # NEXT: beaten below the event, beaten whatever comes next
            kept_if_selecting = set().union(*beyond.values())
        kept_if_skipping = set().union(*beyond.values(), *(
            targets.get(label, ()) for label in selecting if not label & START))
        out = []
        for label in sorted(targets):
            over = frozenset(kept_if_selecting if label & ~START else kept_if_skipping)
            left = frozenset(targets[label]) - over
            if left:
                out.append((label, self.state_of(left, over)))
        return out
