"""No import circles among cerql's modules, and each stage imports only the stages before it
(docs/architecture.md, "Rules of the house").

Every ``import`` and ``from ... import`` of every module under ``cerql/`` is read with the
``ast`` module, those at module level and those inside functions alike: an import moved into a
function to dodge a circle at import time still ties the two modules together, each needing
the other. Only imports under ``if TYPE_CHECKING:`` are left out, since they never run.
``from cerql.x import y`` depends on the module ``cerql.x.y`` when there is one, else on
``cerql.x``; a parent package run on the way to its submodule is not counted, as Python runs it
for every submodule alike.

``cerql/__init__.py`` loads the public API (``parse``, ``run``, ``cer_sql``, ...) on first use,
by name (``importlib.import_module`` of the modules its ``_LAZY`` table names), so that Spark's
Python workers, which import ``cerql.exec``, do not pay for the parser and the planner. Those
names count as its imports too: no module the API loads may ``import cerql`` back for its
public names (the command line and the warm-up do, and nothing they import loads them back).

A *stage* is a top-level module or package of ``cerql/`` (``parser``, ``planner``, ``exec``...;
``cerql`` is the package's own ``__init__.py``). :data:`MAY_IMPORT` says which stages each may
import: the order of docs/architecture.md, "The data path", as the code holds it. An import
against it is allowed only module by module, in :data:`EXCEPTIONS`, each with its reason; an
exception no longer used fails too, so the list cannot go stale. :data:`ONLY_UNDER` says where
the heavy third-party packages may be imported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "cerql"
LAZY_TABLE = "_LAZY"  # cerql/__init__.py: public name -> the module it is loaded from (module docstring)


# Stage -> the stages it may import (itself always). Earlier stages first; see the module docstring.
# mr_ast (the MATCH_RECOGNIZE tree) sits beside ast: whatever may read one tree may read the other;
# mr_functions (how its row pattern functions look in sqlglot trees) right after it.
MAY_IMPORT: dict[str, frozenset[str]] = {
    "errors": frozenset(),
    "ast": frozenset({"errors"}),
    "mr_ast": frozenset({"errors", "ast"}),
    "mr_functions": frozenset({"errors", "ast", "mr_ast"}),
    "parser": frozenset({"errors", "ast", "mr_ast"}),
    "expr": frozenset({"errors"}),
    "automaton": frozenset({"errors"}),
    "mr_plan": frozenset({"errors", "mr_ast"}),
    "plan": frozenset({"errors", "ast", "mr_ast", "automaton"}),
    "planner": frozenset({"errors", "ast", "mr_ast", "mr_functions", "parser", "expr", "automaton", "mr_plan", "plan"}),
    "exec": frozenset({"errors", "ast", "mr_ast", "mr_functions", "expr", "automaton", "mr_plan", "plan"}),
    "row_pattern": frozenset({"errors", "ast", "mr_ast", "mr_functions", "parser", "expr", "automaton", "mr_plan", "plan", "planner", "exec"}),
    "api": frozenset({"errors", "ast", "mr_ast", "mr_functions", "parser", "expr", "automaton", "mr_plan", "plan", "planner", "exec", "row_pattern"}),
    "spark": frozenset({"errors", "ast", "mr_ast", "mr_functions", "parser", "expr", "automaton", "mr_plan", "plan", "planner", "exec", "api", "row_pattern"}),
    "cerql": frozenset({"errors", "api", "spark"}),
    "cli": frozenset({"errors", "ast", "mr_ast", "mr_functions", "parser", "expr", "automaton", "mr_plan", "plan", "planner", "exec", "api", "row_pattern",
                      "spark", "cerql"}),
    "__main__": frozenset({"cli"}),
}

# (importing module, imported module) -> why this one import goes against MAY_IMPORT.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("cerql.ast", "cerql.parser.printer"):
        "str(node) is the canonical CEQL printer; imported inside __str__, and the printer knows "
        "the node classes by name only, so neither needs the other to load",
    ("cerql.exec.stream", "cerql.parser.units"):
        "the one table of time units (a leaf module importing nothing of cerql): the local engine "
        "measures DATE ordering values in days of it, as the parser reads WITHIN in it",
    ("cerql.planner.aggregates", "cerql.exec.aggregate"):
        "a real inversion: the decimal result types of sum and avg (decimal_sum_type, "
        "decimal_avg_type) live beside the engines' aggregates that compute them; they belong "
        "below both (cerql/expr/kinds.py would do)",
    ("cerql.api", "cerql.spark.session"):
        "cerql.explain given a Spark session prints the plan cer_sql runs; imported only then, "
        "inside explain",
}

# Third-party package -> the stages (or packages of one) that alone may import it.
ONLY_UNDER: dict[str, tuple[str, ...]] = {
    "numba": ("cerql.exec.kernel",),
    "pyspark": ("cerql.spark", "cerql.cli"),
}


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted name -> file of every module and package under ``cerql/``."""
    found = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every import statement of ``tree``, at any depth, except under ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            yield from (i for n in node.orelse for i in _imports_of(n))
            continue
        yield from _imports_of(node)


def _imports_of(node: ast.AST):
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    else:
        yield from _imports(node)


def _lazy_modules(tree: ast.Module) -> list[tuple[str, int]]:
    """The modules a package loads by name: the values of its module-level ``_LAZY`` dict."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == LAZY_TABLE for t in node.targets) \
                and isinstance(node.value, ast.Dict):
            found += [(v.value, v.lineno) for v in node.value.values
                      if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    return found


def _owner(name: str, known: dict[str, Path]) -> str | None:
    """The cerql module ``name`` is, or lies in (an attribute's module)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """Module -> {module it imports: line of the first such import}, among cerql's modules."""
    known = modules(root)
    graph: dict[str, dict[str, int]] = {name: {} for name in known}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        for target, line in _lazy_modules(tree):
            owner = _owner(target, known)
            if owner is not None and owner != name:
                graph[name].setdefault(owner, line)
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[:len(parts) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            for target in targets:
                if target.split(".")[0] != PACKAGE:
                    continue
                owner = _owner(target, known)
                if owner is not None and owner != name:
                    graph[name].setdefault(owner, node.lineno)
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, without
    recursion), each sorted; a module importing itself is not counted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph[nxt])))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def describe(graph: dict[str, dict[str, int]], component: list[str]) -> str:
    """The imports inside one circle, as ``a:line -> b``."""
    return "\n".join(f"  {a}:{line} -> {b}" for a in component for b, line in graph[a].items() if b in component)


def test_no_import_circle_among_cerql_modules():
    graph = import_graph()
    assert {"cerql.api", "cerql.spark.session"} <= set(graph[PACKAGE])  # the API loaded by name counts
    found = cycles(graph)
    assert not found, "import circles among cerql's modules:\n" + "\n".join(describe(graph, c) for c in found)


def test_the_check_finds_a_circle_through_a_function_level_import(tmp_path):
    """The checker itself: an import inside a function closes a circle, one under
    ``if TYPE_CHECKING:`` does not."""
    package = tmp_path / PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cerql.b import f\n")
    (package / "b.py").write_text("def f():\n    from cerql import a\n    return a\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cerql import a\n")
    (package / "d.py").write_text("from .c import x\nimport cerql\n")
    (package / "e.py").write_text("")
    (package / "__init__.py").write_text('_LAZY = {"run": "cerql.e"}\n')
    graph = import_graph(tmp_path)
    assert cycles(graph) == [["cerql.a", "cerql.b"]]
    assert graph["cerql.c"] == {} and graph["cerql.d"] == {"cerql.c": 1, "cerql": 2}
    assert graph["cerql"] == {"cerql.e": 1}


def stage(module: str) -> str:
    """The stage a module belongs to: its top-level name under ``cerql``, or ``cerql`` itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def stage_violations(graph: dict[str, dict[str, int]],
                     exceptions: dict[tuple[str, str], str] = EXCEPTIONS) -> tuple[list[str], list[tuple[str, str]]]:
    """The imports against :data:`MAY_IMPORT` not in ``exceptions`` (as ``a:line -> b``), and the
    exceptions no import uses any more."""
    found, used = [], set()
    for a, targets in graph.items():
        for b, line in targets.items():
            if stage(a) == stage(b) or stage(b) in MAY_IMPORT.get(stage(a), ()):
                continue
            if (a, b) in exceptions:
                used.add((a, b))
            else:
                found.append(f"  {a}:{line} -> {b}  ({stage(a)} may not import {stage(b)})")
    return found, sorted(set(exceptions) - used)


def third_party_imports(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """Module -> {top-level third-party package: line of the first import}, for the packages of
    :data:`ONLY_UNDER`, counting imports inside functions (not under ``if TYPE_CHECKING:``)."""
    found: dict[str, dict[str, int]] = {}
    for name, path in modules(root).items():
        for node in _imports(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if not node.level else []
            for target in names:
                top = target.split(".")[0]
                if top in ONLY_UNDER:
                    found.setdefault(name, {}).setdefault(top, node.lineno)
    return found


def test_every_stage_has_its_place_in_the_order():
    """A new top-level module or package of cerql/ must be given its row of MAY_IMPORT."""
    assert {stage(m) for m in modules()} == set(MAY_IMPORT)


def test_the_stage_order_has_no_circle():
    """MAY_IMPORT is an order: no two stages may import each other, directly or not."""
    order = {s: set(allowed) for s, allowed in MAY_IMPORT.items()}
    assert not cycles({s: dict.fromkeys(allowed, 0) for s, allowed in order.items()})
    assert all(s not in allowed for s, allowed in order.items())


def test_each_stage_imports_only_the_stages_before_it():
    found, stale = stage_violations(import_graph())
    assert not found, "imports against MAY_IMPORT (docs/architecture.md, \"Rules of the house\"):\n" + "\n".join(found)
    assert not stale, f"EXCEPTIONS no import uses any more (remove them): {stale}"


def test_numba_and_pyspark_are_imported_only_where_they_belong():
    wrong = [f"  {m}:{line} imports {package}" for m, packages in third_party_imports().items()
             for package, line in packages.items()
             if not any(m == home or m.startswith(home + ".") for home in ONLY_UNDER[package])]
    assert not wrong, "third-party imports out of place:\n" + "\n".join(wrong)


def test_the_stage_check_finds_an_engine_importing_the_planner(tmp_path):
    """The checker itself: an import of the planner by the engines (in a function too) is found,
    a listed exception is not, and an exception nothing uses is reported."""
    package = tmp_path / PACKAGE
    for folder in ("exec", "planner"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "plan.py").write_text("")
    (package / "exec" / "driver.py").write_text(
        "from cerql import plan\ndef f():\n    from cerql.planner import rules\n")
    (package / "exec" / "stream.py").write_text("from cerql.planner.rules import x\nimport numba\n")
    (package / "planner" / "rules.py").write_text("from cerql import plan\nx = 1\n")
    (package / "cli.py").write_text("import numba\n")
    graph = import_graph(tmp_path)
    found, stale = stage_violations(graph)
    assert found == ["  cerql.exec.driver:3 -> cerql.planner.rules  (exec may not import planner)",
                     "  cerql.exec.stream:1 -> cerql.planner.rules  (exec may not import planner)"]
    found, stale = stage_violations(graph, {("cerql.exec.stream", "cerql.planner.rules"): "why",
                                            ("cerql.exec.driver", "cerql.planner"): "stale"})
    assert found == ["  cerql.exec.driver:3 -> cerql.planner.rules  (exec may not import planner)"]
    assert stale == [("cerql.exec.driver", "cerql.planner")]
    assert third_party_imports(tmp_path) == {"cerql.exec.stream": {"numba": 2}, "cerql.cli": {"numba": 1}}


def documented_order(text: str) -> dict[str, frozenset[str]]:
    """The stage table of docs/architecture.md, "Rules of the house": rows ``| `stage` | `a`, `b` |``."""
    rules = text.split("## Rules of the house", 1)[1].split("\n## ", 1)[0]
    table = {}
    for line in rules.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`"):
            table[re.findall(r"`([^`]+)`", cells[0])[0]] = frozenset(re.findall(r"`([^`]+)`", cells[1]))
    return table


def test_the_architecture_page_states_the_stage_order_the_test_holds():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert documented_order(text) == MAY_IMPORT
    for importer, imported in EXCEPTIONS:  # each exception is named there too, by its files
        assert all(_doc_path(m) in text for m in (importer, imported)), (importer, imported)


def _doc_path(module: str) -> str:
    """How docs/architecture.md names a module: ``cerql/ast.py``, or from cerql/: ``exec/stream.py``;
    ``cerql.api`` by its function ``cerql.api.explain``."""
    if module == "cerql.api":
        return "cerql.api"
    parts = module.split(".")[1:]
    return f"cerql/{parts[0]}.py" if len(parts) == 1 else "/".join(parts) + ".py"
