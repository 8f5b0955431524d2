"""cerql as the peer benchmark times it: the public calls a user makes, and the kernel alone.

- ``run_public``: ``cerql.run(text, {domain: DataFrame})``, the user's call: a pandas DataFrame
  in (converted to Arrow inside), the parse, plan, kernel and the result DataFrame out (its
  variable columns Arrow-backed), wall time, best of N. The baseline of the benchmark's headline.
- ``run_local``: ``build_stream`` + ``driver.match_arrays`` on an in-memory Arrow table in this
  process (sort, condition bits, automaton, output arrays; one thread, no result table), wall
  time, best of N. Kept as a diagnosis: what the kernel costs of the user's call.
- ``SparkEngine``: ``cerql.cer_sql`` over a Parquet copy of the stream on the CLI's local session
  (``local[*]``: both cores here), forced with ``.write.format("noop")``, so every result row is
  built as it would be for a real sink; wall time, best of N: reading, the bit columns, pruning,
  the shuffle by the PARTITION BY keys (one partition without), the sort and the kernel in
  ``mapInArrow``. The count comes from one untimed ``.count()``. As for CORE and Flink, the
  same query is also timed on an empty Parquet file of the same schema: Spark's fixed cost per
  job (planning, scheduling, starting tasks), which the benchmark subtracts.
"""

from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cerql.api import analyze
from cerql.exec import driver
from cerql.exec.stream import build_stream
from cerql.planner.resolve import resolve

RUN_LABEL = "cerql.run (pandas out)"
LOCAL_LABEL = "cerql kernel (1 core)"
SPARK_LABEL = "cerql on Spark (local[*])"


def best_of(repeat: int, fn) -> tuple[object, float]:
    """(fn's last result, its best wall seconds over ``repeat`` calls)."""
    best, out = math.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def run_local(query: str, domain: str, table: pa.Table, repeat: int) -> tuple[int, float]:
    """(matches, best seconds) of ``query`` on the local engine."""
    plan = resolve(analyze(query), {domain: table.schema})
    return best_of(repeat, lambda: len(driver.match_arrays(plan, build_stream(plan, {domain: table}))))


# Past cerql.run's default guard (1 000 000 rows) so that the 10^6-result queries are timed; a
# user sets the same argument (or ``cerql.maxOutputRows``) for such an output.
MAX_OUTPUT_ROWS = 10_000_000


def run_public(query: str, domain: str, frame, repeat: int) -> tuple[int, float]:
    """(matches, best seconds) of ``cerql.run(query, {domain: frame})`` with pandas out."""
    import cerql

    return best_of(repeat, lambda: len(cerql.run(query, {domain: frame}, max_output_rows=MAX_OUTPUT_ROWS)))


class SparkEngine:
    """A local Spark session with each domain's stream as a Parquet-backed DataFrame."""

    def __init__(self, tables: dict[str, pa.Table], data_dir: Path):
        self._tables, self._dir = tables, data_dir
        self._stack = contextlib.ExitStack()
        self.frames: dict = {}

    def __enter__(self) -> "SparkEngine":
        from cerql.cli.runtime import spark_session

        self.spark = self._stack.enter_context(spark_session())
        self._dir.mkdir(parents=True, exist_ok=True)
        for name, table in self._tables.items():
            for rows in (table.num_rows, 0):
                path = self._dir / f"{name}-{rows}.parquet"
                pq.write_table(table.slice(0, rows), path)
                self.frames[name, rows] = self.spark.read.parquet(str(path))
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    def run(self, query: str, domain: str, repeat: int) -> tuple[int, float, float]:
        """(matches, best seconds, best seconds on the empty stream) of ``query`` on Spark."""
        import cerql

        def frame(rows: int):
            return cerql.cer_sql(self.spark, query, **{domain: self.frames[domain, rows]})

        def write(rows: int) -> None:
            frame(rows).write.format("noop").mode("overwrite").save()

        rows = self._tables[domain].num_rows
        seconds = best_of(repeat, lambda: write(rows))[1]
        return frame(rows).count(), seconds, best_of(repeat, lambda: write(0))[1]
