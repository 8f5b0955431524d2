"""MATCH_RECOGNIZE on the user's path: ``cerql.run`` to a DataFrame, ``spark.cer_sql`` to the noop sink.

cerql matches a row pattern with a priority-ordered NFA simulation (the Pike-VM kernel when every
DEFINE reads the current row alone, the thread matcher with registers otherwise;
docs/semantics.md, "MATCH_RECOGNIZE (the local engine)"), where a backtracking engine tries
every start row and every mapping depth first. The families:

1. **vshape**: ``PATTERN (A B+ C+)``, ``B AS price < PREV(price), C AS price > PREV(price)`` on
   a random-walk price, 100 partitions, ``--vshape-rows`` rows (100k and 1M), against its twin
   whose C never holds (same sort, partitions and DEFINE bits, no match) measured in the same
   rounds: rows per second, the ratio to the twin, and the time per output row.
2. **adversarial**: one partition where every row is A (``price`` = the row number + 1):
   ``PATTERN (A+ B)`` and ``PATTERN (A+ B+)`` where B never holds; ``PATTERN (A+ B+)`` where A
   and B both hold on every row (trino#18036's shape); ``PATTERN ((A | B)* C)`` where A and B
   both hold and C never (a backtracker tries 2^n labellings, so it runs at ``8..20`` rows);
   and the history-dependent ``PATTERN (A+ B)`` with ``B AS price < FIRST(A.price)`` (thread
   matcher), at ``--adv-rows`` sizes, cerql against ``backtrack`` below (the textbook
   algorithm, in Python): the growth ``time(2N) / time(N)`` per engine (2 is linear, 4
   quadratic); for the history-dependent query also cerql's time per live partial match and
   row (each start row keeps one until the end: N(N+1)/2 of them over the rows) and its
   ratio to the backtracker's time. A size is skipped for an engine once a smaller one took over ``--budget``
   seconds. cerql's row-local queries also run at ``--adv-big`` sizes (100 000 to 800 000),
   where its fixed cost no longer hides the growth.
3. **skip**: family 1 under ``AFTER MATCH SKIP TO NEXT ROW`` against ``PAST LAST ROW``, same rounds.
4. **flink**: Flink SQL MATCH_RECOGNIZE (PyFlink in its own venv under ``--cache-dir``, built by
   ``peers/flink_engine.py``; left out with the reason when it cannot be) on family 1 closed by
   a row D (``A B+ C+ D``: Flink refuses a greedy quantifier last) and on family 2's
   ``A+ B``, beside cerql on the same rows; Flink's seconds less its fixed cost per job (the
   same job on an empty table).
5. **spark**: family 1 at the largest ``--vshape-rows`` through ``spark.cer_sql`` to the noop
   sink on local[2] (matched in the JVM, and again with ``cerql.matchRecognize.jvm`` false: in
   Python workers), against ``repartition(sym).sortWithinPartitions(sym, ts)`` of the same
   cached rows, interleaved; the rows cached from the pandas DataFrame (a LocalRelation) and
   from Parquet.
6. **memory**: what a Spark task holds while it matches one PARTITION BY group of
   ``--memory-rows`` rows handed to it in Arrow batches of 10 000 (Spark's default), the DEFINE
   bits given as Spark computes them: batch by batch (exec/mr_incremental.py, what tasks run)
   against the whole group gathered and matched at once (what they ran before), each in a
   fresh process; the peak resident memory over the process's before the first batch (the
   batches already in memory), and the rows held. Family 1's V-shape (short matches) and
   family 2's ``A+ B`` (one match live from the first row to the last, which must be held).
7. **threads**: the thread matcher (history-dependent DEFINEs, exec/mr_threads.py) in CPU
   seconds of ``cerql.run``: unbounded registers (every start row keeps its partial match) in
   ``A+ B`` over family 2's rising prices, B never holding: ``FIRST(A.price)``, a float sum,
   ``count`` with ``LAST(A.ts, 1)``; bounded ones, linear in the rows, on a random walk:
   tests/exec/test_mr_history.py's V-shape through ``LAST(DOWN.price, 1)`` and ``LAST(UP.price,
   1)``, and a running sum that ends each match. ``PYTHONPATH=<another tree>`` times that code.

Counts are printed for every engine and checked against cerql's where the query is the same
(the backtracker also runs family 1 at the smallest size, to check it against cerql on a
pattern that does match). Wall seconds, best of ``--repeat``, rounds interleaved; runs over 2 s
are not repeated. A script, not a test: nothing asserts a timing.

    .venv/bin/python benchmarks/bench_match_recognize.py --json /tmp/bench_mr.json
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import sys
import tempfile
import signal
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

import cerql
from cerql.spark.mr_jvm import JVM_CONF

PARTITIONS = 100
SLOW = 2.0  # seconds: a run this long is not repeated (its noise is small against it)

VSHAPE = """SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY sym ORDER BY ts
  MEASURES FIRST(A.ts) AS first_ts, LAST(C.ts) AS last_ts, COUNT(*) AS n
  ONE ROW PER MATCH AFTER MATCH SKIP {skip}
  PATTERN (A B+ C+) DEFINE B AS price < PREV(price), C AS price > PREV(price){never})"""
ADVERSARIAL = """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts
  MEASURES FIRST(ts) AS first_ts, COUNT(*) AS n ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
  PATTERN ({pattern}) DEFINE {define})"""
_A, _B = ("var", "A"), ("var", "B")
ADV_QUERIES = {  # name: (PATTERN, DEFINE, the backtracker's pattern, its sizes if not --adv-rows)
    "A+ B": ("A+ B", "A AS price > 0, B AS price < 0", ("seq", [("quant", _A, 1, None), _B]), None),
    "A+ B+": ("A+ B+", "A AS price > 0, B AS price < 0", ("seq", [("quant", _A, 1, None), ("quant", _B, 1, None)]),
              None),
    # trino#18036's shape: A and B both hold on every row; one match of the whole partition
    "A+ B+, both hold": ("A+ B+", "A AS price > 0, B AS price > 0",
                         ("seq", [("quant", _A, 1, None), ("quant", _B, 1, None)]), None),
    # no C: a backtracker tries every A/B labelling of every suffix, 2^n of them
    "(A | B)* C": ("(A | B)* C", "A AS price > 0, B AS price > 0, C AS price < 0",
                   ("seq", [("quant", ("alt", [_A, _B]), 0, None), ("var", "C")]), [8, 12, 16, 20]),
    "A+ B, B < FIRST(A)": ("A+ B", "A AS price > 0, B AS price < FIRST(A.price)",
                           ("seq", [("quant", _A, 1, None), _B]), None),
}
FLINK_VSHAPE = """MATCH_RECOGNIZE (PARTITION BY sym ORDER BY rt
  MEASURES FIRST(A.ts) AS first_ts ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B+ C+ D) DEFINE B AS price < PREV(price), C AS price > PREV(price), D AS price <= PREV(price))"""
FLINK_ADV = """MATCH_RECOGNIZE (ORDER BY rt
  MEASURES FIRST(A.ts) AS first_ts ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A+ B) DEFINE A AS price > 0, B AS price < 0)"""


# ------------------------------------------------------------------------------------ data
def random_walk(rows: int, partitions: int = PARTITIONS, seed: int = 1) -> pd.DataFrame:
    """``partitions`` symbols of ``rows // partitions`` rows each, ``ts`` 0.. per symbol, a price
    walking by normal steps, rounded to cents (so Flink's CSV holds exactly what cerql sees)."""
    rng = np.random.default_rng(seed)
    per = rows // partitions
    steps = rng.standard_normal((partitions, per))
    price = np.round(100.0 + np.cumsum(steps, axis=1), 2).ravel()
    return pd.DataFrame({"sym": np.repeat(np.arange(partitions, dtype=np.int64), per),
                         "ts": np.tile(np.arange(per, dtype=np.int64), partitions), "price": price})


def rising(rows: int) -> pd.DataFrame:
    """One partition, ``price`` = row number + 1: every row is A, ``price < 0`` and
    ``price < FIRST(A.price)`` never hold."""
    return pd.DataFrame({"ts": np.arange(rows, dtype=np.int64), "price": np.arange(1, rows + 1, dtype=np.float64)})


# ------------------------------------------------------------------------------ backtracking
def backtrack(pattern, rows: int, holds, skip_to_next_row: bool = False) -> int:
    """The textbook row pattern matcher (how Oracle and DuckDB evaluate, and the standard's
    naive reading): for each start row, the first mapping in preference order, found depth first
    (greedy quantifiers try one more iteration before stopping), then AFTER MATCH SKIP; the
    number of matches. ``pattern``: ``("var", v)``, ``("seq", [p, ...])``, ``("alt", [p, ...])``
    or ``("quant", p, min, max or None)`` (greedy); ``holds(v, row, mapped)`` is v's DEFINE at
    ``row``, ``mapped`` the (row, variable) pairs mapped so far. Nothing here maps an empty
    iteration, so the empty-iteration rule is just "an iteration must advance"."""
    mapped: list[tuple[int, str]] = []

    def match(p, row, then):
        kind = p[0]
        if kind == "var":
            if row < rows and holds(p[1], row, mapped):
                mapped.append((row, p[1]))
                end = then(row + 1)
                if end is None:
                    mapped.pop()
                return end
            return None
        if kind == "seq":
            def step(i, at):
                return then(at) if i == len(p[1]) else match(p[1][i], at, lambda nxt: step(i + 1, nxt))
            return step(0, row)
        if kind == "alt":
            for q in p[1]:
                end = match(q, row, then)
                if end is not None:
                    return end
            return None
        sub, lo, hi = p[1], p[2], p[3]

        def loop(count, at):
            if hi is None or count < hi:
                end = match(sub, at, lambda nxt: loop(count + 1, nxt) if nxt > at else None)
                if end is not None:
                    return end
            return then(at) if count >= lo else None
        return loop(0, row)

    matches, start = 0, 0
    while start < rows:
        mapped.clear()
        end = match(pattern, start, lambda at: at)
        if end is None or skip_to_next_row:
            start += 1
        else:
            start = end
        matches += end is not None
    return matches


def in_big_stack(fn, *args):
    """``fn(*args)`` in a thread with a 1 GB stack, the garbage collector off: the backtracker
    recurses a few frames per row, and with them live the collector's passes grow with the depth
    (4.5x instead of 4x from 1k to 2k rows), which would charge the algorithm for CPython's GC."""
    out = []
    threading.stack_size(1 << 30)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000_000)
    gc.disable()
    try:
        worker = threading.Thread(target=lambda: out.append(fn(*args)))
        worker.start()
        worker.join()
    finally:
        gc.enable()
        sys.setrecursionlimit(old)
        threading.stack_size(0)
    return out[0]


def backtrack_vshape(df: pd.DataFrame, skip_to_next_row: bool = False) -> int:
    """Family 1 through ``backtrack``, partition by partition (rows already in ``ts`` order)."""
    pattern = ("seq", [("var", "A"), ("quant", ("var", "B"), 1, None), ("quant", ("var", "C"), 1, None)])
    total = 0
    for _, part in df.groupby("sym", sort=False):
        price = part["price"].to_numpy()
        down = [False] + list(price[1:] < price[:-1])
        up = [False] + list(price[1:] > price[:-1])
        bits = {"A": [True] * len(price), "B": down, "C": up}
        total += backtrack(pattern, len(price), lambda v, r, m: bits[v][r], skip_to_next_row)
    return total


def backtrack_adversarial(name: str, df: pd.DataFrame) -> int:
    pattern = ADV_QUERIES[name][2]
    price = df["price"].tolist()
    if "FIRST" in name:
        def holds(v, r, mapped):
            first_a = next(row for row, var in mapped if var == "A") if mapped else None
            return price[r] > 0 if v == "A" else first_a is not None and price[r] < price[first_a]
    else:
        conditions = dict(d.split(" AS ") for d in ADV_QUERIES[name][1].split(", "))
        bits = {v: [p > 0 for p in price] if c == "price > 0" else [p < 0 for p in price]
                for v, c in conditions.items()}

        def holds(v, r, mapped):
            return bits[v][r]
    return in_big_stack(backtrack, pattern, len(price), holds)


# ---------------------------------------------------------------------------------- timing
def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def rounds(variants: dict, repeat: int) -> dict[str, dict]:
    """Best wall seconds and the count of each variant (name -> zero-argument function returning
    a count), run once per round, rounds interleaved; a variant over ``SLOW`` s runs once."""
    best = {name: {"seconds": math.inf, "count": None} for name in variants}
    for r in range(repeat):
        for name, fn in variants.items():
            if r and best[name]["seconds"] > SLOW:
                continue
            seconds, count = timed(fn)
            rec = best[name]
            if rec["count"] is not None and rec["count"] != count:
                raise SystemExit(f"{name}: {count} matches, then {rec['count']}")
            rec["count"], rec["seconds"] = count, min(rec["seconds"], seconds)
    return best


def run_count(query: str, df) -> int:
    return len(cerql.run(query, {"t": df}))


def agree(a, b) -> str:
    return "yes" if a == b else f"NO ({a} vs {b})"


# -------------------------------------------------------------------------------- families
def family_vshape(sizes: list[int], repeat: int, records: list) -> None:
    print("\n## 1. V-shape PATTERN (A B+ C+), 100 partitions, cerql.run; twin: the same with C never true")
    print(f"{'rows':>9} {'matches':>8} {'ms':>8} {'rows/s':>10} {'x twin':>7} {'us/match':>9} {'us/match-twin':>13}")
    for n in sizes:
        df = random_walk(n)
        got = rounds({"vshape": lambda: run_count(VSHAPE.format(skip="PAST LAST ROW", never=""), df),
                      "twin": lambda: run_count(VSHAPE.format(skip="PAST LAST ROW", never=" AND price < 0"), df)},
                     repeat)
        v, twin = got["vshape"], got["twin"]
        per = v["seconds"] / v["count"] * 1e6
        extra = (v["seconds"] - twin["seconds"]) / v["count"] * 1e6
        print(f"{n:>9,} {v['count']:>8,} {v['seconds'] * 1e3:8.0f} {n / v['seconds']:10.3g} "
              f"{v['seconds'] / twin['seconds']:7.2f} {per:9.2f} {extra:13.2f}")
        records.append({"family": "vshape", "rows": n, "engine": "cerql.run", **v, "twin_seconds": twin["seconds"]})
    kernel_alone(max(sizes), repeat, records)
    n = sizes[0]
    df = random_walk(n)
    seconds, count = timed(lambda: backtrack_vshape(df))
    cerql_count = next(r["count"] for r in records if r["family"] == "vshape" and r["rows"] == n)
    print(f"backtrack (Python) on {n:,} rows: {count:,} matches in {seconds * 1e3:.0f} ms; "
          f"agrees with cerql: {agree(count, cerql_count)}")
    records.append({"family": "vshape", "rows": n, "engine": "backtrack", "seconds": seconds, "count": count})


def kernel_alone(n: int, repeat: int, records: list) -> None:
    """The Pike kernel alone on family 1's DEFINE bits (a diagnosis: what ``cerql.run`` spends
    matching, without reading, sorting and the DEFINEs), one call per partition as the engine
    makes them; CPU seconds of this process, best of ``repeat`` (the machine is shared)."""
    from cerql import row_pattern
    from cerql.exec.mr_define import define_bits
    from cerql.exec.mr_engine import pattern_variables
    from cerql.planner import front

    text = VSHAPE.format(skip="PAST LAST ROW", never="")
    planned = front.plan_row_pattern(text)
    matcher = row_pattern.matcher(planned)
    df = random_walk(n)
    table = pa.Table.from_pandas(df, preserve_index=False)
    sym = df["sym"].to_numpy()
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(sym)) + 1, [n]])
    first, end = np.repeat(bounds[:-1], np.diff(bounds)), np.repeat(bounds[1:], np.diff(bounds))
    defines = {d.variable.upper(): d.condition for d in planned.clause.defines}
    bits = define_bits(table, first, end, pattern_variables(planned.clause), defines, text)
    best, count = math.inf, 0
    for _ in range(max(repeat, 3)):
        t0 = time.process_time()
        count = sum(len(matcher.match(bits[lo:hi])[0]) for lo, hi in zip(bounds[:-1], bounds[1:]))
        best = min(best, time.process_time() - t0)
    print(f"kernel alone (Pike VM over the DEFINE bits, CPU time): {n:,} rows in {best * 1e3:.0f} ms, "
          f"{n / best / 1e6:.1f} M rows/s, {count:,} matches")
    records.append({"family": "vshape", "rows": n, "engine": "kernel", "cpu_seconds": best, "count": count})


def family_adversarial(sizes: list[int], big: list[int], history_sizes: list[int], repeat: int, budget: float,
                       records: list) -> None:
    print("\n## 2. Adversarial for backtracking: one partition, price = row number + 1 (every row A)")
    for name, (pattern, define, _, bt_sizes) in ADV_QUERIES.items():
        query = ADVERSARIAL.format(pattern=pattern, define=define)
        history = "FIRST" in name
        todo = history_sizes if history else (bt_sizes or []) + sizes
        print(f"\n### PATTERN ({pattern}) DEFINE {define}" + ("  (thread matcher)" if history else "  (Pike kernel)"))
        print(f"{'rows':>9} {'cerql ms':>10} {'growth':>7} {'backtrack ms':>13} {'growth':>7} {'counts':>12}")
        last = {"cerql": None, "backtrack": None}
        over = {"cerql": False, "backtrack": False}
        for n in todo + ([] if history else big):
            df = rising(n)
            variants = {}
            if not over["cerql"]:
                variants["cerql"] = lambda: run_count(query, df)
            if not over["backtrack"] and n in (bt_sizes or todo):
                variants["backtrack"] = lambda: backtrack_adversarial(name, df)
            if not variants:
                break
            got = rounds(variants, repeat)
            cells, counts = [], []
            for engine in ("cerql", "backtrack"):
                rec = got.get(engine)
                if rec is None:
                    cells.append(f"{'-':>{10 if engine == 'cerql' else 13}} {'':>7}")
                    continue
                prev = last[engine]
                growth = f"{rec['seconds'] / prev[1]:.2f}" if prev and prev[0] * 2 == n else ""
                cells.append(f"{rec['seconds'] * 1e3:{10 if engine == 'cerql' else 13}.1f} {growth:>7}")
                counts.append(rec["count"])
                last[engine] = (n, rec["seconds"])
                over[engine] = rec["seconds"] > budget
                records.append({"family": "adversarial", "query": name, "rows": n, "engine": engine, **rec})
            ok = agree(*counts) if len(counts) == 2 else str(counts[0])
            print(f"{n:>9,} {' '.join(cells)} {ok:>12}{per_thread(got, n) if history else ''}", flush=True)
        skipped = [e for e, o in over.items() if o]
        if skipped:
            print(f"(larger sizes skipped for {', '.join(skipped)}: a run took over --budget {budget:g} s)")


THREAD_CASES = {  # name: (rows, data, PATTERN, DEFINE)
    "FIRST(A)": (2000, "rising", "A+ B", "A AS price > 0, B AS price < FIRST(A.price)"),
    "float sum": (1000, "rising", "A+ B", "A AS sum(A.price) > 0, B AS price < 0"),
    "count, LAST(A, 1)": (1000, "rising", "A+ B",
                          "A AS price > 0, B AS price < 0 OR count(A.*) < 0 OR LAST(A.ts, 1) < 0"),
    "V by LAST(DOWN, 1)": (20_000, "walk", "STRT DOWN+ UP+",
                           "DOWN AS price < coalesce(LAST(DOWN.price, 1), PREV(price)), UP AS UP.price > "
                           "LAST(UP.price, 1) OR (LAST(UP.price, 1) IS NULL AND price > PREV(price))"),
    "bounded sum": (30_000, "walk", "A+ B", "A AS sum(A.price) < 1500000, B AS price > PREV(price)"),
}


def walk(rows: int) -> pd.DataFrame:
    """One partition, ``price`` a random walk of steps +-1 far above 0."""
    steps = np.random.default_rng(7).choice([-1, 1], rows)
    return pd.DataFrame({"ts": np.arange(rows, dtype=np.int64), "price": np.cumsum(steps) + 10 * rows})


def family_threads(repeat: int, records: list) -> None:
    print("\n## 7. The thread matcher (history-dependent DEFINEs), cerql.run, CPU seconds")
    print(f"{'case':>20} {'rows':>7} {'CPU s':>8} {'matches':>8}")
    for name, (n, data, pattern, define) in THREAD_CASES.items():
        query = ADVERSARIAL.format(pattern=pattern, define=define)
        df = rising(n) if data == "rising" else walk(n)
        best, count = math.inf, None
        for _ in range(repeat):
            t0 = time.process_time()
            count = run_count(query, df)
            best = min(best, time.process_time() - t0)
        print(f"{name:>20} {n:>7,} {best:>8.3f} {count:>8,}", flush=True)
        records.append({"family": "threads", "query": name, "rows": n, "engine": "cerql", "cpu_seconds": best,
                        "count": count})


def per_thread(got: dict, n: int) -> str:
    """The thread matcher's time per live partial match and row (every start row keeps one to
    the end, as its FIRST(A.price) differs: n(n+1)/2 of them), and cerql / backtrack."""
    cerql, bt = got.get("cerql"), got.get("backtrack")
    if cerql is None:
        return ""
    ratio = f", {cerql['seconds'] / bt['seconds']:.2f}x backtrack" if bt else ""
    return f"   ({cerql['seconds'] / (n * (n + 1) / 2) * 1e6:.2f} us per partial match and row{ratio})"


def family_skip(n: int, repeat: int, records: list) -> None:
    print(f"\n## 3. AFTER MATCH SKIP on family 1, {n:,} rows, cerql.run")
    df = random_walk(n)
    got = rounds({skip: (lambda s=skip: run_count(VSHAPE.format(skip=s, never=""), df))
                  for skip in ("PAST LAST ROW", "TO NEXT ROW")}, repeat)
    past = got["PAST LAST ROW"]
    print(f"{'skip':>14} {'matches':>8} {'ms':>8} {'x past':>7} {'us/match':>9}")
    for skip, rec in got.items():
        print(f"{skip:>14} {rec['count']:>8,} {rec['seconds'] * 1e3:8.0f} {rec['seconds'] / past['seconds']:7.2f} "
              f"{rec['seconds'] / rec['count'] * 1e6:9.2f}")
        records.append({"family": "skip", "skip": skip, "rows": n, "engine": "cerql.run", **rec})
    bt_n = min(n, 100_000)
    bt = random_walk(bt_n)
    count = backtrack_vshape(bt, skip_to_next_row=True)
    mine = run_count(VSHAPE.format(skip="TO NEXT ROW", never=""), bt)
    print(f"TO NEXT ROW on {bt_n:,} rows: backtrack {count:,} matches, cerql {mine:,}: agree {agree(count, mine)}")


def run_flink(py: str, cache: Path, csv, cases: list, repeat: int, timeout: float) -> tuple[dict, str | None]:
    """Flink's records ``{name: {"count", "seconds", "empty_seconds"}}`` for ``cases`` (name,
    clause, rows), run in order by ``peers/_flink_runner.py`` in one process, and why it stopped
    early, if it did: past ``timeout`` seconds the process and its JVM are killed and the cases
    it finished are kept (unlike ``flink_engine.run_flink``, which waits for all of them)."""
    columns = [["type", "STRING"], ["sym", "BIGINT"], ["price", "DOUBLE"], ["ts", "BIGINT"]]
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        specs = [{"name": name, "body": body, "csv": csv(df, os.path.join(tmp, f"q{i}.csv"))}
                 for i, (name, body, df) in enumerate(cases)]
        empty = os.path.join(tmp, "empty.csv")
        Path(empty).touch()
        spec = os.path.join(tmp, "spec.json")
        with open(spec, "w") as f:
            json.dump({"mode": "batch", "columns": columns, "ms_per_ts": 1, "repeat": repeat, "queries": specs}, f)
        runner = Path(__file__).with_name("peers") / "_flink_runner.py"
        with open(os.path.join(tmp, "stderr"), "w+") as err:
            proc = subprocess.Popen([py, str(runner), specs[0]["csv"], empty, spec], stdout=subprocess.PIPE,
                                    stderr=err, text=True, cwd=tmp, start_new_session=True)

            def read():
                for line in proc.stdout:
                    if line.startswith("{"):
                        rec = json.loads(line)
                        out[rec["name"]] = rec
                        print(f"  (Flink done: {rec['name']}, {rec['count']} matches, {rec['seconds']:.2f} s)",
                              flush=True)
            reader = threading.Thread(target=read)
            reader.start()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                reader.join()
                left = [c[0] for c in cases if c[0] not in out]
                return out, f"killed after --flink-timeout {timeout:g} s, not finished: {', '.join(left)}"
            reader.join()
            if proc.returncode:
                err.seek(0)
                causes = [ln.strip() for ln in err if "Exception:" in ln or "Error:" in ln]
                return out, f"runner failed ({proc.returncode}): {(causes or ['?'])[-1][:300]}"
    return out, None


def family_flink(vshape_sizes: list[int], adv_sizes: list[int], repeat: int, cache: Path, timeout: float,
                 records: list) -> None:
    print("\n## 4. Flink SQL MATCH_RECOGNIZE (PyFlink, parallelism 1, batch) beside cerql.run")
    sys.path.insert(0, str(Path(__file__).with_name("peers")))
    import flink_engine

    py, how = flink_engine.flink_venv(cache, None, sys.executable)
    if py is None:
        print(f"Flink left out: {how}")
        records.append({"family": "flink", "skipped": how})
        return

    def csv(df: pd.DataFrame, path: str) -> str:
        if "sym" not in df:
            df = df.assign(sym=0)
        table = pa.Table.from_pandas(df.assign(type="X")[["type", "sym", "price", "ts"]], preserve_index=False)
        pacsv.write_csv(table, path, pacsv.WriteOptions(include_header=False))
        return path

    small = [(f"vshape_closed_{n}", FLINK_VSHAPE, random_walk(n)) for n in vshape_sizes if n <= 100_000]
    large = [(f"vshape_closed_{n}", FLINK_VSHAPE, random_walk(n)) for n in vshape_sizes if n > 100_000]
    cases = small + [(f"adv_{n}", FLINK_ADV, rising(n)) for n in adv_sizes] + large
    t0 = time.perf_counter()
    flink, why = run_flink(py, cache, csv, cases, repeat, timeout)
    if why:
        print(f"Flink: {why}")
        records.append({"family": "flink", "note": why})
    if not flink:
        return
    print(f"(Flink process: {time.perf_counter() - t0:.0f} s wall with its JVM start; fixed cost per job "
          f"{min(r['empty_seconds'] for r in flink.values()) * 1e3:.0f} ms, subtracted below)")
    print(f"{'query':>22} {'rows':>8} {'flink n':>8} {'cerql n':>8} {'agree':>6} {'flink ms':>9} {'growth':>7} "
          f"{'cerql ms':>9} {'x cerql':>8}")
    last = None
    for name, body, df in cases:
        rec = flink.get(name)
        cerql_text = "SELECT * FROM t " + body.replace("ORDER BY rt", "ORDER BY ts")
        mine = rounds({"cerql": lambda: run_count(cerql_text, df)}, repeat)["cerql"]
        if rec is None:
            print(f"{name:>22}: no Flink result")
            continue
        net = max(rec["seconds"] - rec["empty_seconds"], 0.0)
        kind = name.rsplit("_", 1)[0]
        growth = f"{net / last[1]:.2f}" if last and last[0] == kind and net and last[1] else ""
        last = (kind, net)
        print(f"{kind:>22} {len(df):>8,} {rec['count']:>8,} {mine['count']:>8,} "
              f"{'yes' if rec['count'] == mine['count'] else 'NO':>6} {net * 1e3:9.0f} {growth:>7} "
              f"{mine['seconds'] * 1e3:9.1f} {net / mine['seconds']:8.1f}")
        records.append({"family": "flink", "query": kind, "rows": len(df), "engine": "flink", "seconds": net,
                        "raw_seconds": rec["seconds"], "empty_seconds": rec["empty_seconds"], "count": rec["count"]})
        records.append({"family": "flink", "query": kind, "rows": len(df), "engine": "cerql.run", **mine})


def local_session(app: str):
    """The Spark session of the MATCH_RECOGNIZE Spark benchmarks (this one, spark_mr_breakdown.py,
    spark_mr_floor.py): local[2], UI off, 8 shuffle partitions, this interpreter for the workers."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName(app)
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "8").config("spark.driver.memory", "2g")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def family_spark(n: int, repeat: int, records: list) -> None:
    print(f"\n## 5. spark.cer_sql, family 1, {n:,} rows, local[2], noop sink; "
          "base: repartition + sort of the same rows")
    spark = local_session("cerql-bench-mr")
    try:
        df = random_walk(n)
        with tempfile.TemporaryDirectory(prefix="cerql-bench-mr-") as tmp:
            spark.createDataFrame(df).write.parquet(os.path.join(tmp, "walk"))
            sources = {  # both cached in memory; the first is a LocalRelation of every row, whose
                # every DataFrame step costs an analysis proportional to its rows (docs/benchmarks.md)
                "pandas DataFrame": spark.createDataFrame(df).cache(),
                "Parquet": spark.read.parquet(os.path.join(tmp, "walk")).cache(),
            }
            for name, t in sources.items():
                t.count()
                _spark_rounds(spark, name, t, df, n, repeat, records)
    finally:
        spark.stop()


def _spark_rounds(spark, name: str, t, df: pd.DataFrame, n: int, repeat: int, records: list) -> None:
    """base, cer_sql (the JVM matcher) and cer_sql with the JVM matcher off, interleaved."""
    query = VSHAPE.format(skip="PAST LAST ROW", never="")

    def noop(frame) -> None:
        frame.write.format("noop").mode("overwrite").save()

    def in_python():  # the same query with the JVM matcher off (spark/mr_jvm.py)
        spark.conf.set(JVM_CONF, "false")
        try:
            noop(cerql.cer_sql(spark, query, t=t))
        finally:
            spark.conf.unset(JVM_CONF)

    count = cerql.cer_sql(spark, query, t=t).count()  # warm-up; and the count
    local = run_count(query, df)
    print(f"source: cached {name}; matches: cer_sql {count:,}, cerql.run {local:,}: agree {agree(count, local)}")
    in_python()  # warm-up: the Python workers and their numba cache
    got = rounds({"base": lambda: noop(t.repartition("sym").sortWithinPartitions("sym", "ts")),
                  "cer_sql": lambda: noop(cerql.cer_sql(spark, query, t=t)),
                  "cer_sql in Python": in_python}, repeat)
    base, mine, python = got["base"], got["cer_sql"], got["cer_sql in Python"]
    print(f"  base {base['seconds']:.2f} s, cer_sql {mine['seconds']:.2f} s: "
          f"x base {mine['seconds'] / base['seconds']:.2f} (throughput {base['seconds'] / mine['seconds']:.2f}), "
          f"{n / mine['seconds']:.3g} rows/s; in Python {python['seconds']:.2f} s: "
          f"x base {python['seconds'] / base['seconds']:.2f}")
    records.append({"family": "spark", "source": name, "rows": n, "engine": "cer_sql", "seconds": mine["seconds"],
                    "count": count, "base_seconds": base["seconds"], "python_seconds": python["seconds"]})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="best of N, rounds interleaved (runs over 2 s: once)")
    ap.add_argument("--json", help="write every record here")
    ap.add_argument("--family", action="append", choices=("vshape", "adversarial", "skip", "flink", "spark", "memory",
                                                             "threads"),
                    help="repeatable; default all")
    ap.add_argument("--vshape-rows", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--adv-rows", type=int, nargs="+", default=[1000, 2000, 4000, 8000, 16000])
    ap.add_argument("--adv-big", type=int, nargs="+", default=[100_000, 200_000, 400_000, 800_000],
                    help="further sizes for cerql's row-local adversarial queries")
    ap.add_argument("--history-rows", type=int, nargs="+", default=[250, 500, 1000, 2000, 4000],
                    help="sizes for the history-dependent query (quadratic in cerql too)")
    ap.add_argument("--budget", type=float, default=8.0,
                    help="seconds: an engine whose run took longer skips the larger sizes")
    ap.add_argument("--flink-vshape-rows", type=int, nargs="+", default=[100_000])
    ap.add_argument("--flink-adv-rows", type=int, nargs="+", default=[1000, 2000],
                    help="Flink takes ~70 s on 2000 rows of A+ B, so larger sizes need a larger --flink-timeout")
    ap.add_argument("--flink-repeat", type=int, default=1, help="best of N for Flink's jobs")
    ap.add_argument("--flink-timeout", type=float, default=300.0,
                    help="seconds for the whole Flink process; cases not finished by then are reported as such")
    ap.add_argument("--memory-rows", type=int, default=2_000_000)
    ap.add_argument("--memory-child", nargs=3, metavar=("QUERY", "VARIANT", "ROWS"), help=argparse.SUPPRESS)
    ap.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "cerql-peers"),
                    help="where the PyFlink venv is (built there when missing)")
    args = ap.parse_args()
    if args.memory_child:
        query, variant, rows = args.memory_child
        print(json.dumps(memory_child(query, variant, int(rows))))
        return
    families = args.family or ["vshape", "adversarial", "skip", "flink", "spark", "memory", "threads"]
    print(f"# cerql MATCH_RECOGNIZE benchmark; best of {args.repeat}, wall seconds; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    run_count(VSHAPE.format(skip="PAST LAST ROW", never=""), random_walk(10_000))  # warm-up: numba cache, imports
    run_count(ADVERSARIAL.format(pattern="A+ B", define="A AS price > 0, B AS price < FIRST(A.price)"), rising(100))
    records: list[dict] = []
    t0 = time.perf_counter()
    if "vshape" in families:
        family_vshape(args.vshape_rows, args.repeat, records)
    if "adversarial" in families:
        family_adversarial(args.adv_rows, args.adv_big, args.history_rows, args.repeat, args.budget, records)
    if "skip" in families:
        family_skip(max(args.vshape_rows), args.repeat, records)
    if "flink" in families:
        family_flink(args.flink_vshape_rows, args.flink_adv_rows, args.flink_repeat, Path(args.cache_dir),
                     args.flink_timeout, records)
    if "spark" in families:
        family_spark(max(args.vshape_rows), args.repeat, records)
    if "memory" in families:
        family_memory(args.memory_rows, records)
    if "threads" in families:
        family_threads(args.repeat, records)
    print(f"\n# total {time.perf_counter() - t0:.0f} s; load average {os.getloadavg()[0]:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"argv": sys.argv, "records": records}, f, indent=1)


MEMORY_QUERIES = {"vshape": VSHAPE.format(skip="PAST LAST ROW", never="").replace("PARTITION BY sym ", ""),
                  "A+ B": ADVERSARIAL.format(pattern="A+ B", define="A AS price > 0, B AS price < 0")}


def memory_child(name: str, variant: str, n: int) -> dict:
    """One variant of family 6 in this (fresh) process: peak RSS over the RSS before the first
    batch, sampled every millisecond by a thread, and the rows held."""
    from cerql.exec.mr_define import define_bits
    from cerql.exec.mr_engine import pattern_variables, run_match_recognize
    from cerql.exec.mr_incremental import GroupMatcher
    from cerql.planner import front
    from cerql import row_pattern

    text = MEMORY_QUERIES[name]
    planned = front.plan_row_pattern(text)
    clause, matcher = planned.clause, row_pattern.matcher(planned)
    df = random_walk(n, partitions=1) if name == "vshape" else rising(n)
    table = pa.Table.from_pandas(df, preserve_index=False)
    defines = {d.variable.upper(): d.condition for d in clause.defines}
    bits = define_bits(table, np.zeros(n, np.int64), np.full(n, n, np.int64), pattern_variables(clause), defines, text)
    table = table.append_column("bits", pa.array(bits.view(np.int64)))
    batches = [pa.Table.from_batches([b]) for b in table.to_batches(max_chunksize=10_000)]
    del table, bits, df
    gc.collect()
    page = os.sysconf("SC_PAGE_SIZE")

    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * page

    before, peak, done = rss(), [0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss())
            time.sleep(0.001)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    if variant == "batch by batch":
        group = GroupMatcher(clause, text, matcher, bits="bits")
        out = sum(t.num_rows for b in batches for t in group.feed(b)) + sum(t.num_rows for t in group.finish())
        held = group.peak
    else:
        whole = pa.concat_tables(batches)
        out = run_match_recognize(clause, whole, text, matcher, bits="bits").num_rows
        held = whole.num_rows
    seconds = time.perf_counter() - t0
    done.set()
    sampler.join()
    return {"query": name, "variant": variant, "rows": n, "matches": out, "held_rows": held,
            "peak_mib": (max(peak[0], rss()) - before) / 2**20, "seconds": seconds}


def family_memory(n: int, records: list) -> None:
    print(f"\n## 6. one PARTITION BY group of {n:,} rows in Arrow batches of 10 000, as a Spark task gets it; "
          "peak RSS over the RSS before the first batch, fresh process each")
    for name in MEMORY_QUERIES:
        for variant in ("batch by batch", "whole group"):
            child = subprocess.run([sys.executable, __file__, "--memory-child", name, variant, str(n)],
                                   capture_output=True, text=True, check=True)
            got = json.loads(child.stdout.strip().splitlines()[-1])
            print(f"{name:7s} {variant:15s} matches {got['matches']:>8,}  rows held {got['held_rows']:>10,}  "
                  f"peak +{got['peak_mib']:7.1f} MiB  {got['seconds']:.2f} s")
            records.append({"family": "memory", **got})


if __name__ == "__main__":
    main()
