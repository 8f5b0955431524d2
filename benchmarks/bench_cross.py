"""What a FILTER predicate across variables costs the local engine (exec/post_filter.py).

What: on seed 001's stock stream (``bench_kernel.stock_table``, 1M rows, by ticker), pairs
``SELL AS s ; BUY AS b`` within a window: with a unary filter the automaton checks
(``b[price > 900]``, the baseline); with a comparison across variables that keeps about as many
results, once as the kernel's registers check it (``b.price > s.price + 800``) and once written
so that it is filtered after enumeration (``b.price - s.price > 800``, both variables on one
side); and the relaxed pattern alone (no filter: every pair the filtered query enumerates). The
same for a contiguous run ``SELL AS s : BUY :+ AS b`` with ``b.price > s.price`` (every b), and
an aggregate in FILTER over the run, once as registers check it (``sum(b.volume) >= 1000``)
and once filtered (``sum(b.volume) + 0 >= 1000``). And an equality ``s.volume = b.volume``,
which the planner turns into a hidden partition key, against PARTITION BY [name], [volume],
against the same equality written so that registers check it (``s.volume + 0 = b.volume``)
and so that it is filtered (``s.volume - b.volume = 0``). Printed: results and wall seconds
(best of ``--repeat``) of ``cerql.run``'s engine (``build_stream`` + evaluation, no pandas
output), and each time over the baseline's.

Why: what the automaton cannot check (predicates that mix variables on one side, aggregates
inside expressions) is filtered after enumerating the pattern's results without it
(docs/semantics.md), and that cost follows the relaxed pattern's result count, not the
output's; comparisons and aggregates the kernel checks with registers should cost about what a
bracket costs. This shows both.

A script, not a test (STYLE.md 12).

    .venv/bin/python benchmarks/bench_cross.py            # 1M rows, best of 3, about a minute
    .venv/bin/python benchmarks/bench_cross.py --rows 200000 --repeat 1
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_kernel import machine, stock_table  # noqa: E402

from cerql.api import analyze  # noqa: E402
from cerql.exec import driver, post_filter  # noqa: E402
from cerql.exec.stream import build_stream  # noqa: E402
from cerql.planner.resolve import resolve  # noqa: E402

PAIRS = "SELECT * FROM stock WHERE SELL AS s ; BUY AS b {filter} PARTITION BY [name] WITHIN {w} [ts]"
CASES = [
    ("unary b[price > 900] (baseline)", PAIRS, "FILTER b[price > 900]"),
    ("registers b.price > s.price + 800", PAIRS, "FILTER b.price > s.price + 800"),
    ("filtered b.price - s.price > 800", PAIRS, "FILTER b.price - s.price > 800"),
    ("relaxed pattern, no filter", PAIRS, ""),
]
VOLUME_CASES = [  # an equality across variables runs as partitioning (planner/equality.py)
    ("PARTITION BY [name], [volume] (baseline)", PAIRS.replace("[name]", "[name], [volume]"), ""),
    ("equality s.volume = b.volume", PAIRS, "FILTER s.volume = b.volume"),
    ("registers s.volume + 0 = b.volume", PAIRS, "FILTER s.volume + 0 = b.volume"),
    ("filtered s.volume - b.volume = 0", PAIRS, "FILTER s.volume - b.volume = 0"),
]
KLEENE = ("SELECT * FROM stock WHERE SELL AS s : BUY :+ AS b {filter} PARTITION BY [name] WITHIN {w} [ts]")
KLEENE_CASES = [
    ("contiguous run, no filter (baseline)", KLEENE, ""),
    ("registers b.price > s.price (every b)", KLEENE, "FILTER b.price > s.price"),
    ("filtered b.price - s.price > 0", KLEENE, "FILTER b.price - s.price > 0"),
    ("registers sum(b.volume) >= 1000", KLEENE, "FILTER sum(b.volume) >= 1000"),
    ("filtered sum(b.volume) + 0 >= 1000", KLEENE, "FILTER sum(b.volume) + 0 >= 1000"),
]


def timed(text: str, table: pa.Table, repeat: int) -> tuple[int, float]:
    plan = resolve(analyze(text), {"stock": table.schema})
    evaluate = post_filter.evaluate if plan.post_filters else driver.evaluate
    best, n = float("inf"), 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        n = len(evaluate(plan, build_stream(plan, {"stock": table})))
        best = min(best, time.perf_counter() - t0)
    return n, best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--window", type=int, default=50, help="WITHIN n [ts], ts = row number")
    args = ap.parse_args(argv)
    info = machine()
    print(f"# {info['cpu']} x{info['nproc']}, Python {info['python']}; load {info['loadavg_start']}")
    table = stock_table(args.rows, 1)
    table = table.set_column(table.schema.get_field_index("ts"), "ts", pa.array(np.arange(args.rows)))
    timed(PAIRS.format(filter="", w=5), table.slice(0, 10_000), 1)  # warm-up: numba
    print(f"# {args.rows:,} rows, WITHIN {args.window} [ts], best of {args.repeat}; wall seconds")
    print(f"{'query':<40}{'results':>10}{'seconds':>10}{'x base':>8}")
    for group in (CASES, VOLUME_CASES, KLEENE_CASES):
        base = None
        for name, shape, filt in group:
            n, s = timed(shape.format(filter=filt, w=args.window), table, args.repeat)
            base = base or s
            print(f"{name:<40}{n:>10}{s:>10.3f}{s / base:>8.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
