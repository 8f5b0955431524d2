"""cerql imported from a zip, as Spark ships Python code to executors (``--py-files``,
``addPyFile``): its package data (the grammars, the demo queries) is read through
importlib.resources, and the numba kernel finds a writable cache (cerql/exec/kernel/cache.py).

Each test runs a fresh interpreter with the zip first on ``PYTHONPATH``, so it wins over the
editable install (checked through ``cerql.__file__``). Compiling the kernel from a zip takes about
a minute on two cores, so the numba engine itself is not run here: the queries run on the
reference engine, and the kernel's cache location is checked without compiling.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

CEQL = "SELECT * FROM stock WHERE SELL AS s ; BUY AS b FILTER b.price > s.price"
ROW_PATTERN = """SELECT * FROM stock MATCH_RECOGNIZE (
  ORDER BY ts
  MEASURES FIRST(s.price) AS sold, LAST(b.price) AS bought
  PATTERN (s b+)
  DEFINE s AS type = 'SELL', b AS type = 'BUY'
)"""

PROBE = """
import json, sys
import pandas as pd
import cerql
from cerql.cli.demo import load_queries
stock = pd.DataFrame({"type": ["SELL", "BUY", "BUY"], "name": ["A", "A", "A"],
                      "price": [1.0, 2.0, 3.0],
                      "ts": pd.to_datetime(["2024-01-01 00:00:00", "2024-01-01 00:00:01",
                                            "2024-01-01 00:00:02"])})
ceql, row_pattern = sys.argv[1], sys.argv[2]
print(json.dumps({
    "file": cerql.__file__,
    "parsed": type(cerql.parse(ceql)).__name__,
    "explain": cerql.explain(ceql),
    "explain_mr": cerql.explain(row_pattern),
    "ceql_rows": len(cerql.run(ceql, {"stock": stock}, engine="reference")),
    "mr_rows": len(cerql.run(row_pattern, {"stock": stock}, engine="reference")),
    "queries": [name for name, _ in load_queries()],
}))
"""

LOCATOR = """
import json
from cerql.exec.kernel import cache, stepping
locator = stepping.run_batch._cache._impl.locator
print(json.dumps({"file": cache.__file__, "locator": type(locator).__name__,
                  "path": locator.get_cache_path()}))
"""


@pytest.fixture(scope="module")
def zipped(tmp_path_factory) -> Path:
    """The ``cerql`` package as a zip: its files as the repository has them, no bytecode."""
    path = tmp_path_factory.mktemp("zipped") / "cerql.zip"
    with zipfile.ZipFile(path, "w") as z:
        for file in sorted((ROOT / "cerql").rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts:
                z.write(file, file.relative_to(ROOT).as_posix())
    return path


def _python(zipped: Path, code: str, *args: str, env: dict | None = None) -> dict:
    """Run ``code`` with the zip first on the path; its one JSON line, parsed."""
    environ = {**os.environ, "PYTHONPATH": str(zipped), **(env or {})}
    done = subprocess.run([sys.executable, "-c", code, *args], env=environ, capture_output=True,
                          text=True, timeout=300, cwd=zipped.parent)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_zipped_cerql_parses_plans_and_runs_both_dialects(zipped):
    got = _python(zipped, PROBE, CEQL, ROW_PATTERN)
    assert got["file"].startswith(str(zipped) + os.sep)  # the zip's cerql, not the editable one
    assert got["parsed"] == "Select"
    assert "automaton:" in got["explain"]
    assert "nfa: 4 states" in got["explain_mr"]
    assert got["ceql_rows"] == 2  # SELL 1.0 then BUY 2.0, and then BUY 3.0
    assert got["mr_rows"] == 1  # one match, s b b
    assert "stock_sell_then_buys" in got["queries"]  # the demo queries are package data too


def test_a_zipped_kernel_caches_in_a_writable_folder_when_home_is_not(zipped, tmp_path):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    env = {"XDG_CACHE_HOME": str(not_a_folder), "NUMBA_CACHE_DIR": "", "TMPDIR": str(tmp_path)}
    got = _python(zipped, LOCATOR, env=env)
    assert got["file"].startswith(str(zipped) + os.sep)
    assert got["locator"] == "ZippedKernelLocator"
    path = Path(got["path"])
    assert path.parent.parent == tmp_path and path.name.startswith("cerql-kernel-")
    assert path.is_dir()
