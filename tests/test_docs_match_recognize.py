"""The examples of docs/match_recognize.md run as written.

The page states its examples as docs/language.md does (tests/test_docs_language.py reads both
the same way): a ```sql block, then its ``Input `t`:`` tables, then a ``Result:`` table or an
``Error: `ERROR_CLASS` `` line. Input tables persist through the page in reading order.

An example whose SQL around the MATCH_RECOGNIZE item only Spark evaluates carries a line
``Spark only (`cerql.run`: `ERROR_CLASS`).``: ``cerql.run`` must refuse it with that class (so
the mark stays true), and its ``Result:`` is checked on Spark (``spark.cer_sql`` over the same
tables). Every other example runs on the local engine and on the reference evaluator, which
must both give the rows shown (but the few whose expressions the reference does not evaluate,
``BEYOND_THE_REFERENCE``: the local engine alone).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import cerql
from cerql.errors import CeqlError
from tests.test_docs_language import input_table, parse_examples, shown

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "match_recognize.md"
TEXT = PAGE.read_text(encoding="utf-8")
EXAMPLES = parse_examples(TEXT)
_SPARK_ONLY = re.compile(r"Spark only \(`cerql\.run`: `([A-Z_]+)`\)")


def _spark_only() -> dict[int, str]:
    """Example index -> the error class cerql.run gives it, for the examples marked Spark only:
    the mark stands between the example's ```sql block and the next example or heading."""
    lines = TEXT.splitlines()
    out = {}
    for k, ex in enumerate(EXAMPLES):
        end = EXAMPLES[k + 1].line - 1 if k + 1 < len(EXAMPLES) else len(lines)
        for line in lines[ex.line:end]:
            if line.startswith("#"):
                break
            if m := _SPARK_ONLY.match(line):
                out[k] = m.group(1)
    return out


SPARK_ONLY = _spark_only()
# What the reference evaluator (a small exact subset of Spark SQL) does not evaluate: the examples
# holding it are checked on the local engine alone (their rows were worked out by hand).
BEYOND_THE_REFERENCE = ("S.ts - FIRST(F.ts)",)  # timestamp arithmetic in DEFINE
LOCAL = [k for k in range(len(EXAMPLES)) if k not in SPARK_ONLY]


def _tables_before(index: int) -> dict:
    tables = {}
    for ex in EXAMPLES[: index + 1]:
        tables.update({name: input_table(rows) for name, rows in ex.inputs.items()})
    return tables


def _where(ex) -> str:
    return f"docs/match_recognize.md:{ex.line}"


def test_the_page_has_examples():
    assert len(EXAMPLES) >= 15 and SPARK_ONLY
    for ex in EXAMPLES:
        assert (ex.rows is None) != (ex.error is None), (
            f"{_where(ex)}: an example needs one 'Result:' table or one 'Error:' line")


@pytest.mark.parametrize("index", LOCAL, ids=[EXAMPLES[k].id for k in LOCAL])
def test_example(index):
    ex, tables = EXAMPLES[index], _tables_before(index)
    if ex.error is not None:
        for engine in ("local", "reference"):
            with pytest.raises(CeqlError) as info:
                cerql.run(ex.query, dict(tables), engine=engine, output="arrow")
            assert info.value.error_class == ex.error, _where(ex)
        return
    for engine in ("local", "reference"):
        if engine == "reference" and any(part in ex.query for part in BEYOND_THE_REFERENCE):
            with pytest.raises(CeqlError, match="REFERENCE_UNSUPPORTED"):  # still beyond it: else check it here
                cerql.run(ex.query, dict(tables), engine=engine, output="arrow")
            continue
        names, rows = shown(cerql.run(ex.query, dict(tables), engine=engine, output="arrow"))
        assert names == ex.header, f"{_where(ex)}: columns of the {engine} engine"
        assert sorted(rows) == sorted(ex.rows), f"{_where(ex)}: rows of the {engine} engine"


@pytest.mark.parametrize("index", sorted(SPARK_ONLY), ids=[EXAMPLES[k].id for k in sorted(SPARK_ONLY)])
def test_spark_only_example_is_refused_locally(index):
    ex = EXAMPLES[index]
    with pytest.raises(CeqlError) as info:
        cerql.run(ex.query, _tables_before(index))
    assert info.value.error_class == SPARK_ONLY[index], f"{_where(ex)}: not Spark only any more? show its result"


@pytest.mark.spark
@pytest.mark.parametrize("index", sorted(SPARK_ONLY), ids=[EXAMPLES[k].id for k in sorted(SPARK_ONLY)])
def test_spark_only_example_on_spark(spark, index):
    ex = EXAMPLES[index]
    assert ex.rows is not None, f"{_where(ex)}: a Spark-only example shows its Result"
    frames = {name: spark.createDataFrame(table) for name, table in _tables_before(index).items()}
    result = cerql.cer_sql(spark, ex.query, **frames).toArrow()
    names, rows = shown(result)
    assert names == ex.header, f"{_where(ex)}: columns on Spark"
    assert sorted(rows) == sorted(ex.rows), f"{_where(ex)}: rows on Spark"


def test_the_page_is_linked_from_the_readme_and_the_ceql_reference():
    assert "(docs/match_recognize.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(match_recognize.md)" in (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
