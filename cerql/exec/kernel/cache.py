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

A cerql imported from a zip (shipped to Spark executors as one) has no folder to cache in. numba
0.68 then caches in the user's cache directory, and crashes on the first compile when that is not
writable (an executor's account often has no writable home); a numba without a locator for zips
refuses ``cache=True`` at import. :func:`drop_stale` therefore registers :class:`ZippedKernelLocator`, which
caches the zipped kernel in the first writable of ``NUMBA_CACHE_DIR``, numba's user cache
directory and the temp directory, in a folder named after the digest of the kernel's sources
rather than the zip's path, so that a cache built once serves every application shipping the same
sources, wherever its zip is unpacked.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import tempfile
import threading
import time
from importlib import resources
from pathlib import Path

from numba.core.caching import _CacheLocator  # numba's base of cache locators (ZippedKernelLocator)

HERE = Path(__file__).resolve().parent
STAMP = "kernel-sources.sha1"  # beside numba's index (.nbi) and data (.nbc) files
ENTRY = "stepping.run_batch-*.nbi"  # numba's index of the kernel's entry point, once compiled

COMPILE_SECONDS = "1-2 minutes on 2 cores"  # docs/benchmarks.md, "Cold start"
NOTICE = (f"cerql: compiling the matching kernel (first run only, {COMPILE_SECONDS}; "
          "`python -m cerql warmup` does it ahead)")
log = logging.getLogger("cerql")


# Modules of the package that hold no numba function: editing them leaves the machine code valid.
NOT_COMPILED = frozenset({"cache.py"})


def sources_digest(folder=HERE) -> str:
    """One digest of every module of the kernel that numba compiles (all but
    :data:`NOT_COMPILED`), names and contents. ``folder`` is a path or an
    ``importlib.resources`` traversable (the kernel inside a zip)."""
    digest = hashlib.sha1()
    for path in sorted(folder.iterdir(), key=lambda p: p.name):
        if not path.name.endswith(".py") or path.name in NOT_COMPILED:
            continue
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def drop_stale(folder: Path = HERE) -> bool:
    """Delete the kernel's cached machine code when its sources changed since it was built;
    True when it deleted. A read-only install (numba then caches elsewhere, and the sources do
    not change) is left alone. Also starts :func:`watch`, since this runs before any kernel
    function can compile."""
    watch()
    if not folder.is_dir():  # imported from a zip: numba caches elsewhere (module docstring)
        ZippedKernelLocator.register()
        return False
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


# ----------------------------------------------------------------- caching a zipped kernel
def _writable(path: Path) -> bool:
    """Whether ``path`` exists or can be made, and a file can be written in it (numba's own test)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


def zipped_cache_dir(digest: str) -> Path | None:
    """Where a zipped kernel with these sources is cached: under the first writable of
    ``NUMBA_CACHE_DIR``, numba's user cache directory and the temp directory (None when none is)."""
    from numba.core import config
    from numba.misc.appdirs import AppDirs

    roots = [config.CACHE_DIR, AppDirs(appname="numba", appauthor=False).user_cache_dir,
             os.path.join(tempfile.gettempdir(), f"numba-cache-{getattr(os, 'getuid', str)()}")]
    for root in filter(None, roots):
        path = Path(root) / f"cerql-kernel-{digest[:16]}"
        if _writable(path):
            return path
    return None


@functools.cache
def _zipped_target() -> tuple[str, Path | None]:
    """The digest of the zipped kernel's sources and its cache folder, found once per process."""
    digest = sources_digest(resources.files(__package__))
    return digest, zipped_cache_dir(digest)


class ZippedKernelLocator(_CacheLocator):
    """numba's cache locator for cerql's kernel imported from a zip (module docstring). It claims
    only functions whose source file is in this package's folder, and stamps the cache with the
    digest of the kernel's sources, which change only with cerql."""

    def __init__(self, py_func, path: Path, digest: str):
        self._lineno = py_func.__code__.co_firstlineno
        self._path = path
        self._digest = digest

    def get_cache_path(self) -> str:
        return str(self._path)

    def get_source_stamp(self) -> str:
        return self._digest

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        if Path(py_file).resolve().parent != HERE:
            return None
        digest, path = _zipped_target()
        return None if path is None else cls(py_func, path, digest)

    @classmethod
    def register(cls) -> None:
        """Put this locator first in numba's list (idempotent)."""
        from numba.core import caching

        impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # the older name
        if cls not in impl._locator_classes:
            impl._locator_classes.insert(0, cls)


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
