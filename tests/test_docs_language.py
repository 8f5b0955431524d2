"""The examples of docs/language.md run as written, and the docs link only inside the repository.

docs/language.md states every example as

    ```sql
    SELECT ... FROM s WHERE ...
    ```

    Input `s`:

    | type | ts |
    |------|----|
    | A    | 0  |

    Result:

    | match_start | match_end | a      |
    |-------------|-----------|--------|
    | 0           | 0         | {A, 0} |

or, for a query cerql refuses, a line ``Error: `ERROR_CLASS` ...`` instead of the result table.
An example is a ```sql block and what follows it up to the next ```sql block or heading.
Input tables persist through the page, in reading order: a later ``Input `s`:`` replaces `s`,
an example that gives none reads the last ones shown, and a CREATE TEMP VIEW adds its view.

Input cells are typed by column: whole numbers are BIGINT, other numbers DOUBLE, `true`/`false`
BOOLEAN, `YYYY-MM-DD HH:MM:SS[.ffffff]` TIMESTAMP, `YYYY-MM-DD` DATE, `NULL` is NULL, anything
else STRING. Result cells are printed as Spark's ``DataFrame.show`` prints them: a struct as
``{v1, v2}``, an array as ``[x, y]``, NULL as ``NULL``. The result table lists every output
column but ``match_id`` (a hash), in order, and its rows are compared as a multiset: without
LIMIT the row order is unspecified.

Each query runs on the local engine (``cerql.run``) and on the reference evaluator, the oracle;
both must give the rows stated (for ``SELECT ANY`` the reference may pick another match, so its
rows need only be results of ``SELECT ALL``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pytest

import cerql
from cerql.errors import CeqlError

ROOT = Path(__file__).resolve().parent.parent
LANGUAGE = ROOT / "docs" / "language.md"


# ---------------------------------------------------------------------------- the examples
@dataclass
class Example:
    line: int
    query: str
    heading: str
    inputs: dict[str, list[list[str]]] = field(default_factory=dict)
    header: list[str] | None = None
    rows: list[list[str]] | None = None
    error: str | None = None

    @property
    def id(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.heading.lower()).strip("-")
        return f"L{self.line}-{slug}"


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _table(lines: list[str], i: int) -> tuple[list[list[str]], int]:
    """The markdown table starting at lines[i]: header first, then the body rows."""
    rows = [_cells(lines[i])]
    if i + 1 >= len(lines) or not re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", lines[i + 1]):
        raise AssertionError(f"docs/language.md:{i + 1}: a table needs a |---| line under its header")
    i += 2
    while i < len(lines) and lines[i].lstrip().startswith("|"):
        rows.append(_cells(lines[i]))
        i += 1
    return rows, i


def parse_examples(text: str) -> list[Example]:
    lines = text.splitlines()
    examples: list[Example] = []
    current: Example | None = None
    heading, caption = "", None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading, current, caption = line.lstrip("#").strip(), None, None
        elif line.startswith("```"):
            lang, start, i = line[3:].strip(), i, i + 1
            body = []
            while not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if lang == "sql":
                current = Example(start + 1, "\n".join(body), heading)
                examples.append(current)
            caption = None
        elif m := re.match(r"Input `([^`]+)`:\s*$", line):
            caption = ("input", m.group(1))
        elif re.match(r"Result:\s*$", line):
            caption = ("result", None)
        elif m := re.match(r"Error: `([A-Z_]+)`", line):
            assert current is not None, f"docs/language.md:{i + 1}: Error line outside an example"
            current.error = m.group(1)
        elif line.lstrip().startswith("|") and caption is not None:
            rows, end = _table(lines, i)
            assert current is not None, f"docs/language.md:{i + 1}: table outside an example"
            if caption[0] == "input":
                current.inputs[caption[1]] = rows
            else:
                assert current.rows is None, f"docs/language.md:{i + 1}: two results for one example"
                current.header, current.rows = rows[0], rows[1:]
            caption, i = None, end
            continue
        elif line.strip():
            caption = None if not line.lstrip().startswith("|") else caption
        i += 1
    return examples


EXAMPLES = parse_examples(LANGUAGE.read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------- input tables
_INT = re.compile(r"-?\d+")
_FLOAT = re.compile(r"-?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?|-?inf|NaN")
_TS = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?")
_DATE = re.compile(r"\d{4}-\d\d-\d\d")


def _column(cells: list[str]) -> pa.Array:
    present = [c for c in cells if c != "NULL"]

    def typed(pattern, convert, arrow_type):
        if present and all(pattern.fullmatch(c) for c in present):
            return pa.array([None if c == "NULL" else convert(c) for c in cells], arrow_type)
        return None

    for pattern, convert, arrow_type in (
        (_INT, int, pa.int64()),
        (_FLOAT, float, pa.float64()),
        (re.compile("true|false"), lambda c: c == "true", pa.bool_()),
        (_TS, dt.datetime.fromisoformat, pa.timestamp("us")),
        (_DATE, dt.date.fromisoformat, pa.date32()),
    ):
        if (array := typed(pattern, convert, arrow_type)) is not None:
            return array
    return pa.array([None if c == "NULL" else c for c in cells], pa.string())


def input_table(rows: list[list[str]]) -> pa.Table:
    header, body = rows[0], rows[1:]
    assert all(len(r) == len(header) for r in body), f"ragged input table {header}"
    return pa.table({name: _column([r[k] for r in body]) for k, name in enumerate(header)})


# ---------------------------------------------------------------------------- result cells
def show(value) -> str:
    """A value as Spark's DataFrame.show prints it."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else repr(value)
    if isinstance(value, dt.datetime):  # Spark prints the fraction of a second without trailing zeros
        text = value.replace(tzinfo=None).isoformat(sep=" ")
        return text.rstrip("0") if "." in text else text
    if isinstance(value, (dt.date, int, str, decimal.Decimal)):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(show(v) for v in value.values()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(show(v) for v in value) + "]"
    raise TypeError(f"no rendering for {type(value).__name__}")


def shown(table: pa.Table) -> tuple[list[str], list[list[str]]]:
    names = [n for n in table.column_names if n != "match_id"]
    return names, [[show(row[n]) for n in names] for row in table.to_pylist()]


def _run(example: Example, tables: dict, engine: str) -> pa.Table:
    return cerql.run(example.query, tables, engine=engine, output="arrow")


# ---------------------------------------------------------------------------- the tests
def test_the_page_has_examples():
    assert len(EXAMPLES) >= 40
    for ex in EXAMPLES:
        assert (ex.rows is None) != (ex.error is None), (
            f"docs/language.md:{ex.line}: an example needs one 'Result:' table or one 'Error:' line")


def _tables_before(index: int) -> dict[str, pa.Table]:
    """The input tables in force at example ``index``: every ``Input`` shown up to it, and the
    views the CREATE TEMP VIEW examples before it made."""
    tables: dict[str, pa.Table] = {}
    for ex in EXAMPLES[: index + 1]:
        tables.update({name: input_table(rows) for name, rows in ex.inputs.items()})
        if ex is not EXAMPLES[index] and ex.error is None and re.match(r"\s*create\b", ex.query, re.I):
            _run(ex, tables, "local")
    return tables


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=[ex.id for ex in EXAMPLES])
def test_example(index):
    ex = EXAMPLES[index]
    tables = _tables_before(index)
    if ex.error is not None:
        for engine in ("local", "reference"):
            with pytest.raises(CeqlError) as info:
                _run(ex, dict(tables), engine)
            assert info.value.error_class == ex.error, f"docs/language.md:{ex.line}"
        return
    names, rows = shown(_run(ex, dict(tables), "local"))
    where = f"docs/language.md:{ex.line}"
    assert names == ex.header, f"{where}: columns (match_id left out)"
    assert sorted(rows) == sorted(ex.rows), f"{where}: rows of cerql.run"
    ref_names, ref_rows = shown(_run(ex, dict(tables), "reference"))
    assert ref_names == names
    if getattr(cerql.parse(ex.query), "strategy", None) == "ANY":  # one pick per end event, maybe another one
        every = Example(ex.line, re.sub(r"(?i)\bany\b", "ALL", ex.query, count=1), ex.heading)
        all_rows = shown(_run(every, dict(tables), "reference"))[1]
        assert len(ref_rows) == len(rows) and all(r in all_rows for r in ref_rows), f"{where}: reference"
        assert all(r in all_rows for r in rows), f"{where}: ANY gave a row that is no match"
    else:
        assert sorted(ref_rows) == sorted(ex.rows), f"{where}: rows of the reference evaluator"


# ---------------------------------------------------------------------------- links
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HTML_LINK = re.compile(r"""(?:href|src)\s*=\s*["']([^"']+)["']""")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"`|\*\*|__|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    anchors, seen, fenced = set(), {}, False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)):
            slug = _slug(m.group(1))
            anchors.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return anchors


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return _LINK.findall(text) + _HTML_LINK.findall(text)


def _repository_md_names() -> set[str]:
    names = set()
    for _, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
        names.update(f for f in files if f.endswith(".md"))
    return names


@pytest.mark.parametrize("doc", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_docs_mention_only_files_of_the_repository(doc):
    """The text, code included, names no file outside the tree: a relative path that climbs out of
    it, a markdown file the repository does not hold, an absolute path into someone's tree."""
    text, name = doc.read_text(encoding="utf-8"), doc.relative_to(ROOT)
    for path in re.findall(r"(?:\.\./)+[\w./-]*", text):
        resolved = (doc.parent / path.rstrip(".")).resolve()
        assert resolved.is_relative_to(ROOT) and resolved.exists(), f"{name} mentions {path}, not a file of the repository"
    known = _repository_md_names()
    for path in re.findall(r"[\w./-]*[\w-]+\.md\b", text):
        assert ((doc.parent / path).exists() or (ROOT / path).exists() or Path(path).name in known), (
            f"{name} mentions {path}, which the repository does not hold")
    home = re.search(r"(?<![\w.~-])/(?:work|home|root|Users|mnt)/[\w./-]*", text)
    assert home is None, f"{name} mentions {home and home.group(0)}, outside the repository"


@pytest.mark.parametrize("doc", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_docs_link_only_inside_the_repository(doc):
    for target in _links(doc):
        assert not re.match(r"[a-z][a-z0-9+.-]*:", target, re.I), (
            f"{doc.relative_to(ROOT)}: {target} leaves the repository; cite it by title")
        path, _, anchor = target.partition("#")
        resolved = (doc.parent / path).resolve() if path else doc
        assert resolved.is_relative_to(ROOT), f"{doc.relative_to(ROOT)}: {target} is outside the repository"
        assert resolved.exists(), f"{doc.relative_to(ROOT)}: {target} does not exist"
        if anchor and resolved.suffix == ".md":
            assert anchor in _anchors(resolved), f"{doc.relative_to(ROOT)}: no heading for #{anchor} in {path or doc.name}"


def test_language_reference_is_linked():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    semantics = (ROOT / "docs" / "semantics.md").read_text(encoding="utf-8")
    assert "(docs/language.md)" in readme
    first_paragraph = semantics.split("\n\n")[1]
    assert "(language.md)" in first_paragraph
