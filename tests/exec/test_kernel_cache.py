"""The kernel's numba cache is dropped when any kernel module changes (cerql/exec/kernel/cache.py):
numba itself checks only the file of the compiled function, not the files it inlines."""

from __future__ import annotations

import shutil

from cerql.exec.kernel import cache


def test_a_change_to_any_kernel_module_drops_the_cached_code(tmp_path):
    folder = tmp_path / "kernel"
    shutil.copytree(cache.HERE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    machine_code = folder / "__pycache__" / "stepping.run_batch-1.py311.1.nbc"
    index = folder / "__pycache__" / "stepping.run_batch-1.py311.nbi"

    assert not cache.drop_stale(folder)  # no cache yet: only the stamp is written
    machine_code.write_bytes(b"x")
    index.write_bytes(b"x")
    assert not cache.drop_stale(folder)  # same sources: the cache stays
    assert machine_code.exists() and index.exists()

    enumeration = folder / "enumeration.py"
    enumeration.write_text(enumeration.read_text() + "\n# edited\n")
    assert cache.drop_stale(folder)  # a sibling of stepping.py changed: its cache goes
    assert not machine_code.exists() and not index.exists()
    assert not cache.drop_stale(folder)  # and the new sources are stamped


def test_the_digest_covers_every_module_by_name_and_content(tmp_path):
    folder = tmp_path / "kernel"
    shutil.copytree(cache.HERE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    before = cache.sources_digest(folder)
    (folder / "arena.py").rename(folder / "arena2.py")
    assert cache.sources_digest(folder) != before
