"""cerql against CORE and Flink on seed 001's query families, side by side, with plots.

What: two generated streams (``streams.py``: seed 001's stock trades with ``ts`` = row number,
and smart-plug loads shaped like its DEBS 2014 house) and seed 001's families (``cases.py``):
sequences of length 3-6, windows of 10^2-10^5, 10^2-10^6 results, a query with no output, its
Q1-Q7 (filters, PARTITION BY, disjunction, Kleene), the selection strategies and CONSUME BY ANY,
contiguous sequences, its smart-home queries, and issue 17's three-ticker query with ~6 * 10^5
results. Each runs on up to five engines:

- ``run``: ``cerql.run`` in this process, pandas in and out (``cerql_engines.run_public``): the
  user's call end to end, the baseline every other engine is a multiple of;
- ``local``: cerql's kernel alone in this process (``cerql_engines.run_local``: build_stream +
  match_arrays, no result table), kept as a diagnosis of where cerql.run's time goes;
- ``spark``: ``cerql.cer_sql`` on a local Spark session over Parquet, written to the ``noop`` sink
  (``cerql_engines.SparkEngine``);
- ``core``: CORE, seed 001's engine (``pycer`` 0.1.6 in its own Python 3.13 venv, ``core_engine.py``);
- ``flink``: Flink SQL MATCH_RECOGNIZE (PyFlink 2.3 in its own venv, ``flink_engine.py``), on
  the contiguous queries only.

Printed per query: events, cerql's result count, each engine's wall seconds (Spark, CORE and
Flink less their fixed cost per job: the same query on an empty stream), its time as a multiple
of cerql.run's from the same run (``x``: above 1 is slower; CORE also as a multiple of the
kernel's, ``xk``), and whether its count agrees. Then a summary per engine against cerql.run and
against the kernel, and CORE's multiple of cerql.run per family. The smallest examples of where the engines' semantics differ are run first
(``differences.py``). An engine that cannot be installed is reported and left out.

A script, not a test (STYLE.md 12). ``--plots DIR`` writes the PNGs of docs/benchmarks.md.

    .venv/bin/python benchmarks/peers/bench_peers.py --quick              # 100k rows, ~2 min
    .venv/bin/python benchmarks/peers/bench_peers.py --json /tmp/peers.json --plots docs/img
    .venv/bin/python benchmarks/peers/bench_peers.py --family ops --engine core
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import cases as case_defs  # noqa: E402
import cerql_engines  # noqa: E402
import core_engine  # noqa: E402
import differences  # noqa: E402
import flink_engine  # noqa: E402
import streams  # noqa: E402
from bench_kernel import machine  # noqa: E402

ENGINES = ("run", "local", "spark", "core", "flink")
PEERS = ENGINES[2:]  # the engines --engine chooses from; cerql.run and the kernel always run
BASE = "run"  # every ratio's denominator: the user's call
KERNEL = "local"  # the diagnosis: every ratio again against the kernel alone
LABELS = {"run": cerql_engines.RUN_LABEL, "local": cerql_engines.LOCAL_LABEL, "spark": cerql_engines.SPARK_LABEL,
          "core": core_engine.LABEL, "flink": flink_engine.LABEL}
SHORT = {"run": "cerql.run", "local": "kernel", "spark": "Spark", "core": "CORE", "flink": "Flink"}


def _say(line: str) -> None:
    print(line, flush=True)


# -------------------------------------------------------------------------------------- engines
def external_engines(args, cache: Path, wanted: set[str]) -> dict[str, dict]:
    """CORE's and Flink's interpreters (venvs built when missing), or why each is unavailable."""
    found = {}
    if "core" in wanted:
        t0 = time.perf_counter()
        py, how = core_engine.core_venv(cache, args.core_python)
        found["core"] = {"python": py, "how": how, "package": core_engine.PYCER}
        _say(f"# CORE: {core_engine.PYCER} in {py} ({how}, {time.perf_counter() - t0:.1f} s)" if py
             else f"# CORE unavailable: {how}")
    if "flink" in wanted:
        t0 = time.perf_counter()
        py, how = flink_engine.flink_venv(cache, args.flink_python, args.base_python)
        found["flink"] = {"python": py, "how": how, "package": flink_engine.FLINK}
        _say(f"# Flink: {flink_engine.FLINK} in {py} ({how}, {time.perf_counter() - t0:.1f} s)" if py
             else f"# Flink unavailable: {how}")
    return found


def run_external(name: str, runner, py: str, cache: Path, selected, tables, repeat: int) -> dict[str, dict]:
    """Each case's record from CORE or Flink (``runner`` is run_core or run_flink), by case key."""
    out = {}
    for domain in sorted({c.domain for c in selected}):
        todo = [(c.key, getattr(c, name)) for c in selected if c.domain == domain]
        if not todo:
            continue
        t0 = time.perf_counter()
        out.update(runner(py, cache, streams.DOMAINS[domain], tables[domain], todo, repeat))
        _say(f"# {SHORT[name]} ran {len(todo)} {domain} queries in {time.perf_counter() - t0:.1f} s "
             "(with its start-up and the empty-stream runs)")
    return out


# ------------------------------------------------------------------------------------- records
def record(case, events: int, runs: dict[str, dict]) -> dict:
    """One case's report entry: every engine's count, seconds, events/s, ratios and agreement.
    ``ratio`` is the engine's seconds / cerql.run's, ``ratio_kernel`` / the kernel's. A run that
    took no longer than its fixed cost (``seconds`` None) has no throughput or ratio."""
    base, kernel = runs[BASE], runs[KERNEL]
    for engine, r in runs.items():
        r["events_per_s"] = None if r["seconds"] is None else events / max(r["seconds"], 1e-9)
        if engine != BASE:
            r["ratio"] = None if r["seconds"] is None else r["seconds"] / base["seconds"]
            if engine != KERNEL:
                r["ratio_kernel"] = None if r["seconds"] is None else r["seconds"] / kernel["seconds"]
            comparable = not (engine == "core" and case.core_differs)
            r["agree"] = (r["count"] == base["count"]) if comparable else None
    queries = {"cerql": case.cerql, "core": case.core, "flink": case.flink}
    return {"family": case.family, "domain": case.domain, "name": case.name, "x": case.x, "events": events,
            "runs": runs, "queries": {k: v for k, v in queries.items() if v}, "core_differs": case.core_differs}


# A run whose time less the empty-stream run is below this share of its time is within the noise
# of the fixed cost (small --rows, one repeat): it gets no throughput rather than a made-up one.
MIN_WORK_SHARE = 0.1


def external_run(got: dict | None) -> dict | None:
    """A run of an engine with a fixed cost per job: its seconds less that cost (raw ones kept)."""
    if not got:
        return None
    work = got["seconds"] - got["empty_seconds"]
    return {"count": got["count"], "seconds": work if work >= MIN_WORK_SHARE * got["seconds"] else None,
            "raw_seconds": got["seconds"], "empty_seconds": got["empty_seconds"],
            **({"cpu_seconds": got["cpu_seconds"]} if "cpu_seconds" in got else {})}


def _x(r: dict | None, key: str = "ratio") -> str:
    if r is None or r.get(key) is None:
        return "-"
    return f"{r[key]:.1f}" if r[key] >= 10 else f"{r[key]:.2f}"


def _s(r: dict | None) -> str:
    return "-" if r is None else "fixed" if r["seconds"] is None else f"{r['seconds']:.3f}"


def _agreement(rec: dict) -> str:
    marks = []
    for engine in ("local",) + PEERS:
        r = rec["runs"].get(engine)
        if r is not None:
            marks.append(SHORT[engine] + ("=" if r["agree"] else "~" if r["agree"] is None else "!=")
                         + ("" if r["agree"] else str(r["count"])))
    return " ".join(marks)


HEAD = (f"{'family':<14}{'case':<17}{'x':>7}{'results':>9}{'run s':>8}{'run ev/s':>9}{'kern s':>8}{'x':>6}"
        f"{'Spark s':>8}{'x':>6}{'CORE s':>8}{'x':>6}{'xk':>6}{'Flink s':>8}{'x':>6}  counts")


def print_record(rec: dict) -> None:
    r = rec["runs"]
    x = "" if rec["x"] is None else f"{rec['x']:g}"
    _say(f"{rec['family']:<14}{rec['name'][:16]:<17}{x:>7}{r[BASE]['count']:>9}{r[BASE]['seconds']:>8.3f}"
         f"{r[BASE]['events_per_s'] / 1e6:>8.1f}M{_s(r[KERNEL]):>8}{_x(r[KERNEL]):>6}"
         f"{_s(r.get('spark')):>8}{_x(r.get('spark')):>6}{_s(r.get('core')):>8}{_x(r.get('core')):>6}"
         f"{_x(r.get('core'), 'ratio_kernel'):>6}{_s(r.get('flink')):>8}{_x(r.get('flink')):>6}  {_agreement(rec)}")


def _spread(ratios: list[float]) -> str:
    ratios = sorted(ratios)
    return f"{ratios[0]:.2f}x-{ratios[-1]:.1f}x (median {statistics.median(ratios):.1f}x)"


def summary(records: list[dict]) -> None:
    for engine in ("local",) + PEERS:
        ran = [rec for rec in records if engine in rec["runs"]]
        if not ran:
            continue
        ratios = [rec["runs"][engine]["ratio"] for rec in ran if rec["runs"][engine]["ratio"] is not None]
        kernel = [rec["runs"][engine]["ratio_kernel"] for rec in ran
                  if rec["runs"][engine].get("ratio_kernel") is not None]
        compared = [rec for rec in ran if rec["runs"][engine]["agree"] is not None]
        bad = [rec["family"] + "/" + rec["name"] for rec in compared if not rec["runs"][engine]["agree"]]
        timed = (f"{_spread(ratios)} cerql.run's time" + (f", {_spread(kernel)} the kernel's" if kernel else "")
                 if ratios else "no time above its fixed cost")
        fixed = len(ran) - len(ratios)
        _say(f"# {SHORT[engine]}: {len(ran)} queries, {timed}"
             + (f", {fixed} within its fixed cost" if fixed else "")
             + f"; counts agree on {len(compared) - len(bad)} of {len(compared)} comparable"
             + (f", differ on {', '.join(bad)}" if bad else ""))
    for engine in ("core", "flink"):
        for family in dict.fromkeys(rec["family"] for rec in records):
            ratios = [rec["runs"][engine]["ratio"] for rec in records if rec["family"] == family
                      and engine in rec["runs"] and rec["runs"][engine]["ratio"] is not None]
            if ratios:
                _say(f"#   {SHORT[engine]} / cerql.run on {family}: {_spread(ratios)}")


# ----------------------------------------------------------------------------------------- main
def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=None, help="events per stream (default 1_000_000; 100_000 with --quick)")
    ap.add_argument("--repeat", type=int, default=None, help="best of N (default 3; 1 with --quick)")
    ap.add_argument("--quick", action="store_true", help="100k rows, one run each")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--family", action="append", choices=case_defs.FAMILIES, help="only these families (repeatable)")
    ap.add_argument("--engine", action="append", choices=PEERS,
                    help="only these engines besides cerql.run and the kernel (repeatable; default all)")
    ap.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "cerql-peers"),
                    help="where the CORE and Flink venvs, scratch CSVs and Parquet go (default $TMPDIR/cerql-peers)")
    ap.add_argument("--core-python", help="a CPython 3.13 to build CORE's venv with (default: python3.13 on PATH, "
                    "else pyenv's newest 3.13)")
    ap.add_argument("--flink-python", help="a python that already imports pyflink (skips building its venv)")
    ap.add_argument("--base-python", default=sys.executable,
                    help="the python to build Flink's venv with (default this one; apache-flink wants 3.9-3.12)")
    ap.add_argument("--json", metavar="PATH", help="write the report (every figure and query) to PATH")
    ap.add_argument("--plots", metavar="DIR", help="write the PNG plots to DIR (needs matplotlib: pip install "
                    "-e '.[bench]')")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    rows = args.rows or (100_000 if args.quick else 1_000_000)
    repeat = args.repeat or (1 if args.quick else 3)
    wanted = set(args.engine or PEERS)
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    info = machine()
    _say(f"# {info['cpu']} x{info['nproc']}, Python {info['python']}, numba {info['numba']}; "
         f"load {info['loadavg_start']}")

    selected = [c for c in case_defs.all_cases() if not args.family or c.family in args.family]
    tables = {d: streams.generate(d, rows, args.seed) for d in sorted({c.domain for c in selected})}
    external = external_engines(args, cache, wanted)
    pythons = {name: e["python"] for name, e in external.items() if e["python"]}
    for line in differences.report(pythons.get("core"), pythons.get("flink"), cache):
        _say(line)

    _say(f"# {rows:,} events per stream, best of {repeat}; wall seconds")
    frames = {d: t.to_pandas() for d, t in tables.items()}  # the user's input: pandas, as cerql.run takes it
    first = selected[0]
    cerql_engines.run_local(first.cerql, first.domain, tables[first.domain].slice(0, 10_000), 1)
    cerql_engines.run_public(first.cerql, first.domain, frames[first.domain].head(10_000), 1)
    runs = {}
    for c in selected:  # cerql.run and the kernel side by side, so that load hits both alike
        public = cerql_engines.run_public(c.cerql, c.domain, frames[c.domain], repeat)
        kernel = cerql_engines.run_local(c.cerql, c.domain, tables[c.domain], repeat)
        runs[c.key] = {BASE: dict(zip(("count", "seconds"), public)), KERNEL: dict(zip(("count", "seconds"), kernel))}
    if "spark" in wanted:
        t0 = time.perf_counter()
        with cerql_engines.SparkEngine(tables, cache / "parquet") as spark:
            _say(f"# Spark session up and Parquet written in {time.perf_counter() - t0:.1f} s")
            spark.run(selected[0].cerql, selected[0].domain, 1)  # warm-up: workers, numba cache
            for c in selected:
                n, seconds, empty = spark.run(c.cerql, c.domain, repeat)
                runs[c.key]["spark"] = external_run({"count": n, "seconds": seconds, "empty_seconds": empty})
    for name, runner in (("core", core_engine.run_core), ("flink", flink_engine.run_flink)):
        if name in pythons:
            try:
                got = run_external(name, runner, pythons[name], cache, [c for c in selected if getattr(c, name)],
                                   tables, repeat)
            except RuntimeError as exc:
                _say(f"# {SHORT[name]} unavailable: {exc}")
                got = {}
            for c in selected:
                if (r := external_run(got.get(c.key))) is not None:
                    runs[c.key][name] = r

    records = [record(c, tables[c.domain].num_rows, runs[c.key]) for c in selected]
    _say(HEAD)
    _say("-" * len(HEAD))
    for rec in records:
        print_record(rec)
    summary(records)
    _say("# x = engine s / cerql.run s, xk = engine s / kernel s (Spark, CORE, Flink: less the same run on an "
         "empty stream; 'fixed': within 10 % of that cost, no figure); counts against cerql.run's: = agree, "
         "!=n differs (n), ~ not comparable (CORE ignores selection strategies)")
    report = {"machine": info, "command": " ".join([sys.executable] + sys.argv),
              "rows": {d: t.num_rows for d, t in tables.items()}, "repeat": repeat,
              "seed": args.seed,
              "baseline": BASE,
              "engines": {BASE: {"label": LABELS[BASE], "available": True},
                          KERNEL: {"label": LABELS[KERNEL], "available": True},
                          "spark": {"label": LABELS["spark"], "available": "spark" in wanted},
                          **{n: {"label": LABELS[n], "available": n in pythons, **e} for n, e in external.items()}},
              "cases": records}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
        _say(f"# wrote {args.json}")
    if args.plots:
        import plots  # matplotlib only when asked for; write_plots says what it wrote

        plots.write_plots(report, Path(args.plots))
    return 0


if __name__ == "__main__":
    sys.exit(main())
