"""MATCH_RECOGNIZE's key expressions and row-local DEFINE bits, computed by Spark in the JVM.

Input: the planned query (``front.RowPatternPlanned``), the source DataFrame with its input
ordinal, the query text (for positions). Output: the DataFrame with hidden columns that the
local engine (exec/mr_engine.py, ``run_match_recognize(..., bits=, keys=)``) takes as they are:

- ``__cerql_mr_key<i>``: the value of the i-th PARTITION BY / ORDER BY item when it is an
  expression (a plain column is read as it is), computed once, before the shuffle, which
  partitions and sorts by it;
- ``__cerql_mr_bits``: the DEFINE bits, one BIGINT per row, bit v for pattern variable v.

Why in the JVM: the DEFINEs then mean what Spark says they mean, with any of Spark's built-in
functions (not only those cerql.expr runs, as for CEQL's predicates), and a row crosses to
Python with one BIGINT instead of its DEFINEs' inputs.

Which DEFINEs: ``local_defines`` leaves to the tasks (Python) the row-local DEFINEs with
PREV/NEXT that cerql.expr evaluates, which would otherwise need a Window; mr_lower.py hands the
others to ``with_bits``. A row-local DEFINE (planner/mr_analyze.py's ``analysis.row_local``) of
those becomes a Spark boolean column: ``PREV(e, n)`` is ``lag(e, n)`` and ``NEXT(e, n)`` is ``lead(e, n)`` OVER (PARTITION BY
the keys ORDER BY the keys as written, then the input ordinal), the very order the engine
matches in; RUNNING and qualifiers are dropped (every column is the current row's); NULL is
false. The seam for history-dependent DEFINEs (FIRST/LAST, aggregates, CLASSIFIER, other
variables' columns): their variable's bit is set on every row, as exec/mr_define.py sets it for
a variable without DEFINE, and the matcher evaluates them in Python.
"""

from __future__ import annotations

from functools import reduce

import numpy as np
import pyarrow as pa
from sqlglot import exp

from cerql import mr_ast
from cerql import mr_functions as mx
from cerql.ast import SqlExpr
from cerql.errors import AnalysisError, UnsupportedError
from cerql.exec.mr_engine import unorderable_key
from cerql.parser.sqlexpr import expr_position
from cerql.spark import expressions
from cerql.spark.compat import is_connect
from cerql.spark.expressions import quoted
from cerql.spark.lower import spark_sql, speller

KEY = "__cerql_mr_key{}"
BITS = "__cerql_mr_bits"
NAV = "__cerql_mr_nav{}"


def by_lower_name(names) -> dict[str, str]:
    """Each column name by its lower case: the first column of a name, as Spark resolves an
    unqualified name case-insensitively."""
    return {c.lower(): c for c in reversed(names)}


def _window_class(frame):
    if is_connect(frame):
        from pyspark.sql.connect.window import Window
    else:
        from pyspark.sql.window import Window
    return Window


def _plain_column(sql: SqlExpr) -> exp.Column | None:
    tree = sql.tree
    while isinstance(tree, exp.Paren):
        tree = tree.this
    return tree if isinstance(tree, exp.Column) and not mx.is_star(tree) else None


def partition_columns(clause: mr_ast.MatchRecognize, keys: list[str | None], columns) -> list[str]:
    """The PARTITION BY columns among ``columns`` (those of rows ``with_keys`` keyed): an
    expression's hidden column (``keys``), a plain column as it is."""
    lowered = by_lower_name(columns)
    return [key if key is not None else lowered[_plain_column(sql).name.lower()]
            for sql, key in zip(clause.partition_by, keys)]


def _check_columns(sql: SqlExpr, lowered: dict[str, str], text: str) -> None:
    """Every column the expression reads is the input's (as exec/mr_define.py checks it)."""
    for column in sql.tree.find_all(exp.Column):
        if not mx.is_star(column) and column.name.lower() not in lowered:
            raise AnalysisError.at(text, mx.node_offset(sql, column), f"Unknown column '{column.name}'",
                                   "UNKNOWN_COLUMN", f"the input has columns {', '.join(lowered.values())}")


def _check_builtins(spark, sql: SqlExpr, text: str) -> None:
    """A call that is neither a row pattern function nor one of Spark's built-ins (a UDF) is
    refused, as in CEQL's predicates (spark/expressions.py)."""
    for node in sql.tree.find_all(exp.Anonymous):
        if mx.function_name(node) is None and not expressions.is_builtin(spark, node.name):
            raise UnsupportedError.at(text, expr_position(sql, node), f"'{node.name.lower()}' is not a built-in "
                                      "function of Spark", "USER_FUNCTION_NOT_ALLOWED",
                                      "only Spark's built-in functions run in MATCH_RECOGNIZE; apply a UDF in a "
                                      "subquery before it, or to the result")


def _named(F, value, name: str):
    """``value`` (a Column, or Spark SQL text) as the column ``name``: text is named in its own
    parse (``expr("... AS name")``, one JVM call), where ``Column.alias`` costs about ten (PySpark
    records the caller's line for Spark's error context around each Column method)."""
    if isinstance(value, str):
        return F.expr(f"{value} AS {quoted(name)}")
    return value.alias(name)


def _sort_order(F, name: str, key: mr_ast.SortKey):
    """The column ``name`` sorted as the ORDER BY item ``key`` says (its NULLS placement, or
    Spark's default for its direction), built from the name in one JVM call (``_named``)."""
    nulls_first = key.nulls_first if key.nulls_first is not None else not key.descending
    if key.descending:
        return F.desc_nulls_first(quoted(name)) if nulls_first else F.desc_nulls_last(quoted(name))
    return F.asc_nulls_first(quoted(name)) if nulls_first else F.asc_nulls_last(quoted(name))


def _check_orderable(sql: SqlExpr, kind, partition: bool, text: str) -> None:
    """A key Spark cannot sort or group (a map, or a value holding one) is the query's error at
    the key, as the local engine's (exec/mr_engine.py ``unorderable_key``), before any job: not
    Spark's INVALID_ORDERING_TYPE from the shuffle's sort."""
    if not expressions.orderable(kind):
        raise unorderable_key(sql, "PARTITION BY" if partition else "ORDER BY", kind.simpleString(), text)


def with_keys(frame, clause: mr_ast.MatchRecognize, text: str, ordinal: str, ordinal_value=None,
              extra: dict | None = None, keep: list[str] | None = None):
    """``(frame, keys, partition, order)``: ``frame`` with a hidden column per key expression
    (and ``ordinal`` when its value is given, and the columns ``extra``), added in one step (each
    step of a DataFrame is an analysis in the JVM: docs/benchmarks.md, "MATCH_RECOGNIZE"); with
    ``keep``, of the input's columns only those and the plain keys, in the same step;
    ``keys`` per PARTITION BY then ORDER BY item, that column's name or None (a plain column,
    read as it is); ``partition`` the PARTITION BY columns and ``order`` the sort columns (ORDER
    BY with its directions and NULLS placement, then ``ordinal``), for the shuffle, the sort
    and the DEFINEs' window alike. ``ordinal_value`` and ``extra``'s values: Columns or Spark
    SQL text.

    Built with few calls to the JVM, each a round trip of the driver: a column is named by
    ``expr`` (``col`` and the Column methods cost about ten calls each, ``_named``), once
    however often it is used, and the frame's names are read from its schema, which the caller
    has fetched already."""
    from cerql.spark.compat import functions_for

    F = functions_for(frame)
    schema = frame.schema
    names = schema.names
    lowered = by_lower_name(names)
    spell = speller({c: c for c in names})
    items = list(clause.partition_by) + [k.expr for k in clause.order_by]
    added = {} if ordinal_value is None else {ordinal: ordinal_value}
    added.update(extra or {})
    kept = list(keep) if keep is not None else None
    keys, named = [], []  # per item: its hidden column or None; the column it is read from
    for i, sql in enumerate(items):
        _check_columns(sql, lowered, text)
        plain = _plain_column(sql)
        if plain is not None:
            keys.append(None)
            named.append(lowered[plain.name.lower()])
            _check_orderable(sql, schema[named[-1]].dataType, i < len(clause.partition_by), text)
            if kept is not None and named[-1] not in kept:
                kept.append(named[-1])
            continue
        _check_builtins(frame.sparkSession, sql, text)
        value = spark_sql(sql.tree, sql.source, spell)
        kind = expressions.analyzed_type(frame, F.expr(value), sql, text, {}, "the key expression")
        _check_orderable(sql, kind, i < len(clause.partition_by), text)
        added[KEY.format(i)] = value
        keys.append(KEY.format(i))
        named.append(KEY.format(i))
    refs: dict[str, object] = {}  # each column's Column, built once

    def ref(name: str):
        if name not in refs:
            refs[name] = F.expr(quoted(name))
        return refs[name]

    if kept is not None:
        frame = frame.select(*[ref(c) for c in kept], *[_named(F, v, k) for k, v in added.items()])
    elif added:
        frame = frame.withColumns({k: F.expr(v) if isinstance(v, str) else v for k, v in added.items()})
    partition = [ref(name) for name in named[:len(clause.partition_by)]]
    order = [_sort_order(F, name, key) for key, name in zip(clause.order_by, named[len(clause.partition_by):])]
    return frame, keys, partition, order + [ref(ordinal)]


def define_sql(condition: SqlExpr, spell, navs: dict[tuple[str, int], str]) -> str:
    """The DEFINE as Spark SQL over the frame's columns, each PREV/NEXT replaced by a hidden
    column (``navs``: (argument's SQL, signed shift) -> its name, filled here)."""
    def collect(node: exp.Expression, replaced: dict[int, str]) -> None:
        name = mx.function_name(node)
        if name in mx.PHYSICAL or name == mx.RUNNING:
            args = mx.arguments(node)
            inner: dict[int, str] = {}
            collect(args[0], inner)
            argument = spark_sql(args[0], condition.source, spell, replaced=inner)
            if name == mx.RUNNING:
                replaced[id(node)] = f"({argument})"
                return
            offset = mx.navigation_offset(node)
            shift = -offset if name == mx.PREV else offset
            if shift == 0:
                replaced[id(node)] = f"({argument})"
                return
            replaced[id(node)] = quoted(navs.setdefault((argument, shift), NAV.format(len(navs))))
            return
        for child in node.iter_expressions():
            collect(child, replaced)

    replaced: dict[int, str] = {}
    collect(condition.tree, replaced)
    return spark_sql(condition.tree, condition.source, spell, replaced=replaced)


def check_define(frame, condition: SqlExpr, lowered: dict[str, str], text: str) -> None:
    """A DEFINE reads only the input's columns and Spark's built-in functions."""
    _check_columns(condition, lowered, text)
    _check_builtins(frame.sparkSession, condition, text)


def define_column(frame, condition: SqlExpr, sql: str, navs: dict[tuple[str, int], str], text: str):
    """The DEFINE's Spark SQL (``define_sql``) as a boolean Column of ``frame``, which holds the
    navigations' columns (``navs``): Spark's analysis errors, and a condition that is not
    boolean, are CeqlErrors at the condition."""
    from cerql.spark.compat import functions_for

    column = functions_for(frame).expr(sql)
    shown = {name: f"{'PREV' if shift < 0 else 'NEXT'}({argument}, {abs(shift)})"
             for (argument, shift), name in navs.items()}
    kind = expressions.analyzed_type(frame, column, condition, text, shown, "the DEFINE condition")
    if kind.typeName() not in ("boolean", "void"):
        raise AnalysisError.at(text, mx.node_offset(condition), f"DEFINE condition '{condition.text}' is "
                               f"{kind.simpleString()}, not boolean", "MATCH_RECOGNIZE_DEFINE_NOT_BOOLEAN",
                               "a DEFINE condition must be true or false for a row, e.g. price > PREV(price)")
    return column


def local_defines(schema: pa.Schema, clause: mr_ast.MatchRecognize, row_local: frozenset[str],
                  text: str) -> frozenset[str]:
    """The row-local variables (canonical) whose DEFINE navigates (PREV/NEXT) and which
    cerql.expr evaluates over ``schema`` (the rows' Arrow schema): the tasks compute those bits
    in Python over the rows they hold (exec/mr_incremental.py ``local_bits``), the columns they
    read crossing instead. Why: lag/lead need a Window, and Spark's WindowExec, which buffers
    each PARTITION BY group and runs outside whole-stage code generation, cost more than the
    columns' crossing (docs/benchmarks.md, "MATCH_RECOGNIZE"); a DEFINE that reads the current
    row alone is a plain projection in the JVM and stays there. cerql.expr gives Spark's answer
    or refuses (its module docstring), so the bits are the same either way; a DEFINE it refuses
    (a function only Spark runs, a type it does not take) keeps the Window."""
    from cerql.exec.mr_define import evaluate_define

    empty = schema.empty_table()
    lowered = by_lower_name(schema.names)
    local = set()
    for define in clause.defines:
        variable = mx.canonical(define.variable)
        condition = define.condition
        navigates = any(mx.function_name(node) in mx.PHYSICAL for node in mx.walk(condition.tree))
        if variable not in row_local or not navigates:
            continue
        try:
            evaluate_define(empty, np.zeros(0, np.int64), np.zeros(0, np.int64), condition, lowered, text)
        except Exception:  # noqa: BLE001 - any refusal or error: the JVM computes it (and reports its errors)
            continue
        local.add(variable)
    return frozenset(local)


def signed(mask: int) -> int:
    """A 64-bit mask as the signed BIGINT Spark holds."""
    return mask - (1 << 64) if mask >= 1 << 63 else mask


def with_bits(frame, clause: mr_ast.MatchRecognize, row_local: frozenset[str], partition: list, order: list,
              text: str):
    """``frame`` with the DEFINE bits column ``BITS`` (module docstring). ``row_local`` names the
    variables (canonical) whose DEFINE is computed here; every other variable's bit is set."""
    from cerql.spark.compat import functions_for

    F = functions_for(frame)
    window = _window_class(frame).partitionBy(*partition).orderBy(*order)
    lowered = by_lower_name(frame.columns)
    spell = speller({c: c for c in frame.columns})
    variables = tuple(dict.fromkeys(mx.canonical(v) for v in clause.variables))
    defines = {mx.canonical(d.variable): d.condition for d in clause.defines}
    navs: dict[tuple[str, int], str] = {}
    always, terms = 0, []
    for v, variable in enumerate(variables):
        condition = defines.get(variable)
        if condition is None or variable not in row_local:  # no DEFINE, or the matcher's to evaluate
            always |= 1 << v
            continue
        check_define(frame, condition, lowered, text)
        sql = define_sql(condition, spell, navs)
        for (argument, shift), name in navs.items():
            if name not in frame.columns:
                move = F.lag if shift < 0 else F.lead
                frame = frame.withColumn(name, move(F.expr(argument), abs(shift)).over(window))
        column = define_column(frame, condition, sql, navs, text)
        terms.append(F.when(F.coalesce(column, F.lit(False)), F.lit(signed(1 << v))).otherwise(F.lit(0)).cast("long"))
    bits = reduce(lambda a, b: a.bitwiseOR(b), terms, F.lit(signed(always)).cast("long"))
    return frame.withColumn(BITS, bits.cast("long")).drop(*navs.values())


__all__ = ["BITS", "KEY", "NAV", "by_lower_name", "check_define", "define_column", "define_sql", "local_defines", "partition_columns", "signed",
           "with_bits", "with_keys"]
