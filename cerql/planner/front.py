"""The front door: query text to the plan, the one place the chain parse -> derive -> analyze ->
resolve is written (docs/architecture.md, "The data path").

Input: query text and the schemas of its sources. Output: a :class:`Planned` (CEQL), the plan
``cerql.explain`` prints and every engine runs. Every surface comes through here: ``cerql.run``,
``cerql.analyze`` and ``cerql.explain`` (cerql/api.py), ``cer_sql`` and ``spark.cer_sql``
(spark/session.py, also behind the ``%%ceql`` magic and the command line), and the SQL-cell
function (spark/sql_cells.py). What differs between them stays with them: how they find the
sources' schemas (Arrow tables, Spark DataFrames, a TABLE argument, files), which columns they
derive and how, the limits they read from a conf. Those are the parameters of :func:`plan`. A
MATCH_RECOGNIZE query (:func:`dialect_of`) plans through :func:`plan_row_pattern` to a
:class:`RowPatternPlanned`.

This module may import the parser and the planner; neither imports it.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Callable, Mapping, Union

import pyarrow as pa

from cerql import ast, mr_ast
from cerql.errors import CeqlError, UnsupportedError
from cerql.mr_plan import Nfa, Skip
from cerql.parser import parse as parse_ceql
from cerql.parser.match_recognize import is_match_recognize, parse_match_recognize
from cerql.plan import MAX_MATCHES_PER_EVENT, Evaluation, QueryPlan
from cerql.planner import rules
from cerql.planner.analyze import Analysis, analyze
from cerql.planner.derived import derive_columns
from cerql.planner.mr_analyze import MrAnalysis, check_output_columns, compiled
from cerql.planner.resolve import resolve

if TYPE_CHECKING:
    from sqlglot import exp

# A dialect is a parser from its text to its AST. CEQL's (cerql/ast.py) goes on to derive ->
# analyze -> resolve (``plan``); MATCH_RECOGNIZE's (cerql/mr_ast.py) to its checks and its NFA
# (``plan_row_pattern``). ``dialect_of`` tells them apart by the text: a query that holds the
# word MATCH_RECOGNIZE (outside strings and comments) is one.
DIALECTS: Mapping[str, Callable[[str], object]] = {"ceql": parse_ceql, "match_recognize": parse_match_recognize}
DEFAULT_DIALECT = "ceql"

# (name, bare expression over one event's columns, the query's expression it came from):
# a column planner/derived.py asks the caller to compute per row.
Derived = tuple[str, "exp.Expression", ast.SqlExpr]

# What ``plan`` resolves against: each FROM source's Arrow schema by the name written in FROM,
# or a function that finds them once the analysis says which sources FROM names and which
# columns must be derived (it may return None: no schemas, nothing to resolve).
Schemas = Union[Mapping[str, pa.Schema],
                Callable[[Analysis, "tuple[Derived, ...]"], "Mapping[str, pa.Schema] | None"], None]


@dataclasses.dataclass(frozen=True)
class Planned:
    """A query through the front door: the AST as its dialect read it, its analysis (after the
    derived columns replaced what they compute), those derived columns, the schemas it was
    resolved against and the plan (None when there were no schemas)."""

    query: ast.Query
    analysis: Analysis
    derived: tuple[Derived, ...]
    schemas: Mapping[str, pa.Schema] | None = None
    plan: QueryPlan | None = None

    @property
    def text(self) -> str:
        return self.analysis.text

    @property
    def evaluation(self) -> Evaluation:
        """How the automaton engines evaluate the query (planner/rules.py): the plan's, or,
        without schemas, the same rules run with names as written (``rules.NAMES_AS_WRITTEN``:
        every equality taken as a key, every register candidate as checkable)."""
        if self.plan is not None:
            return self.plan.evaluation
        try:
            return rules.optimize(rules.start(self.analysis), rules.NAMES_AS_WRITTEN)
        except CeqlError as err:
            raise err.with_text(self.text)


def dialect_of(text: str) -> str:
    """The dialect ``text`` is written in: ``match_recognize`` or ``ceql``."""
    return "match_recognize" if is_match_recognize(text) else DEFAULT_DIALECT


@dataclasses.dataclass(frozen=True)
class RowPatternPlanned:
    """A MATCH_RECOGNIZE query through the front door: its AST (the item and the Spark SQL around
    it), the checks' findings, the pattern's NFA and AFTER MATCH SKIP, and the source's schema
    when one was given (then the result's too, checked by the local engine over no rows)."""

    query: mr_ast.MatchRecognizeQuery
    analysis: MrAnalysis
    nfa: Nfa
    skip: Skip
    source_schema: pa.Schema | None = None

    @property
    def text(self) -> str:
        return self.query.text

    @property
    def clause(self) -> mr_ast.MatchRecognize:
        return self.query.clause


# How many MATCH_RECOGNIZE texts ``plan_row_pattern`` keeps the plan of.
ROW_PATTERN_CACHE = 64


def plan_row_pattern(text: str, source_schema: pa.Schema | None = None) -> RowPatternPlanned:
    """Parse a MATCH_RECOGNIZE query, check it (planner/mr_analyze.py) and compile its pattern
    (planner/mr_compile.py). Every CeqlError leaves with the query text attached.

    The plan of each of the last ``ROW_PATTERN_CACHE`` texts is kept and given again: a notebook
    or a benchmark builds the same query over and over, and its parse is most of the driver's
    Python time for a ``spark.cer_sql``. One plan can serve every caller because none changes
    it: its dataclasses are frozen, and the engines rewrite copies of its expression trees."""
    planned = _row_pattern(text)
    return planned if source_schema is None else dataclasses.replace(planned, source_schema=source_schema)


@functools.lru_cache(maxsize=ROW_PATTERN_CACHE)
def _row_pattern(text: str) -> RowPatternPlanned:
    """``plan_row_pattern`` without a schema, kept per text (errors are not kept: raised again)."""
    try:
        query = parse_match_recognize(text)
        analysis, nfa, skip = compiled(query.clause, text)
        check_output_columns(query.clause, text)
    except CeqlError as err:
        raise err.with_text(text)
    return RowPatternPlanned(query, analysis, nfa, skip)


def parse(text: str, dialect: str = DEFAULT_DIALECT) -> ast.Query:
    """The AST of ``text`` read by ``dialect``'s parser (``DIALECTS``)."""
    reader = DIALECTS.get(dialect)
    if reader is None:
        raise UnsupportedError(f"Unknown dialect {dialect!r}", error_class="UNKNOWN_DIALECT",
                               hint=f"available: {', '.join(DIALECTS)}")
    return reader(text)


def plan(text: str, schemas: Schemas = None, *, spark: bool = False,
         max_matches_per_event: int = MAX_MATCHES_PER_EVENT, time_zone: str | None = None) -> Planned:
    """Parse CEQL ``text`` (a MATCH_RECOGNIZE query plans through :func:`plan_row_pattern`), derive the per-row columns (planner/derived.py), analyze
    (planner/analyze.py), then resolve against ``schemas`` (planner/resolve.py, which runs the
    rules). Every CeqlError leaves with the query text attached, for its caret.

    ``schemas``: each source's Arrow schema by its FROM name; or a function of the analysis and
    the derived columns that returns them, for a caller whose schemas depend on the sources FROM
    names and on the derived columns it computes (it may raise the query's errors about its
    sources, and return None to stop before resolving); or None, for the analysis alone.
    ``spark``: the plan is for Spark, which derives the Spark-only parts of FILTERs across
    variables and evaluates unary FILTER predicates and SELECT items itself.
    ``max_matches_per_event`` and ``time_zone`` go to the plan as ``resolve`` takes them.
    """
    try:
        query = parse(text)
        derived_query, derived = derive_columns(query, text, spark=spark)
        analysis = analyze(derived_query, text)
        derived = tuple(derived)
        found = schemas(analysis, derived) if callable(schemas) else schemas
        if found is None:
            return Planned(query, analysis, derived)
        resolved = resolve(analysis, found, max_matches_per_event, spark=spark, time_zone=time_zone)
    except CeqlError as err:
        raise err.with_text(text)
    return Planned(query, analysis, derived, found, resolved)


__all__ = ["DIALECTS", "Planned", "RowPatternPlanned", "dialect_of", "parse", "plan", "plan_row_pattern"]
