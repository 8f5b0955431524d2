"""The Markdown tables of docs/benchmarks.md from the peer benchmark's JSON report.

Why: the figures in the docs should be the ones a run printed, not retyped. ``tables(report)``
gives one table of every query (cerql.run's time and throughput, the kernel's time and every
other engine's as a multiple of cerql.run's, CORE's also as a multiple of the kernel's, whether
the counts agree), one line per engine summarising its ratios, and one table of CORE's multiple
of cerql.run per family (the headline's figure). Reports from before cerql.run was timed have
the kernel ("local") as their baseline and come out with the same columns, relabelled.

    .venv/bin/python benchmarks/peers/report_md.py docs/img/peers.json
"""

from __future__ import annotations

import argparse
import json
import statistics

PEERS = (("spark", "Spark"), ("core", "CORE"), ("flink", "Flink"))
NAMES = {"run": "cerql.run", "local": "kernel"}


def _x(x: float) -> str:
    return f"{x:.1f}×" if x >= 10 else f"{x:.2f}×"


def _ratio(run: dict | None, key: str = "ratio") -> str:
    if run is None:
        return "–"
    if run.get(key) is None:
        return "fixed cost"
    mark = "" if run.get("agree") is not False else " (≠)"
    return _x(run[key]) + mark


def _counts(rec: dict) -> str:
    runs = rec["runs"]
    checked = [name for engine, name in PEERS if engine in runs and runs[engine]["agree"] is not None]
    differ = [name for engine, name in PEERS if engine in runs and runs[engine]["agree"] is False]
    skipped = [name for engine, name in PEERS if engine in runs and runs[engine]["agree"] is None]
    text = ("yes: " + ", ".join(checked) if checked and not differ else
            "differ: " + ", ".join(differ) if differ else "")
    return text + (f"; {', '.join(skipped)}: n/a" if skipped else "")


def _spread(ratios: list[float]) -> str:
    return f"{min(ratios):.1f}–{max(ratios):.1f}× (median {statistics.median(ratios):.1f}×)"


def tables(report: dict) -> str:
    base = report.get("baseline", "local")
    kernel = "local" if base != "local" else None
    name = NAMES[base]
    lines = [f"| family | query | x | results | {name} ms | {name} events/s | kernel | Spark | CORE | CORE ÷ kernel "
             "| Flink | counts agree |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for rec in report["cases"]:
        b = rec["runs"][base]
        x = "" if rec["x"] is None else f"{rec['x']:g}"
        own = _ratio(rec["runs"].get(kernel)) if kernel else "1×"
        core_k = _ratio(rec["runs"].get("core"), "ratio_kernel" if kernel else "ratio")
        lines.append(f"| {rec['family']} | {rec['name']} | {x} | {b['count']:,} | {b['seconds'] * 1e3:.0f} "
                     f"| {b['events_per_s'] / 1e6:.1f}M | {own} | " + " | ".join(
                         [_ratio(rec["runs"].get("spark")), _ratio(rec["runs"].get("core")), core_k,
                          _ratio(rec["runs"].get("flink"))]) + f" | {_counts(rec)} |")
    lines.append("")
    for engine, label in ((kernel, "kernel"),) + PEERS if kernel else PEERS:
        ran = [rec["runs"][engine] for rec in report["cases"]
               if engine in rec["runs"] and rec["runs"][engine]["ratio"] is not None]
        if ran:
            eps = [r["events_per_s"] for r in ran]
            against_kernel = [r["ratio_kernel"] for r in ran if r.get("ratio_kernel") is not None]
            lines.append(f"- **{label}**: {len(ran)} queries, {_spread([r['ratio'] for r in ran])} {name}'s time"
                         + (f", {_spread(against_kernel)} the kernel's" if against_kernel else "")
                         + f"; {min(eps) / 1e3:,.0f}k–{max(eps) / 1e3:,.0f}k events/s.")
    lines += ["", f"| family | queries | CORE ÷ {name}: min | median | max |", "|---|---:|---:|---:|---:|"]
    for family in dict.fromkeys(rec["family"] for rec in report["cases"]):
        ratios = [rec["runs"]["core"]["ratio"] for rec in report["cases"] if rec["family"] == family
                  and "core" in rec["runs"] and rec["runs"]["core"]["ratio"] is not None]
        if ratios:
            lines.append(f"| {family} | {len(ratios)} | {_x(min(ratios))} | {_x(statistics.median(ratios))} "
                         f"| {_x(max(ratios))} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report", help="the JSON of bench_peers.py --json")
    args = ap.parse_args(argv)
    with open(args.report) as f:
        print(tables(json.load(f)), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
