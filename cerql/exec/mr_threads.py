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

Cost: per row, one step per live thread and per state its epsilon moves visit (a short list
precomputed per state, exec/mr_closures.py; registers are numbered, so a dedupe key is two ints
and equal registers are hashed once per step), plus one evaluation per history-dependent
variable that some thread wants to map the row to, over the threads' distinct registers: thread
by thread in plain Python when exec/mr_scalar.py takes the condition (comparisons, logic,
coalesce, arithmetic over integer and DOUBLE fields: about 1 µs a thread) and they are fewer
than 64 (``mr_history.SCALAR_BATCH``); else, and where a register or an operation may raise,
vectorized with cerql.expr over a small Arrow table (50-200 µs, mostly fixed). With bounded
registers and a condition of those shapes, the time is then mostly this loop's bookkeeping,
6-8 µs a row for a few live threads (docs/benchmarks.md, family 7). The live threads are at
most (NFA states) x (distinct register values): bounded when the registers are (``LAST(x, n)``
of the variable being defined, CLASSIFIER, a FIRST/LAST of rows the match only just mapped), then the work is linear in the rows; when they are not (``FIRST(A.x)`` of every start row, a
running sum), threads with different histories are kept apart and checked one by one, and
``max_threads`` (the Spark conf ``cerql.matchRecognize.maxThreads``, default 100 000) bounds the
live threads of a partition: past it the query fails with MATCH_RECOGNIZE_TOO_MANY_THREADS
instead of running for hours. On ``FIRST(A.x)`` over rising prices, where every start row
stays alive, a thread costs under 1 µs per row (docs/benchmarks.md, "MATCH_RECOGNIZE").
docs/semantics.md, "MATCH_RECOGNIZE", "The local engine".
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from itertools import compress

import numpy as np
import pyarrow as pa

from cerql.errors import ExecutionError
from cerql.exec import mr_closures
from cerql.exec.kernel.pike import SKIP_TO_FIRST_ROW, SKIP_TO_NO_ROW, skip_error
from cerql.exec.mr_closures import ACCEPTS, EMIT, PENDING, STOP, UNDECIDED
from cerql.exec.mr_history import History
from cerql.mr_plan import AT_END, AT_START, CONSUME, PAST_LAST_ROW, TO_FIRST, TO_NEXT_ROW, Nfa, Skip

MAX_THREADS = 100_000
ALL, NONE = -1, -2  # the register classes of all the registers and of none
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
    ``match`` (closure entries visited, threads stepped, conditions evaluated)."""

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
        self.n_states = len(self.kind)
        self.n_vars = count
        # a CONSUME state's successor (where its thread's epsilon moves start after the row)
        self.after = [self.succ[s][0] if self.kind[s] == CONSUME else -1 for s in range(self.n_states)]
        # a CONSUME state's variable (-1 for the others), for the row-local bit
        self.state_var = [self.var_of[self.label[s]] if self.kind[s] == CONSUME else -1 for s in range(self.n_states)]
        self.state_var_array = np.array(self.state_var, np.int64)
        # the register parts a dedupe key or a condition reads, as classes (or ALL, NONE)
        self.classes: list[tuple[int, ...]] = []
        self.key_class = [self._class(w) for w in self._wanted()]
        self.reads_class = {v: self._class(tuple(sorted(q))) for v, q in conditions.reads.items()}
        self._closures: dict[int, list] = {}
        self.steps = 0

    def _class(self, part: tuple[int, ...]) -> int:
        if part == tuple(range(len(self.conditions.quantities))):
            return ALL
        if not part:
            return NONE
        if part not in self.classes:
            self.classes.append(part)
        return self.classes.index(part)

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

    def closures(self, ctx: int) -> tuple[list, list]:
        """Per root state, its epsilon closure's entries in context ``ctx`` (exec/mr_closures.py),
        and the CONSUME states they list when that is all they do (every entry a CONSUME state
        keyed by all the registers or none, so the matcher's loop handles them inline; else None),
        each with whether its key holds the registers; built once per matcher."""
        got = self._closures.get(ctx)
        if got is None:
            entries = [mr_closures.closure(self.kind, self.succ, self.nullable, root, ctx)
                       for root in range(self.n_states)]
            plain = [tuple((e[0], self.key_class[e[0]] == ALL) for e in es)
                     if all(e[2] == EMIT and self.key_class[e[0]] < 0 for e in es) else None for es in entries]
            got = self._closures[ctx] = (entries, plain)
        return got

    def match(self, bits: np.ndarray, partition: str | None = None, rows: pa.Table | None = None, *,
              first_row: int = 0, begin: int = 0, final: bool = True, numbered_from: int = 0):
        """``(starts, ends, labels, head)``; the keywords give a stretch of a partition, as the
        Pike kernel takes it (exec/kernel/pike.py, ``match_partition``); ``rows`` holds the
        same rows as ``bits``, and possibly rows after them that conditions may read (NEXT)."""
        with _cycle_collector_paused():
            return _Run(self, bits, partition, rows, first_row, begin, final, numbered_from).run()


@contextmanager
def _cycle_collector_paused():
    """Pause Python's cyclic garbage collector for one ``match``, and resume it after (if it was
    on). Why: each thread's path is a chain of ``(label, path)`` tuples, and the collector fails to
    untrack such chains (it reorders the tuples it finds referenced only from each other), so a
    full collection walks every row of every live path, again and again as they grow; on a long
    search that was half of the matcher's time (docs/benchmarks.md). The matcher makes no
    reference cycles, so reference counting frees everything it drops while the collector sleeps."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


class _Registers:
    """A partition's register tuples (exec/mr_history.py) as small ints, so that a thread carries
    an int, a dedupe key is two ints, and equal registers are hashed once per step instead of
    once per state visited. ``key(w, r)`` numbers the part ``classes[w]`` of registers ``r``,
    ``same[r]`` all of them (the first id of the registers equal to ``r``'s); ``advance``
    remembers the steps that do not depend on the row (a FIRST register that is full,
    CLASSIFIER), which is where unbounded registers spend most threads' steps. ``compacted`` drops
    the registers no live thread holds, so the table grows with the live threads, not the rows.

    Keys merge registers that are equal (==), as the matcher always did; an id stands for values
    that behave the same. They differ only where floats are: 0.0 == -0.0, yet a condition may
    tell them apart (a cast to text), so registers that can hold floats (sums and averages of
    floats, averages of integers, the folds of exec/mr_folds.py: ``History.may_hold_floats`` of
    the partition) are told apart by their ``repr``, and a thread keeps its own."""

    def __init__(self, m: ThreadMatcher, part, live: tuple = ()):
        self.h, self.part, self.classes = m.conditions, part, m.classes
        self.exact = m.conditions.may_hold_floats(part)
        self.values: list[tuple] = []
        self.same: list[int] = []
        self.ids: dict[tuple, int] = {}         # registers -> the first id of the equal ones
        self.reprs: dict[str, int] = {}         # when ``exact``: the repr of registers equal to earlier ones -> id
        self.keys: list[dict[int, int]] = [{} for _ in m.classes]       # per class: id -> part's number
        self.parts: list[dict[tuple, int]] = [{} for _ in m.classes]    # per class: part -> its number
        self.fixed: dict[int, int] = {}          # id * n_vars + variable -> the id after any row
        self.n_vars = m.n_vars
        self.fixable = [self.h.may_ignore_row(v) for v in range(m.n_vars)]
        self.initial = self.id(self.h.initial())
        for regs in live:
            self.id(regs)

    def id(self, regs: tuple) -> int:
        got = self.ids.get(regs)
        if got is None:
            got = self.ids[regs] = len(self.values)
            self.values.append(regs)
            self.same.append(got)
            return got
        if not self.exact or self.values[got] is regs:
            return got
        text = repr(regs)  # equal registers: the same id only if they print the same
        if repr(self.values[got]) == text:
            return got
        at = self.reprs.get(text)
        if at is None:
            at = self.reprs[text] = len(self.values)
            self.values.append(regs)
            self.same.append(got)
        return at

    def key(self, w: int, r: int) -> int:
        if w < 0:
            return self.same[r] if w == ALL else 0
        got = self.keys[w].get(r)
        if got is None:
            regs = self.values[r]
            part = tuple(regs[i] for i in self.classes[w])
            got = self.keys[w][r] = self.parts[w].setdefault(part, len(self.parts[w]))
        return got

    def advance(self, r: int, row: int, v: int) -> int:
        """The registers after ``row`` is mapped to ``v``, when ``fixed`` does not have them
        (the caller looks there first)."""
        regs = self.values[r]
        got = self.id(self.h.advance(regs, row, v, self.part))
        if self.fixable[v] and self.h.ignores_row(regs, v):
            self.fixed[r * self.n_vars + v] = got
        return got

    def compacted(self, m: ThreadMatcher, held: list[int]) -> tuple["_Registers", list[int]]:
        """A table of only the registers in ``held`` (and the initial ones), and ``held``
        renumbered."""
        fresh = _Registers(m, self.part, tuple(self.values[r] for r in held))
        return fresh, [fresh.id(self.values[r]) for r in held]


_NEVER = 1 << 62
_MANY = 64  # live threads from which ``_Run.holds`` uses NumPy


class _Run:
    """One partition's simulation (the Pike kernel's loop, exec/kernel/pike.py, in Python). The
    live threads are four parallel lists (``Threads``): NFA state, start row, path (``(label,
    path)`` links, newest first) and registers (their number in ``self.regs``)."""

    def __init__(self, m: ThreadMatcher, bits: np.ndarray, partition: str | None, rows: pa.Table | None,
                 first_row: int, begin: int, final: bool, numbered_from: int):
        self.m = m
        self.first_row, self.begin, self.final, self.numbered_from = first_row, begin, final, numbered_from
        self.bits = np.asarray(bits, np.uint64)
        self.rows = self.bits.tolist()  # the row-local bits as Python ints (``holds`` reads one per row)
        self.n = n = len(self.bits)
        self.partition = partition
        if rows is None:
            rows = pa.table({"__cerql_mr_rows": pa.array(np.zeros(n, np.int8))})
        self.part = m.conditions.bind(rows)
        self.regs = _Registers(m, self.part)
        self.inside = m.closures(mr_closures.context(0, False))
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

    def entries(self, pos: int) -> tuple[list, list]:
        """Per root state, the closure entries before row ``pos`` (its anchors, and whether the
        rows may go on after a piece's last row); inside the rows, the same every row."""
        at_start, at_end = pos == self.first_row, pos == self.n and self.final
        if not at_start and pos < self.n:
            return self.inside
        undecided = pos == self.n and not self.final
        return self.m.closures(mr_closures.context((AT_START if at_start else 0) | (AT_END if at_end else 0),
                                                   undecided))

    def closure(self, entries: tuple, start: int, node, r: int, pos: int, out: "Threads", visited: set):
        """The epsilon moves of a thread with registers ``r`` before row ``pos``, in preference
        order (exec/mr_closures.py says what the entries do): the CONSUME states whose dedupe key
        (state, registers read ahead) is new join ``out``; an ACCEPT reached is recorded."""
        states, starts, nodes, held = out
        key_class, n_states, regs, cnt = self.m.key_class, self.m.n_states, self.regs, self.cnt
        same = regs.same[r]
        self.steps += len(entries)
        i, end = 0, len(entries)
        while i < end:
            s, skip, op, revisit = entries[i]
            if op == STOP:
                self.accept(start, node, pos)
                return
            w = key_class[s]
            key = s + n_states * (same if w == ALL else 0 if w == NONE else regs.key(w, r))
            if key in visited:
                if revisit == ACCEPTS:
                    self.accept(start, node, pos)
                    return
                if revisit == UNDECIDED:
                    cnt[start] += 1  # it might end here with ``$``: undecided until the rows run out
                i = skip
                continue
            visited.add(key)
            if op == EMIT:
                states.append(s)
                starts.append(start)
                nodes.append(node)
                held.append(r)
                cnt[start] += 1
            elif op == PENDING:
                cnt[start] += 1  # ``$`` holds here if no row follows: undecided until the rows run out
            i += 1

    def holds(self, cur: "Threads", p: int) -> list:
        """Whether each thread of ``cur`` may map row ``p`` to its state's variable (truthy or
        not): the row-local bit, and for a history-dependent variable its condition, evaluated
        once per variable for the threads' distinct registers (the part the condition reads), in
        the order the threads first hold them. NumPy from ``_MANY`` threads on; below, its
        fixed cost per row is more than the Python loop's."""
        if len(cur[0]) >= _MANY:
            return self._holds_many(cur, p)
        m, regs = self.m, self.regs
        row = self.rows[p]
        state_var, reads_class, conditions = m.state_var, m.reads_class, m.conditions.conditions
        ok = [(row >> state_var[s]) & 1 for s in cur[0]]
        groups: dict[int, dict[int, list[int]]] = {}
        for i, s in enumerate(cur[0]):
            v = state_var[s]
            if ok[i] and v in conditions:
                r = cur[3][i]
                w = reads_class[v]
                groups.setdefault(v, {}).setdefault(regs.key(w, r), []).append(i)
        for v, by_key in groups.items():
            members = list(by_key.values())
            result = self.evaluate(v, [cur[3][ids[0]] for ids in members], p)
            for ids, good in zip(members, result):
                for i in ids:
                    ok[i] = good
        return ok

    def _holds_many(self, cur: "Threads", p: int) -> list:
        """``holds`` for many threads, with NumPy: the same groups, in the same order."""
        m, regs = self.m, self.regs
        variables = m.state_var_array[np.array(cur[0], np.int64)]
        ok = (np.uint64(self.bits[p]) >> variables.astype(np.uint64)) & np.uint64(1) != 0
        held = np.array(cur[3], np.int64)
        for v in m.conditions.conditions:
            ids = np.flatnonzero(ok & (variables == v))
            if not len(ids):
                continue
            w = m.reads_class[v]
            keys = held[ids]  # the registers' ids are their keys unless some are equal (``_Registers``)
            if w != ALL or regs.exact:
                keys = np.array([regs.key(w, r) for r in keys.tolist()], np.int64)
            _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
            order = np.argsort(first, kind="stable")  # the groups in the order their first thread comes
            result = np.empty(len(first), bool)
            result[order] = self.evaluate(v, held[ids[first[order]]].tolist(), p)
            ok[ids] = result[inverse.ravel()]
        return ok.tolist()

    def evaluate(self, v: int, held: list[int], p: int) -> list | np.ndarray:
        """Variable ``v``'s condition at row ``p`` for each of the registers ``held``."""
        self.steps += len(held)
        values = self.regs.values
        return self.m.conditions.evaluate(v, [values[r] for r in held], p, self.part)

    def step(self, cur: "Threads", p: int) -> "Threads":
        """The threads after row ``p``: each one that may map it moves on (its registers
        advanced), in priority order, then a new start at ``p + 1``. A closure that only lists
        CONSUME states keyed by all the registers or none is followed inline (the common case; the same
        as ``closure`` does, without its calls)."""
        m, regs, cnt = self.m, self.regs, self.cnt
        label, var_of, after, n_states, n_vars = m.label, m.var_of, m.after, m.n_states, m.n_vars
        fixed, same, advances = regs.fixed, regs.same, bool(m.conditions.quantities)
        ok = self.holds(cur, p)
        entries, plain = self.inside if p + 1 < self.n else self.entries(p + 1)
        nxt: Threads = ([], [], [], [])
        states, starts, nodes, held = nxt
        visited: set = set()
        self.cut = -1
        self.steps += len(cur[0])
        for t in cur[1]:
            cnt[t] -= 1
        for s, t, node, r in compress(zip(*cur), ok):
            if t < self.cut:
                continue
            lab = label[s]
            if advances:
                v = var_of[lab]
                moved = fixed.get(r * n_vars + v)
                r = regs.advance(r, p, v) if moved is None else moved
            root = after[s]
            consumed = plain[root]
            if consumed is None:
                self.closure(entries[root], t, (lab, node), r, p + 1, nxt, visited)
                continue
            path, base, count = (lab, node), n_states * same[r], 0
            for s2, full in consumed:
                key = base + s2 if full else s2
                if key not in visited:
                    visited.add(key)
                    states.append(s2)
                    starts.append(t)
                    nodes.append(path)
                    held.append(r)
                    count += 1
            cnt[t] += count
        self.steps += len(states)
        p += 1
        if p < self.n and p >= self.floor:
            self.last_start = p
            self.rec_end[p] = -1
            self.closure(entries[m.start_state], p, None, regs.initial, p, nxt, visited)
        if len(states) > m.max_threads:
            raise too_many_threads(m.max_threads, self.partition)
        return nxt

    def restart(self, at: int) -> "Threads":
        """The threads of a search that starts at row ``at`` (none past the rows)."""
        cur: Threads = ([], [], [], [])
        self.last_start = at - 1
        if at < self.n:
            self.cut = -1
            self.last_start = at
            self.rec_end[at] = -1
            self.closure(self.entries(at)[0][self.m.start_state], at, None, self.regs.initial, at, cur, set())
        return cur

    def resume_row(self, s: int, e: int, path: list[int]) -> int:
        """Where the search goes on after the match of rows ``s`` to ``e`` (AFTER MATCH SKIP)."""
        m, skip = self.m, self.m.skip
        if e == s or skip.mode == PAST_LAST_ROW:  # AFTER MATCH SKIP applies after a non-empty match
            return e if e > s else s + 1
        if skip.mode == TO_NEXT_ROW:
            return s + 1
        at = [s + j for j, lab in enumerate(path) if (skip.mask >> int(m.var_of[lab])) & 1]
        if not at:
            raise skip_error(m.nfa, skip, SKIP_TO_NO_ROW, self.numbered_from + self.found, self.partition)
        resume = at[0] if skip.mode == TO_FIRST else at[-1]
        if resume == s:
            raise skip_error(m.nfa, skip, SKIP_TO_FIRST_ROW, self.numbered_from + self.found, self.partition)
        return resume

    def run(self):
        n = self.n
        starts, ends, labels = [], [], []
        head, p = self.begin, self.begin
        cur = self.restart(self.begin)
        while True:
            if p >= n and self.final:  # threads waiting for a row past the end die
                for t in cur[1]:
                    self.cnt[t] -= 1
                cur = ([], [], [], [])
            while head <= self.last_start and self.cnt[head] == 0:  # decided starts, in order
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
                self.found = len(starts)
                head = self.resume_row(s, e, path)
                if not self.cont:  # restart at the resume row: every other start was cut
                    p = self.floor = head
                    cur = self.restart(head)
            if p >= n:
                break
            if len(self.regs.values) > 4 * len(cur[3]) + 4096:
                self.regs, held = self.regs.compacted(self.m, cur[3])
                cur = cur[:3] + (held,)
            cur = self.step(cur, p)
            p += 1
        self.m.steps = self.steps
        return np.array(starts, np.int64), np.array(ends, np.int64), np.array(labels, np.int64), head


Threads = tuple  # (states, starts, paths, registers): parallel lists, in priority order

__all__ = ["MAX_THREADS", "MAX_THREADS_CONF", "ThreadMatcher", "too_many_threads"]
