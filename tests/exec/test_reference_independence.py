"""The reference evaluator and the engines share no code beyond their inputs and outputs.

The differential tests (test_engine_vs_reference.py, tests/differential.py) compare the engines
with the oracle (cerql/exec/reference.py); a function both called would be compared with itself.
So, read from the source with ``ast`` (nothing is imported):

- the reference imports from cerql only the AST, the plan and the automaton it holds, the
  Stream every engine reads (its type alone), the Spark-SQL expression evaluator, the errors,
  and from exec/results.py the Result values every engine gives and the
  TOO_MANY_MATCHES_PER_EVENT error;
- no production module imports the reference, except cerql/api.py, where ``engine="reference"``
  of ``cerql.run`` selects it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import cerql

PACKAGE = Path(cerql.__file__).parent
REFERENCE = "cerql.exec.reference"

# module -> the names the reference may import from it (None: any)
ALLOWED_IN_REFERENCE = {
    "cerql": {"ast"},
    "cerql.ast": None,
    "cerql.errors": None,
    "cerql.plan": None,
    "cerql.automaton": None,
    "cerql.exec": {"aggregate"},  # the aggregates' values, as `from cerql.exec import x`
    "cerql.exec.aggregate": None,
    "cerql.exec.results": {"Result", "too_many_matches"},
    "cerql.exec.stream": {"Stream"},
}
# the expression evaluator's own package
ALLOWED_PREFIXES = ("cerql.expr",)
# production modules that may import the reference: where the user selects it as the engine
ENGINE_SWITCH = {"cerql.api"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[str, str | None]]:
    """(module, name) for every import in the file, a plain ``import m`` as (m, None);
    relative imports resolved against the file's package."""
    package = module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else module_name(path)
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            out += [(base, alias.name) for alias in node.names]
    return out


def names_reference(module: str, name: str | None) -> bool:
    return module == REFERENCE or module.startswith(REFERENCE + ".") or (module == "cerql.exec" and name == "reference")


def test_the_reference_imports_no_engine_module():
    path = PACKAGE / "exec" / "reference.py"
    wrong = []
    for module, name in imports(path):
        if module != "cerql" and not module.startswith("cerql."):
            continue  # the standard library, numpy, pyarrow
        if module.startswith(ALLOWED_PREFIXES):
            continue
        allowed = ALLOWED_IN_REFERENCE.get(module, set())
        if allowed is not None and name not in allowed:
            wrong.append(f"{module}.{name}" if name else module)
    assert not wrong, f"cerql/exec/reference.py imports engine code: {wrong}"


def test_no_production_module_imports_the_reference():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        if module == REFERENCE or module in ENGINE_SWITCH:
            continue
        if any(names_reference(m, n) for m, n in imports(path)):
            wrong.append(module)
    assert not wrong, f"production modules import the reference evaluator: {wrong}"


def test_the_engine_switch_is_where_the_reference_is_imported():
    # the allowance above is not stale: cerql.run's engine="reference" is what imports it
    api = PACKAGE / "api.py"
    assert any(names_reference(m, n) for m, n in imports(api))
    assert 'engine == "reference"' in api.read_text()
