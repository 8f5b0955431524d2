"""cerql's local engine against CORE (PyPI ``pycer``) on the same stock stream and queries.

What: seed 001's stock stream (``bench_kernel.stock_table``, with ``ts`` replaced by the row number
as an integer) and four of its query shapes, each at windows of 10^2 and 10^3 ``ts`` units: the
sequence S3 ``SELL ; BUY ; BUY`` and the Kleene query ``SELL ; BUY+ ; SELL``, each once with
seed 001's per-variable ticker filters and once with ``PARTITION BY [name]``. Price filters are
sized per window for about 10^5 results on 10^6 rows. Only semantics both engines share are
used: the ALL strategy (CORE ignores strategies), skip-till-any-match ``;``, ``WITHIN n [ts]`` on
an integer column. Printed per query: events, the match counts of both engines (and whether they
agree), seconds of both, and CORE seconds / cerql seconds from the same run.

How: cerql is timed in this process as ``build_stream`` + ``driver.match_arrays`` (sort,
predicates, automaton, output arrays; no pandas conversion), wall time, best of ``--repeat``.
CORE is GPL-3 and only ships a CPython 3.13 wheel, so it runs as an external process: this script
creates a 3.13 venv with pycer under ``--cache-dir`` when missing (``python3.13`` on PATH or
under ``pyenv root``, or ``--core-python``), writes the stream to CSV and runs
``_core_runner.py`` there, which times ``send_events`` + ``get_output`` on a fresh server per
repeat (not the CSV parsing nor building the ``PyEvent``s). ``get_output`` has a fixed polling
delay of ~0.1 s, so the runner also times an empty stream; ``CORE-e`` is CORE's time minus that,
and ``x`` uses it (``x raw`` does not). If CORE cannot be had, the script says why and times
cerql alone (exit 0).

Window bounds differ: cerql keeps a match when end - start <= n (seed 001, DESIGN.md 4.4), CORE
when end - start < n. On an integer ``ts`` the CORE queries therefore say ``WITHIN n+1 [ts]``;
the script first runs the two-event example that shows the difference on both engines.

A script, not a test (STYLE.md 12).

    .venv/bin/python benchmarks/peers/bench_core.py --quick          # 100k rows, under a minute
    .venv/bin/python benchmarks/peers/bench_core.py                  # 1M rows, best of 3
    .venv/bin/python benchmarks/peers/bench_core.py --rows 300000 --json /tmp/bench_core.json
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_kernel import DESIGN_ROWS, NAMES, _seq_pattern, _threshold, machine, stock_table  # noqa: E402

from cerql.api import analyze  # noqa: E402
from cerql.exec import driver  # noqa: E402
from cerql.exec.stream import build_stream  # noqa: E402
from cerql.planner.resolve import resolve  # noqa: E402

RUNNER = Path(__file__).with_name("_core_runner.py")
PYCER = "pycer==0.1.6"
CORE_DECL = ("CREATE STREAM S { "
             "EVENT BUY { name:string, price:double, volume:int, ts:int }, "
             "EVENT SELL { name:string, price:double, volume:int, ts:int } }")
WINDOWS = (100, 1_000)
RESULTS = 100_000  # about this many results per query on DESIGN_ROWS
SHARE_NAME_TYPE = 0.05  # P(name = X and type = T)
SHARE_TYPE = 0.5  # P(type = T)


# ---------------------------------------------------------------------------------------- cases
@dataclass
class Case:
    family: str
    name: str
    window: int
    body: str  # the query after FROM <source>, without WITHIN
    params: dict = field(default_factory=dict)

    def cerql(self) -> str:
        return f"SELECT * FROM stock {self.body} WITHIN {self.window} [ts]"

    def core(self) -> str:  # CORE's bound is strict: end - start < n
        return f"SELECT * FROM S {self.body} WITHIN {self.window + 1} [ts]"


def _seq_p(k: int, per_window: float) -> float:
    """Selectivity p per variable so that a k-sequence gives about RESULTS results on DESIGN_ROWS
    when a window holds ``per_window`` events of its substream: rows * p^k * m^(k-1) / (k-1)!."""
    return (RESULTS * math.factorial(k - 1) / (DESIGN_ROWS * per_window ** (k - 1))) ** (1.0 / k)


def _kleene_p(per_window: float) -> tuple[float, float]:
    """(p_ac, p_b) for a ; b+ ; c: b with ~3 occurrences per window, a and c sized for RESULTS
    (each (a, c) pair g events apart gives 2^(p_b g) - 1 results), as in bench_kernel."""
    p_b = 3.0 / per_window
    return math.sqrt(RESULTS / (DESIGN_ROWS * (math.expm1(3.0) / p_b - per_window))), p_b


def build_cases(windows) -> list[Case]:
    cases = []
    for w in windows:
        t = _threshold(_seq_p(3, w), SHARE_NAME_TYPE)
        filt = " AND ".join(f"t{j + 1}[name = '{NAMES[j]}' AND price < {t}]" for j in range(3))
        cases.append(Case("seq", "S3", w, f"WHERE {_seq_pattern(3)} FILTER {filt}", {"price_lt": t}))
    for w in windows:  # one ticker per substream: a window of w rows holds w / 10 of its events
        t = _threshold(_seq_p(3, w / len(NAMES)), SHARE_TYPE)
        filt = " AND ".join(f"t{j + 1}[price < {t}]" for j in range(3))
        cases.append(Case("seq_part", "S3 by name", w,
                          f"WHERE {_seq_pattern(3)} FILTER {filt} PARTITION BY [name]", {"price_lt": t}))
    for w in windows:
        p_ac, p_b = _kleene_p(w)
        tac, tb = _threshold(p_ac, SHARE_NAME_TYPE), _threshold(p_b, SHARE_NAME_TYPE)
        cases.append(Case("kleene", "SELL;BUY+;SELL", w,
                          f"WHERE SELL AS a ; BUY+ AS b ; SELL AS c FILTER a[name = 'INTC' AND price < {tac}] "
                          f"AND b[name = 'RIMM' AND price < {tb}] AND c[name = 'QQQ' AND price < {tac}]",
                          {"price_lt_ac": tac, "price_lt_b": tb}))
    for w in windows:
        p_ac, p_b = _kleene_p(w / len(NAMES))
        tac, tb = _threshold(p_ac, SHARE_TYPE), _threshold(p_b, SHARE_TYPE)
        cases.append(Case("kleene_part", "SELL;BUY+;SELL by name", w,
                          f"WHERE SELL AS a ; BUY+ AS b ; SELL AS c FILTER a[price < {tac}] AND b[price < {tb}] "
                          f"AND c[price < {tac}] PARTITION BY [name]", {"price_lt_ac": tac, "price_lt_b": tb}))
    return cases


def int_ts_table(rows: int, seed: int) -> pa.Table:
    """bench_kernel's stream with ``ts`` = row number (int64, strictly increasing) and prices
    rounded to cents, so the CSV CORE reads holds exactly the values cerql sees."""
    t = stock_table(rows, seed)
    t = t.set_column(t.schema.get_field_index("price"), "price", pc.round(t.column("price"), 2))
    return t.set_column(t.schema.get_field_index("ts"), "ts", pa.array(np.arange(rows, dtype=np.int64)))


# ---------------------------------------------------------------------------------------- cerql
def run_cerql(query: str, table: pa.Table, repeat: int) -> tuple[int, float]:
    plan = resolve(analyze(query), {"stock": table.schema})
    best, count = math.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        matches = driver.match_arrays(plan, build_stream(plan, {"stock": table}))
        best = min(best, time.perf_counter() - t0)
        count = len(matches)
    return count, best


# ------------------------------------------------------------- shared with bench_flink.py
def build_venv(base: str, venv: Path, package: str, cwd: Path, *checks: list[str]) -> str | None:
    """Create ``venv`` with ``base`` and pip-install ``package``, then run ``checks``; None on
    success, else why it failed (the failing command and its last line of output)."""
    steps = ([base, "-m", "venv", "--clear", str(venv)], [str(venv / "bin" / "pip"), "install", "-q", package],
             *checks)
    for cmd in steps:
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
        if done.returncode:
            why = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
            return f"`{' '.join(cmd)}` failed: {why[0]}"
    return None


def runner_records(stdout: str) -> dict[str, dict]:
    """A runner's JSON lines by query name (engines print other lines on stdout too)."""
    out = {}
    for line in stdout.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            out[rec["name"]] = rec
    return out


def cell(value, spec: str) -> str:
    """``format(value, spec)``, or a dash of the same width when there is no value."""
    return format(value, spec) if value is not None else format("-", spec.split(".")[0].rstrip("f"))


def boundary_table() -> pa.Table:
    """The smallest window-bound example: SELL at ts 0, BUY at ts 10 (asked WITHIN 10)."""
    return pa.table({"type": ["SELL", "BUY"], "name": ["INTC", "INTC"], "price": [1.0, 2.0],
                     "volume": pa.array([100, 100], pa.int64()), "ts": pa.array([0, 10], pa.int64())})


# ----------------------------------------------------------------------------------------- CORE
def _is_313(python: str) -> bool:
    probe = [python, "-c", "import sys; assert sys.version_info[:2] == (3, 13)"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def find_python313(explicit: str | None) -> str | None:
    """--core-python, else python3.13 on PATH (a pyenv shim may not run), else pyenv's newest 3.13."""
    candidates = [explicit] if explicit else []
    if found := shutil.which("python3.13"):
        candidates.append(found)
    pyenv = shutil.which("pyenv") or os.path.expanduser("~/.pyenv/bin/pyenv")
    if os.path.exists(pyenv):
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip()
        candidates += sorted(glob.glob(os.path.join(root, "versions", "3.13*", "bin", "python")), reverse=True)
    return next((c for c in candidates if _is_313(c)), None)


def core_venv(cache: Path, python313: str | None) -> tuple[str | None, str]:
    """The python of a venv with pycer (created under ``cache`` when missing), or None and why."""
    venv = cache / "core-venv"
    py = venv / "bin" / "python"
    check = [str(py), "-c", "import pycer"]
    if py.exists() and subprocess.run(check, capture_output=True, cwd=cache).returncode == 0:
        return str(py), "cached"
    base = find_python313(python313)
    if base is None:
        return None, "no CPython 3.13 (pycer ships only a cp313 wheel): give --core-python or put python3.13 on PATH"
    cache.mkdir(parents=True, exist_ok=True)
    failed = build_venv(base, venv, PYCER, cache, check)
    return (None, failed) if failed else (str(py), f"created with {base}")


def run_core(py: str, cache: Path, table: pa.Table, queries: list[tuple[str, str]], repeat: int) -> dict[str, dict]:
    """Counts and seconds of each (name, text) on CORE, by name (runs ``_core_runner.py``)."""
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        csv_path, spec_path = os.path.join(tmp, "stream.csv"), os.path.join(tmp, "spec.json")
        cols = table.select(["type", "name", "price", "volume", "ts"])
        pacsv.write_csv(cols, csv_path)
        with open(spec_path, "w") as f:
            json.dump({"decl": CORE_DECL, "repeat": repeat,
                       "queries": [{"name": n, "text": q} for n, q in queries]}, f)
        # cwd: CORE writes logs/logfile.log into the working directory
        done = subprocess.run([py, str(RUNNER), csv_path, spec_path], capture_output=True, text=True, cwd=cache)
    out = runner_records(done.stdout)  # CORE also prints "Logging to file: ..." on stdout
    if done.returncode:
        raise RuntimeError(f"CORE runner failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return out


# ----------------------------------------------------------------------------------------- main
HEAD = (f"{'family':<12}{'case':<24}{'window':>7}{'events':>10}{'cerql n':>10}{'CORE n':>10}{'agree':>7}"
        f"{'cerql s':>9}{'CORE s':>9}{'CORE-e s':>10}{'x raw':>8}{'x':>8}")


def print_row(r: dict) -> None:
    core_n = r.get("core_count")
    agree = "" if core_n is None else ("yes" if core_n == r["cerql_count"] else "NO")

    f = cell
    print(f"{r['family']:<12}{r['name']:<24}{r['window']:>7}{r['events']:>10}{r['cerql_count']:>10}"
          f"{f(core_n, '>10')}{agree:>7}{r['cerql_s']:>9.3f}{f(r.get('core_s'), '>9.3f')}"
          f"{f(r.get('core_adj_s'), '>10.3f')}{f(r.get('x_raw'), '>8.2f')}{f(r.get('x'), '>8.2f')}", flush=True)


def boundary_check(py: str | None, cache: Path) -> str:
    """SELL at ts 0, BUY at ts 10, WITHIN 10 [ts] as written on both engines."""
    t = boundary_table()
    body = "WHERE SELL AS s ; BUY AS b"
    ours, _ = run_cerql(f"SELECT * FROM stock {body} WITHIN 10 [ts]", t, 1)
    line = f"# window bound, SELL@ts0 ; BUY@ts10 WITHIN 10 [ts]: cerql {ours} match"
    if py:
        core = run_core(py, cache, t, [("w10", f"SELECT * FROM S {body} WITHIN 10 [ts]"),
                                       ("w11", f"SELECT * FROM S {body} WITHIN 11 [ts]")], 1)
        line += (f", CORE {core['w10']['count']} (WITHIN 11 [ts]: {core['w11']['count']}); "
                 "the CORE queries below say WITHIN n+1 [ts]")
    return line


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=None, help="stream length (default 1_000_000; 100_000 with --quick)")
    ap.add_argument("--repeat", type=int, default=None, help="best of N (default 3; 1 with --quick)")
    ap.add_argument("--quick", action="store_true", help="100k rows, one run each (under a minute)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--family", action="append", help="only these families (repeatable): seq, seq_part, kleene, "
                    "kleene_part")
    ap.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "cerql-peers"),
                    help="where CORE's venv and scratch files go (default $TMPDIR/cerql-peers)")
    ap.add_argument("--core-python", help="a CPython 3.13 to build CORE's venv with (default: python3.13 on PATH, "
                    "else pyenv's newest 3.13)")
    ap.add_argument("--json", metavar="PATH", help="write every figure to PATH")
    args = ap.parse_args(argv)
    rows = args.rows or (100_000 if args.quick else 1_000_000)
    repeat = args.repeat or (1 if args.quick else 3)
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)

    info = machine()
    print(f"# {info['cpu']} x{info['nproc']}, Python {info['python']}, numba {info['numba']}; "
          f"load {info['loadavg_start']}")
    t0 = time.perf_counter()
    py, how = core_venv(cache, args.core_python)
    if py:
        print(f"# CORE: {PYCER} in {py} ({how}, {time.perf_counter() - t0:.1f} s)")
    else:
        print(f"# CORE unavailable: {how}; timing cerql only")
    try:
        print(boundary_check(py, cache), flush=True)
    except RuntimeError as exc:
        print(f"# CORE unavailable: {exc}; timing cerql only")
        py = None

    table = int_ts_table(rows, args.seed)
    cases = build_cases(WINDOWS)
    if args.family:
        cases = [c for c in cases if c.family in set(args.family)]
    # warm-up: numba compile or cache load
    run_cerql(cases[0].cerql(), table.slice(0, 10_000), 1)
    print(f"# {rows:,} rows (ts = row number), best of {repeat}; wall seconds", flush=True)

    records = []
    for c in cases:
        n, s = run_cerql(c.cerql(), table, repeat)
        records.append({"family": c.family, "name": c.name, "window": c.window, "events": rows, "cerql_count": n,
                        "cerql_s": s, "cerql_query": c.cerql(), "core_query": c.core(), **c.params})
    if py:
        t0 = time.perf_counter()
        try:
            core = run_core(py, cache, table, [(f"{c.family}@{c.window}", c.core()) for c in cases], repeat)
        except RuntimeError as exc:
            print(f"# CORE unavailable: {exc}")
            core = {}
        print(f"# CORE runner took {time.perf_counter() - t0:.1f} s (incl. CSV and PyEvent building)", flush=True)
        for c, r in zip(cases, records):
            got = core.get(f"{c.family}@{c.window}")
            if got:
                adj = max(got["seconds"] - got["empty_seconds"], 1e-9)
                r.update({"core_count": got["count"], "core_s": got["seconds"], "core_cpu_s": got["cpu_seconds"],
                          "core_empty_s": got["empty_seconds"], "core_adj_s": adj,
                          "x_raw": got["seconds"] / r["cerql_s"], "x": adj / r["cerql_s"]})
    print(HEAD)
    print("-" * len(HEAD))
    for r in records:
        print_row(r)
    compared = [r for r in records if "core_count" in r]
    if compared:
        bad = [r for r in compared if r["core_count"] != r["cerql_count"]]
        print(f"# counts agree on {len(compared) - len(bad)} of {len(compared)} queries"
              + ("" if not bad else ": differ on " + ", ".join(f"{r['family']}@{r['window']}" for r in bad)))
    print("# x = (CORE s - CORE on an empty stream) / cerql s; x raw = CORE s / cerql s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "command": " ".join([sys.executable] + sys.argv), "rows": rows,
                       "repeat": repeat, "seed": args.seed, "core": {"python": py, "package": PYCER},
                       "cases": records}, f, indent=1)
        print(f"# wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
