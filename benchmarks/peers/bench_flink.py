"""cerql's local engine against Flink SQL MATCH_RECOGNIZE (PyPI ``apache-flink``) on the same stock stream.

What: seed 001's stock stream (``bench_kernel.stock_table`` with ``ts`` = the row number as an
integer, as in ``bench_core.py``) and the query shapes whose semantics coincide on both engines:
contiguous fixed-length sequences (cerql ``:``, Flink's ``PATTERN (A B C)``), by ticker
(``PARTITION BY [name]`` / ``PARTITION BY name``) and over the whole stream, with and without a
window. With ``AFTER MATCH SKIP TO NEXT ROW`` and ``ONE ROW PER MATCH`` Flink reports one match
per start row, which for a fixed-length contiguous pattern is every match, i.e. cerql's ALL
results. Printed per query: events, the match counts of both engines (and whether they agree),
seconds of both, and Flink seconds / cerql seconds from the same run.

How: cerql is timed in this process as ``build_stream`` + ``driver.match_arrays`` (sort,
predicates, automaton, output arrays; no pandas conversion), wall time, best of ``--repeat``.
Flink runs as an external process, ``_flink_runner.py``, in a venv with ``apache-flink`` that
this script creates under ``--cache-dir`` when missing (or ``--flink-python``; needs ``java`` 11+).
The runner declares the CSV as a filesystem table with ``ts = TO_TIMESTAMP_LTZ(rn, 3)`` (1 ms per
row) and times one batch job ``SELECT COUNT(*) FROM s MATCH_RECOGNIZE (...)`` per repeat at
parallelism 1: planning, submission to the local mini-cluster, CSV parsing, the sort, the CEP
operator. Each job also has a fixed cost (~1 s once the JVM is warm, not counting the ~8 s JVM and
gateway start, which is not timed), so the runner times the same job on an empty table;
``Flink-e`` is Flink's time minus that, and ``x`` uses it (``x raw`` does not). If Flink cannot be
had, the script says why and times cerql alone (exit 0).

Window bounds differ: cerql keeps a match when end - start <= n (seed 001, DESIGN.md 4.4), Flink
when end - start < n (its ``WITHIN`` interval). With 1 ms per row the Flink queries therefore say
``WITHIN INTERVAL '0.00(n+1)' SECOND``; the script first runs the two-event example that shows the
difference on both engines. cerql's queries without a window say ``ORDER BY ts``.

A script, not a test (STYLE.md 12).

    .venv/bin/python benchmarks/peers/bench_flink.py --quick        # 100k rows, ~1 min after the venv exists
    .venv/bin/python benchmarks/peers/bench_flink.py                # 1M rows, best of 3
    .venv/bin/python benchmarks/peers/bench_flink.py --flink-python /path/to/venv/bin/python --json /tmp/f.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import boundary_table, build_venv, cell, int_ts_table, run_cerql, runner_records  # noqa: E402
from bench_kernel import SEQ_TYPES, machine  # noqa: E402

RUNNER = Path(__file__).with_name("_flink_runner.py")
FLINK = "apache-flink==2.3.0"


# ---------------------------------------------------------------------------------------- cases
def _ms(n: int) -> str:
    """n milliseconds as a Flink interval literal (its parser takes no MILLISECOND unit here)."""
    return f"INTERVAL '{n / 1000:.3f}' SECOND"


@dataclass
class Case:
    name: str
    k: int  # pattern length: SEQ_TYPES[:k], contiguous
    first_gt: float  # t1[price > first_gt]
    last_lt: float  # tk[price < last_lt]
    by_name: bool
    window: int | None  # WITHIN n [ts], or none

    def cerql(self) -> str:
        pat = " : ".join(f"{SEQ_TYPES[j]} AS t{j + 1}" for j in range(self.k))
        q = (f"SELECT * FROM stock WHERE {pat} FILTER t1[price > {self.first_gt}] "
             f"AND t{self.k}[price < {self.last_lt}]")
        q += " PARTITION BY [name]" if self.by_name else ""
        return q + (f" WITHIN {self.window} [ts]" if self.window else " ORDER BY ts")

    def flink(self) -> str:  # Flink's bound is strict: end - start < n
        define = []
        for j in range(self.k):
            cond = f"`type` = '{SEQ_TYPES[j]}'"
            cond += f" AND price > {self.first_gt}" if j == 0 else ""
            cond += f" AND price < {self.last_lt}" if j == self.k - 1 else ""
            define.append(f"T{j + 1} AS {cond}")
        return ("MATCH_RECOGNIZE (" + ("PARTITION BY name " if self.by_name else "")
                + f"ORDER BY ts MEASURES T1.rn AS first_rn ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW "
                f"PATTERN ({' '.join(f'T{j + 1}' for j in range(self.k))})"
                + (f" WITHIN {_ms(self.window + 1)}" if self.window else "")
                + f" DEFINE {', '.join(define)})")

    @property
    def key(self) -> str:
        return f"{self.name}@{self.window or '-'}"


# Filters chosen for about 10^5 results on 10^6 rows for S3: 1/8 * 0.9 * 0.9.
CASES = [
    Case("S3 : by name", 3, 100.0, 900.0, True, None),
    Case("S3 : by name", 3, 100.0, 900.0, True, 30),
    Case("S3 : by name", 3, 100.0, 900.0, True, 15),
    Case("S6 : by name", 6, 100.0, 900.0, True, None),
    Case("S6 : by name", 6, 100.0, 900.0, True, 60),
    Case("S3 :", 3, 100.0, 900.0, False, None),
    Case("S3 :", 3, 100.0, 900.0, False, 2),
]


# ---------------------------------------------------------------------------------------- Flink
def _works(py: Path | str, cwd: Path) -> bool:
    try:
        return subprocess.run([str(py), "-c", "import pyflink.table"], capture_output=True, cwd=cwd,
                              timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def flink_venv(cache: Path, explicit: str | None, base: str) -> tuple[str | None, str]:
    """The python of a venv with PyFlink (created under ``cache`` when missing), or None and why."""
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        return None, "no java on PATH and no JAVA_HOME (PyFlink needs Java 11+)"
    if explicit:
        return (explicit, "given") if _works(explicit, cache) else (None, f"{explicit} cannot import pyflink")
    venv = cache / "flink-venv"
    py = venv / "bin" / "python"
    if py.exists() and _works(py, cache):
        return str(py), "cached"
    failed = build_venv(base, venv, FLINK, cache)
    if failed:
        return None, failed
    if not _works(py, cache):
        return None, f"{py} cannot import pyflink after installing {FLINK}"
    return str(py), f"created with {base}"


def run_flink(py: str, cache: Path, table: pa.Table, queries: list[tuple[str, str]], repeat: int) -> dict[str, dict]:
    """Counts and seconds of each (name, MATCH_RECOGNIZE body) on Flink, by name (runs ``_flink_runner.py``)."""
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        csv_path, empty_path = os.path.join(tmp, "stream.csv"), os.path.join(tmp, "empty.csv")
        spec_path = os.path.join(tmp, "spec.json")
        cols = table.select(["type", "name", "price", "volume", "ts"])
        pacsv.write_csv(cols, csv_path, pacsv.WriteOptions(include_header=False))
        Path(empty_path).touch()
        with open(spec_path, "w") as f:
            json.dump({"mode": "batch", "repeat": repeat,
                       "queries": [{"name": n, "body": b} for n, b in queries]}, f)
        done = subprocess.run([py, str(RUNNER), csv_path, empty_path, spec_path], capture_output=True, text=True,
                              cwd=tmp)
    out = runner_records(done.stdout)
    if done.returncode:
        causes = [ln.strip() for ln in done.stderr.splitlines() if "Exception:" in ln or "Error:" in ln]
        raise RuntimeError(f"Flink runner failed ({done.returncode}): {(causes or [done.stderr.strip()[-300:]])[-1]}")
    return out


# ----------------------------------------------------------------------------------------- main
HEAD = (f"{'case':<16}{'window':>7}{'events':>10}{'cerql n':>10}{'Flink n':>10}{'agree':>7}"
        f"{'cerql s':>9}{'Flink s':>9}{'Flink-e s':>10}{'x raw':>8}{'x':>8}")


def print_row(r: dict) -> None:
    fl_n = r.get("flink_count")
    agree = "" if fl_n is None else ("yes" if fl_n == r["cerql_count"] else "NO")

    f = cell
    print(f"{r['name']:<16}{r['window'] or '-':>7}{r['events']:>10}{r['cerql_count']:>10}"
          f"{f(fl_n, '>10')}{agree:>7}{r['cerql_s']:>9.3f}{f(r.get('flink_s'), '>9.3f')}"
          f"{f(r.get('flink_adj_s'), '>10.3f')}{f(r.get('x_raw'), '>8.1f')}{f(r.get('x'), '>8.1f')}", flush=True)


def boundary_check(py: str | None, cache: Path) -> str:
    """SELL at ts 0, BUY at ts 10, a window of 10 as written on both engines."""
    t = boundary_table()
    ours, _ = run_cerql("SELECT * FROM stock WHERE SELL AS s : BUY AS b WITHIN 10 [ts]", t, 1)
    line = f"# window bound, SELL@ts0 : BUY@ts10 WITHIN 10 [ts]: cerql {ours} match"
    if py:
        body = ("MATCH_RECOGNIZE (ORDER BY ts MEASURES S.rn AS s ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW "
                "PATTERN (S B) WITHIN {} DEFINE S AS `type` = 'SELL', B AS `type` = 'BUY')")
        fl = run_flink(py, cache, t, [("w10", body.format(_ms(10))), ("w11", body.format(_ms(11)))], 1)
        line += (f", Flink WITHIN {_ms(10)} {fl['w10']['count']} ({_ms(11)}: {fl['w11']['count']}); "
                 "the Flink queries below say n+1 ms")
    return line


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=None, help="stream length (default 1_000_000; 100_000 with --quick)")
    ap.add_argument("--repeat", type=int, default=None, help="best of N (default 3; 1 with --quick)")
    ap.add_argument("--quick", action="store_true", help="100k rows, one run each")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "cerql-peers"),
                    help="where Flink's venv and scratch files go (default $TMPDIR/cerql-peers)")
    ap.add_argument("--flink-python", help="a python that already imports pyflink (skips building the venv)")
    ap.add_argument("--base-python", default=sys.executable,
                    help="the python to build Flink's venv with (default this one; apache-flink wants 3.9-3.12)")
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
    py, how = flink_venv(cache, args.flink_python, args.base_python)
    if py:
        print(f"# Flink: {FLINK} in {py} ({how}, {time.perf_counter() - t0:.1f} s)")
    else:
        print(f"# Flink unavailable: {how}; timing cerql only")
    try:
        print(boundary_check(py, cache), flush=True)
    except RuntimeError as exc:
        print(f"# Flink unavailable: {exc}; timing cerql only")
        py = None

    table = int_ts_table(rows, args.seed)
    run_cerql(CASES[0].cerql(), table.slice(0, 10_000), 1)  # warm-up: numba compile or cache load
    print(f"# {rows:,} rows (ts = row number; Flink: 1 ms per row), best of {repeat}; wall seconds", flush=True)

    records = []
    for c in CASES:
        n, s = run_cerql(c.cerql(), table, repeat)
        records.append({"name": c.name, "window": c.window, "events": rows, "cerql_count": n, "cerql_s": s,
                        "cerql_query": c.cerql(), "flink_query": c.flink()})
    if py:
        t0 = time.perf_counter()
        try:
            fl = run_flink(py, cache, table, [(c.key, c.flink()) for c in CASES], repeat)
        except RuntimeError as exc:
            print(f"# Flink unavailable: {exc}")
            fl = {}
        print(f"# Flink runner took {time.perf_counter() - t0:.1f} s (incl. JVM start and empty-table jobs)",
              flush=True)
        for c, r in zip(CASES, records):
            got = fl.get(c.key)
            if got:
                adj = max(got["seconds"] - got["empty_seconds"], 1e-9)
                r.update({"flink_count": got["count"], "flink_s": got["seconds"],
                          "flink_empty_s": got["empty_seconds"], "flink_adj_s": adj,
                          "x_raw": got["seconds"] / r["cerql_s"], "x": adj / r["cerql_s"]})
    print(HEAD)
    print("-" * len(HEAD))
    for r in records:
        print_row(r)
    compared = [r for r in records if "flink_count" in r]
    if compared:
        bad = [r for r in compared if r["flink_count"] != r["cerql_count"]]
        print(f"# counts agree on {len(compared) - len(bad)} of {len(compared)} queries"
              + ("" if not bad else ": differ on " + ", ".join(f"{r['name']}@{r['window']}" for r in bad)))
    print("# x = (Flink s - the same job on an empty table) / cerql s; x raw = Flink s / cerql s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "command": " ".join([sys.executable] + sys.argv), "rows": rows,
                       "repeat": repeat, "seed": args.seed, "flink": {"python": py, "package": FLINK},
                       "cases": records}, f, indent=1)
        print(f"# wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
