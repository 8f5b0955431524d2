"""Keeping numba's on-disk cache of the kernel in step with its sources, and saying when it is built.

numba's cache (``cache=True``) checks only the source file of the function it compiled, not the
files of the functions that function calls and inlines. ``run_batch`` (stepping.py) calls into
every sibling module, so after an edit to, say, enumeration.py it would load its stale machine
code and run the old enumeration without a word. :func:`drop_stale` is called before any kernel
module is imported: when the kernel's sources differ from those the cache was built from, it
deletes the kernel's cache files so that everything compiles again.

Compiling the kernel takes 1-2 minutes on two cores (docs/benchmarks.md, "Cold start"), once
per install and after each change to its sources; every later process loads the machine code in
about a second. So that the first query of a fresh install does not sit silent for that long
(on Spark: a stage at 0 tasks done), :func:`watch` (started by :func:`drop_stale`) listens to
numba's compile events and, the first time a process compiles one of cerql's functions, logs
:data:`NOTICE` once, as a warning of the ``cerql`` logger: with no logging configured Python
prints it on stderr, in a notebook under the cell, in a Spark worker into the executor's log
(the console, in local mode); ``logging.getLogger("cerql").setLevel(logging.ERROR)`` silences it.
Loading from the cache fires no compile event, so a warm process says nothing.
``python -m cerql warmup`` (cerql/cli/warmup.py; ``make demo`` and ``make test`` run it)
compiles ahead, with its own progress line. :func:`compiled` tells cheaply whether that is
needed: the stamp below is current and numba's index of ``run_batch`` is there.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STAMP = "kernel-sources.sha1"  # beside numba's index (.nbi) and data (.nbc) files
ENTRY = "stepping.run_batch-*.nbi"  # numba's index of the kernel's entry point, once compiled

COMPILE_SECONDS = "1-2 minutes on 2 cores"  # docs/benchmarks.md, "Cold start"
NOTICE = (f"cerql: compiling the matching kernel (first run only, {COMPILE_SECONDS}; "
          "`python -m cerql warmup` does it ahead)")
log = logging.getLogger("cerql")


# Modules of the package that hold no numba function: editing them leaves the machine code valid.
NOT_COMPILED = frozenset({"cache.py"})


def sources_digest(folder: Path = HERE) -> str:
    """One digest of every module of the kernel that numba compiles (all but
    :data:`NOT_COMPILED`), names and contents."""
    digest = hashlib.sha1()
    for path in sorted(folder.glob("*.py")):
        if path.name in NOT_COMPILED:
            continue
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def drop_stale(folder: Path = HERE) -> bool:
    """Delete the kernel's cached machine code when its sources changed since it was built;
    True when it deleted. A read-only install (numba then caches elsewhere, and the sources do
    not change) is left alone. Also starts :func:`watch`, since this runs before any kernel
    function can compile."""
    watch()
    cache = folder / "__pycache__"
    stamp = cache / STAMP
    digest = sources_digest(folder)
    try:
        if stamp.read_text() == digest:
            return False
    except OSError:
        pass
    try:
        cache.mkdir(exist_ok=True)
        stale = list(cache.glob("*.nbi")) + list(cache.glob("*.nbc"))
        for path in stale:
            path.unlink(missing_ok=True)
        stamp.write_text(digest)
    except OSError:
        return False
    return bool(stale)


def compiled(folder: Path = HERE) -> bool:
    """Whether the kernel's machine code is in numba's cache beside its sources and current: the
    stamp :func:`drop_stale` writes matches the sources and ``run_batch`` has been compiled.
    Cheap (a digest of the kernel's sources and one directory listing); False for an install
    whose package folder is read-only, where numba caches elsewhere."""
    cache = folder / "__pycache__"
    try:
        if (cache / STAMP).read_text() != sources_digest(folder):
            return False
    except OSError:
        return False
    return any(cache.glob(ENTRY))


# ------------------------------------------------------------------- saying that it compiles
_lock = threading.Lock()
_watching = False
_state = {"announced": False, "depth": 0, "started": 0.0, "seconds": 0.0}


def _ours(event) -> bool:
    """Whether a numba compile event is for one of cerql's functions."""
    dispatcher = (event.data or {}).get("dispatcher")
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", None) or ""
    return module.startswith("cerql.")


def watch() -> None:
    """Log :data:`NOTICE` the first time this process compiles one of cerql's numba functions
    (module docstring); idempotent. Also keeps the time spent compiling cerql's functions in
    :func:`compile_seconds`, for the warm-up's report."""
    global _watching
    with _lock:
        if _watching:
            return
        _watching = True
    from numba.core import event

    class Announce(event.Listener):
        def on_start(self, ev):
            if not _ours(ev):
                return
            with _lock:
                _state["depth"] += 1
                if _state["depth"] == 1:
                    _state["started"] = time.perf_counter()
                first = not _state["announced"]
                _state["announced"] = True
            if first:
                log.warning(NOTICE)

        def on_end(self, ev):
            if not _ours(ev):
                return
            with _lock:
                _state["depth"] -= 1
                if _state["depth"] == 0:
                    _state["seconds"] += time.perf_counter() - _state["started"]

    event.register("numba:compile", Announce())


def quiet() -> None:
    """Do not log :data:`NOTICE` in this process (the warm-up prints its own line)."""
    with _lock:
        _state["announced"] = True


def compile_seconds() -> float:
    """Seconds this process has spent compiling cerql's numba functions (0 when all came from
    the cache)."""
    return _state["seconds"]
