"""The local engine: feeds a stream to the compiled kernel batch by batch.

Input: a :class:`cerql.plan.QueryPlan` (with its automaton) and the
:class:`cerql.exec.stream.Stream` to read. Output: the results, as
:class:`cerql.exec.results.Result` values, like the reference evaluator's.

The driver does the NumPy work around ``cerql.exec.kernel``: it turns each event's condition bits
into a symbol id, keeps the lazily determinized transition table, the ECS arena and the output
buffers, grows them when the kernel asks, and carries all of it from one batch to the next, so a
stream cut into batches of any size gives the same results. :class:`Run` is the part that a
Spark task reuses over Arrow batches; :func:`evaluate` runs a whole local stream.
"""

from __future__ import annotations

import numpy as np

from cerql import ast
from cerql.exec import kernel, window
from cerql.exec.aggregate import sum_overflow
from cerql.automaton import START, Automaton
from cerql.exec.determinizer import Determinizer
from cerql.exec.registers import RegisterSpec
from cerql.exec.results import (MatchChunk, Result, too_many_candidate_events, too_many_candidates, too_many_matches,
                                too_many_runs, too_many_steps)
from cerql.exec.stream import Stream
from cerql.plan import QueryPlan, TaskPlan

STRATEGY_CODES = {"ALL": kernel.ALL, "ANY": kernel.ANY, "NEXT": kernel.NEXT, "LAST": kernel.LAST,
                  "MAX": kernel.MAX, "STRICT": kernel.STRICT}
DEFAULT_BATCH = 1 << 16
LUT_BITS = 16          # up to this many condition bits, symbols come from a lookup table
MAX_OUTPUT = 1 << 20   # result buffers grow up to this many results, then are flushed
MAX_OUTPUT_LABELS = 1 << 22  # ... or this many label entries (more only for one event's results)
RESULT_SLICE = 1 << 16  # results turned into Python objects at a time
ARENA_NODES = 1 << 12  # the arena's first size; it is compacted when full, and grows if still short


def _grow(array: np.ndarray, size: int, fill=0) -> np.ndarray:
    out = np.full((size,) + array.shape[1:], fill, dtype=array.dtype)
    out[: array.shape[0]] = array
    return out


class Run:
    """The state of one kernel run over a sequence of batches of one ordered stream.

    ``feed(symbol_bits, starts, values)`` runs one batch: ``symbol_bits`` holds each event's
    condition bits, ``starts`` marks the first event of each substream and ``values`` the window
    values (positions within the substream for ``n EVENTS``). It returns the batch's results as a
    list of :class:`cerql.exec.results.MatchChunk` (``end_row`` is the event's index within the
    batch; :func:`concat_chunks` joins them).
    """

    def __init__(self, automaton: Automaton, strategy: str, consume: bool, max_matches: int,
                 windowed: bool, amount, value_dtype, registers=None, bounds_starts: bool = False,
                 candidates: bool = False, unless_cut: tuple[int, int] | None = None,
                 order: tuple[str, int] | None = None):
        """``candidates``: the run enumerates candidates that are checked after it (the
        post-filter's relaxed automaton, whose ``max_matches`` is already the candidate limit):
        the events of one end event's candidates are bounded (kernel.candidate_events), as
        they are for MAX with registers, and the results are taken out of the kernel's buffer
        in parts of at most that many events (``feed_parts``). ``unless_cut`` (label bits, k):
        such a run's k-th UNLESS inside the pattern, whose left side's events carry those bits,
        is decided as candidates are enumerated (a path whose left side spans a result of the
        right side is not followed, kernel/enumeration.py), as post_filter.prune would decide it.
        ``order`` (strategy, label bits of the selected variables): such a run's check decides
        among the candidates under NEXT or LAST; an end event with many candidates has them
        handed over in that strategy's order, a chunk at a time, each part ending with one
        (``open_end``, kernel/ordered.py) until its caller :meth:`settle` s that the check
        found the event's match."""
        self.registers = registers if registers is not None else RegisterSpec.none()

        def right_side(other: Automaton) -> "Run":  # writes Events.bound instead of results
            return Run(other, "ALL", False, max_matches, windowed, amount, value_dtype, bounds_starts=True)

        # UNLESS: a run per right side, over the same events, ahead of this one (``feed``); each
        # writes where the results of this run may no longer start (kernel Events.bound)
        self.unless = [right_side(other) for other in automaton.unless]
        self.no_bound = np.full(0, -1, np.int64)
        # UNLESS inside the pattern: a run per right side, whose bounds become ``reach``
        self.inside = [right_side(other) for other in automaton.unless_inside]
        self.reach: np.ndarray | None = None  # (right side, batch event), set by each ``feed``
        self.reach_carry = np.full(len(self.inside), -1, np.int64)
        # NEXT and MAX never choose a result that another with the same first event beats (a
        # <next-greater one, a strict superset): the automaton drops those runs (Determinizer's
        # dominance). Registers decide at the end whether a result holds, and the one that beats
        # it may fail where it holds.
        dominance = strategy if strategy in ("NEXT", "MAX") and self.registers.count == 0 else None
        self.det = Determinizer(automaton, dominance=dominance)
        self.value_dtype = np.dtype(value_dtype)
        self.candidates = candidates
        self.unless_cut = unless_cut
        self.no_reach = np.full(1, -1, np.int64)
        self.options = self._options(automaton, strategy, consume, max_matches, windowed, amount, bounds_starts,
                                     order)
        self.open_end = -1  # a part's event whose best data sets end it (order), else -1 ...
        self.open_pos = -1  # ... and its position in its substream
        self.found = False  # what the caller settled for it
        self._init_transitions(automaton)
        self._init_buffers()

    def _options(self, automaton: Automaton, strategy: str, consume: bool, max_matches: int, windowed: bool,
                 amount, bounds_starts: bool, order) -> kernel.Options:
        """The query's settings, as the kernel reads them (the amount in the window values' type)."""
        resets = int(np.bitwise_or.reduce(self.registers.resets))  # marks no result (kernel output_bits)
        first_selected = all(t.label & ~(START | resets) for t in automaton.transitions if t.label & START)
        if self.candidates:
            max_work = kernel.candidate_events(max_matches)
        elif strategy == "MAX" and self.registers.count > 0:  # MAX compares every candidate
            max_work = kernel.candidate_events(kernel.candidate_limit(max_matches))
        else:
            max_work = 0
        unless_cut = self.unless_cut
        return kernel.Options(windowed, self.value_dtype.type(amount), STRATEGY_CODES[strategy], consume,
                              max_matches, first_selected, bounds_starts, max_work,
                              unless_cut[0] if unless_cut else 0, STRATEGY_CODES[order[0]] if order else 0,
                              order[1] if order else ~START, kernel.ORDER_PLAIN,
                              kernel.ORDER_CHUNK)

    def _init_transitions(self, automaton: Automaton) -> None:
        """No symbol and no transition yet: the first batches that meet them add them
        (``_symbol_ids``, ``_add_transitions``)."""
        self.symbols: dict[int, int] = {}
        self.symbol_bits: list[int] = []
        self.inert_bits: list[bool] = []
        self.n_inert_known = 0
        n_cond = len(automaton.conditions)
        self.lut = np.full(1 << n_cond, -1, np.int64) if n_cond <= LUT_BITS else None
        ds_cap, sym_cap = 8, 4
        self.dfa = kernel.Transitions(
            first=np.full((ds_cap, sym_cap), -1, np.int64), count=np.zeros((ds_cap, sym_cap), np.int64),
            label=np.zeros(16, np.int64), target=np.zeros(16, np.int64), final=np.zeros(ds_cap, np.bool_),
            fixed=np.zeros(ds_cap, np.bool_), inert=np.zeros(sym_cap, np.bool_))
        self.n_tr = 0
        self.n_fixed_known = 0
        self._fixed: list[bool] = []
        self.atom_required = [t.required for t in automaton.transitions if t.required]

    def _init_buffers(self) -> None:
        """The state vector, the active runs (room for one per deterministic state the table
        has room for), the arena and the output buffers, at their first sizes."""
        self.st = np.zeros(kernel.STATE_SIZE, np.int64)
        self.st[kernel.CONSUMED] = -1
        self.st[kernel.ARENA] = 1
        self.st[kernel.NACT] = 1
        ds_cap = self.dfa.first.shape[0]
        shape = (ds_cap, kernel.REGISTER_COLUMNS)
        self.runs = kernel.Runs(
            ds=np.zeros(ds_cap, np.int64), node=np.zeros(ds_cap, np.int64),
            rk=np.zeros(shape, np.int64), rf=np.zeros(shape, np.float64),
            new_ds=np.zeros(ds_cap, np.int64), new_node=np.zeros(ds_cap, np.int64),
            new_rk=np.zeros(shape, np.int64), new_rf=np.zeros(shape, np.float64),
            slot=np.full(ds_cap, -1, np.int64), cutoff=np.zeros(1, self.value_dtype))
        self.arena = None
        self._alloc_arena(ARENA_NODES)
        # MAX's index of kept positions (kernel/strategies.py), kept when the buffers grow
        self.max_index = {name: np.zeros(kernel.INDEX, np.int64) for name in ("idx_stamp", "in_count", "first_count")}
        self._alloc_output(1 << 12, 1 << 14)
        self._sync_states()

    # -- buffers
    def _alloc_arena(self, cap: int) -> None:
        """An arena of ``cap`` nodes, holding the nodes of the current one if any."""
        old = self.arena
        nodes = {}
        for name, dtype, fill in [("pos", np.int64, -1), ("label", np.int64, 0), ("a", np.int64, -1),
                                  ("b", np.int64, -1), ("maxpos", np.int64, -1), ("maxval", self.value_dtype, 0),
                                  ("top", np.int64, -1), ("minpos", np.int64, -1), ("ming", np.int64, -1),
                                  ("maxg", np.int64, -1), ("dense", np.bool_, False), ("bare", np.bool_, False),
                                  ("starts", np.int64, -1), ("low", np.int64, -1), ("level", np.int64, 0),
                                  ("jump", np.int64, -1), ("reach", np.int64, -1)]:
            nodes[name] = np.full(cap, fill, dtype) if old is None else _grow(getattr(old, name), cap, fill)
        self.arena = kernel.Arena(**nodes, stack_node=np.zeros(cap + 1, np.int64),
                                  stack_len=np.zeros(cap + 1, np.int64), path=np.zeros(cap + 1, np.int64),
                                  remap=np.zeros(cap, np.int64), seen=np.zeros(cap, np.int64),
                                  want=np.zeros(cap + 1, np.int64), depth=np.zeros(cap + 1, np.int64))

    def _alloc_output(self, res_cap: int, lab_cap: int) -> None:
        """Empty result buffers for ``res_cap`` results with ``lab_cap`` selected events."""
        self.out = kernel.Output(*(np.zeros(res_cap, np.int64) for _ in range(5)),
                                 lab_pos=np.zeros(lab_cap, np.int64), lab_mask=np.zeros(lab_cap, np.int64),
                                 **self.max_index)

    def _sync_states(self) -> None:
        """Make room for every deterministic state the determinizer has created, and note which
        are fixed points of the TRUE gaps (their successor on an inert event is themselves)."""
        while self.n_fixed_known < len(self.det.states):  # may create the gap successors
            d = self.n_fixed_known
            self.n_fixed_known += 1
            self._fixed.append(self.det.successors(d, 0) == [(0, d)])
        n = len(self.det.states)
        dfa = self.dfa
        cap = dfa.first.shape[0]
        if n > cap:
            cap = max(n, 2 * cap)
            self.dfa = dfa = dfa._replace(first=_grow(dfa.first, cap, -1), count=_grow(dfa.count, cap),
                                          final=_grow(dfa.final, cap), fixed=_grow(dfa.fixed, cap))
            self._grow_active(cap)
            self.runs = self.runs._replace(slot=_grow(self.runs.slot, cap, -1))
        dfa.final[:n] = self.det.final
        dfa.fixed[:n] = self._fixed

    def _grow_active(self, cap: int) -> None:
        """Room for ``cap`` active runs (one per deterministic state, or more with registers)."""
        if cap <= len(self.runs.ds):
            return
        self.runs = self.runs._replace(**{name: _grow(getattr(self.runs, name), cap) for name in (
            "ds", "node", "rk", "rf", "new_ds", "new_node", "new_rk", "new_rf")})

    def _symbol_ids(self, bits: np.ndarray) -> np.ndarray:
        """Each event's symbol id; a lookup table when there are few condition bits."""
        if self.lut is not None:
            ids = self.lut[bits]
            missing = ids < 0
            if missing.any():
                for b in np.unique(bits[missing]).tolist():
                    self.lut[b] = self._new_symbol(b)
                ids = self.lut[bits]
        else:
            uniq, inverse = np.unique(bits, return_inverse=True)
            known = np.array([self.symbols[b] if b in self.symbols else self._new_symbol(b)
                              for b in uniq.tolist()], np.int64)
            ids = known[inverse.reshape(-1)]
        n = len(self.symbol_bits)
        dfa = self.dfa
        if n > dfa.first.shape[1]:
            cap = max(n, 2 * dfa.first.shape[1])
            first = np.full((dfa.first.shape[0], cap), -1, np.int64)
            first[:, : dfa.first.shape[1]] = dfa.first
            count = np.zeros((dfa.first.shape[0], cap), np.int64)
            count[:, : dfa.count.shape[1]] = dfa.count
            self.dfa = dfa = dfa._replace(first=first, count=count)
        if len(dfa.inert) != dfa.first.shape[1] or n > self.n_inert_known:
            self.dfa = dfa._replace(inert=np.array(self.inert_bits + [False] * (dfa.first.shape[1] - n), np.bool_))
            self.n_inert_known = n
        return ids

    def _new_symbol(self, b: int) -> int:
        sid = self.symbols[b] = len(self.symbol_bits)
        self.symbol_bits.append(b)
        self.inert_bits.append(all(r & b != r for r in self.atom_required))
        return sid

    def _add_transitions(self, d: int, s: int) -> None:
        successors = self.det.successors(d, self.symbol_bits[s])
        need = self.n_tr + len(successors)
        dfa = self.dfa
        if need > len(dfa.label):
            cap = max(need, 2 * len(dfa.label))
            self.dfa = dfa = dfa._replace(label=_grow(dfa.label, cap), target=_grow(dfa.target, cap))
        for k, (label, target) in enumerate(successors):
            dfa.label[self.n_tr + k] = label
            dfa.target[self.n_tr + k] = target
        dfa.first[d, s] = self.n_tr
        dfa.count[d, s] = len(successors)
        self.n_tr = need
        self._sync_states()

    def _make_room(self) -> None:
        st = self.st
        kernel.compact(st, self.runs, self.arena, self.options.windowed)
        need = st[kernel.ARENA] + st[kernel.BOUND]
        cap = len(self.arena.pos)
        if 2 * need > cap:
            self._alloc_arena(max(2 * need, 2 * cap))

    # -- running
    def feed(self, bits: np.ndarray, starts: np.ndarray, values: np.ndarray, sides=None, bound=None):
        """``sides``: the registers' per-event values (``RegisterSpec.sides``) when there are any.
        ``bound``: for the run of an UNLESS right side, the array it raises (kernel Events.bound).
        With UNLESS inside the pattern, ``self.reach`` then holds the batch's ``_reach``."""
        return list(self.feed_parts(bits, starts, values, sides, bound))

    def feed_parts(self, bits: np.ndarray, starts: np.ndarray, values: np.ndarray, sides=None, bound=None):
        """:meth:`feed`, yielding the batch's results as the kernel's buffer fills, each chunk
        with every result of its end events. For a ``candidates`` run the buffer holds at most
        about ``Options.max_work`` label entries (more only for one event's, which the kernel
        bounds by the same budget), so a caller that checks each chunk and drops it holds that
        many candidates, not the batch's."""
        labels_cap = max(1 << 14, self.options.max_work // 2) if self.candidates else MAX_OUTPUT_LABELS
        if self.inside:
            self.reach = self._reach(bits, starts, values)
        if bound is None and self.unless:
            bound = np.full(len(bits), -1, np.int64)
            for other in self.unless:
                other.feed(bits, starts, values, bound=bound)
        elif bound is None:  # no UNLESS: the kernel only reads -1 (an array kept across batches)
            if len(self.no_bound) < len(bits):
                self.no_bound = np.full(len(bits), -1, np.int64)
            bound = self.no_bound
        sym = self._symbol_ids(np.ascontiguousarray(bits))
        reach = np.ascontiguousarray(self.reach[self.unless_cut[1]]) if self.unless_cut else self.no_reach
        events = kernel.Events(sym, np.ascontiguousarray(starts, dtype=np.bool_),
                               np.ascontiguousarray(values, dtype=self.value_dtype),
                               kernel.Sides(*sides) if sides is not None else self.registers.empty_sides(), reach,
                               bound)
        st = self.st
        st[kernel.CURSOR] = 0
        while True:
            status = kernel.run_batch(self.options, events, self.dfa, self.registers.plan, st, self.runs, self.arena,
                                      self.out)
            if status == kernel.DONE:
                if st[kernel.NRES] > 0:
                    yield self._take()
                break
            if status == kernel.NEED_TRANSITION:
                self._add_transitions(int(st[kernel.NEED_D]), int(st[kernel.NEED_S]))
            elif status == kernel.NEED_ARENA:
                self._make_room()
            elif status == kernel.NEED_ACTIVE:
                self._grow_active(max(int(st[kernel.BOUND]), 2 * len(self.runs.ds)))
            elif status == kernel.NEED_OUTPUT:
                grow = st[kernel.NRES] == 0 or (len(self.out.end) < MAX_OUTPUT and
                                                len(self.out.lab_pos) < labels_cap)
                if st[kernel.NRES] > 0:
                    yield self._take()
                if grow:
                    self._alloc_output(2 * len(self.out.end), 2 * len(self.out.lab_pos))
            elif status == kernel.NEED_CHECK:  # the best data sets of an event: checked before any more
                self.open_end, self.open_pos, self.found = int(st[kernel.CURSOR]), int(st[kernel.POS]), False
                if st[kernel.NRES] > 0:
                    yield self._take()
                if self.found:
                    st[kernel.ORDER] = kernel.DECIDED
                self.open_end = self.open_pos = -1
            elif status == kernel.TOO_MANY:
                raise too_many_matches(f"at least {int(st[kernel.COUNT]):,}", self.options.max_matches)
            elif status == kernel.TOO_MANY_CANDIDATES:
                raise too_many_candidates(int(st[kernel.COUNT]), kernel.candidate_limit(self.options.max_matches))
            elif status == kernel.TOO_MANY_STEPS:
                raise too_many_steps(int(st[kernel.WORK]), kernel.search_steps(self.options.max_matches),
                                     "NEXT" if self.options.strategy == kernel.NEXT else "LAST")
            elif status == kernel.TOO_MANY_CANDIDATE_EVENTS:
                raise too_many_candidate_events(int(st[kernel.WORK]), self.options.max_work)
            elif status == kernel.TOO_MANY_RUNS:
                raise too_many_runs(int(st[kernel.COUNT]), self.options.max_matches)
            elif status == kernel.OVERFLOW:
                raise sum_overflow(" in a FILTER")

    def settle(self, found: bool) -> None:
        """Say whether the check found a result ending at ``open_end`` in the part it was just
        given (an ``order`` run): if so, nothing more is enumerated there."""
        self.found = found

    def _reach(self, bits, starts, values) -> np.ndarray:
        """Per UNLESS inside the pattern, per event of the batch: the latest start (a position
        in the event's substream) of a result of its right side ending at the event or before
        it in the substream, -1 for none. A result whose part matched by the UNLESS's left side
        spans [first, last] holds one of the right side's results exactly when the reach at
        ``last`` is at least ``first`` (exec/post_filter.py)."""
        n = len(bits)
        starts = np.asarray(starts, np.bool_)
        pos0 = int(self.st[kernel.POS])  # the position of the batch's first event, if its substream goes on
        # the batch index of each event's substream's position 0 (negative when it began earlier)
        base = np.maximum.accumulate(np.where(starts, np.arange(n, dtype=np.int64), -pos0))
        none = -(1 << 62)
        reach = np.empty((len(self.inside), n), np.int64)
        for k, other in enumerate(self.inside):
            bound = np.full(n, -1, np.int64)
            other.feed(bits, starts, values, bound=bound)
            # the running greatest start as a batch index: a substream's starts exceed every
            # earlier substream's, so one running maximum serves them all
            carried = self.reach_carry[k] - pos0 if self.reach_carry[k] >= 0 else none
            at = np.where(bound >= 0, base + bound, none)
            running = np.maximum.accumulate(np.concatenate([[carried], at]))[1:]
            reach[k] = np.where(running >= base, running - base, -1)
            if n:
                self.reach_carry[k] = reach[k, -1]
        return reach

    def _take(self) -> MatchChunk:
        """Copy the buffered results out and empty the buffers."""
        st = self.st
        n, nl = int(st[kernel.NRES]), int(st[kernel.NLAB])
        res = self.out
        out = MatchChunk(end_row=res.end[:n].copy(), end=res.endpos[:n].copy(), start=res.start[:n].copy(),
                         offset=res.off[:n].copy(), length=res.length[:n].copy(), label_pos=res.lab_pos[:nl].copy(),
                         label_mask=res.lab_mask[:nl].copy())
        st[kernel.NRES] = 0
        st[kernel.NLAB] = 0
        return out


def concat_chunks(chunks) -> MatchChunk:
    """The results of ``chunks`` in order as one chunk (offsets moved to the joined labels)."""
    if not chunks:
        return MatchChunk(*(np.zeros(0, np.int64) for _ in MatchChunk._fields))
    if len(chunks) == 1:
        return chunks[0]
    shift = 0
    offsets = []
    for c in chunks:
        offsets.append(c.offset + shift)
        shift += len(c.label_pos)
    joined = {name: np.concatenate([getattr(c, name) for c in chunks]) for name in MatchChunk._fields
              if name != "offset"}
    return MatchChunk(offset=np.concatenate(offsets), **joined)


def bits_dtype(n_conditions: int):
    """The narrowest unsigned type holding ``n_conditions`` bits (narrow arrays are faster)."""
    return np.uint16 if n_conditions <= 16 else np.uint32 if n_conditions <= 32 else np.uint64


def condition_rows(cond, stream: Stream) -> np.ndarray:
    """Whether each event satisfies one condition of an automaton: an atom, a unary FILTER
    predicate (NULL is false), or ``NOT (T [FILTER ...])``: not the atom with its FILTER."""
    if isinstance(cond, ast.Atom):
        return np.asarray(stream.atoms[cond], dtype=bool)
    if isinstance(cond, ast.Not):
        rows = condition_rows(cond.atom, stream)
        return ~(rows & _filter_rows(cond.condition, stream)) if cond.condition is not None else ~rows
    return np.asarray(stream.predicates[cond], dtype=bool)


def _filter_rows(cond, stream: Stream) -> np.ndarray:
    if isinstance(cond, ast.FilterAnd):
        return _filter_rows(cond.left, stream) & _filter_rows(cond.right, stream)
    if isinstance(cond, ast.FilterOr):
        return _filter_rows(cond.left, stream) | _filter_rows(cond.right, stream)
    return np.asarray(stream.predicates[cond.predicate.text], dtype=bool)


def condition_bits(automaton: Automaton, stream: Stream) -> np.ndarray:
    """Each event's condition bits: bit k is set when the event satisfies ``conditions[k]``."""
    dtype = bits_dtype(len(automaton.conditions))
    bits = np.zeros(stream.table.num_rows, dtype)
    for k, cond in enumerate(automaton.conditions):
        bits |= condition_rows(cond, stream).astype(dtype) << dtype(k)
    return bits


class Matches:
    """The results of a whole stream as flat arrays (what :func:`match_arrays` returns).

    Result r ends at stream row ``end_row[r]`` (position ``end[r]`` in its substream
    ``substream[r]``), starts at position ``start[r]``, and its selected events are
    ``label_pos[offset[r]:offset[r] + length[r]]`` (positions, last first) with their label bits
    (decoded by ``automaton.variables_of``).
    """

    def __init__(self, automaton, substream, end_row, end, start, offset, length, label_pos, label_mask):
        self.automaton = automaton
        self.reach = None  # match_batches sets the batch's Run.reach (UNLESS inside the pattern)
        self.open_row = self.open_pos = -1  # match_batches with ``order``: an event with more to come
        self.settle = None
        self.substream, self.end_row, self.end, self.start = substream, end_row, end, start
        self.offset, self.length, self.label_pos, self.label_mask = offset, length, label_pos, label_mask

    @classmethod
    def of(cls, automaton, substream, chunk: MatchChunk) -> "Matches":
        """The results of ``chunk`` (rows of the stream as its ``end_row``), in ``substream``."""
        return cls(automaton, substream, **chunk._asdict())

    def chunk(self) -> MatchChunk:
        """The results' arrays, as the kernel gives them."""
        return MatchChunk(self.end_row, self.end, self.start, self.offset, self.length, self.label_pos,
                          self.label_mask)

    def __len__(self) -> int:
        return len(self.end)

    def slices(self, size: int):
        """The results in parts of at most ``size`` (array views), so that a caller can turn a
        part into Python objects, and drop it, before the next."""
        for lo in range(0, len(self), size):
            yield self._view(lo, min(len(self), lo + size))

    def event_slices(self, events: int):
        """The results in consecutive parts of at most ``events`` label entries each (or of one
        result, when it alone holds more), as array views."""
        if len(self.label_pos) <= events:
            yield self
            return
        ends = self.offset + self.length  # results' label entries are consecutive, in order
        lo = 0
        while lo < len(self):
            hi = max(lo + 1, int(np.searchsorted(ends, int(self.offset[lo]) + events, side="right")))
            yield self._view(lo, hi)
            lo = hi

    def _view(self, lo: int, hi: int) -> "Matches":
        """Results ``lo`` to ``hi`` (not included) with their labels, as array views."""
        first = int(self.offset[lo])
        last = int(self.offset[hi - 1] + self.length[hi - 1])
        return Matches(self.automaton, self.substream[lo:hi], self.end_row[lo:hi], self.end[lo:hi],
                       self.start[lo:hi], self.offset[lo:hi] - first, self.length[lo:hi],
                       self.label_pos[first:last], self.label_mask[first:last])

    def subset(self, keep: np.ndarray) -> "Matches":
        """The results where ``keep`` is True, with their labels."""
        idx = np.flatnonzero(keep)
        length = self.length[idx]
        offset = np.zeros(len(idx), np.int64)
        np.cumsum(length[:-1], out=offset[1:])
        gather = np.repeat(self.offset[idx] - offset, length) + np.arange(int(length.sum()), dtype=np.int64)
        return Matches(self.automaton, self.substream[idx], self.end_row[idx], self.end[idx], self.start[idx],
                       offset, length, self.label_pos[gather], self.label_mask[gather])

    def results(self) -> list[Result]:
        """As :class:`cerql.exec.results.Result` values."""
        out = []
        pos, mask = self.label_pos.tolist(), self.label_mask.tolist()
        names = {m: self.automaton.variables_of(m) for m in set(mask)}  # few distinct masks, many entries
        for k, s, e, off, ln in zip(self.substream.tolist(), self.start.tolist(), self.end.tolist(),
                                    self.offset.tolist(), self.length.tolist()):
            labels = set()
            for q in range(off, off + ln):
                labels.update((name, pos[q]) for name in names[mask[q]])
            out.append(Result(k, s, e, frozenset(labels)))
        return out


def open_run(plan: TaskPlan, value_dtype, candidates: bool = False, unless_cut: tuple[int, int] | None = None,
             order: tuple[str, int] | None = None) -> Run:
    """The :class:`Run` of ``plan`` over window values of ``value_dtype``: its strategy, CONSUME
    BY and per-event limit, its window in that type (``window.kernel_window``) and its register
    checks (:class:`cerql.exec.registers.RegisterSpec`, ``run.registers``: a caller that knows
    a sum rises over its whole input marks it there before the first batch). The one place a
    run is assembled: :func:`match_batches` (``cerql.run``), the Spark task (exec/task.py) and
    so a streaming bucket (spark/streaming/processor.py) all open theirs here. ``candidates``,
    ``unless_cut`` and ``order`` as :class:`Run` takes them, for a post-filter's relaxed plan."""
    windowed, amount = window.kernel_window(plan, value_dtype)
    registers = RegisterSpec(plan.registers, plan.automaton.labels)
    return Run(plan.automaton, plan.strategy, plan.consume != "NONE", plan.max_matches_per_event, windowed, amount,
               value_dtype, registers, candidates=candidates, unless_cut=unless_cut, order=order)


def match_batches(plan: QueryPlan, stream: Stream, batch_size: int = DEFAULT_BATCH, candidates: bool = False,
                  parts: bool = False, unless_cut: tuple[int, int] | None = None,
                  order: tuple[str, int] | None = None):
    """Run the automaton over the stream in batches of ``batch_size`` rows, yielding each
    batch's results as :class:`Matches` (results ending in it, in stream order). With
    ``candidates`` (the post-filter's relaxed plan, see :class:`Run`) a batch's results come in
    several parts, as the kernel's buffer fills (each with every result of its end events);
    only a batch's first part carries its ``reach``. ``parts`` alone gives the parts too, for
    results its caller counts as they come (cerql.run's output guards, exec/collect.py). With
    ``order`` (see :class:`Run`) a part may end with the best candidates of an event that has
    more (``open_row``, its stream row, and ``open_pos``, its position, else -1): its caller
    calls the part's ``settle`` with whether its check found a result ending there."""
    automaton = plan.automaton
    n = stream.table.num_rows
    values = window.stream_values(plan, stream)
    run = open_run(plan, values.dtype, candidates=candidates, unless_cut=unless_cut, order=order)
    registers = run.registers
    bits = condition_bits(automaton, stream)
    sides = registers.sides(stream.table) if registers.count else None
    if sides is not None:
        registers.for_stream(sides)
    starts = np.zeros(n, np.bool_)
    sub_starts = np.array([lo for lo, _ in stream.bounds], np.int64)
    starts[sub_starts] = True

    def of(chunks) -> Matches:
        for chunk in chunks:
            chunk.end_row[:] += b0  # rows of the stream
        joined = concat_chunks(chunks)
        substream = np.searchsorted(sub_starts, joined.end_row, side="right") - 1
        return Matches.of(automaton, substream, joined)

    for b0 in range(0, n, batch_size):
        b1 = min(n, b0 + batch_size)
        batch_sides = None if sides is None else kernel.Sides(*(a[b0:b1] for a in sides))
        if not (candidates or parts):
            matches = of(run.feed(bits[b0:b1], starts[b0:b1], values[b0:b1], batch_sides))
            matches.reach = run.reach
            yield matches
            continue
        first = True
        for chunk in run.feed_parts(bits[b0:b1], starts[b0:b1], values[b0:b1], batch_sides):
            matches = of([chunk])
            if first:  # the reach is computed before the kernel runs the batch
                matches.reach, first = run.reach, False
            if run.open_end >= 0:
                matches.open_row, matches.open_pos, matches.settle = run.open_end + b0, run.open_pos, run.settle
            yield matches
        if first:
            matches = of([])
            matches.reach = run.reach
            yield matches


def match_arrays(plan: QueryPlan, stream: Stream, batch_size: int = DEFAULT_BATCH) -> Matches:
    """Run the automaton over the whole stream: every result as one :class:`Matches`."""
    parts = [m for m in match_batches(plan, stream, batch_size) if len(m)]
    if len(parts) == 1:
        return parts[0]
    joined = concat_chunks([m.chunk() for m in parts])
    substream = (np.concatenate([m.substream for m in parts]) if parts else np.zeros(0, np.int64))
    return Matches.of(plan.automaton, substream, joined)


def result_batches(plan: QueryPlan, stream: Stream, batch_size: int = DEFAULT_BATCH):
    """The query's results, as the reference evaluator defines them, in parts: :class:`Matches`
    of at most RESULT_SLICE results each, not yet Python objects (``.results()`` makes them),
    as the kernel's buffer fills, so a caller counting them holds one buffer more at most."""
    for matches in match_batches(plan, stream, batch_size, parts=True):
        yield from matches.slices(RESULT_SLICE)


def evaluate(plan: QueryPlan, stream: Stream, batch_size: int = DEFAULT_BATCH) -> list[Result]:
    """Every result of the query, as the reference evaluator defines them, by the automaton."""
    return [r for part in result_batches(plan, stream, batch_size) for r in part.results()]
