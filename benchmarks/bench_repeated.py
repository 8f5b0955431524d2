"""A FILTER repeated by + across windows: ``SELECT NEXT * FROM s WHERE (A AS a ; B AS b FILTER
b.x > a.x)+ ; C AS c ORDER BY ts WITHIN w EVENTS`` over 2 000 random rows (types drawn from
AABBBC, x in 0..9), for w from 10 to 640, each in a child process with a timeout (issue 34,
item 7). Prints one line per window: seconds of the query alone (after a warm-up query in the
same process), rows or the error class, or "timeout".

    .venv/bin/python benchmarks/bench_repeated.py [--timeout 60] [--rows 2000] [--strategy NEXT]

Run it against another checkout by putting that checkout first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

QUERY = "SELECT {s} * FROM s WHERE (A AS a ; B AS b FILTER b.x > a.x)+ ; C AS c ORDER BY ts WITHIN {w} EVENTS"
WINDOWS = (10, 20, 40, 80, 160, 320, 640)


def child(rows: int, window: int, strategy: str) -> None:
    import numpy as np
    import pandas as pd

    import cerql

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"type": rng.choice(list("AABBBC"), rows), "x": rng.integers(0, 10, rows), "ts": np.arange(rows)})
    q = QUERY.format(s=strategy, w=window)
    cerql.run(q, {"s": df.head(20)})  # imports, numba cache
    t0 = time.perf_counter()
    try:
        out = {"rows": len(cerql.run(q, {"s": df}))}
    except cerql.CeqlError as e:
        out = {"error": e.error_class}
    out["seconds"] = round(time.perf_counter() - t0, 2)
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--strategy", default="NEXT")
    ap.add_argument("--child", type=int)
    args = ap.parse_args()
    if args.child is not None:
        child(args.rows, args.child, args.strategy)
        return
    print(f"{'window':>7} {'s':>8}  outcome")
    for w in WINDOWS:
        cmd = [sys.executable, __file__, "--child", str(w), "--rows", str(args.rows), "--strategy", args.strategy]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            out = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{w:>7} {out['seconds']:>8}  {out.get('rows', out.get('error'))}", flush=True)
        except subprocess.TimeoutExpired:
            print(f"{w:>7} {'>' + str(args.timeout):>8}  timeout", flush=True)


if __name__ == "__main__":
    main()
