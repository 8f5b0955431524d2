"""docs/architecture.md names the modules the tree has, and only those.

The page's section "Every module" holds one fenced block that lists every module under
``cerql/`` by folder, one folder a line (a line that starts with a space continues the folder
above)::

    cerql/parser/            __init__ depth printer sqlexpr ...

That block must equal the tree: each ``.py`` file as its name without ``.py``, no more, no less.
Every path the page names must exist as well: ``cerql/...``, ``tests/...``, ``docs/...``,
``benchmarks/...`` and ``sql/...`` from the repository's root, and a ``.py`` or ``.lark`` path
under one of cerql's folders (``exec/driver.py``, ``spark/streaming/state.py``) from ``cerql/``;
and every dotted name ``cerql.x.y`` must be a module, or a name a module defines at its top level
(``cerql.plan.QueryPlan``; the package's lazily loaded names, ``cerql.run``). Spark confs
(``cerql.maxMatchesPerEvent``: a camelCase last part) are not modules and are left out. Its
links are checked by tests/test_docs_language.py.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
PACKAGE = "cerql"
LISTING = "## Every module"
FROM_ROOT = ("cerql", "tests", "docs", "benchmarks", "sql")
LAZY_TABLE = "_LAZY"  # cerql/__init__.py: public name -> the module it is loaded from

ROOT_PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./-]*[\w/])" % "|".join(FROM_ROOT))
PACKAGE_PATH = re.compile(r"(?<![\w./-])((?:[a-z_]+/)+[a-z_]+\.(?:py|lark))\b")
DOTTED = re.compile(r"(?<![\w./-])cerql(?:\.\w+)+")
CONF = re.compile(r"\.[a-z]+[A-Z]\w*$")


def tree(root: Path = ROOT) -> dict[str, set[str]]:
    """Folder under ``cerql/`` (``cerql/exec/kernel/``) -> the names of its ``.py`` modules."""
    found: dict[str, set[str]] = {}
    for path in (root / PACKAGE).rglob("*.py"):
        folder = path.parent.relative_to(root).as_posix() + "/"
        found.setdefault(folder, set()).add(path.stem)
    return found


def listing(text: str) -> dict[str, set[str]]:
    """The module listing of the doc's "Every module" section, as :func:`tree` gives the tree."""
    section = text.split(LISTING, 1)[1]
    block = section.split("```", 2)[1]
    found: dict[str, set[str]] = {}
    folder = None
    for line in block.splitlines()[1:]:  # the first line is the fence's info string
        if not line.strip():
            continue
        words = line.split()
        if not line[0].isspace():
            folder, words = words[0], words[1:]
            assert folder not in found, f"{folder} is listed twice"
        assert folder is not None, f"a continuation line before any folder: {line!r}"
        found.setdefault(folder, set()).update(words)
    return found


def missing_paths(text: str, root: Path = ROOT) -> list[str]:
    """The paths the page names that do not exist."""
    missing = [p for p in ROOT_PATH.findall(text) if not (root / p).exists()]
    for path in PACKAGE_PATH.findall(text):
        if path.split("/")[0] in FROM_ROOT:
            continue  # from the root: checked above
        if not (root / PACKAGE / path).exists():
            missing.append(path)
    return sorted(set(missing))


def _top_level_names(path: Path) -> set[str]:
    """The names a module defines at its top level (functions, classes, assignments, imports),
    and for a package with a ``_LAZY`` table the names it loads on first use."""
    tree_ = ast.parse(path.read_text(), str(path))
    names = set()
    for node in tree_.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
            lazy = any(isinstance(t, ast.Name) and t.id == LAZY_TABLE for t in targets)
            if lazy and isinstance(node.value, ast.Dict):
                names.update(k.value for k in node.value.keys if isinstance(k, ast.Constant))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def unknown_dotted(text: str, root: Path = ROOT) -> list[str]:
    """The dotted ``cerql.…`` names of the page that are neither a module nor a name one defines."""
    modules = {}
    for path in (root / PACKAGE).rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    unknown = []
    for name in set(DOTTED.findall(text)):
        if CONF.search(name):
            continue
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            if module in modules:
                break
        rest = parts[cut:]
        if rest and rest[0] not in _top_level_names(modules[module]):
            unknown.append(name)
    return sorted(unknown)


def test_the_listing_names_every_module_and_no_other():
    listed, found = listing(DOC.read_text(encoding="utf-8")), tree()
    absent = {f"{folder}{m}" for folder, names in listed.items() for m in names - found.get(folder, set())}
    unlisted = {f"{folder}{m}" for folder, names in found.items() for m in names - listed.get(folder, set())}
    assert not absent, f"docs/architecture.md, \"Every module\", names modules the tree lacks: {sorted(absent)}"
    assert not unlisted, f"modules docs/architecture.md, \"Every module\", does not list: {sorted(unlisted)}"


def test_every_path_the_page_names_exists():
    missing = missing_paths(DOC.read_text(encoding="utf-8"))
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_dotted_name_the_page_names_exists():
    unknown = unknown_dotted(DOC.read_text(encoding="utf-8"))
    assert not unknown, f"docs/architecture.md names cerql.… that are no module or module-level name: {unknown}"


def test_the_diagram_shows_every_package():
    """The data path's diagram shows each package: ``cerql/parser``, and a subpackage as its
    name and a slash (``kernel/``, ``streaming/``)."""
    diagram = DOC.read_text(encoding="utf-8").split("## The data path", 1)[1].split("```", 2)[1]
    packages = [folder.rstrip("/") for folder in tree() if folder != f"{PACKAGE}/"]
    absent = [p for p in packages if (p if p.count("/") == 1 else p.rsplit("/", 1)[1] + "/") not in diagram]
    assert not absent, f"packages the diagram of docs/architecture.md does not show: {absent}"


def test_the_checks_find_what_is_wrong(tmp_path):
    """The checker itself, on a small tree: a module missing from the listing, one listed that
    is not there, a path and a dotted name that do not exist."""
    (tmp_path / PACKAGE / "exec").mkdir(parents=True)
    for name in ("__init__.py", "api.py", "exec/__init__.py", "exec/driver.py", "exec/new.py"):
        (tmp_path / PACKAGE / name).write_text("def run():\n    pass\n")
    doc = ("# A\n\n## Every module\n\n```text\ncerql/        __init__ api\n"
           "cerql/exec/   __init__ driver\n              gone\n```\n\n"
           "`exec/driver.py`, `exec/values.py`, `cerql/exec/driver.py`, `cerql/exec/old.py`, `tests/x`;\n"
           "`cerql.api.run`, `cerql.api.walk`, `cerql.exec.driver`, `cerql.maxMatchesPerEvent`.\n")
    listed, found = listing(doc), tree(tmp_path)
    assert listed == {"cerql/": {"__init__", "api"}, "cerql/exec/": {"__init__", "driver", "gone"}}
    assert found == {"cerql/": {"__init__", "api"}, "cerql/exec/": {"__init__", "driver", "new"}}
    assert missing_paths(doc, tmp_path) == ["cerql/exec/old.py", "exec/values.py", "tests/x"]
    assert unknown_dotted(doc, tmp_path) == ["cerql.api.walk"]
