"""The epsilon closures precomputed by exec/mr_closures.py, as the thread matcher runs them
(exec/mr_threads.py, ``_Run.closure``), against the walk they replace: the Pike kernel's
depth-first walk of the epsilon moves (exec/kernel/pike.py), every state marked with its dedupe
key in a set the threads of a row share. On random patterns (anchors, empty groups, PERMUTE,
reluctant quantifiers), every context (anchors, the end of a piece), and sequences of threads with
different registers walking into one set: the same CONSUME states in the same order, the same
ACCEPTs, the same undecided counts (hypothesis)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cerql import mr_ast
from cerql.exec import mr_closures
from cerql.exec.mr_engine import matcher_for
from cerql.exec.mr_threads import ThreadMatcher, _Run
from cerql.mr_plan import ACCEPT, ANCHOR_END, ANCHOR_START, AT_END, AT_START, CONSUME
from cerql.planner.mr_analyze import compiled
from tests.exec.mr_support import clause, read_pattern
from tests.exec.test_mr_engine_vs_reference import _pattern

CONTEXTS = [mr_closures.context(a, False) for a in range(4)] + [mr_closures.context(a, True) for a in (0, AT_START)]


def _walk(m: ThreadMatcher, wanted, root: int, regs: tuple, ctx: int, visited: set, events: list) -> None:
    """The walk the closures replace, recording ``("emit", state)``, ``"accept"``, ``"pending"``."""
    anchors, undecided = ctx & 3, bool(ctx & 4)
    stack = [root]
    while stack:
        s = stack.pop()
        key = (s, tuple(regs[i] for i in wanted[s]))
        if key in visited:
            if m.nullable[s][anchors]:
                events.append("accept")
                return
            if undecided and m.nullable[s][anchors | AT_END]:
                events.append("pending")
            continue
        visited.add(key)
        k = m.kind[s]
        if k == CONSUME:
            events.append(("emit", s))
        elif k == ACCEPT:
            events.append("accept")
            return
        elif k == ANCHOR_END and undecided:
            events.append("pending")
        elif not ((k == ANCHOR_START and not anchors & AT_START) or (k == ANCHOR_END and not anchors & AT_END)):
            stack.extend(reversed(m.succ[s]))


def _matcher(pattern: str, reader: str, read: str) -> ThreadMatcher:
    c, text = clause(pattern=pattern, define={reader: f"value < FIRST({read}.value) OR count({read}.*) > 2"},
                     measures={"n": "count(*)"}, skip=mr_ast.PAST_LAST_ROW)
    analysis, nfa, skip = compiled(c, text)
    m = matcher_for(c, text, nfa, skip, analysis.row_local)
    assert isinstance(m, ThreadMatcher)
    return m


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(_pattern(), st.data())
def test_the_precomputed_closures_walk_as_the_graph_does(pattern, data):
    present = sorted(set(mr_ast.pattern_variables(read_pattern(pattern))))
    m = _matcher(pattern, data.draw(st.sampled_from(present)), data.draw(st.sampled_from(present)))
    run = _Run(m, np.zeros(8, np.uint64), None, pa.table({"value": list(range(8))}), 0, 0, True, 0)
    # a few register values: the initial ones, and after rows mapped to the variables
    held = [run.regs.initial]
    for row, v in data.draw(st.lists(st.tuples(st.integers(0, 7), st.integers(0, len(m.nfa.variables) - 1)),
                                     max_size=4)):
        held.append(run.regs.advance(held[data.draw(st.integers(0, len(held) - 1))], row, v))
    roots = sorted({m.start_state} | {m.after[s] for s in range(m.n_states) if m.kind[s] == CONSUME})
    threads = data.draw(st.lists(st.tuples(st.sampled_from(roots), st.sampled_from(held)), min_size=1, max_size=6))
    wanted = m._wanted()
    for ctx in CONTEXTS:
        expected, got = [], []
        visited, marked = set(), set()
        out = ([], [], [], [])
        run.cnt = [0] * len(threads)
        for start, (root, r) in enumerate(threads):
            events: list = []
            _walk(m, wanted, root, run.regs.values[r], ctx, marked, events)
            expected.append(events)
            accepted: list = []
            run.accept = lambda start, node, pos, accepted=accepted: accepted.append("accept")
            before = len(out[0])
            run.closure(m.closures(ctx)[0][root], start, None, r, 0, out, visited)
            got.append([("emit", s) for s in out[0][before:]] + accepted)
        for start, events in enumerate(expected):
            emits = [e for e in events if e != "pending"]
            assert got[start] == emits, (pattern, ctx, start)
            assert run.cnt[start] == len(events) - events.count("accept"), (pattern, ctx, start)
