"""Benchmark of the local automaton engine (``cerql.exec.driver.match_arrays``) on stock streams.

Input: a generated stream of BUY/SELL trades (``--rows``, default 1 000 000) and the query families
of seed 001 (sequences of length 3-6, Kleene closure, disjunction, selection strategies, queries
without output), a registers family (FILTER checks the kernel carries per run: a comparison
between two variables, aggregates over a Kleene variable) and an enumeration family whose result
count goes from ~10 to ~10^6. Output: a
table per family on stdout and, with ``--json PATH``, every figure as JSON.

What is timed is ``driver.match_arrays(plan, stream)``: condition bits, symbol ids, the numba
kernel (runs and enumeration) and the output arrays, with no Python-level result conversion.
``build_stream`` (Arrow sort and predicate evaluation) is timed apart. Each figure is the best of
``--repeat`` runs in CPU time of the calling thread (``time.thread_time``: user + system time, so
page faults count but time spent descheduled by other processes does not); wall times, system
time and page faults of every run are kept in the JSON. The machine this runs on is shared and
noisy, so every case is also given as a ratio against a baseline measured just before it in the
same run: a bare numba DFA pass over the same stream (one table lookup per event), the floor of
any automaton engine. Window ratios compare a query with itself at window 10^2. One extra,
instrumented run per case splits the time between the driver's stages (condition bits, symbol
mapping by lookup table, kernel calls, determinization restarts, arena compaction, output copies)
and reports the share of events whose symbol is inert (fires no transition but the TRUE gaps: the
kernel skips such an event in O(1) while every active state is a fixed point of the gaps).

A script, not a test: no test imports it and nothing asserts a timing (STYLE.md 12).

    .venv/bin/python benchmarks/bench_kernel.py --json /tmp/bench_kernel.json
    .venv/bin/python benchmarks/bench_kernel.py --quick
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

from cerql.api import analyze
from cerql.errors import ExecutionError
from cerql.exec import driver, kernel, window
from cerql.exec.stream import build_stream
from cerql.planner.resolve import resolve

# Seed 001's stock workload: ten tickers, sequences SELL;BUY;BUY;SELL;BUY;BUY over
# INTC, RIMM, QQQ, IPIX, AMAT, CSCO (Appendix D, queries S3..S6).
NAMES = ("INTC", "RIMM", "QQQ", "IPIX", "AMAT", "CSCO", "YHOO", "DELL", "ORCL", "MSFT")
SEQ_TYPES = ("SELL", "BUY", "BUY", "SELL", "BUY", "BUY")
VOLUMES = np.array([100, 200, 300, 500, 1000], np.int64)
WINDOWS = (100, 1_000, 10_000, 100_000)
LENGTHS = (3, 4, 5, 6)
STRATEGIES = ("ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT")
# Filters are sized for this many rows, so a query is the same text at every --rows.
DESIGN_ROWS = 1_000_000
# Sequences with output: about this many results at the largest window (10^5) on DESIGN_ROWS.
SEQ_RESULTS_AT_1E5 = 100_000
# A single event selected by name and type has probability 1/10 * 1/2.
P_NAME_TYPE = 0.05
SLOW_CASE_SECONDS = 30.0  # a first run slower than this is not repeated


# ---------------------------------------------------------------------------------------- data
def stock_table(n_rows: int, seed: int) -> pa.Table:
    """Trades in time order: ``type`` BUY/SELL (1/2 each), ``name`` one of ten tickers (1/10 each),
    ``price`` uniform on [0, 1000) (so ``price < T`` keeps T/1000 of the trades), ``volume`` in
    round lots, ``ts`` a strictly increasing timestamp (about 0.8 s apart)."""
    rng = np.random.default_rng(seed)
    name_idx = rng.integers(0, len(NAMES), n_rows)
    type_idx = (rng.random(n_rows) < 0.5).astype(np.int64)
    ts = np.int64(1_709_285_400_000_000) + np.cumsum(rng.integers(1, 1_600_000, n_rows))
    return pa.table({
        "type": pc.take(pa.array(["BUY", "SELL"]), pa.array(type_idx)),
        "name": pc.take(pa.array(list(NAMES)), pa.array(name_idx)),
        "price": rng.random(n_rows) * 1000.0,
        "volume": VOLUMES[rng.integers(0, len(VOLUMES), n_rows)],
        "ts": pa.array(ts, pa.timestamp("us")),
    })


# --------------------------------------------------------------------------------------- cases
@dataclass
class Case:
    family: str
    name: str
    query: str
    window: int | None = None
    twin: str | None = None  # a no-output case of the same shape (enumeration cost = difference)
    params: dict = field(default_factory=dict)


def _threshold(p: float, share: float = P_NAME_TYPE) -> float:
    """The price threshold T with share * T / 1000 = p, to 3 significant digits."""
    t = p / share * 1000.0
    return float(f"{t:.3g}")


def _seq_threshold(k: int, results: float, w: int, a_factor: float = 1.0) -> float:
    """Price threshold so that a k-sequence has about ``results`` results in window w.

    Results ~ rows * p_1 ... p_k * w^(k-1) / (k-1)! for selectivities p_j (a_factor * p for the
    first variable, p for the others)."""
    p = (results * math.factorial(k - 1) / (a_factor * DESIGN_ROWS * w ** (k - 1))) ** (1.0 / k)
    return _threshold(p)


def _seq_pattern(k: int) -> str:
    return " ; ".join(f"{SEQ_TYPES[j]} AS t{j + 1}" for j in range(k))


def _strategy_sweep(family: str, prefix: str, pattern: str, windows, max_window_for_max: int) -> list[Case]:
    """NEXT, LAST, MAX and ANY over ``pattern`` at each window (family ``{family}_strat``), each
    against the same query with no closing event under ALL (``{family}_twin``)."""
    query = ("SELECT {s} * FROM stock WHERE " + pattern + " FILTER a[name = 'INTC'] AND b[name = 'RIMM'] "
             "AND c[name = 'QQQ' AND price < {t}] WITHIN {w} EVENTS")
    cases = []
    for w in windows:
        twin = f"{prefix}ALL' w={w}"
        cases.append(Case(f"{family}_twin", twin, query.format(s="ALL", t=0, w=w), w))
        for strategy in ("NEXT", "LAST", "MAX", "ANY"):
            if strategy == "MAX" and w > max_window_for_max:
                continue
            cases.append(Case(f"{family}_strat", f"{prefix}{strategy}", query.format(s=strategy, t=4, w=w), w,
                              twin=twin, params={"strategy": strategy}))
    return cases


def build_cases(windows, lengths, enum_points) -> list[Case]:
    cases: list[Case] = []
    # Sequences with output (S3..S6 plus a price filter so results stay ~1e5 at w = 1e5).
    for k in lengths:
        t = _seq_threshold(k, SEQ_RESULTS_AT_1E5, 100_000)
        filt = " AND ".join(f"t{j + 1}[name = '{NAMES[j]}' AND price < {t}]" for j in range(k))
        for w in windows:
            cases.append(Case("seq", f"S{k}", f"SELECT * FROM stock WHERE {_seq_pattern(k)} "
                              f"FILTER {filt} WITHIN {w} EVENTS", w, params={"k": k, "price_lt": t}))
    # Sequences without output: seed 001's S3'..S6' (name filters only, dense partial matches,
    # closed by an event that never occurs).
    for k in lengths:
        filt = " AND ".join(f"t{j + 1}[name = '{NAMES[j]}']" for j in range(k))
        for w in windows:
            cases.append(Case("seq_noout", f"S{k}'", f"SELECT * FROM stock WHERE {_seq_pattern(k)} ; BUY AS ne "
                              f"FILTER {filt} AND ne[name = 'NotExists'] WITHIN {w} EVENTS", w, params={"k": k}))
    # Kleene closure in the middle. With output: b rare enough that ~3 b's fall in a 1e5 window
    # (2^m subsets per (a, c) pair), a and c sized for ~1e5 results at w = 1e5.
    tb = _threshold(3.0 / 100_000)
    tac = _threshold(math.sqrt(SEQ_RESULTS_AT_1E5 / (DESIGN_ROWS * (math.expm1(3.0) / 3e-5 - 100_000))))
    for w in windows:
        cases.append(Case("kleene", "SELL;BUY+;SELL", "SELECT * FROM stock WHERE SELL AS a ; BUY+ AS b ; SELL AS c "
                          f"FILTER a[name = 'INTC' AND price < {tac}] AND b[name = 'RIMM' AND price < {tb}] "
                          f"AND c[name = 'QQQ' AND price < {tac}] WITHIN {w} EVENTS", w))
    for w in windows:
        cases.append(Case("kleene_noout", "SELL;BUY+;SELL'", "SELECT * FROM stock WHERE SELL AS a ; BUY+ AS b ; "
                          "SELL AS c FILTER a[name = 'INTC'] AND b[name = 'RIMM'] AND c[name = 'NotExists'] "
                          f"WITHIN {w} EVENTS", w))
    # Disjunction first: (SELL OR BUY) AS a ; BUY AS b ; SELL AS c.
    t = _seq_threshold(3, SEQ_RESULTS_AT_1E5, 100_000, a_factor=2.0)
    for w in windows:
        cases.append(Case("disj", "(SELL OR BUY);BUY;SELL", "SELECT * FROM stock WHERE (SELL OR BUY) AS a ; BUY AS b ; "
                          f"SELL AS c FILTER a[name = 'INTC' AND price < {t}] AND b[name = 'RIMM' AND price < {t}] "
                          f"AND c[name = 'QQQ' AND price < {t}] WITHIN {w} EVENTS", w))
    for w in windows:
        cases.append(Case("disj_noout", "(SELL OR BUY);BUY;SELL'", "SELECT * FROM stock WHERE (SELL OR BUY) AS a ; "
                          "BUY AS b ; SELL AS c ; BUY AS ne FILTER a[name = 'INTC'] AND b[name = 'RIMM'] "
                          f"AND c[name = 'QQQ'] AND ne[name = 'NotExists'] WITHIN {w} EVENTS", w))
    # A filter nothing satisfies on the first variable: no run ever starts.
    for w in windows:
        cases.append(Case("none", "S3 a[price<0]", "SELECT * FROM stock WHERE SELL AS a ; BUY AS b ; SELL AS c "
                          f"FILTER a[price < 0] WITHIN {w} EVENTS", w))
    # Selection strategies on one query (~2.5e5 results under ALL), and on its no-output twin.
    for strategy in STRATEGIES:
        for c_filter, suffix in (("price < 4", ""), ("price < 0", "'")):
            cases.append(Case("strategy" + ("_noout" if suffix else ""), f"{strategy}{suffix}",
                              f"SELECT {strategy} * FROM stock WHERE SELL AS a ; BUY AS b ; SELL AS c "
                              f"FILTER a[name = 'INTC'] AND b[name = 'RIMM'] AND c[name = 'QQQ' AND {c_filter}] "
                              "WITHIN 1000 EVENTS", 1000, params={"strategy": strategy}))
    # Selection strategies over Kleene closure (issue 19): every RIMM BUY between an INTC SELL and
    # a rare QQQ SELL can be in b, so ALL has 2^(b's in reach) candidates per end event; NEXT,
    # LAST and MAX keep one or a few of them. MAX stops at 10^4: every INTC SELL in the window
    # starts a maximal result holding every RIMM BUY after it, about 5 000 results of 2 500
    # events per closing event at 10^5, an output of 2.6e9 positions that no engine can hold.
    cases += _strategy_sweep("kleene", "", "SELL AS a ; BUY+ AS b ; SELL AS c", windows, max_window_for_max=10_000)
    # The same over a plain sequence: NEXT's winner keeps its size (a, the first b after it, c),
    # while the results that start at its start grow with the window (every b after a). MAX
    # stops at 10^3: every (a, b) pair is maximal, 10^5 results per closing event at 10^4.
    cases += _strategy_sweep("seq", "S3 ", "SELL AS a ; BUY AS b ; SELL AS c", windows, max_window_for_max=1_000)
    # Negation and conjunction (issue 20; docs/language.md, "Negation and conjunction") without
    # output, against the plain sequence of the same length: UNLESS runs a second automaton ahead
    # of the query's, AND and ALL are products of two automata; all four closed by an event that
    # never occurs.
    names = "a[name = 'INTC'] AND b[name = 'RIMM'] AND c[name = 'NotExists']"
    negation = {
        "S3'": f"SELECT * FROM stock WHERE SELL AS a ; BUY AS b ; SELL AS c FILTER {names}",
        "UNLESS'": f"SELECT * FROM stock WHERE (SELL AS a ; BUY AS b ; SELL AS c FILTER {names}) "
                   "UNLESS (BUY FILTER BUY[name = 'AMAT' AND price < 10])",
        "AND'": f"SELECT * FROM stock WHERE (SELL AS a ; BUY AS b ; SELL AS c) AND (SELL ; BUY : (SELL OR BUY)+) "
                f"FILTER {names}",
        "ALL'": f"SELECT * FROM stock WHERE (SELL AS a ; BUY AS b) ALL SELL AS c FILTER {names}",
        "NOT'": f"SELECT * FROM stock WHERE SELL AS a ; NOT (SELL FILTER SELL[name = 'QQQ']) AS b ; SELL AS c "
                "FILTER a[name = 'INTC'] AND c[name = 'NotExists']",
    }
    for w in windows:
        for name, query in negation.items():
            cases.append(Case("negation", name, f"{query} WITHIN {w} EVENTS", w))
    # Registers (seed 002, 004): a comparison between single-event variables, and aggregates over
    # a Kleene variable, both checked by the kernel (runs meet on equal registers only).
    t = _seq_threshold(3, SEQ_RESULTS_AT_1E5, 100_000)
    for w in windows:
        cases.append(Case("registers", "S3 a.price>c.price", "SELECT * FROM stock WHERE SELL AS a ; BUY AS b ; "
                          f"SELL AS c FILTER a[name = 'INTC' AND price < {t}] AND b[name = 'RIMM' AND price < {t}] "
                          f"AND c[name = 'QQQ' AND price < {t}] AND a.price > c.price WITHIN {w} EVENTS", w))
    kleene_aggregates = ("SELECT * FROM stock WHERE SELL AS a ; BUY+ AS b ; SELL AS c FILTER a[name = 'INTC'] "
                         "AND b[name = 'RIMM'] AND c[name = 'QQQ' AND price < {tc}] AND max(b.volume) >= 500 "
                         "AND count(b) <= 3 WITHIN {w} EVENTS")
    cases.append(Case("registers", "max,count(b)", kleene_aggregates.format(tc=10, w=100), 100))
    cases.append(Case("registers", "max,count(b)'", kleene_aggregates.format(tc=0, w=1000), 1000))
    # Enumeration E1: more closing events, ~4.5 results each (a, b dense in a 60-event window;
    # c any SELL with price < T: 500 * T closing events on DESIGN_ROWS).
    e1 = ("SELECT * FROM stock WHERE SELL AS a ; BUY AS b ; SELL AS c FILTER a[name = 'INTC'] "
          "AND b[name = 'RIMM'] AND c[price < {t}] WITHIN 60 EVENTS")
    cases.append(Case("enum_twin", "E1 c[price<0]", e1.format(t=0), 60))
    for target in enum_points:
        t = float(f"{target / 2250:.3g}")
        cases.append(Case("enum", f"E1 ~{target:.0e}", e1.format(t=t), 60, twin="E1 c[price<0]",
                          params={"target": target, "shape": "E1: more closing events", "price_lt": t}))
    # Enumeration E2: ~100 closing events, more results each (a, b[price < T]; T^2/8 pairs each).
    e2 = ("SELECT * FROM stock WHERE SELL AS a ; BUY AS b ; SELL AS c FILTER a[name = 'INTC' AND price < {t}] "
          "AND b[name = 'RIMM' AND price < {t}] AND c[name = 'QQQ' AND price < {tc}] WITHIN 10000 EVENTS")
    for target in enum_points:
        t = float(f"{math.sqrt(target / 12.5):.3g}")
        twin = f"E2 ~{target:.0e} c[price<0]"
        cases.append(Case("enum_twin", twin, e2.format(t=t, tc=0), 10_000))
        cases.append(Case("enum", f"E2 ~{target:.0e}", e2.format(t=t, tc=2), 10_000, twin=twin,
                          params={"target": target, "shape": "E2: more results per closing event", "price_lt": t}))
    return cases


# ------------------------------------------------------------------------------------ baseline
@njit(nogil=True, cache=False)
def _bare_dfa(sym, starts, table):
    """One transition-table lookup per event: the floor of any automaton pass over the stream."""
    state = 0
    acc = 0
    for i in range(sym.shape[0]):
        if starts[i]:
            state = 0
        state = table[state, sym[i]]
        acc += state
    return acc


class Baseline:
    """The bare DFA pass over the stream's (type, name) symbols, and a NumPy sum over bits."""

    def __init__(self, table: pa.Table):
        types = np.asarray(pc.equal(table.column("type"), "SELL").to_numpy(zero_copy_only=False), np.int64)
        names = np.asarray(pc.index_in(table.column("name"), pa.array(list(NAMES))).to_numpy(zero_copy_only=False),
                           np.int64)
        self.sym = types * len(NAMES) + names
        self.bits = (np.uint64(1) << self.sym.astype(np.uint64))
        self.starts = np.zeros(len(self.sym), np.bool_)
        self.starts[0] = True
        rng = np.random.default_rng(0)
        self.table = rng.integers(0, 8, (8, 2 * len(NAMES))).astype(np.int64)
        _bare_dfa(self.sym[:10], self.starts[:10], self.table)  # compile

    def dfa(self, repeat: int = 5) -> float:
        return _best(lambda: _bare_dfa(self.sym, self.starts, self.table), repeat)[0]

    def numpy_sum(self, repeat: int = 5) -> float:
        return _best(lambda: int(self.bits.sum()), repeat)[0]


def _best(fn, repeat: int):
    """Best of ``repeat`` calls in CPU seconds of this thread (time spent descheduled by other
    processes on the shared machine does not count), and the last call's result."""
    best, out = math.inf, None
    for _ in range(repeat):
        t0 = time.thread_time()
        out = fn()
        best = min(best, time.thread_time() - t0)
    return best, out


# ------------------------------------------------------------------------------------- profile
class Profile:
    """Wraps the driver's stages for one run and records seconds and call counts per stage."""

    STAGES = (
        ("bits", driver, "condition_bits"),
        ("bits", window, "stream_values"),
        ("symbols", driver.Run, "_symbol_ids"),  # lookup table (np.unique only for unseen bits)
        ("kernel", kernel, "run_batch"),
        ("determinize", driver.Run, "_add_transitions"),
        ("compact", driver.Run, "_make_room"),
        ("output", driver.Run, "_take"),
        ("output", driver, "concat_chunks"),
    )

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.statuses: dict[int, int] = defaultdict(int)
        self.run = None

    def __enter__(self):
        self._saved = []
        for stage, owner, attr in self.STAGES:
            original = owner.__dict__[attr]
            self._saved.append((owner, attr, original))
            setattr(owner, attr, self._timed(stage, original, attr == "run_batch"))
        init = driver.Run.__init__
        self._saved.append((driver.Run, "__init__", init))

        def capture(run, *args, **kwargs):
            init(run, *args, **kwargs)
            self.run = run
        driver.Run.__init__ = capture
        return self

    def __exit__(self, *exc):
        for owner, attr, original in reversed(self._saved):
            setattr(owner, attr, original)

    def _timed(self, stage, fn, is_kernel):
        seconds, calls, statuses = self.seconds, self.calls, self.statuses

        def wrapper(*args, **kwargs):
            t0 = time.thread_time()
            out = fn(*args, **kwargs)
            seconds[stage] += time.thread_time() - t0
            calls[stage] += 1
            if is_kernel:
                statuses[int(out)] += 1
            return out
        return wrapper


def profile_case(plan, stream) -> dict:
    with Profile() as prof:
        t0 = time.thread_time()
        driver.match_arrays(plan, stream)
        total = time.thread_time() - t0
    run = prof.run
    inert_share = None
    if run is not None:  # untimed: which events carry an inert symbol (all symbols are known now)
        bits = driver.condition_bits(plan.automaton, stream)
        if run.lut is not None:
            ids = run.lut[bits]
        else:
            uniq, inverse = np.unique(bits, return_inverse=True)
            ids = np.array([run.symbols[b] for b in uniq.tolist()], np.int64)[inverse.reshape(-1)]
        inert_share = round(float(run.dfa.inert[ids].mean()), 5) if len(ids) else 0.0
    parts = {k: round(v * 1e3, 2) for k, v in prof.seconds.items()}
    parts["other"] = round((total - sum(prof.seconds.values())) * 1e3, 2)
    return {
        "total_ms": round(total * 1e3, 2),
        "parts_ms": parts,
        "kernel_calls": prof.calls["kernel"],
        "restarts": {"need_transition": prof.statuses[kernel.NEED_TRANSITION],
                     "need_arena": prof.statuses[kernel.NEED_ARENA],
                     "need_output": prof.statuses[kernel.NEED_OUTPUT]},
        "det_states": len(run.det.states) if run else None,
        "symbols": len(run.symbol_bits) if run else None,
        "inert_event_share": inert_share,
        "arena_capacity": len(run.arena.pos) if run else None,
    }


# ------------------------------------------------------------------------------------- running
def run_case(case: Case, table: pa.Table, baseline: Baseline, repeat: int) -> dict:
    n = table.num_rows
    rec = {"family": case.family, "name": case.name, "window": case.window, "twin": case.twin, "query": case.query,
           **case.params}
    plan = resolve(analyze(case.query), {"stock": table.schema})
    build_s, stream = _best(lambda: build_stream(plan, {"stock": table}), repeat)
    rec["build_stream_ms"] = round(build_s * 1e3, 2)
    rec["baseline_dfa_ms"] = round(baseline.dfa() * 1e3, 3)
    cpu, wall, sys_ms, faults = [], [], [], []
    try:
        for r in range(repeat):
            u0 = resource.getrusage(resource.RUSAGE_THREAD)
            w0, c0 = time.perf_counter(), time.thread_time()
            matches = driver.match_arrays(plan, stream)
            cpu.append(time.thread_time() - c0)
            wall.append(time.perf_counter() - w0)
            u1 = resource.getrusage(resource.RUSAGE_THREAD)
            sys_ms.append(round((u1.ru_stime - u0.ru_stime) * 1e3, 1))
            faults.append(u1.ru_minflt - u0.ru_minflt)
            if r == 0 and wall[0] > SLOW_CASE_SECONDS:
                rec["note"] = f"first run took {wall[0]:.1f} s: not repeated"
                break
    except ExecutionError as exc:
        rec["error"] = str(exc).splitlines()[0]
        return rec
    best = min(cpu)
    rec.update({
        "results": len(matches),
        "kernel_ms": round(best * 1e3, 2),
        "events_per_s": round(n / best),
        "x_baseline": round(best / (rec["baseline_dfa_ms"] / 1e3), 1),
        "wall_ms": round(min(wall) * 1e3, 2),
        "runs_cpu_ms": [round(t * 1e3, 2) for t in cpu],
        "runs_wall_ms": [round(t * 1e3, 2) for t in wall],
        "runs_sys_ms": sys_ms,         # kernel-mode CPU time (page faults of fresh buffers)
        "runs_page_faults": faults,
    })
    if best < SLOW_CASE_SECONDS:
        rec["profile"] = profile_case(plan, stream)
    return rec


def derive(records: list[dict]) -> None:
    """Window ratios (time at w / time at the family's smallest window, same query text apart from
    the window) and enumeration cost per output row (time minus the no-output twin's)."""
    by_name = {r["name"]: r for r in records}
    first: dict[tuple, dict] = {}
    for r in records:
        if r.get("window") is None or "kernel_ms" not in r or r["family"].startswith(("enum", "strategy")):
            continue
        key = (r["family"], r["name"])
        base = first.setdefault(key, r)
        r["slowdown_vs_smallest_window"] = round(r["kernel_ms"] / base["kernel_ms"], 2)
    for r in records:
        twin = by_name.get(r.get("twin") or "")
        if twin and "kernel_ms" in r and "kernel_ms" in twin:
            extra = r["kernel_ms"] - twin["kernel_ms"]
            r["twin_ms"] = twin["kernel_ms"]
            r["extra_ms"] = round(extra, 2)
            if r["results"]:
                r["ns_per_result_total"] = round(r["kernel_ms"] * 1e6 / r["results"], 1)
                r["ns_per_result_extra"] = round(extra * 1e6 / r["results"], 1)
    enum = [r for r in records if r["family"] == "enum" and r.get("results")]
    for shape in ("E1", "E2"):
        pts = [r for r in enum if r["name"].startswith(shape)]
        if len(pts) >= 2:
            x = np.array([r["results"] for r in pts], float)
            y = np.array([r["extra_ms"] for r in pts], float)
            slope, icpt = np.polyfit(x, y, 1)  # least squares over the shape's points
            pts[0]["fit"] = {"ns_per_result": round(slope * 1e6, 1), "intercept_ms": round(icpt, 2)}


# ------------------------------------------------------------------------------------ printing
def _fmt_rate(eps):
    return f"{eps / 1e6:7.2f}"


HEAD = (f"{'family':<14}{'case':<26}{'window':>8}{'results':>10}{'build ms':>10}{'kernel ms':>11}"
            f"{'M ev/s':>8}{'xDFA':>8}{'xW0':>6}{'inert%':>8}  {'bits/sym/kern/det/cmp/out/other ms':<40}")


def print_table(records: list[dict], header: bool = True) -> None:
    if header:
        print(HEAD)
        print("-" * len(HEAD))
    for r in records:
        if "error" in r:
            print(f"{r['family']:<14}{r['name']:<26}{r['window'] or '':>8}  ERROR {r['error']}")
            continue
        p = r.get("profile", {}).get("parts_ms", {})
        parts = "/".join(f"{p.get(k, 0):.0f}" for k in ("bits", "symbols", "kernel", "determinize", "compact",
                                                           "output", "other"))
        inert = r.get("profile", {}).get("inert_event_share")
        inert = float("nan") if inert is None else 100 * inert
        print(f"{r['family']:<14}{r['name']:<26}{r['window'] or '':>8}{r['results']:>10}{r['build_stream_ms']:>10.1f}"
              f"{r['kernel_ms']:>11.1f}{_fmt_rate(r['events_per_s']):>8}{r['x_baseline']:>8.0f}"
              f"{r.get('slowdown_vs_smallest_window', float('nan')):>6.2f}{inert:>8.2f}  {parts}", flush=True)


def machine() -> dict:
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": model, "python": platform.python_version(),
            "numba": numba.__version__, "numpy": np.__version__, "pyarrow": pa.__version__,
            "platform": platform.platform(), "loadavg_start": os.getloadavg()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=None, help="stream length (default 1_000_000; 200_000 with --quick)")
    ap.add_argument("--repeat", type=int, default=None, help="best of N runs (default 3; 2 with --quick)")
    ap.add_argument("--quick", action="store_true", help="fewer rows, windows and lengths (under 2 minutes)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--family", action="append", help="only these families (repeatable), e.g. seq, enum")
    ap.add_argument("--json", metavar="PATH", help="write every figure to PATH")
    args = ap.parse_args(argv)
    rows = args.rows or (200_000 if args.quick else 1_000_000)
    repeat = args.repeat or (2 if args.quick else 3)
    windows = (100, 100_000) if args.quick else WINDOWS
    lengths = (3, 6) if args.quick else LENGTHS
    enum_points = (10, 1_000, 100_000) if args.quick else (10, 100, 1_000, 10_000, 100_000, 1_000_000)

    info = machine()
    print(f"# {info['cpu']} x{info['nproc']}, Python {info['python']}, numba {info['numba']}, "
          f"numpy {info['numpy']}, pyarrow {info['pyarrow']}; load {info['loadavg_start']}")
    t0 = time.perf_counter()
    table = stock_table(rows, args.seed)
    print(f"# {rows:,} rows generated in {time.perf_counter() - t0:.2f} s; best of {repeat}", flush=True)

    cases = build_cases(windows, lengths, enum_points)
    if args.family:
        keep = set(args.family)
        wanted_twins = {c.twin for c in cases if c.family in keep and c.twin}
        cases = [c for c in cases if c.family in keep or c.name in wanted_twins]

    # Warm up: the first match_arrays compiles (or loads from the numba cache) the kernel.
    t0 = time.perf_counter()
    warm = cases[0]
    wplan = resolve(analyze(warm.query), {"stock": table.schema})
    driver.match_arrays(wplan, build_stream(wplan, {"stock": table.slice(0, 10_000)}))
    baseline = Baseline(table)
    print(f"# warm-up (numba compile or cache load) {time.perf_counter() - t0:.2f} s", flush=True)
    base_start = {"dfa_ms": baseline.dfa(20) * 1e3, "numpy_sum_ms": baseline.numpy_sum(20) * 1e3}
    print(f"# baseline: bare DFA pass {base_start['dfa_ms']:.2f} ms ({rows / base_start['dfa_ms'] / 1e3:.0f} M ev/s), "
          f"numpy sum over bits {base_start['numpy_sum_ms']:.2f} ms", flush=True)

    records = []
    started = time.perf_counter()
    print(HEAD, flush=True)
    for case in cases:
        records.append(run_case(case, table, baseline, repeat))
        print_table(records[-1:], header=False)
    derive(records)
    elapsed = time.perf_counter() - started

    print()
    print_table(records)
    dfa = [r["baseline_dfa_ms"] for r in records if "baseline_dfa_ms" in r]
    summary = {"baseline_dfa_ms": {"min": min(dfa), "median": statistics.median(dfa), "max": max(dfa)},
               "baseline_start": base_start, "elapsed_s": round(elapsed, 1)}
    print(f"\n# baseline DFA pass over the run: min {min(dfa):.2f} / median {statistics.median(dfa):.2f} / "
          f"max {max(dfa):.2f} ms; cases took {elapsed:.0f} s")
    for r in records:
        if r.get("fit"):
            print(f"# enumeration {r['name'][:2]}: (time - no-output twin) ~ {r['fit']['ns_per_result']} ns/result "
                  f"+ {r['fit']['intercept_ms']} ms")
    if args.json:
        out = {"machine": info, "command": " ".join([sys.executable] + sys.argv),
               "rows": rows, "repeat": repeat, "seed": args.seed, "summary": summary, "cases": records}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
        print(f"# wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
