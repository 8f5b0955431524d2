"""Selection strategies on the user's path: ``cerql.run`` to a DataFrame, issue 19's trades query.

``SELECT s * FROM trades WHERE SELL AS s ; BUY+ AS b ; SELL AS e PARTITION BY [name] ORDER BY ts
WITHIN 10 SECONDS`` over generated trades (20 tickers, about 2.5 trades per second each, BUY or
SELL at random): every SELL ends results, and under ALL each one has 2^(BUYs in reach) of them.
Each strategy's time is reported as ratios against the same query with no result (the closing
SELL asks for ``price < 0``) and against ANY (one result per closing SELL, as NEXT and LAST give,
with no choice to make), both measured in the same run, because this machine is shared and noisy.

    python benchmarks/bench_strategies.py [--rows 200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import cerql

QUERY = ("SELECT {s} * FROM trades WHERE SELL AS s ; BUY+ AS b ; SELL AS e FILTER e[price < {limit}] "
         "PARTITION BY [name] ORDER BY ts WITHIN 10 SECONDS")
STRATEGIES = ("ANY", "LAST", "NEXT", "MAX")


def trades(rows: int, tickers: int = 20, per_second: float = 2.5, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    seconds = rows / (per_second * tickers)
    ts = pd.Timestamp("2026-01-01") + pd.to_timedelta(np.sort(rng.uniform(0, seconds, rows)), unit="s")
    return pd.DataFrame({"name": [f"T{k}" for k in rng.integers(0, tickers, rows)],
                         "type": rng.choice(["BUY", "SELL"], rows), "price": rng.uniform(1, 100, rows), "ts": ts})


def best_time(query: str, tables: dict, repeat: int) -> tuple[float, object]:
    best, rows = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        try:
            rows = len(cerql.run(query, tables, max_output_rows=10_000_000))
        except cerql.CeqlError as err:
            rows = err.error_class
        best = min(best, time.perf_counter() - t0)
    return best, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tables = {"trades": trades(args.rows)}
    best_time(QUERY.format(s="ANY", limit=50), tables, 1)  # warm-up: numba cache, imports
    twin, _ = best_time(QUERY.format(s="ALL", limit=0), tables, args.repeat)
    print(f"# {args.rows:,} trades; best of {args.repeat}; twin (no result) {twin * 1e3:.0f} ms")
    print(f"{'strategy':10} {'results':>12} {'ms':>8} {'x twin':>7} {'x ANY':>6}")
    any_seconds = None
    for strategy in STRATEGIES:
        seconds, rows = best_time(QUERY.format(s=strategy, limit=1000), tables, args.repeat)
        any_seconds = any_seconds or seconds
        shown = f"{rows:,}" if isinstance(rows, int) else rows
        print(f"{strategy:10} {shown:>12} {seconds * 1e3:8.0f} {seconds / twin:7.2f} {seconds / any_seconds:6.2f}")


if __name__ == "__main__":
    main()
