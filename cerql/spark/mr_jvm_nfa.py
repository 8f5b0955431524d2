"""The row pattern's NFA and the match registers as text, for the JVM matcher (io.cerql.mr.PikeMatcher).

Why text: the matcher is built in the JVM through py4j and shipped to Spark's executors with the
task, so its tables go across as one string of whitespace-separated integers, which any JVM
parses with the JDK alone; no py4j array handling, no Python on the executors.

The NFA (``nfa_spec``): ``n_states n_variables start`` and then, per state in order,
``kind label nullable n_out out...``: the kind and label of ``cerql.mr_plan.State`` (label -1 when
the state consumes no row), ``nullable`` the state's row of ``Nfa.nullable()`` as four bits (bit
``a`` set when ACCEPT is reachable without a row where the anchors ``a``, AT_START | AT_END,
hold: what lets a later start still match empty where an earlier thread took the state first,
exec/kernel/pike.py), and the successors in preference order. A label's variable is the label
modulo the number of variables (``mr_plan``: labels past it are rows inside an exclusion).

The registers (``register_spec``): ``n`` and then ``kind mask column`` per register. A register
is what a thread carries instead of its path: over the rows its match maps whose variable is in
``mask`` (bit v: variable v; rows inside an exclusion count too), FIRST / LAST the value of
``column`` on the first / last such row, COUNT how many there are, CLASSIFIER the variable of the
last one. Why registers: the matcher runs a row at a time over partitions of any length, and a
few registers per thread, copied when threads fork, keep its memory independent of how long the
matches are.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

from cerql.mr_plan import Nfa

FIRST = 0
LAST = 1
COUNT = 2
CLASSIFIER = 3


class Register(NamedTuple):
    """One register: ``kind`` (FIRST, LAST, COUNT, CLASSIFIER), ``mask`` (bit v: variable v's
    rows count) and ``column`` (the index in the row values FIRST and LAST read; unused, -1, by
    COUNT and CLASSIFIER)."""

    kind: int
    mask: int
    column: int = -1


def nfa_spec(nfa: Nfa) -> str:
    """``nfa`` as PikeMatcher's constructor reads it (module docstring)."""
    nullable = nfa.nullable()
    parts = [len(nfa.states), len(nfa.variables), nfa.start]
    for i, state in enumerate(nfa.states):
        bits = sum(1 << a for a in range(4) if nullable[i, a])
        parts += [state.kind, state.label, bits, len(state.out), *state.out]
    return " ".join(map(str, parts))


def register_spec(registers: Iterable[Register]) -> str:
    """The registers as PikeMatcher's constructor reads them (module docstring), in order: a
    match reports register i as its value i."""
    regs = list(registers)
    for r in regs:
        if r.kind not in (FIRST, LAST, COUNT, CLASSIFIER) or not 0 <= r.mask < 1 << 64:
            raise ValueError(f"bad register {r}")
        if r.kind in (FIRST, LAST) and r.column < 0:
            raise ValueError(f"register {r} reads no column")
    return " ".join(map(str, [len(regs), *(x for r in regs for x in (r.kind, r.mask, r.column))]))


__all__ = ["CLASSIFIER", "COUNT", "FIRST", "LAST", "Register", "nfa_spec", "register_spec"]
