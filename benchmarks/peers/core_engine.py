"""CORE (PyPI ``pycer``, seed 001's engine) as an external process for the peer benchmark.

CORE is GPL-3 and ships only a CPython 3.13 wheel, so cerql never imports it: ``core_venv``
creates a 3.13 venv with pycer under the cache directory when missing (``python3.13`` on PATH,
else pyenv's newest 3.13, or an explicit interpreter), and ``run_core`` writes the stream to CSV
and runs ``_core_runner.py`` there. The runner times ``send_events`` + ``get_output`` on a fresh
server per repeat (not the CSV parsing nor building the ``PyEvent``s), and the same on an empty
stream, because ``get_output`` has a fixed polling delay of about 0.1 s that is not matching work.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv

from streams import Domain

RUNNER = Path(__file__).with_name("_core_runner.py")
PYCER = "pycer==0.1.6"
LABEL = "CORE (pycer 0.1.6)"


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


def run_core(py: str, cache: Path, domain: Domain, table: pa.Table, queries: list[tuple],
             repeat: int) -> dict[str, dict]:
    """``{name: {"count", "seconds", "cpu_seconds", "empty_seconds"}}`` of each (name, CORE text)
    over ``table``, or (name, CORE text, its own table)."""
    cols = ["type"] + [c for c, _ in domain.columns]
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        csv_path, spec_path = os.path.join(tmp, "stream.csv"), os.path.join(tmp, "spec.json")
        pacsv.write_csv(table.select(cols), csv_path)
        specs = []
        for i, (name, text, *own) in enumerate(queries):
            specs.append({"name": name, "text": text})
            if own:
                specs[-1]["csv"] = os.path.join(tmp, f"q{i}.csv")
                pacsv.write_csv(own[0].select(cols), specs[-1]["csv"])
        with open(spec_path, "w") as f:
            json.dump({"decl": domain.core_decl(), "columns": domain.columns, "repeat": repeat, "queries": specs}, f)
        # cwd: CORE writes logs/logfile.log into the working directory
        done = subprocess.run([py, str(RUNNER), csv_path, spec_path], capture_output=True, text=True, cwd=cache)
    out = runner_records(done.stdout)  # CORE also prints "Logging to file: ..." on stdout
    if done.returncode:
        raise RuntimeError(f"CORE runner failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return out
