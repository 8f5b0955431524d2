"""The kernel's cold start says what it does (cerql/exec/kernel/cache.py, cerql/cli/warmup.py): compiling
one of cerql's numba functions logs one notice per process, loading from the cache says
nothing, ``cerql warmup`` compiles ahead with its own progress line and is a no-op when the
cache is current, and ``make demo``/``make test`` run it before their first query."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cerql.cli import warmup
from cerql.cli.commands import main
from cerql.exec.kernel import cache

ROOT = Path(__file__).resolve().parents[2]

# In a fresh interpreter: import the kernel (which starts the watch), then compile two of
# "cerql's" functions and one of someone else's, without numba's cache.
PROBE = """
import numba
import cerql.exec.kernel
from cerql.exec.kernel import cache

def double(x):
    return 2 * x

def triple(x):
    return 3 * x

def other(x):
    return x + 1

for fn, module in ((other, "someone_else"), (double, "cerql.probe"), (triple, "cerql.probe")):
    fn.__module__ = module
    assert numba.njit(fn)(2) > 0
print("compiling seconds", cache.compile_seconds())
"""


def test_compiling_cerqls_functions_logs_one_notice_per_process():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("compiling the matching kernel (first run only") == 1, done.stderr
    assert cache.NOTICE in done.stderr  # printed as is: Python's last-resort handler, no logging set up
    seconds = float(done.stdout.split("compiling seconds")[1])
    assert seconds > 0  # the time of the two cerql functions is kept for the warm-up's report


def test_a_function_of_another_package_says_nothing():
    probe = PROBE.replace('(double, "cerql.probe"), (triple, "cerql.probe")', "")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "compiling the matching kernel" not in done.stderr


def test_compiled_is_true_only_for_a_current_cache_holding_the_entry_point(tmp_path):
    folder = tmp_path / "kernel"
    shutil.copytree(cache.HERE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    assert not cache.compiled(folder)  # nothing cached
    cache.drop_stale(folder)
    assert not cache.compiled(folder)  # stamped, but run_batch was never compiled
    (folder / "__pycache__" / "stepping.run_batch-1.py311.nbi").write_bytes(b"x")
    assert cache.compiled(folder)
    (folder / "arena.py").write_text((folder / "arena.py").read_text() + "\n# edited\n")
    assert not cache.compiled(folder)  # the sources changed: it compiles again


def test_warmup_skips_a_current_cache_and_otherwise_says_it_compiles_first(monkeypatch):
    lines = []
    monkeypatch.setattr(cache, "compiled", lambda: True)
    monkeypatch.setattr(warmup, "run_queries", lambda: pytest.fail("the cache is current"))
    assert warmup.warm_up(lines.append) == 0.0
    assert lines == ["cerql: the matching kernel is compiled already (numba's cache is current)"]

    lines.clear()
    monkeypatch.setattr(cache, "compiled", lambda: False)
    monkeypatch.setattr(warmup, "run_queries", lambda: lines.append("(queries)") or 7)
    warmup.warm_up(lines.append)
    assert lines[0].startswith("cerql: compiling the matching kernel (first run only, ")
    assert lines[1] == "(queries)"
    assert re.fullmatch(r"cerql: kernel compiled in \d+ s \(7 warm-up queries; \d+ s of it compiling\)", lines[2])


def test_every_warmup_query_runs():
    """A warm-up query this version refuses would leave its part of the kernel uncompiled."""
    import cerql

    tables = {"s": warmup.stream(60)}
    for text in (*warmup.QUERIES, warmup.LONG_QUERY):
        cerql.run(text, tables)


def test_the_warmup_command(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(warmup, "warm_up", lambda out, force: calls.append(force) or out("warmed") or 0.0)
    assert main(["warmup", "--force"]) == 0
    assert calls == [True] and capsys.readouterr().out == "warmed\n"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_demo_and_make_test_compile_ahead_and_say_so():
    for target, command in (("demo", "-m cerql demo"), ("test", "-m pytest -q")):
        plan = subprocess.run(["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True,
                              timeout=60).stdout
        assert "-m cerql warmup" in plan, plan
        assert plan.index("-m cerql warmup") < plan.index(command)
        assert re.search(r"echo .*installing cerql into \.venv.* \(about \d+ min", plan), plan


def test_editing_the_modules_numba_does_not_compile_keeps_the_cache(tmp_path):
    folder = tmp_path / "kernel"
    shutil.copytree(cache.HERE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    before = cache.sources_digest(folder)
    for name in cache.NOT_COMPILED:
        (folder / name).write_text((folder / name).read_text() + "\n# edited\n")
    assert cache.sources_digest(folder) == before
