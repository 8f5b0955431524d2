"""Peak memory and time of the queries that used to grow without a bound (issue 15, item 3).

What: each case runs ``cerql.run`` (the user's path: query text and pandas in, a pandas
DataFrame out) in a fresh Python process, and reports its wall seconds and the process's peak
resident memory (``ru_maxrss``), next to a baseline measured in the same run: the same process
running a query of the same shape that never grew (the kernel-checked form, or a bracket).

- ``filtered``: ``A AS a ; B AS b FILTER a.x - b.x > 998 WITHIN 10 EVENTS`` on N events (the
  predicate mixes variables on one side, so candidates are checked after enumeration); baseline
  the kernel-checked ``a.x > b.x + 998``.
- ``sum-kleene``: ``SELECT ANY count(a) AS n … A+ AS a ; B FILTER sum(a.x) > 5 WITHIN w EVENTS``
  over 3 000 events, 90 % A with random x: register runs, one per distinct sum; baseline the
  ``count(a) > 5`` twin. With x ≥ 0 the sums rise, so runs above 5 meet; with x of both signs
  they cannot, and the query stops at TOO_MANY_RUNS_PER_EVENT (``cerql.maxMatchesPerEvent``),
  fast, not after minutes and gigabytes.
- ``output``: ``A AS a ; B AS b`` on a stream whose output exceeds ``cerql.maxOutputRows``:
  expected the TOO_MANY_OUTPUT_ROWS error, not an out-of-memory kill.

A script, not a test (STYLE.md 12):

    .venv/bin/python benchmarks/bench_memory.py              # about two minutes
    .venv/bin/python benchmarks/bench_memory.py --rows 200000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

CHILD = r"""
import json, resource, sys, time
import numpy as np, pandas as pd
import cerql
spec = json.loads(sys.argv[1])
rng = np.random.default_rng(7)
n = spec["rows"]
frame = pd.DataFrame({"type": rng.choice(["A", "B"], n, p=[spec["share_a"], 1 - spec["share_a"]]),
                      "x": rng.integers(spec.get("x_min", 0), spec["x_max"], n), "ts": np.arange(n)})
t0 = time.perf_counter()
try:
    out = cerql.run(spec["query"], {"s": frame}, **spec.get("options", {}))
    outcome = f"{len(out)} rows"
except cerql.CeqlError as err:
    outcome = err.error_class
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "outcome": outcome}))
"""

PAIR = "SELECT * FROM s WHERE A AS a ; B AS b FILTER {f} ORDER BY ts WITHIN 10 EVENTS"
KLEENE = "SELECT ANY count(a) AS n FROM s WHERE A+ AS a ; B FILTER {f} ORDER BY ts WITHIN {w} EVENTS"


def cases(rows: int):
    pair = {"rows": rows, "share_a": 0.5, "x_max": 1000}
    kleene = {"rows": 3000, "share_a": 0.9, "x_max": 1000}
    return [
        ("filtered a.x - b.x > 998, WITHIN 10 EVENTS", dict(pair, query=PAIR.format(f="a.x - b.x > 998")),
         dict(pair, query=PAIR.format(f="a.x > b.x + 998"))),
        ("sum(a.x) > 5 over A+, WITHIN 20 EVENTS", dict(kleene, query=KLEENE.format(f="sum(a.x) > 5", w=20)),
         dict(kleene, query=KLEENE.format(f="count(a) > 5", w=20))),
        ("sum(a.x) > 5 over A+, WITHIN 30 EVENTS", dict(kleene, query=KLEENE.format(f="sum(a.x) > 5", w=30)),
         dict(kleene, query=KLEENE.format(f="count(a) > 5", w=30))),
        ("sum(a.x) > 5 over A+, x of both signs, WITHIN 30", dict(kleene, x_min=-1000,
                                                                   query=KLEENE.format(f="sum(a.x) > 5", w=30)),
         dict(kleene, x_min=-1000, query=KLEENE.format(f="count(a) > 5", w=30))),
        ("A AS a ; B AS b, output over maxOutputRows", dict(pair, rows=8000, query=PAIR.split(" FILTER")[0]
                                                             + " ORDER BY ts"),
         dict(pair, rows=8000, query=PAIR.split(" FILTER")[0] + " ORDER BY ts LIMIT 10")),
    ]


def measure(spec: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)], capture_output=True, text=True,
                          timeout=1800)
    if done.returncode != 0:
        return {"seconds": float("nan"), "peak_mb": float("nan"), "outcome": f"exit {done.returncode}: "
                + done.stderr.strip().splitlines()[-1][:80]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    print(f"{'case':48} {'outcome':>22} {'s':>7} {'MB':>7}   {'baseline':>12} {'s':>6} {'MB':>6}  time x  mem x")
    rows = []
    for name, spec, base in cases(args.rows):
        m, b = measure(spec), measure(base)
        rows.append({"case": name, "measured": m, "baseline": b})
        print(f"{name:48} {m['outcome']:>22} {m['seconds']:7.2f} {m['peak_mb']:7.0f}   {b['outcome']:>12} "
              f"{b['seconds']:6.2f} {b['peak_mb']:6.0f}  {m['seconds'] / b['seconds']:6.2f} "
              f"{m['peak_mb'] / b['peak_mb']:6.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": args.rows, "cases": rows, "at": time.strftime("%Y-%m-%d")}, f, indent=1)


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_AS, (16 << 30, 16 << 30))  # a runaway case fails, not the machine
    main()
