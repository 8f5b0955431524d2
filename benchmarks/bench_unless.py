"""UNLESS on the user's path: ``cerql.run`` to a DataFrame, around the pattern and inside it.

Over generated trades (bench_strategies.py's: 20 tickers, about 2.5 trades per second each), a
buy then a sell of one ticker, then a sell under 20, within a window of W seconds:

- twin: ``BUY AS b ; SELL AS e ; SELL AS z FILTER z[price < 20]``, no UNLESS;
- around: ``(twin) UNLESS (BUY FILTER BUY[price > 90])``, which the kernel runs as a bound on
  where results may start (a second automaton ahead of the query's);
- inside: ``(BUY AS b ; SELL AS e UNLESS (BUY FILTER BUY[price > 90])) ; SELL AS z ...``, which
  the local engine checks on the enumerated results of the pattern without the UNLESS
  (exec/post_filter.py), with its right side's automaton telling where its results lie.

Times are reported as ratios against the twin measured in the same run (with the same strategy),
because this machine is shared and noisy. The inside query pays for enumerating the twin's
results; under ALL the check is vectorized (post_filter.decided_by_prune), under another
strategy each candidate becomes a Python object before the strategy chooses.

    python benchmarks/bench_unless.py [--rows 200000] [--repeat 3] [--window 1 --window 5]
"""

from __future__ import annotations

import argparse

from bench_strategies import best_time, trades

TWIN = "BUY AS b ; SELL AS e ; SELL AS z FILTER z[price < 20]"
BLOCK = "(BUY FILTER BUY[price > 90])"
INSIDE = f"(BUY AS b ; SELL AS e UNLESS {BLOCK}) ; SELL AS z FILTER z[price < 20]"
# (name, strategy, pattern, the row it is compared with)
QUERIES = [
    ("twin", "", TWIN, "twin"),
    ("around", "", f"({TWIN}) UNLESS {BLOCK}", "twin"),
    ("inside", "", INSIDE, "twin"),
    ("twin NEXT", "NEXT", TWIN, "twin NEXT"),
    ("inside NEXT", "NEXT", INSIDE, "twin NEXT"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--window", type=int, action="append", help="seconds (repeatable; default 1, 2, 5)")
    args = ap.parse_args()
    tables = {"trades": trades(args.rows)}
    windows = args.window or [1, 2, 5]

    def query(strategy: str, pattern: str, w: int) -> str:
        return (f"SELECT {strategy} * FROM trades WHERE {pattern} PARTITION BY [name] ORDER BY ts "
                f"WITHIN {w} SECONDS")

    best_time(query("", INSIDE, 1), tables, 1)  # warm-up: numba cache, imports
    print(f"# {args.rows:,} trades; best of {args.repeat}")
    print(f"{'window':>6} {'query':12} {'results':>10} {'ms':>8} {'x twin':>7}")
    for w in windows:
        times = {}
        for name, strategy, pattern, twin in QUERIES:
            seconds, rows = best_time(query(strategy, pattern, w), tables, args.repeat)
            times[name] = seconds
            shown = f"{rows:,}" if isinstance(rows, int) else rows
            print(f"{w:>5}s {name:12} {shown:>10} {seconds * 1e3:8.0f} {seconds / times[twin]:7.2f}")


if __name__ == "__main__":
    main()
