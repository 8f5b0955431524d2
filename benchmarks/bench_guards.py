"""Issue 38's guards: queries whose cost once grew without bound, each run alone in a subprocess
with a memory cap and a timeout, reporting its wall time, its peak RSS and how it ended (the
number of rows, the CeqlError's class, a MemoryError, a timeout).

Each case is a name, a query and a table generator (``CASES``). The child process imports cerql
from ``PYTHONPATH`` first, so the same script measures another checkout:

    .venv/bin/python benchmarks/bench_guards.py                      # every case
    .venv/bin/python benchmarks/bench_guards.py --case i3_avg_next19 --timeout 200
    PYTHONPATH=/tmp/cerql-before .venv/bin/python benchmarks/bench_guards.py   # the code before

``--mem`` caps the child's address space (bytes, default 8e9: the machine is shared), so a
query that would fill memory ends in a MemoryError instead of the machine's OOM killer.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
import pandas as pd


def chain(n_b: int, extra: str = "") -> pd.DataFrame:
    """A(x=0), n_b B's (x=1), C, then ``extra`` types (x=1), one row per ts."""
    types = ["A"] + ["B"] * n_b + ["C"] + list(extra)
    return pd.DataFrame({"type": types, "x": [0] + [1] * (len(types) - 1), "ts": np.arange(len(types))})


def random_rows(n: int, types: str, seed: int = 0, p=None) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"type": rng.choice(list(types), n, p=p), "x": rng.integers(0, 100, n),
                         "ts": np.arange(n)})


def repeated(n_blocks: int, n_b: int) -> pd.DataFrame:
    """n_blocks blocks of A(x=0), n_b B's (x = 1..n_b), C(x=0)."""
    block = (["A"] + ["B"] * n_b + ["C"], [0] + list(range(1, n_b + 1)) + [0])
    n = n_blocks * (n_b + 2)
    return pd.DataFrame({"type": block[0] * n_blocks, "x": block[1] * n_blocks, "ts": np.arange(n)})


def alternating(n: int) -> pd.DataFrame:
    """A B A B ...: every A and B of the prefix in reach of each other (for ALL without WITHIN)."""
    return pd.DataFrame({"type": ["A", "B"] * (n // 2), "x": np.arange(n) % 7, "ts": np.arange(n)})


def blocks(n_a: int, n_b: int, n_c: int) -> pd.DataFrame:
    """n_a A's, n_b B's, n_c C's in that order: MAX A ; B+ ; C gives n_a * n_c results of n_b + 2 events."""
    types = ["A"] * n_a + ["B"] * n_b + ["C"] * n_c
    return pd.DataFrame({"type": types, "x": np.arange(len(types)) % 100, "ts": np.arange(len(types))})


AVG = "A AS a ; B+ AS b ; C AS c FILTER avg(b.x) > a.x"
KLEENE = "SELECT MAX * FROM s WHERE A AS a ; B+ AS b ; C AS c ORDER BY ts"
# (name, query, table, what the issue reported on the code before)
CASES = [
    # item 3: candidates enumerated, then checked (post-filter), one end event
    ("i3_avg_next19", f"SELECT NEXT * FROM s WHERE {AVG} ORDER BY ts WITHIN 100 EVENTS", lambda: chain(19),
     "86 s, 5.5 GB, one row"),
    ("i3_avg_next20", f"SELECT NEXT * FROM s WHERE {AVG} ORDER BY ts WITHIN 100 EVENTS", lambda: chain(20),
     "MemoryError at 8.2 GB"),
    ("i3_avg_all20", f"SELECT * FROM s WHERE {AVG} ORDER BY ts WITHIN 100 EVENTS", lambda: chain(20),
     "fails after 74 s"),
    ("i3_avg_last20", f"SELECT LAST * FROM s WHERE {AVG} ORDER BY ts WITHIN 100 EVENTS", lambda: chain(20),
     "- (as NEXT)"),
    ("i3_avg_next19_none", f"SELECT NEXT * FROM s WHERE {AVG} + 5 ORDER BY ts WITHIN 100 EVENTS", lambda: chain(19),
     "- (no candidate passes)"),
    ("i3_unless_next24", "SELECT NEXT * FROM s WHERE A AS a ; ((B+ AS b ; C AS c) UNLESS D) ORDER BY ts "
     "WITHIN 100 EVENTS", lambda: chain(24), "numpy MemoryError"),
    ("i3_unless_random5k", "SELECT NEXT * FROM s WHERE A AS a ; ((B AS b ; B AS c) UNLESS C) ORDER BY ts",
     lambda: random_rows(5000, "ABC"), "6.4 GB"),
    # item 5: super-linear time
    ("i5_max_cross_w40", "SELECT MAX * FROM s WHERE A AS a ; B+ AS b ; C AS c FILTER b.x > a.x ORDER BY ts "
     "WITHIN 40 EVENTS", lambda: random_rows(800, "ABC", p=[0.05, 0.9, 0.05]), "90 s (3 s per end event)"),
    ("i5_max_cross_blocks35", "SELECT MAX * FROM s WHERE A AS a ; B+ AS b ; C AS c FILTER b.x > a.x ORDER BY ts "
     "WITHIN 40 EVENTS", lambda: repeated(35, 21), "3 s per end event (2^21 candidates), 800 rows: 90 s"),
    ("i5_next_sum_w640", "SELECT NEXT * FROM s WHERE A AS a ; B+ AS b ; C AS c FILTER sum(b.x) > 1000 "
     "ORDER BY ts WITHIN 640 EVENTS", lambda: random_rows(8000, "ABC", p=[0.1, 0.8, 0.1]), "102 s (LAST 7.7 s)"),
    ("i5_last_sum_w640", "SELECT LAST * FROM s WHERE A AS a ; B+ AS b ; C AS c FILTER sum(b.x) > 1000 "
     "ORDER BY ts WITHIN 640 EVENTS", lambda: random_rows(8000, "ABC", p=[0.1, 0.8, 0.1]), "7.7 s"),
    ("i5_next_all_10k", "SELECT NEXT * FROM s WHERE (A AS a) ALL (B AS b) ORDER BY ts", lambda: alternating(10_000),
     "0.21 s"),
    ("i5_next_all_80k", "SELECT NEXT * FROM s WHERE (A AS a) ALL (B AS b) ORDER BY ts", lambda: alternating(80_000),
     "12.1 s (LAST 0.21 s)"),
    # item 4: results of many events each (cerql.maxOutputEvents, default 10M events)
    ("i4_max_kleene_200x2000x200", KLEENE, lambda: blocks(200, 2000, 200),
     "40 000 results of 2 002 events: ArrowMemoryError / MemoryError above 6 GB"),
    ("i4_max_kleene_limit10", KLEENE + " LIMIT 10", lambda: blocks(200, 2000, 200), "-"),
    ("i4_max_kleene_90x1000x90", KLEENE, lambda: blocks(90, 1000, 90), "- (8.9M events: under the default)"),
]


def child(name: str) -> None:
    """Run one case and print one JSON line: rows, error, seconds (the query alone)."""
    import cerql
    from cerql.errors import CeqlError

    _, query, table, _ = next(c for c in CASES if c[0] == name)
    tables = {"s": table()}
    cerql.run("SELECT * FROM s WHERE A AS a ORDER BY ts", {"s": tables["s"].head(3)})  # imports, numba cache
    t0 = time.perf_counter()
    out = {"rows": None, "error": None}
    try:
        out["rows"] = len(cerql.run(query, tables))
    except CeqlError as e:
        out["error"] = e.error_class
        out["message"] = str(e)[:300]
    except MemoryError:
        out["error"] = "MemoryError"
    out["seconds"] = round(time.perf_counter() - t0, 2)
    out["cerql"] = os.path.dirname(os.path.dirname(cerql.__file__))
    print(json.dumps(out))


def measure(name: str, timeout: float, mem: int) -> dict:
    """Run case ``name`` in a child process capped at ``mem`` bytes of address space."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))

    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--child", name], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=cap, text=True)
    rusage = None
    while rusage is None:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            rusage = usage
        elif time.perf_counter() - t0 > timeout:
            proc.kill()
            _, status, rusage = os.wait4(proc.pid, 0)
            return {"case": name, "error": f"timeout > {timeout:.0f} s", "wall": round(time.perf_counter() - t0, 1),
                    "peak_rss_mb": rusage.ru_maxrss // 1024}
        else:
            time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    stdout, stderr = proc.stdout.read(), proc.stderr.read()
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    out = json.loads(lines[-1]) if lines else {"error": "crashed: " + (stderr.strip().splitlines() or ["?"])[-1][:200]}
    out.update(case=name, wall=round(time.perf_counter() - t0, 1), peak_rss_mb=rusage.ru_maxrss // 1024)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", help="a case's name (repeatable; default every case)")
    ap.add_argument("--timeout", type=float, default=150.0, help="seconds per case")
    ap.add_argument("--mem", type=float, default=8e9, help="address-space cap per case, bytes")
    ap.add_argument("--json", action="store_true", help="one JSON line per case")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    names = args.case or [c[0] for c in CASES]
    reported = {c[0]: c[3] for c in CASES}
    if not args.json:
        print(f"{'case':22} {'s (query)':>9} {'peak MB':>8}  outcome   [issue 38 reported]")
    for name in names:
        r = measure(name, args.timeout, int(args.mem))
        if args.json:
            print(json.dumps(r), flush=True)
            continue
        outcome = f"{r['rows']} rows" if r.get("rows") is not None else r.get("error")
        print(f"{name:22} {r.get('seconds', r['wall']):>9} {r['peak_rss_mb']:>8}  {outcome}   [{reported[name]}]",
              flush=True)


if __name__ == "__main__":
    main()
