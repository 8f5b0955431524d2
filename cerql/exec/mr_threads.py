"""The MATCH_RECOGNIZE matcher for history-dependent DEFINEs: a priority-ordered thread simulation.

Input: the NFA of a row pattern (``cerql.mr_plan.Nfa``), the AFTER MATCH SKIP mode, the
history-dependent DEFINEs compiled into registers (exec/mr_history.py); per partition, the
row-local DEFINE bits (as for the Pike kernel) and the partition's sorted rows. Output: the
matches, as the :class:`cerql.exec.mr_engine.Matcher` protocol gives them. The engine uses it
only when some DEFINE reads the rows mapped before the current one; row-local queries keep the
numba kernel (exec/kernel/pike.py).

It is the Pike kernel's algorithm, step for step (threads in priority order: earlier start
first, then preference order; an accepting thread cuts the less preferred threads of its start,
and with PAST LAST ROW the starts before its end; after a non-empty match in the other modes the
search restarts at the resume row; after an empty match it resumes at the next row), with one
change: a thread also carries its *registers*, the values of the history its conditions can read
(exec/mr_history.py), and two threads that reach the same NFA state at the same row are merged
(the later one dropped) only when the registers that the conditions still reachable from that
state read are equal: then their futures are equal, and the dropped one could only repeat what
the kept one does. So the preference order is the kernel's and the reference's, exactly.

Cost: per row, one step per live thread and per state its epsilon moves visit, plus one
vectorized evaluation (cerql.expr over a small Arrow table) per history-dependent variable that
some thread wants to map the row to, over the threads' distinct registers. The live threads are
at most (NFA states) x (distinct register values): bounded when the registers are (``LAST(x,
n)`` of the variable being defined, CLASSIFIER, a FIRST/LAST of rows the match only just mapped),
then the work is linear in the rows; when they are not (``FIRST(A.x)`` of every start row, a
running sum), threads with different histories are kept apart and checked one by one, and
``max_threads`` (the Spark conf ``cerql.matchRecognize.maxThreads``, default 100 000) bounds the
live threads of a partition: past it the query fails with MATCH_RECOGNIZE_TOO_MANY_THREADS
instead of running for hours. docs/semantics.md, "MATCH_RECOGNIZE", "The local engine".
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from cerql.errors import ExecutionError
from cerql.exec.kernel.pike import SKIP_TO_FIRST_ROW, SKIP_TO_NO_ROW, skip_error
from cerql.exec.mr_history import History
from cerql.mr_plan import (ACCEPT, ANCHOR_END, ANCHOR_START, CONSUME, PAST_LAST_ROW, TO_FIRST, TO_NEXT_ROW, Nfa,
                           Skip)

MAX_THREADS = 100_000
MAX_THREADS_CONF = "cerql.matchRecognize.maxThreads"


def too_many_threads(limit: int, partition: str | None) -> ExecutionError:
    where = f" in partition {partition}" if partition else ""
    return ExecutionError(
        f"MATCH_RECOGNIZE keeps more than {limit} partial matches alive{where}: its DEFINEs read the rows "
        "mapped so far (FIRST/LAST, aggregates, other variables' columns), and partial matches with "
        "different histories cannot be merged", error_class="MATCH_RECOGNIZE_TOO_MANY_THREADS",
        hint=f"raise max_threads (the Spark conf {MAX_THREADS_CONF}), bound the pattern's quantifiers, or "
             "write the conditions over the current row and PREV/NEXT", params={"max_threads": limit})


class ThreadMatcher:
    """The matcher of the module docstring, for the engine's Matcher protocol. ``history``: the
    variables (canonical names) whose DEFINE it evaluates itself; ``steps``: the work of the last
    ``match`` (states visited, threads stepped, conditions evaluated)."""

    def __init__(self, nfa: Nfa, skip: Skip, conditions: History, max_threads: int = MAX_THREADS):
        self.nfa, self.skip, self.conditions, self.max_threads = nfa, skip, conditions, max_threads
        t = nfa.tables()
        self.kind = t.kind.tolist()
        self.label = t.label.tolist()
        self.succ = [tuple(t.out[t.out_start[s]:t.out_start[s + 1]].tolist()) for s in range(len(self.kind))]
        self.nullable = t.nullable.tolist()
        self.start_state = int(t.start)
        labels = np.arange(nfa.n_labels, dtype=np.int64)
        count = max(len(nfa.variables), 1)
        self.label_variable = labels % count
        self.label_excluded = labels >= len(nfa.variables)
        self.var_of = self.label_variable.tolist()
        self.history = frozenset(conditions.variables[v] for v in conditions.conditions)
        self.wanted = self._wanted()
        self.reads = {v: tuple(sorted(q)) for v, q in conditions.reads.items()}
        self.steps = 0

    def _wanted(self) -> list[tuple[int, ...]]:
        """Per state, the registers read by the conditions of the variables still consumable
        from it (the part of the registers its dedupe key holds)."""
        n = len(self.kind)
        reads = self.conditions.reads
        out = []
        for root in range(n):
            seen, stack, found = {root}, [root], set()
            while stack:
                s = stack.pop()
                if self.kind[s] == CONSUME:
                    found |= reads.get(self.var_of[self.label[s]], frozenset())
                for u in self.succ[s]:
                    if u not in seen:
                        seen.add(u)
                        stack.append(u)
            out.append(tuple(sorted(found)))
        return out

    def match(self, bits: np.ndarray, partition: str | None = None, rows: pa.Table | None = None, *,
              first_row: int = 0, begin: int = 0, final: bool = True, numbered_from: int = 0):
        """``(starts, ends, labels, head)``; the keywords give a stretch of a partition, as the
        Pike kernel takes it (exec/kernel/pike.py, ``match_partition``); ``rows`` holds the
        same rows as ``bits``, and possibly rows after them that conditions may read (NEXT)."""
        return _Run(self, bits, partition, rows, first_row, begin, final, numbered_from).run()


_NEVER = 1 << 62


class _Run:
    """One partition's simulation (the Pike kernel's loop, exec/kernel/pike.py, in Python)."""

    def __init__(self, m: ThreadMatcher, bits: np.ndarray, partition: str | None, rows: pa.Table | None,
                 first_row: int, begin: int, final: bool, numbered_from: int):
        self.m = m
        self.first_row, self.begin, self.final, self.numbered_from = first_row, begin, final, numbered_from
        self.bits = np.asarray(bits, np.uint64)
        self.n = n = len(self.bits)
        self.partition = partition
        if rows is None:
            rows = pa.table({"__cerql_mr_rows": pa.array(np.zeros(n, np.int8))})
        self.part = m.conditions.bind(rows)
        self.initial = m.conditions.initial()
        self.cont = m.skip.mode == PAST_LAST_ROW
        self.cut, self.floor, self.steps = -1, begin, 0
        self.rec_end = [-1] * (n + 1)
        self.rec_node: list = [None] * (n + 1)
        self.cnt = [0] * (n + 1)

    def accept(self, start: int, node, pos: int):
        self.rec_end[start] = pos
        self.rec_node[start] = node
        if self.cont:
            resume = pos if pos > start else start + 1
            self.cut = max(self.cut, resume)
            self.floor = max(self.floor, resume)
        else:
            self.cut = self.floor = _NEVER

    def closure(self, root: int, start: int, node, regs, pos: int, out: list, visited: set):
        """The epsilon moves from ``root`` before row ``pos`` in preference order; the CONSUME
        states reached first (per register key) join ``out``; an ACCEPT reached is recorded."""
        m = self.m
        at_start, at_end = pos == self.first_row, pos == self.n and self.final
        anchors = (1 if at_start else 0) | (2 if at_end else 0)
        stack = [root]
        while stack:
            s = stack.pop()
            self.steps += 1
            key = (s, tuple(regs[i] for i in m.wanted[s]))
            if key in visited:
                if m.nullable[s][anchors]:
                    self.accept(start, node, pos)
                    return
                if pos == self.n and not self.final and m.nullable[s][anchors | 2]:
                    self.cnt[start] += 1  # it might end here with ``$``: undecided until the rows run out
                continue
            visited.add(key)
            k = m.kind[s]
            if k == CONSUME:
                out.append((s, start, node, regs))
                self.cnt[start] += 1
            elif k == ACCEPT:
                self.accept(start, node, pos)
                return
            elif k == ANCHOR_END and pos == self.n and not self.final:
                self.cnt[start] += 1  # ``$`` holds here if no row follows: undecided until the rows run out
            elif (k == ANCHOR_START and not at_start) or (k == ANCHOR_END and not at_end):
                continue
            else:
                stack.extend(reversed(m.succ[s]))

    def holds(self, cur: list, p: int) -> list[bool]:
        """Whether each thread of ``cur`` may map row ``p`` to its state's variable: the row-local
        bit, and for a history-dependent variable its condition, evaluated once per variable for
        the threads' distinct registers."""
        m = self.m
        row = int(self.bits[p])
        ok = []
        groups: dict[int, dict[tuple, list[int]]] = {}
        for i, (s, _, _, regs) in enumerate(cur):
            v = m.var_of[m.label[s]]
            ok.append(bool((row >> v) & 1))
            if ok[-1] and v in m.conditions.conditions:
                key = tuple(regs[j] for j in m.reads[v])
                groups.setdefault(v, {}).setdefault(key, []).append(i)
        for v, by_key in groups.items():
            members = list(by_key.values())
            self.steps += len(members)
            result = m.conditions.evaluate(v, [cur[ids[0]][3] for ids in members], p, self.part)
            for ids, good in zip(members, result.tolist()):
                for i in ids:
                    ok[i] = good
        return ok

    def run(self):
        m, n = self.m, self.n
        skip = m.skip
        starts, ends, labels = [], [], []
        head, last_start, p = self.begin, self.begin - 1, self.begin
        cur: list = []
        if self.begin < n:
            last_start = self.begin
            self.closure(m.start_state, self.begin, None, self.initial, self.begin, cur, set())
        while True:
            if p >= n and self.final:  # threads waiting for a row past the end die
                for th in cur:
                    self.cnt[th[1]] -= 1
                cur = []
            while head <= last_start and self.cnt[head] == 0:  # decided starts, in order
                if self.rec_end[head] < 0:
                    head += 1
                    continue
                s, e = head, self.rec_end[head]
                path, node = [], self.rec_node[s]
                while node is not None:
                    path.append(node[0])
                    node = node[1]
                path.reverse()
                starts.append(s)
                ends.append(e)
                labels.extend(path)
                if e == s or skip.mode == PAST_LAST_ROW:  # AFTER MATCH SKIP applies after a non-empty match
                    resume = e if e > s else s + 1
                elif skip.mode == TO_NEXT_ROW:
                    resume = s + 1
                else:
                    at = [s + j for j, lab in enumerate(path) if (skip.mask >> int(m.var_of[lab])) & 1]
                    if not at:
                        raise skip_error(m.nfa, skip, SKIP_TO_NO_ROW, self.numbered_from + len(starts),
                                         self.partition)
                    resume = at[0] if skip.mode == TO_FIRST else at[-1]
                    if resume == s:
                        raise skip_error(m.nfa, skip, SKIP_TO_FIRST_ROW, self.numbered_from + len(starts),
                                         self.partition)
                head = resume
                if not self.cont:  # restart at the resume row: every other start was cut
                    p = self.floor = resume
                    last_start = resume - 1
                    cur = []
                    if resume < n:
                        self.cut = -1
                        last_start = resume
                        self.rec_end[resume] = -1
                        self.closure(m.start_state, resume, None, self.initial, resume, cur, set())
            if p >= n:
                break
            visited: set = set()
            nxt: list = []
            self.cut = -1
            ok = self.holds(cur, p)
            for i, (s, t, node, regs) in enumerate(cur):
                self.cnt[t] -= 1
                self.steps += 1
                if t < self.cut or not ok[i]:
                    continue
                lab = m.label[s]
                after = m.conditions.advance(regs, p, m.var_of[lab], self.part) if regs else regs
                self.closure(m.succ[s][0], t, (lab, node), after, p + 1, nxt, visited)
            p += 1
            if p < n and p >= self.floor:
                last_start = p
                self.rec_end[p] = -1
                self.closure(m.start_state, p, None, self.initial, p, nxt, visited)
            if len(nxt) > m.max_threads:
                raise too_many_threads(m.max_threads, self.partition)
            cur = nxt
        m.steps = self.steps
        return np.array(starts, np.int64), np.array(ends, np.int64), np.array(labels, np.int64), head


__all__ = ["MAX_THREADS", "MAX_THREADS_CONF", "ThreadMatcher", "too_many_threads"]
