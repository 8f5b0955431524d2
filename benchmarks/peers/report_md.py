"""The Markdown tables of docs/benchmarks.md from the peer benchmark's JSON report.

Why: the figures in the docs should be the ones a run printed, not retyped. ``tables(report)``
gives one table of every query (cerql local's time and throughput, every other engine's time as
a multiple of it, whether the counts agree) and one line per engine summarising its ratios.

    .venv/bin/python benchmarks/peers/report_md.py docs/img/peers.json
"""

from __future__ import annotations

import argparse
import json
import statistics

PEERS = (("spark", "Spark"), ("core", "CORE"), ("flink", "Flink"))


def _ratio(run: dict | None) -> str:
    if run is None:
        return "–"
    if run["ratio"] is None:
        return "fixed cost"
    x = run["ratio"]
    mark = "" if run["agree"] is not False else " (≠)"
    return (f"{x:.1f}×" if x >= 10 else f"{x:.2f}×") + mark


def _counts(rec: dict) -> str:
    runs = rec["runs"]
    checked = [name for engine, name in PEERS if engine in runs and runs[engine]["agree"] is not None]
    differ = [name for engine, name in PEERS if engine in runs and runs[engine]["agree"] is False]
    skipped = [name for engine, name in PEERS if engine in runs and runs[engine]["agree"] is None]
    text = ("yes: " + ", ".join(checked) if checked and not differ else
            "differ: " + ", ".join(differ) if differ else "")
    return text + (f"; {', '.join(skipped)}: n/a" if skipped else "")


def tables(report: dict) -> str:
    lines = ["| family | query | x | results | cerql ms | cerql events/s | Spark | CORE | Flink | counts agree |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for rec in report["cases"]:
        local = rec["runs"]["local"]
        x = "" if rec["x"] is None else f"{rec['x']:g}"
        lines.append(f"| {rec['family']} | {rec['name']} | {x} | {local['count']:,} | {local['seconds'] * 1e3:.0f} "
                     f"| {local['events_per_s'] / 1e6:.1f}M | " + " | ".join(_ratio(rec["runs"].get(e)) for e, _ in PEERS)
                     + f" | {_counts(rec)} |")
    lines.append("")
    for engine, name in PEERS:
        ran = [rec["runs"][engine] for rec in report["cases"]
               if engine in rec["runs"] and rec["runs"][engine]["ratio"] is not None]
        if ran:
            ratios = [r["ratio"] for r in ran]
            eps = [r["events_per_s"] for r in ran]
            lines.append(f"- **{name}**: {len(ran)} queries, {min(ratios):.1f}–{max(ratios):.0f}× cerql local's "
                         f"time (median {statistics.median(ratios):.1f}×), "
                         f"{min(eps) / 1e3:,.0f}k–{max(eps) / 1e3:,.0f}k events/s.")
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
