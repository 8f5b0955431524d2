"""The front door (cerql/planner/front.py): the chain parse -> derive -> analyze -> resolve is
written once, every surface without Spark plans through it, and a dialect is an entry of
``DIALECTS`` (docs/architecture.md, "The data path"). The Spark surfaces are checked in
tests/spark/test_front_door.py."""

from __future__ import annotations

import ast as pyast
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

import cerql
from cerql import api
from cerql.errors import UnsupportedError
from cerql.parser import parse
from cerql.parser.match_recognize import parse_match_recognize
from cerql.planner import front
from tests.support import FRONT_DOOR_QUERIES, FRONT_DOOR_STREAM, explained_body, spy

PACKAGE = Path(cerql.__file__).parent
FRONT = "cerql/planner/front.py"

# The chain's stages: (module that defines it, function). ``cerql.parser`` re-exports parse.
STAGES = {
    "parse": {("cerql.parser.to_ast", "parse"), ("cerql.parser", "parse")},
    "derive_columns": {("cerql.planner.derived", "derive_columns")},
    "analyze": {("cerql.planner.analyze", "analyze")},
    "resolve": {("cerql.planner.resolve", "resolve")},
}
# The rules run inside resolve, and without schemas (names as written) from the front door.
RULES = {"start", "optimize"}

QUERIES, STREAM = FRONT_DOOR_QUERIES, FRONT_DOOR_STREAM


def _uses(path: Path) -> dict[str, int]:
    """How often the module at ``path`` names each stage function (and the rules' start and
    optimize), by what its imports bind: ``from cerql.planner.resolve import resolve as r``
    then ``r``, or ``from cerql.planner import rules`` then ``rules.optimize``. A package
    re-exporting a name (cerql/parser/__init__.py) does not name it."""
    tree = pyast.parse(path.read_text(encoding="utf-8"))
    bound: dict[str, str] = {}    # local name -> stage
    modules: dict[str, str] = {}  # local name -> dotted module
    for node in pyast.walk(tree):
        if isinstance(node, pyast.ImportFrom) and node.module:
            for alias in node.names:
                local = alias.asname or alias.name
                for stage, places in STAGES.items():
                    if (node.module, alias.name) in places:
                        bound[local] = stage
                modules[local] = f"{node.module}.{alias.name}"
        elif isinstance(node, pyast.Import):
            for alias in node.names:  # import a.b binds a; import a.b as c binds c to a.b
                if alias.asname:
                    modules[alias.asname] = alias.name
                else:
                    modules[alias.name.split(".")[0]] = alias.name.split(".")[0]
    uses: dict[str, int] = {}

    def dotted(node) -> str | None:
        if isinstance(node, pyast.Name):
            return modules.get(node.id)
        if isinstance(node, pyast.Attribute):
            base = dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    for node in pyast.walk(tree):
        if isinstance(node, pyast.Name) and isinstance(node.ctx, pyast.Load) and node.id in bound:
            uses[bound[node.id]] = uses.get(bound[node.id], 0) + 1
        elif isinstance(node, pyast.Attribute):
            base = dotted(node.value)
            for stage, places in STAGES.items():
                if (base, node.attr) in places:
                    uses[stage] = uses.get(stage, 0) + 1
            if base == "cerql.planner.rules" and node.attr in RULES:
                uses[node.attr] = uses.get(node.attr, 0) + 1
    return uses


def test_the_chain_is_written_in_the_front_door_alone():
    """Each stage function is named by exactly one module of cerql/, the front door (the rules'
    start and optimize also by resolve, where they run)."""
    where: dict[str, set[str]] = {name: set() for name in [*STAGES, *RULES]}
    for path in sorted(PACKAGE.rglob("*.py")):
        for stage in _uses(path):
            where[stage].add(path.relative_to(PACKAGE.parent).as_posix())
    for stage in STAGES:
        assert where[stage] == {FRONT}, stage
    for name in RULES:
        assert where[name] == {FRONT, "cerql/planner/resolve.py"}, name


def test_the_check_sees_a_stage_named_through_a_module(tmp_path):
    """The check above finds uses however they are imported, so its passing means something."""
    module = tmp_path / "m.py"
    module.write_text("from cerql.planner import resolve as r, rules\nfrom cerql.parser import parse as p\n"
                      "def f(a, s):\n    p('x')\n    rules.optimize(rules.start(a), None)\n"
                      "    return r.resolve(a, s)\n")
    assert _uses(module) == {"parse": 1, "resolve": 1, "start": 1, "optimize": 1}


MR_QUERY = ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY row MEASURES FIRST(value) AS first_value, "
            "count(B.*) AS nb PATTERN (A B+) "
            "DEFINE B AS B.value < PREV(B.value))")


def test_a_dialect_is_a_parser_registered_in_the_front_door():
    assert front.DIALECTS == {"ceql": parse, "match_recognize": parse_match_recognize}
    text = QUERIES[1]
    assert front.parse(text) == front.parse(text, "ceql") == parse(text) == cerql.parse(text)
    assert front.parse(MR_QUERY, "match_recognize") == parse_match_recognize(MR_QUERY)
    with pytest.raises(UnsupportedError) as err:
        front.parse(text, dialect="sql2099")
    assert err.value.error_class == "UNKNOWN_DIALECT" and "ceql" in err.value.hint and "match_recognize" in err.value.hint


def test_the_front_door_tells_the_dialects_apart_by_the_text():
    assert front.dialect_of(MR_QUERY) == "match_recognize"
    assert front.dialect_of(MR_QUERY.lower()) == "match_recognize"
    assert front.dialect_of(QUERIES[0]) == "ceql"
    # the word inside a string or a comment is not the clause
    assert front.dialect_of("SELECT * FROM s WHERE A[name = 'MATCH_RECOGNIZE'] ORDER BY ts") == "ceql"
    assert front.dialect_of("-- MATCH_RECOGNIZE\nSELECT * FROM s WHERE A ORDER BY ts") == "ceql"


def test_a_row_pattern_query_plans_through_the_front_door(monkeypatch):
    """cerql.run and cerql.explain of a MATCH_RECOGNIZE query plan through
    ``front.plan_row_pattern``, once each."""
    seen = spy(monkeypatch, front, "plan_row_pattern")
    t = pd.DataFrame({"row": range(4), "value": [3, 2, 1, 4]})
    out = cerql.run(MR_QUERY, {"t": t})
    assert out.to_dict("records") == [{"first_value": 3, "nb": 2}]  # rows 0 (A), 1 and 2 (B+); row 3 has no B
    assert len(seen) == 1 and seen[0].analysis.variables == ("A", "B")
    assert seen[0].nfa.describe() in cerql.explain(MR_QUERY) and len(seen) == 2


@pytest.mark.parametrize("text", QUERIES)
def test_every_surface_without_spark_plans_through_the_front_door(text, seen):
    """cerql.run, cerql.analyze and cerql.explain each plan once through ``front.plan``, and the
    plan ``run`` runs is the one the front door gives for the tables' schemas and the one
    ``explain`` prints (whose rules, without schemas, take names as written)."""
    direct = front.plan(text, {"s": pa.Table.from_pandas(STREAM, preserve_index=False).schema})
    seen.clear()  # the spy saw that call too
    for engine in api.ENGINES:
        cerql.run(text, {"s": STREAM}, engine=engine)
    assert len(seen) == 2
    for planned in seen:
        assert planned.plan is not None and explained_body(planned.plan) == explained_body(direct.plan)
        assert planned.analysis == direct.analysis and planned.query == direct.query
    seen.clear()
    assert cerql.analyze(text) == direct.analysis and len(seen) == 1
    seen.clear()
    explained = cerql.explain(text)
    assert len(seen) == 1 and seen[0].plan is None
    assert explained.endswith("\n" + explained_body(direct.plan))
    assert explained.startswith(f"query: {direct.query}\n")


# MATCH_RECOGNIZE queries whose engines rewrite their expression trees: DEFINEs with PREV/NEXT
# (exec/mr_define.py) and with FIRST/LAST and aggregates (exec/mr_history.py), MEASURES with
# navigation, aggregates and CLASSIFIER (exec/mr_measures.py), an outer GROUP BY over the result.
KEPT_PLAN_QUERIES = [
    MR_QUERY,
    "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY row MEASURES LAST(B.value, 1) AS before_last, "
    "PREV(LAST(B.value), 1) AS prev_last, avg(B.value) AS mean, FIRST(A.value) - LAST(B.value) + count(B.*) AS fall, "
    "CLASSIFIER() AS cls ALL ROWS PER MATCH "
    "AFTER MATCH SKIP TO NEXT ROW PATTERN (A B+ C?) "
    "DEFINE B AS B.value < FIRST(A.value) AND sum(B.value) < 100, C AS NEXT(value) IS NULL OR value > PREV(value, 2))",
    "SELECT count(*) AS matches, max(nb) AS most FROM t MATCH_RECOGNIZE (ORDER BY row "
    "MEASURES count(B.*) AS nb PATTERN (A B+) DEFINE B AS B.value < PREV(B.value)) GROUP BY nb > 1",
]


def _trees(value, found: list) -> list:
    """Every sqlglot tree reachable from ``value`` (dataclasses, tuples, dicts), as each node's
    structure and meta (SqlExpr equality compares its text alone)."""
    import dataclasses

    from cerql.ast import SqlExpr

    if isinstance(value, SqlExpr):
        found.append((value.text, repr(value.tree), [dict(n.meta) for n in value.tree.walk()]))
    elif dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            _trees(getattr(value, f.name), found)
    elif isinstance(value, (tuple, list, frozenset)):
        for item in value:
            _trees(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _trees(item, found)
    return found


def test_a_row_pattern_plan_is_kept_per_text_and_left_as_parsed():
    """``plan_row_pattern`` gives the same plan for the same text (its schema aside), and the
    engines that ran it, twice, left every part of it as a fresh parse has it."""
    t = pd.DataFrame({"row": range(8), "value": [3, 2, 1, 4, 6, 5, 2, 7]})
    schema = pa.Table.from_pandas(t, preserve_index=False).schema
    for text in KEPT_PLAN_QUERIES:
        planned = front.plan_row_pattern(text)
        assert front.plan_row_pattern(text) is planned
        with_schema = front.plan_row_pattern(text, schema)
        assert with_schema.source_schema is schema and with_schema.query is planned.query
        first = cerql.run(text, {"t": t})
        cerql.explain(text)
        pd.testing.assert_frame_equal(cerql.run(text, {"t": t}), first)
        fresh = front._row_pattern.__wrapped__(text)
        assert fresh is not planned and fresh == planned
        assert _trees(planned, []) == _trees(fresh, []) != []
