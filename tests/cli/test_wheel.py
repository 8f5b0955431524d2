"""cerql built as a wheel holds its package data (the grammars and the demo queries), and
``cerql demo`` installed from it finds every demo query (cerql/cli/demo.py, ``sql_dir``).

The wheel is built by pip from a copy of the sources (so the checkout gets no ``build/``), with
the venv's setuptools when it is recent enough for pyproject.toml, else in pip's isolated build
environment, which fetches setuptools from the configured index; the test is skipped only when
that index has none. The wheel is installed with ``pip install --target`` into a folder put
first on ``PYTHONPATH``, so it wins over the editable install, and the demo runs on the reference
engine over a few rows (no numba compile, no Spark).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
QUERIES = sorted(p.name for p in (ROOT / "cerql" / "cli" / "queries").glob("*.sql"))


def _pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """cerql's wheel, built from a copy of pyproject.toml, README.md and cerql/."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "cerql", source / "cerql", ignore=shutil.ignore_patterns("__pycache__"))
    recent = int(metadata.version("setuptools").split(".")[0]) >= 77  # pyproject.toml's requires
    isolation = ["--no-build-isolation"] if recent else []
    done = _pip("wheel", "--no-deps", *isolation, "-q", "-w", str(tmp / "dist"), str(source))
    if done.returncode != 0 and "No matching distribution found for setuptools" in done.stdout + done.stderr:
        pytest.skip("no setuptools>=77 to build the wheel with (neither in the venv nor on the index)")
    assert done.returncode == 0, done.stdout + done.stderr
    [built] = (tmp / "dist").glob("cerql-*.whl")
    return built


def test_the_wheel_holds_the_grammars_and_every_demo_query(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"cerql/parser/ceql.lark", "cerql/parser/match_recognize.lark"} <= names
    assert QUERIES and {f"cerql/cli/queries/{q}" for q in QUERIES} <= names


def test_cerql_demo_from_the_installed_wheel_runs_every_demo_query(wheel, tmp_path):
    site = tmp_path / "site"
    done = _pip("install", "--no-deps", "--no-index", "-q", "--target", str(site), str(wheel))
    assert done.returncode == 0, done.stdout + done.stderr
    env = {**os.environ, "PYTHONPATH": str(site)}
    run = lambda *args: subprocess.run(  # noqa: E731
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)

    where = run("-c", "import cerql; print(cerql.__file__)")
    assert where.stdout.strip().startswith(str(site) + os.sep), where.stderr  # not the editable one
    assert run("-m", "cerql", "demo", "--help").returncode == 0

    demo = run("-m", "cerql", "demo", "--engine", "reference", "--rows", "40", "--show", "0")

    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert f"{len(QUERIES)} queries from site/cerql/cli/queries/" in demo.stdout
    ran = re.findall(r"^-- (\w+): 40 rows in", demo.stdout, re.M)
    assert sorted(f"{name}.sql" for name in ran) == QUERIES
