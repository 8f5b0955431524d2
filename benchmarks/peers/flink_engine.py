"""Flink SQL ``MATCH_RECOGNIZE`` (PyPI ``apache-flink``) as an external process for the peer benchmark.

PyFlink needs Java 11+ and a Python of 3.9-3.12 (its wheels), and is 840 MB, so it gets its own
venv under the cache directory (``flink_venv``), built on demand with this interpreter.
``run_flink`` writes the stream to a header-less CSV and runs ``_flink_runner.py`` there: one batch
job ``SELECT COUNT(*) FROM s MATCH_RECOGNIZE (...)`` per repeat at parallelism 1, and the same job
on an empty table, which is Flink's fixed cost per job (~1.3 s once the JVM is up; the ~8 s JVM
and gateway start is not timed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv

from cases import FLINK_TYPES
from core_engine import build_venv, runner_records
from streams import Domain

RUNNER = Path(__file__).with_name("_flink_runner.py")
FLINK = "apache-flink==2.3.0"
LABEL = "Flink 2.3 MATCH_RECOGNIZE"


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
    cache.mkdir(parents=True, exist_ok=True)
    failed = build_venv(base, venv, FLINK, cache)
    if failed:
        return None, failed
    if not _works(py, cache):
        return None, f"{py} cannot import pyflink after installing {FLINK}"
    return str(py), f"created with {base}"


def run_flink(py: str, cache: Path, domain: Domain, table: pa.Table, queries: list[tuple],
              repeat: int) -> dict[str, dict]:
    """``{name: {"count", "seconds", "empty_seconds"}}`` of each (name, MATCH_RECOGNIZE clause)
    over ``table``, or (name, clause, its own table)."""
    columns = [("type", "STRING")] + [(c, FLINK_TYPES[t]) for c, t in domain.columns]
    names = [c for c, _ in columns]
    no_header = pacsv.WriteOptions(include_header=False)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        csv_path, empty_path = os.path.join(tmp, "stream.csv"), os.path.join(tmp, "empty.csv")
        spec_path = os.path.join(tmp, "spec.json")
        pacsv.write_csv(table.select(names), csv_path, no_header)
        Path(empty_path).touch()
        specs = []
        for i, (name, body, *own) in enumerate(queries):
            specs.append({"name": name, "body": body})
            if own:
                specs[-1]["csv"] = os.path.join(tmp, f"q{i}.csv")
                pacsv.write_csv(own[0].select(names), specs[-1]["csv"], no_header)
        with open(spec_path, "w") as f:
            json.dump({"mode": "batch", "columns": columns, "ms_per_ts": domain.ms_per_ts, "repeat": repeat,
                       "queries": specs}, f)
        done = subprocess.run([py, str(RUNNER), csv_path, empty_path, spec_path], capture_output=True, text=True,
                              cwd=tmp)
    out = runner_records(done.stdout)
    if done.returncode:
        causes = [ln.strip() for ln in done.stderr.splitlines() if "Exception:" in ln or "Error:" in ln]
        raise RuntimeError(f"Flink runner failed ({done.returncode}): {(causes or [done.stderr.strip()[-300:]])[-1]}")
    return out
