"""Packing the current virtualenv for Spark executors: ``cerql pack [-o env.tar.gz]``.

Input: the virtualenv this interpreter runs in, and the cerql it imports. Output: a .tar.gz of
that environment that Spark unpacks on every executor (``spark.archives=env.tar.gz#environment``,
executors on ``./environment/bin/python``), and the settings to use it, printed. See
docs/cluster.md, "A packed environment".

What it holds, and why:

- the virtualenv as venv-pack packs it (the optional extra ``cerql[pack]``): every installed
  distribution, scripts' shebangs made relative, ``bin/python`` still a link to the base
  interpreter (so the nodes need that Python at the same path, or ``--python-prefix``);
- a real copy of the cerql this process imports, in ``site-packages/cerql``, in place of what
  the virtualenv has: an editable install is only a hook pointing at a checkout that executors
  do not have (venv-pack 0.2 does not see today's editable hooks, so it would pack the hook);
- numba's cache of the matching kernel, warmed first (cerql/cli/warmup.py), so that an
  executor's first query loads machine code instead of compiling it for a minute or two
  (docs/benchmarks.md, "Cold start"). It lives in the kernel's ``__pycache__``, which Spark
  unpacks writable in the executor's folder; numba (0.68) keys it by each source file's contents
  and cerql's stamp by their digest (cerql/exec/kernel/cache.py), not by their path, so it holds
  wherever the archive is unpacked. ``--no-warm-cache`` leaves it out (to measure the difference);
- not pyspark's jars (460 MB): executors run on their worker's own Spark, never the archive's
  JVM side (``--with-spark-jars`` keeps them, for a packed env that starts Spark itself).
"""

from __future__ import annotations

import os
import sys
import sysconfig
import time
from pathlib import Path
from typing import Callable

from cerql.cli.tables_io import CliError
from cerql.exec.kernel import cache

DEFAULT_OUTPUT = "cerql-env.tar.gz"
NUMBA_CACHE = ("*.nbi", "*.nbc")  # numba's index and machine-code files
INSTALL_PACK = "venv-pack is not installed: pip install 'cerql[pack]' (or pip install venv-pack)"


def venv_prefix() -> Path:
    """The virtualenv this interpreter runs in; a CliError outside one (venv-pack packs only
    virtualenvs: a system Python's site-packages would take the whole distribution along)."""
    if sys.prefix == sys.base_prefix:
        raise CliError(f"{sys.executable} does not run in a virtualenv: create one "
                       "(python -m venv), pip install cerql into it, and run cerql pack from it")
    return Path(sys.prefix)


def site_packages() -> str:
    """This virtualenv's site-packages, relative to its prefix (lib/pythonX.Y/site-packages)."""
    return Path(os.path.relpath(sysconfig.get_paths()["purelib"], sys.prefix)).as_posix()


def cerql_folder() -> Path:
    """The folder of the cerql this process imports: what was warmed and what gets packed."""
    import cerql

    folder = Path(cerql.__file__).resolve().parent
    if not folder.is_dir():
        raise CliError(f"cerql is imported from {folder}, not a folder: run cerql pack from a "
                       "virtualenv where cerql is installed (pip install cerql)")
    return folder


def package_files(folder: Path, target: str, warm_cache: bool) -> list[tuple[str, str]]:
    """Every file of the package folder as (source, target in the archive), numba's cache files
    left out unless ``warm_cache``; the kernel cache's stamp goes along either way (it only
    names the sources the cache was built from)."""
    files = []
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        for name in sorted(names):
            path = Path(root) / name
            if not warm_cache and path.parent.name == "__pycache__" and any(path.match(p) for p in NUMBA_CACHE):
                continue
            files.append((str(path), f"{target}/{path.relative_to(folder).as_posix()}"))
    return files


def load_env(prefix: Path, with_spark_jars: bool):
    """venv-pack's view of the virtualenv, without its cerql (files or editable hook) and, unless
    asked, without pyspark's jars."""
    try:
        import venv_pack
    except ImportError:
        raise CliError(INSTALL_PACK) from None
    try:
        env = venv_pack.Env(prefix=str(prefix))
    except venv_pack.VenvPackException as err:
        raise CliError(f"venv-pack cannot pack {prefix}: {err}") from None
    site = site_packages()
    for pattern in (f"{site}/cerql/*", f"{site}/__editable__*cerql*", f"{site}/cerql-*.dist-info/direct_url.json"):
        env = env.exclude(pattern)
    if not with_spark_jars:
        env = env.exclude(f"{site}/pyspark/jars/*")
    return env


def pack(output: Path, warm_cache: bool = True, with_spark_jars: bool = False, python_prefix: str | None = None,
         force: bool = False, out: Callable[[str], object] = print) -> dict:
    """Warm the kernel (unless told not to), pack the virtualenv with this cerql into ``output``;
    what was packed, as a dict (for the settings printed and for the tests)."""
    prefix = venv_prefix()
    folder = cerql_folder()
    if output.exists() and not force:
        raise CliError(f"{output} exists: give another -o, or --force to replace it")
    if warm_cache:
        from cerql.cli.warmup import warm_up

        warm_up(out)
        kernel = Path(cache.__file__).resolve().parent
        if not cache.compiled(kernel):
            raise CliError(f"the kernel's cache is not in {kernel}/__pycache__ (a read-only install?): "
                           "pack from a virtualenv you can write to")
    env = load_env(prefix, with_spark_jars)
    import venv_pack

    ours = package_files(folder, f"{site_packages()}/cerql", warm_cache)
    env.files.extend(venv_pack.File(source, target) for source, target in ours)
    started = time.perf_counter()
    out(f"cerql: packing {prefix} ({len(env.files)} files, cerql from {folder}) into {output} ...")
    env.pack(output=str(output), python_prefix=python_prefix, force=force)
    return {"output": output, "files": len(env.files), "seconds": time.perf_counter() - started,
            "bytes": output.stat().st_size, "kernel_cache": sum(1 for _, t in ours if t.endswith(".nbc")),
            "base_python": python_prefix or os.path.realpath(sys.executable)}


def settings(archive: str, driver_venv: str = sys.prefix) -> str:
    """How to run with the archive (docs/cluster.md, "A packed environment"). Executors start the
    driver's ``PYSPARK_PYTHON``, relative to their folder, where Spark unpacked the archive; the
    driver runs a SQL cell's analyze step with that same relative path from its own folder, so
    that folder needs an ``environment`` of its own: a link to the driver's virtualenv."""
    return "\n".join([
        "run with it (the driver reads PYSPARK_PYTHON from its environment; executors start it",
        "in their folder, where Spark unpacks the archive as ./environment):",
        "  export PYSPARK_PYTHON=./environment/bin/python",
        f"  spark-submit --archives {archive}#environment \\",
        "    --conf spark.pyspark.python=./environment/bin/python app.py",
        f'  or SparkSession.builder.config("spark.archives", "{archive}#environment")',
        "for SQL cells (the driver runs their analyze step with ./environment/bin/python too),",
        "in the driver's working folder:",
        f"  ln -s {driver_venv} environment",
    ])


def describe(packed: dict) -> str:
    """One line on what :func:`pack` wrote."""
    cache_note = (f"{packed['kernel_cache']} kernel cache files" if packed["kernel_cache"]
                  else "no kernel cache (executors compile on their first query)")
    return (f"cerql: wrote {packed['output']} ({packed['bytes'] / 1e6:.0f} MB, {packed['files']} files, "
            f"{cache_note}) in {packed['seconds']:.0f} s; its bin/python links to "
            f"{packed['base_python']}, which every node needs at that path")
