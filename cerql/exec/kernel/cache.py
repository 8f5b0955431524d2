"""Keeping numba's on-disk cache of the kernel in step with its sources.

numba's cache (``cache=True``) checks only the source file of the function it compiled, not the
files of the functions that function calls and inlines. ``run_batch`` (stepping.py) calls into
every sibling module, so after an edit to, say, enumeration.py it would load its stale machine
code and run the old enumeration without a word. :func:`drop_stale` is called before any kernel
module is imported: when the kernel's sources differ from those the cache was built from, it
deletes the kernel's cache files so that everything compiles again.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
STAMP = "kernel-sources.sha1"  # beside numba's index (.nbi) and data (.nbc) files


def sources_digest(folder: Path = HERE) -> str:
    """One digest of every module of the kernel, names and contents."""
    digest = hashlib.sha1()
    for path in sorted(folder.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def drop_stale(folder: Path = HERE) -> bool:
    """Delete the kernel's cached machine code when its sources changed since it was built;
    True when it deleted. A read-only install (numba then caches elsewhere, and the sources do
    not change) is left alone."""
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
