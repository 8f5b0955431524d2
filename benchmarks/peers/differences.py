"""The smallest streams on which cerql, CORE and Flink give different counts, run on each engine.

Counts agree on the benchmark's queries only because ``cases.py`` writes each engine's query for
the meaning it has there. These examples show why each adjustment is needed (or why a family is
left out for an engine), and ``report`` runs them on every engine that is available, so the
claims in docs/benchmarks.md are checked on each run rather than remembered.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

import cerql
from cases import flink_clause
from core_engine import run_core
from flink_engine import run_flink
from streams import STOCK

SELL, BUY = "`type` = 'SELL'", "`type` = 'BUY'"


@dataclass
class Example:
    name: str
    events: list[tuple[str, int]]  # (type, ts) in arrival order
    cerql: str  # the WHERE clause and what follows, on ``stock``
    core: str | None  # the same on CORE's ``S``
    flink: str | None  # a MATCH_RECOGNIZE clause
    why: str

    def table(self) -> pa.Table:
        n = len(self.events)
        return pa.table({"type": [t for t, _ in self.events], "name": ["INTC"] * n,
                         "price": [float(i + 1) for i in range(n)], "volume": pa.array([100] * n, pa.int64()),
                         "ts": pa.array([ts for _, ts in self.events], pa.int64())})


ALTERNATING = [("SELL", 0), ("BUY", 1), ("SELL", 2), ("BUY", 3)]
EXAMPLES = [
    Example("window bound", [("SELL", 0), ("BUY", 10)], "SELECT * FROM stock WHERE SELL AS s ; BUY AS b WITHIN 10 [ts]",
            "SELECT * FROM S WHERE SELL AS s ; BUY AS b WITHIN 10 [ts]",
            flink_clause([("S", SELL), ("B", BUY)], "S B", within_ms=10),
            "cerql keeps end - start <= n (seed 001; docs/language.md, "WITHIN"), CORE and Flink end - start < n: "
            "their queries say n + 1"),
    Example("selection strategy", ALTERNATING, "SELECT NEXT * FROM stock WHERE SELL AS s ; BUY AS b WITHIN 10 [ts]",
            "SELECT NEXT * FROM S WHERE SELL AS s ; BUY AS b WITHIN 10 [ts]", None,
            "CORE 0.1.6 parses ANY, NEXT, LAST, MAX and STRICT but returns ALL's results"),
    Example("LIMIT", ALTERNATING, "SELECT * FROM stock WHERE SELL AS s ; BUY AS b WITHIN 10 [ts] LIMIT 1",
            "SELECT * FROM S WHERE SELL AS s ; BUY AS b WITHIN 10 [ts] LIMIT 1", None,
            "CORE's LIMIT n caps the results reported at each event (1 at ts 1, 1 at ts 3), cerql's the "
            "whole result"),
    Example("time going back", [("BUY", 5), ("SELL", 3)],
            "SELECT * FROM stock WHERE SELL AS s ; BUY AS b WITHIN 10 [ts]",
            "SELECT * FROM S WHERE SELL AS s ; BUY AS b WITHIN 10 [ts]",
            flink_clause([("S", SELL), ("B", BUY)], "S B"),
            "CORE reads events in arrival order and drops one whose time is earlier than the last; "
            "cerql and Flink order the rows by ts"),
    Example("skip-till-any-match", ALTERNATING, "SELECT * FROM stock WHERE SELL AS s ; BUY AS b WITHIN 10 [ts]",
            "SELECT * FROM S WHERE SELL AS s ; BUY AS b WITHIN 11 [ts]",
            flink_clause([("S", SELL), ("B", BUY)], "S Z*? B"),
            "Flink has no skip-till-any-match: a filler Z*? finds one match per start row, cerql and CORE "
            "every pair; Flink gets contiguous queries only"),
    Example("Kleene +", [("SELL", 0), ("BUY", 1), ("BUY", 2), ("SELL", 3)],
            "SELECT * FROM stock WHERE SELL AS a ; BUY+ AS b ; SELL AS c WITHIN 10 [ts]",
            "SELECT * FROM S WHERE SELL AS a ; BUY+ AS b ; SELL AS c WITHIN 11 [ts]",
            flink_clause([("A", SELL), ("B", BUY), ("C", SELL)], "A B+ C"),
            "Flink's greedy B+ gives one match per start row, cerql and CORE every non-empty subset of the "
            "BUYs (cerql's contiguous SELL : BUY :+ : SELL gives Flink's 1)"),
]


def report(core_py: str | None, flink_py: str | None, cache: Path) -> list[str]:
    """One line per example with each available engine's count, then why they differ."""
    core, flink = {}, {}
    try:
        if core_py:
            core = run_core(core_py, cache, STOCK, EXAMPLES[0].table(),
                            [(e.name, e.core, e.table()) for e in EXAMPLES if e.core], 1)
        if flink_py:
            flink = run_flink(flink_py, cache, STOCK, EXAMPLES[0].table(),
                              [(e.name, e.flink, e.table()) for e in EXAMPLES if e.flink], 1)
    except RuntimeError as exc:
        return [f"# the examples of where engines differ could not run: {exc}"]
    lines = ["# where the engines differ (smallest examples, docs/benchmarks.md):"]
    for e in EXAMPLES:
        counts = [f"cerql {len(cerql.run(e.cerql, {'stock': e.table()}))}"]
        counts += [f"{label} {got[e.name]['count']}" for label, got in (("CORE", core), ("Flink", flink))
                   if e.name in got]
        lines.append(f"#   {e.name}: {', '.join(counts)}. {e.why}")
    return lines
