"""The examples of docs/match_recognize.md and docs/ceql_or_match_recognize.md run as written.

Each page states its examples as docs/language.md does (tests/test_docs_language.py reads them
all the same way): a ```sql block, then its ``Input `t`:`` tables, then a ``Result:`` table or
an ``Error: `ERROR_CLASS` `` line. Input tables persist through a page in reading order (each
page starts with none). A page's examples may be in either dialect: the front door reads both.

An example whose SQL around the MATCH_RECOGNIZE item only Spark evaluates carries a line
``Spark only (`cerql.run`: `ERROR_CLASS`).``: ``cerql.run`` must refuse it with that class (so
the mark stays true), and its ``Result:`` is checked on Spark (``spark.cer_sql`` over the same
tables). Every other example runs on the local engine and on the reference evaluator, which
must both give the rows shown (but the few whose expressions the reference does not evaluate,
``BEYOND_THE_REFERENCE``: the local engine alone).

docs/ceql_or_match_recognize.md asks each question of a ``### `` section in both dialects: each
such section must hold a CEQL example and a MATCH_RECOGNIZE one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import cerql
from cerql.errors import CeqlError
from cerql.parser.match_recognize import is_match_recognize
from tests.test_docs_language import Example, input_table, parse_examples, shown

ROOT = Path(__file__).resolve().parent.parent
_SPARK_ONLY = re.compile(r"Spark only \(`cerql\.run`: `([A-Z_]+)`\)")
# What the reference evaluator (a small exact subset of Spark SQL) does not evaluate: the examples
# holding it are checked on the local engine alone (their rows were worked out by hand).
BEYOND_THE_REFERENCE = ("S.ts - FIRST(F.ts)", "S2.ts - S1.ts")  # timestamp arithmetic in DEFINE


@dataclass(frozen=True)
class Page:
    """One docs page of examples: its text, its examples, and which of them are Spark only."""

    name: str  # under docs/
    text: str
    examples: list[Example]
    spark_only: dict[int, str]  # example index -> the error class cerql.run gives it

    @classmethod
    def read(cls, name: str) -> Page:
        text = (ROOT / "docs" / name).read_text(encoding="utf-8")
        examples = parse_examples(text)
        return cls(name, text, examples, _spark_only(text, examples))

    def where(self, ex: Example) -> str:
        return f"docs/{self.name}:{ex.line}"

    def tables_before(self, index: int) -> dict:
        tables = {}
        for ex in self.examples[: index + 1]:
            tables.update({name: input_table(rows) for name, rows in ex.inputs.items()})
        return tables


def _spark_only(text: str, examples: list[Example]) -> dict[int, str]:
    """The examples marked Spark only: the mark stands between the example's ```sql block and
    the next example or heading."""
    lines = text.splitlines()
    out = {}
    for k, ex in enumerate(examples):
        end = examples[k + 1].line - 1 if k + 1 < len(examples) else len(lines)
        for line in lines[ex.line:end]:
            if line.startswith("#"):
                break
            if m := _SPARK_ONLY.match(line):
                out[k] = m.group(1)
    return out


REFERENCE = Page.read("match_recognize.md")
SIDE_BY_SIDE = Page.read("ceql_or_match_recognize.md")
PAGES = (REFERENCE, SIDE_BY_SIDE)
LOCAL = [(page, k) for page in PAGES for k in range(len(page.examples)) if k not in page.spark_only]
SPARK = [(page, k) for page in PAGES for k in sorted(page.spark_only)]


def _ids(cases) -> list[str]:
    return [f"{page.name.removesuffix('.md')}-{page.examples[k].id}" for page, k in cases]


def test_the_pages_have_examples():
    assert len(REFERENCE.examples) >= 15 and REFERENCE.spark_only
    assert len(SIDE_BY_SIDE.examples) >= 10
    for page in PAGES:
        for ex in page.examples:
            assert (ex.rows is None) != (ex.error is None), (
                f"{page.where(ex)}: an example needs one 'Result:' table or one 'Error:' line")


def test_every_question_is_asked_in_both_dialects():
    questions: dict[str, set[str]] = {}
    for section in re.split(r"(?m)^(?=### )", SIDE_BY_SIDE.text)[1:]:
        questions[section.splitlines()[0]] = set()
    for ex in SIDE_BY_SIDE.examples:
        if ex.error is None:
            dialect = "MATCH_RECOGNIZE" if is_match_recognize(ex.query) else "CEQL"
            questions.setdefault(f"### {ex.heading}", set()).add(dialect)
    assert len(questions) >= 5, "docs/ceql_or_match_recognize.md: five questions, each a ### section"
    for heading, dialects in questions.items():
        assert dialects == {"CEQL", "MATCH_RECOGNIZE"}, f"{heading!r} is asked in {sorted(dialects)} only"


@pytest.mark.parametrize(("page", "index"), LOCAL, ids=_ids(LOCAL))
def test_example(page, index):
    ex, tables = page.examples[index], page.tables_before(index)
    if ex.error is not None:
        for engine in ("local", "reference"):
            with pytest.raises(CeqlError) as info:
                cerql.run(ex.query, dict(tables), engine=engine, output="arrow")
            assert info.value.error_class == ex.error, page.where(ex)
        return
    for engine in ("local", "reference"):
        if engine == "reference" and any(part in ex.query for part in BEYOND_THE_REFERENCE):
            with pytest.raises(CeqlError, match="REFERENCE_UNSUPPORTED"):  # still beyond it: else check it here
                cerql.run(ex.query, dict(tables), engine=engine, output="arrow")
            continue
        names, rows = shown(cerql.run(ex.query, dict(tables), engine=engine, output="arrow"))
        assert names == ex.header, f"{page.where(ex)}: columns of the {engine} engine"
        assert sorted(rows) == sorted(ex.rows), f"{page.where(ex)}: rows of the {engine} engine"


@pytest.mark.parametrize(("page", "index"), SPARK, ids=_ids(SPARK))
def test_spark_only_example_is_refused_locally(page, index):
    ex = page.examples[index]
    with pytest.raises(CeqlError) as info:
        cerql.run(ex.query, page.tables_before(index))
    assert info.value.error_class == page.spark_only[index], f"{page.where(ex)}: not Spark only any more? show its result"


@pytest.mark.spark
@pytest.mark.parametrize(("page", "index"), SPARK, ids=_ids(SPARK))
def test_spark_only_example_on_spark(spark, page, index):
    ex = page.examples[index]
    assert ex.rows is not None, f"{page.where(ex)}: a Spark-only example shows its Result"
    frames = {name: spark.createDataFrame(table) for name, table in page.tables_before(index).items()}
    result = cerql.cer_sql(spark, ex.query, **frames).toArrow()
    names, rows = shown(result)
    assert names == ex.header, f"{page.where(ex)}: columns on Spark"
    assert sorted(rows) == sorted(ex.rows), f"{page.where(ex)}: rows on Spark"


def test_the_pages_are_linked_from_the_readme_and_the_ceql_reference():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    language = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    assert "(docs/match_recognize.md)" in readme and "(docs/ceql_or_match_recognize.md)" in readme
    assert "(match_recognize.md)" in language and "(ceql_or_match_recognize.md)" in language
    assert "(ceql_or_match_recognize.md)" in REFERENCE.text
