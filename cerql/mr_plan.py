"""The plan of a MATCH_RECOGNIZE row pattern: a priority-ordered NFA and the AFTER MATCH SKIP mode.

Input: built by ``cerql.planner.mr_compile`` from a ``cerql.mr_ast`` pattern. Output: the tables
the Pike-VM kernel (``cerql/exec/kernel/pike.py``) reads. Plain data beside :mod:`cerql.plan` and
:mod:`cerql.automaton`, so that the planner and the engines share it without importing each other;
no numba and no pyarrow here.

A state is one of:

- ``CONSUME``: takes one row that satisfies the DEFINE of its label's variable, then goes to its
  one successor;
- ``SPLIT``: an epsilon state whose successors are in preference order (the first is preferred);
- ``ANCHOR_START`` / ``ANCHOR_END``: an epsilon state passed only before the partition's first row
  (``^``) / after its last row (``$``);
- ``ACCEPT``: the pattern has matched.

Epsilon moves never form a cycle (the compiler makes an empty iteration of a quantified group
leave the loop, docs/semantics.md), so following them always ends.

A *label* is what the kernel reports for each row of a match: label ``v`` is variable ``v`` of
``Nfa.variables``; label ``v + len(variables)`` is the same variable inside an exclusion
``{- -}`` (matched as usual, left out of ALL ROWS PER MATCH output).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

# state kinds
CONSUME = 0
SPLIT = 1
ANCHOR_START = 2
ANCHOR_END = 3
ACCEPT = 4

# AFTER MATCH SKIP modes
PAST_LAST_ROW = 0
TO_NEXT_ROW = 1
TO_FIRST = 2
TO_LAST = 3

# ``Nfa.nullable`` columns: which anchors hold at the position (bit 0: partition start, bit 1: end)
AT_START = 1
AT_END = 2


@dataclass(frozen=True)
class State:
    """One NFA state: ``kind``, the ``label`` a CONSUME state gives its row (else -1), and the
    successors ``out`` in preference order (one for CONSUME and anchors, none for ACCEPT)."""

    kind: int
    label: int = -1
    out: tuple[int, ...] = ()


@dataclass(frozen=True)
class Skip:
    """AFTER MATCH SKIP: ``mode`` (PAST_LAST_ROW, TO_NEXT_ROW, TO_FIRST, TO_LAST) and, for TO
    FIRST/LAST, ``mask``: bit v for each variable v of the target (a SUBSET: its union).
    ``target`` names it, for error messages."""

    mode: int = PAST_LAST_ROW
    mask: int = 0
    target: str | None = None


class NfaTables(NamedTuple):
    """The NFA as flat arrays, for the kernel (numba takes a NamedTuple of arrays as it is)."""

    kind: np.ndarray        # int64 [state]
    label: np.ndarray       # int64 [state]: CONSUME's label, else -1
    out_start: np.ndarray   # int64 [state + 1]: successors of s are out[out_start[s]:out_start[s+1]]
    out: np.ndarray         # int64: successors, in preference order
    label_var: np.ndarray   # int64 [label]: the variable of a label
    nullable: np.ndarray    # bool [state, 4]: ACCEPT is reachable by epsilon moves from the state,
                            # at a position where the anchors AT_START / AT_END (bits of the column) hold
    start: int              # the initial state
    walk_start: np.ndarray  # int64 [state * 4 + anchors + 1]: ``Nfa.walks``, one walk per (root, anchors)
    walk_state: np.ndarray  # int64: the states of the walks, in the order a depth-first walk meets them
    walk_again: np.ndarray  # bool: that meeting is the walk's second (or later) one of the state


@dataclass(frozen=True)
class Nfa:
    """The compiled row pattern: ``states`` (``start`` the initial one) over ``variables``
    (the clause's variables; a label's variable is its index there)."""

    states: tuple[State, ...]
    start: int
    variables: tuple[str, ...]

    @property
    def n_labels(self) -> int:
        return 2 * len(self.variables)

    def label_variable(self, label: int) -> str:
        return self.variables[label % len(self.variables)]

    def label_excluded(self, label: int) -> bool:
        """Whether rows with this label are inside an exclusion ``{- -}``."""
        return label >= len(self.variables)

    def nullable(self) -> np.ndarray:
        """``[state, anchors]``: whether ACCEPT is reachable from the state without consuming a
        row, at a position where the anchors ``anchors`` (AT_START | AT_END bits) hold."""
        n = len(self.states)
        table = np.zeros((n, 4), dtype=np.bool_)
        for anchors in range(4):
            done = [False] * n
            value = [False] * n
            for root in range(n):
                if done[root]:
                    continue
                stack = [(root, 0)]
                while stack:  # iterative post-order: epsilon moves form no cycle
                    state, i = stack.pop()
                    st = self.states[state]
                    if st.kind == ACCEPT or st.kind == CONSUME:
                        value[state], done[state] = st.kind == ACCEPT, True
                        continue
                    if st.kind == ANCHOR_START and not anchors & AT_START or \
                            st.kind == ANCHOR_END and not anchors & AT_END:
                        value[state], done[state] = False, True
                        continue
                    if i < len(st.out):
                        stack.append((state, i + 1))
                        if not done[st.out[i]]:
                            stack.append((st.out[i], 0))
                        continue
                    value[state] = any(value[t] for t in st.out)
                    done[state] = True
            table[:, anchors] = value
        return table

    def walks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per (root state, anchors), the epsilon closure's depth-first walk from the root in
        preference order, as a list of meetings: ``(starts, states, again)``, the meetings of
        (r, a) at ``starts[r * 4 + a]:starts[r * 4 + a + 1]``. A walk descends into a state's
        successors on its first meeting only, stops at ACCEPT, and does not pass an anchor that
        does not hold (``a``: AT_START | AT_END). Why: the kernel (exec/kernel/pike.py) follows
        these lists instead of walking the NFA with a stack; a state other threads reached first
        in the same round is then met like a second meeting (its successors were reached too)."""
        starts, states, again = [0], [], []
        for root in range(len(self.states)):
            for anchors in range(4):
                seen: set[int] = set()
                stack = [root]
                while stack:
                    state = stack.pop()
                    states.append(state)
                    again.append(state in seen)
                    if state in seen:
                        continue
                    seen.add(state)
                    st = self.states[state]
                    if st.kind == ACCEPT:
                        break
                    if st.kind == CONSUME or st.kind == ANCHOR_START and not anchors & AT_START or \
                            st.kind == ANCHOR_END and not anchors & AT_END:
                        continue
                    stack.extend(reversed(st.out))
                starts.append(len(states))
        return np.array(starts, np.int64), np.array(states, np.int64), np.array(again, np.bool_)

    def describe(self) -> str:
        """The NFA as ``explain`` prints it: one line per state, successors in preference order."""
        names = {CONSUME: "row", SPLIT: "split", ANCHOR_START: "^", ANCHOR_END: "$", ACCEPT: "accept"}
        lines = [f"nfa: {len(self.states)} states, start {self.start}, successors in preference order"]
        for i, st in enumerate(self.states):
            what = names.get(st.kind, str(st.kind))
            if st.kind == CONSUME:
                excluded = " (excluded from ALL ROWS output)" if self.label_excluded(st.label) else ""
                what = f"row of {self.label_variable(st.label)}{excluded}"
            arrow = f" -> {', '.join(map(str, st.out))}" if st.out else ""
            lines.append(f"  {i}: {what}{arrow}")
        return "\n".join(lines)

    def tables(self) -> NfaTables:
        offsets = np.zeros(len(self.states) + 1, dtype=np.int64)
        for i, st in enumerate(self.states):
            offsets[i + 1] = offsets[i] + len(st.out)
        return NfaTables(
            kind=np.array([st.kind for st in self.states], dtype=np.int64),
            label=np.array([st.label for st in self.states], dtype=np.int64),
            out_start=offsets,
            out=np.array([t for st in self.states for t in st.out], dtype=np.int64),
            label_var=np.array([lab % len(self.variables) for lab in range(self.n_labels)], dtype=np.int64)
            if self.variables else np.zeros(0, dtype=np.int64),
            nullable=self.nullable(),
            start=self.start,
            **dict(zip(("walk_start", "walk_state", "walk_again"), self.walks())),
        )


__all__ = [
    "ACCEPT", "ANCHOR_END", "ANCHOR_START", "AT_END", "AT_START", "CONSUME", "Nfa", "NfaTables",
    "PAST_LAST_ROW", "SPLIT", "Skip", "State", "TO_FIRST", "TO_LAST", "TO_NEXT_ROW",
]
