"""Compiling the kernel ahead of the first query: ``python -m cerql warmup`` (or
``python -m cerql.cli.warmup``).

Input: nothing. Output: numba's cache of the kernel (which holds all of cerql's numba functions)
filled, and one or two lines on stdout saying what happened and how long it took. ``make demo``
and ``make test`` run it after installing, so their first query does not compile; anyone can
run it after ``pip install cerql`` (or bake it into a Spark image: the cache lives beside the
modules). When :func:`cerql.exec.kernel.cache.compiled` says the cache is current it returns at
once; otherwise it runs small queries that call the kernel with the argument types real queries
give it (the demo queries, package data in ``cerql/cli/queries/``, and a few of each selection
strategy), since numba compiles one machine-code version per set of argument types.
A query that needs another version still compiles on first use, and says so
(cerql/exec/kernel/cache.py).

Why here and not beside the kernel: it runs whole queries through ``cerql.run`` (the parser and
the planner) and the demo's queries (cerql/cli/demo.py), which the engines must never import
(docs/architecture.md, "Rules of the house").
"""

from __future__ import annotations

import sys
import time
from typing import Callable

from cerql.exec.kernel import cache

# One of each strategy and operator family over a small typed stream (s: type, x, k, ts).
QUERIES = (
    "SELECT * FROM s WHERE A AS a ; B+ AS b ; C AS c FILTER b[x > 2] WITHIN 20 EVENTS",
    "SELECT * FROM s WHERE (A AS a ; B AS b FILTER b.x > a.x)+ ; C AS c PARTITION BY [k] WITHIN 1 MINUTE",
    "SELECT ANY * FROM s WHERE A AS a : B :+ AS b FILTER sum(b.x) > 5 WITHIN 10 EVENTS",
    "SELECT NEXT * FROM s WHERE A AS a ; B AS b FILTER b.x > a.x PARTITION BY [k] WITHIN 10 EVENTS",
    "SELECT LAST * FROM s WHERE A AS a ; (B OR C)+ AS b WITHIN 10 EVENTS",
    "SELECT MAX * FROM s WHERE A AS a ; B+ AS b ; C AS c PARTITION BY [k] WITHIN 10 EVENTS",
    "SELECT STRICT * FROM s WHERE A AS a ; B AS b WITHIN 10 EVENTS",
    "SELECT * FROM s WHERE NOT (C) ; C AS c UNLESS B WITHIN 5 EVENTS",
    "SELECT * FROM s WHERE (A AS a ; C AS c) ALL B AS b WITHIN 6 EVENTS",
)

# The arena is compacted only when full (ARENA_NODES, cerql/exec/driver.py), which the small
# stream never is; this query over a longer one gets there, as the demo's queries do on Spark.
LONG_QUERY = "SELECT * FROM s WHERE A AS a ; B AS b WITHIN 10 EVENTS"
LONG_ROWS = 20_000


def stream(n_rows: int = 400):
    """A small deterministic stream for :data:`QUERIES`: types A, B, C, an integer ``x``, a key
    ``k`` and timestamps one second apart."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "type": rng.choice(["A", "B", "C"], n_rows),
        "x": rng.integers(0, 10, n_rows),
        "k": rng.integers(0, 3, n_rows),
        "ts": pd.Timestamp("2024-03-01") + pd.to_timedelta(np.arange(n_rows), unit="s"),
    })


def run_queries() -> int:
    """Run the warm-up queries with the local engine; how many ran (a query this version
    refuses is skipped: the warm-up must not fail an install)."""
    import cerql

    ran = 0
    tables = {"s": stream()}
    for text in QUERIES:
        try:
            cerql.run(text, tables)
            ran += 1
        except cerql.CeqlError:
            pass
    cerql.run(LONG_QUERY, {"s": stream(LONG_ROWS)})  # fills the arena: compacts it
    ran += 1
    try:
        from cerql.cli.demo import demo_tables, load_queries, tables_for
    except ImportError:
        return ran
    demo = demo_tables(2_000)
    for _, text in load_queries():
        try:
            cerql.run(text, tables_for(text, demo))
            ran += 1
        except cerql.CeqlError:
            pass
    return ran


def warm_up(out: Callable[[str], object] = print, force: bool = False) -> float:
    """Compile the kernel unless its cache is current (``force``: run the queries anyway);
    the seconds it took. Prints a line before compiling and one after."""
    if cache.compiled() and not force:
        out("cerql: the matching kernel is compiled already (numba's cache is current)")
        return 0.0
    out(f"cerql: compiling the matching kernel (first run only, {cache.COMPILE_SECONDS})...")
    if hasattr(sys.stdout, "flush"):
        sys.stdout.flush()
    cache.quiet()  # this line says it; the logger's notice would repeat it
    started = time.perf_counter()
    ran = run_queries()
    seconds = time.perf_counter() - started
    out(f"cerql: kernel compiled in {seconds:.0f} s ({ran} warm-up queries; "
        f"{cache.compile_seconds():.0f} s of it compiling)")
    return seconds


def main(argv: list[str] | None = None) -> int:
    """``python -m cerql.cli.warmup [--force]``."""
    argv = sys.argv[1:] if argv is None else argv
    warm_up(print, force="--force" in argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
