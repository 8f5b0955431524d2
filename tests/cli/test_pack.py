"""``cerql pack`` (cerql/cli/pack.py) over a small virtualenv made here: the archive holds a real
copy of the cerql this process imports (its grammars and demo queries too), numba's kernel cache
only when asked, and never an editable hook, the dist's direct_url.json or pyspark's jars; unpacked
at another path, the kernel cache's stamp still matches the sources beside it."""

from __future__ import annotations

import tarfile
import venv
from pathlib import Path

import pytest

import cerql
from cerql.cli import pack
from cerql.cli.commands import main
from cerql.cli.tables_io import CliError
from cerql.exec.kernel import cache

pytest.importorskip("venv_pack")

CERQL = Path(cerql.__file__).resolve().parent


@pytest.fixture(scope="module")
def fake_venv(tmp_path_factory) -> Path:
    """A bare virtualenv (no pip) with what a developer's holds around cerql: an editable hook,
    cerql's dist-info with its direct_url.json, and a pyspark with a jar."""
    prefix = tmp_path_factory.mktemp("venv") / "env"
    venv.create(prefix, with_pip=False, symlinks=True)
    site = prefix / pack.site_packages()
    (site / "__editable__.cerql-0.1.0.pth").write_text("import __editable___cerql_0_1_0_finder\n")
    (site / "__editable___cerql_0_1_0_finder.py").write_text("MAPPING = {'cerql': '/a/checkout/cerql'}\n")
    (site / "cerql-0.1.0.dist-info").mkdir()
    (site / "cerql-0.1.0.dist-info" / "METADATA").write_text("Name: cerql\nVersion: 0.1.0\n")
    (site / "cerql-0.1.0.dist-info" / "direct_url.json").write_text('{"dir_info": {"editable": true}}')
    (site / "pyspark" / "jars").mkdir(parents=True)
    (site / "pyspark" / "__init__.py").write_text("")
    (site / "pyspark" / "jars" / "spark-core.jar").write_bytes(b"jar")
    return prefix


def packed(tmp_path: Path, fake_venv: Path, monkeypatch, **options) -> tuple[dict, dict[str, tarfile.TarInfo], Path]:
    monkeypatch.setattr(pack, "venv_prefix", lambda: fake_venv)
    archive = tmp_path / "env.tar.gz"
    info = pack.pack(archive, out=lambda line: None, **options)
    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
    return info, members, archive


def test_the_archive_holds_a_real_cerql_with_its_package_data_and_kernel_cache(tmp_path, fake_venv, monkeypatch):
    info, members, archive = packed(tmp_path, fake_venv, monkeypatch)  # warms first: quick when current
    site = pack.site_packages()
    for relative in ("__init__.py", "parser/ceql.lark", "parser/match_recognize.lark",
                     "cli/queries/stock_v_shape_match_recognize.sql", "exec/kernel/stepping.py",
                     f"exec/kernel/__pycache__/{cache.STAMP}"):
        assert f"{site}/cerql/{relative}" in members, relative
    nbc = [n for n in members if n.startswith(f"{site}/cerql/exec/kernel/__pycache__/") and n.endswith(".nbc")]
    assert any("stepping.run_batch-" in n for n in members), "numba's index of the kernel's entry point"
    assert len(nbc) == info["kernel_cache"] > 0
    with tarfile.open(archive) as tar:  # the copy is the files themselves, not a link to them
        init = tar.extractfile(f"{site}/cerql/__init__.py").read()
    assert init == (CERQL / "__init__.py").read_bytes()
    assert "bin/python" in members and f"{site}/cerql-0.1.0.dist-info/METADATA" in members


def test_editable_hooks_and_sparks_jars_stay_out(tmp_path, fake_venv, monkeypatch):
    _, members, _ = packed(tmp_path, fake_venv, monkeypatch, warm_cache=False)
    names = "\n".join(members)
    assert "__editable__" not in names and "direct_url.json" not in names
    assert "pyspark/jars" not in names and f"{pack.site_packages()}/pyspark/__init__.py" in members


def test_no_warm_cache_leaves_out_numbas_files(tmp_path, fake_venv, monkeypatch):
    info, members, _ = packed(tmp_path, fake_venv, monkeypatch, warm_cache=False)
    assert info["kernel_cache"] == 0
    assert not [n for n in members if n.endswith((".nbi", ".nbc"))]
    assert f"{pack.site_packages()}/cerql/exec/kernel/stepping.py" in members


def test_unpacked_elsewhere_the_kernel_cache_is_current(tmp_path, fake_venv, monkeypatch):
    _, _, archive = packed(tmp_path, fake_venv, monkeypatch)
    where = tmp_path / "x" / "environment"
    where.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(where, filter="tar")
    kernel = where / pack.site_packages() / "cerql" / "exec" / "kernel"
    assert cache.compiled(kernel)  # the stamp matches the unpacked sources; run_batch's index is there


def test_the_command_prints_the_settings_and_refuses_to_replace(tmp_path, fake_venv, monkeypatch, capsys):
    monkeypatch.setattr(pack, "venv_prefix", lambda: fake_venv)
    archive = tmp_path / "env.tar.gz"
    assert main(["pack", "-o", str(archive), "--no-warm-cache"]) == 0
    out = capsys.readouterr().out
    assert f"--archives {archive}#environment" in out
    assert "PYSPARK_PYTHON=./environment/bin/python" in out and "ln -s" in out
    assert main(["pack", "-o", str(archive), "--no-warm-cache"]) == 1
    assert "exists" in capsys.readouterr().err


def test_outside_a_virtualenv_it_says_so(monkeypatch):
    import sys

    monkeypatch.setattr(sys, "base_prefix", sys.prefix)
    with pytest.raises(CliError, match="does not run in a virtualenv"):
        pack.venv_prefix()
