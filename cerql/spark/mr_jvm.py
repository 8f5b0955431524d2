"""MATCH_RECOGNIZE matched inside Spark's JVM: the common case without crossing to Python.

Input: the planned query; ``JvmColumns.project`` picks the source's columns before the shuffle
(spark/mr_lower.py adds the ordinal and key columns, shuffles and sorts); ``match_on_jvm`` takes
the sorted rows and the item's result schema. Output: the item's result as a lazy DataFrame
whose rows cerql's Java matcher (``io.cerql.mr.MatchRecognizeFunction`` over ``PikeMatcher``,
compiled by spark/jvm.py) makes from Spark's own rows (``io.cerql.mr.MatchedRDD``), or a reason
why this query is left to the Python path (:func:`why_not`). At most 63 pattern variables (a mask of them all is a Java long).

Why: rows handed to a Python worker cost, for the crossing alone, about half of what Spark's own
shuffle and sort of them cost (docs/benchmarks.md, "MATCH_RECOGNIZE"); in the JVM the matcher
runs where the sort left the rows. What it takes (everything else goes to Python, with the same
answer; docs/semantics.md, "On Spark"):

- ONE ROW PER MATCH, and AFTER MATCH SKIP PAST LAST ROW or TO NEXT ROW (the matcher restarts
  after each match's first row and replays the rows it kept from there; TO FIRST/LAST v, which
  can fail at run time, go to Python);
- row-local DEFINEs (the current row, PREV/NEXT at constant offsets): Spark's own expressions,
  bound on the driver and evaluated by the task over the current row and the few rows around it
  (``MatchRecognizeFunction``), so they mean what they mean in Spark SQL;
- measures built, with any Spark SQL around them, from ``FIRST(v.c)``, ``LAST(v.c)``, ``v.c``
  and ``c`` (the last row's), ``COUNT(*)``, ``COUNT(v.*)``, ``CLASSIFIER()``, ``MATCH_NUMBER()``
  (RUNNING and FINAL alike: one row per match is the match's last row). Each becomes a register
  of the matcher; Spark computes the measure over the registers after the match.
"""

from __future__ import annotations

from functools import reduce
from typing import Any

import pyarrow as pa
from sqlglot import exp

from cerql import mr_ast
from cerql import mr_functions as mx
from cerql.errors import AnalysisError
from cerql.exec.mr_incremental import match_too_long
from cerql.planner import front
from cerql.spark import jvm, mr_bits
from cerql.spark.compat import functions_for, is_connect, read_conf
from cerql.spark.expressions import quoted
from cerql.spark.lower import spark_sql, spark_type, speller
from cerql.spark.mr_jvm_nfa import CLASSIFIER, COUNT, FIRST, LAST, Register, nfa_spec, register_spec

JVM_CONF = "cerql.matchRecognize.jvm"  # "false": always match in Python (docs/semantics.md, "On Spark")
FUNCTION = "io.cerql.mr.MatchRecognizeFunction"
MATCHED = "io.cerql.mr.MatchedRDD"
MATCH = "__cerql_mr_match"
REGISTER = "__cerql_mr_r{}"
KEY_OUT = "__cerql_mr_k{}"
ARG = "__cerql_mr_arg{}"


class _NotHere(Exception):
    """What the JVM matcher does not take in this query (the reason, for ``cerql.explain``)."""


class _Measures:
    """The registers the measures read, and each measure as Spark SQL over them."""

    def __init__(self, clause: mr_ast.MatchRecognize, variables: tuple[str, ...], lowered: dict[str, str],
                 text: str = ""):
        self.variables, self.text = variables, text
        self.measure: mr_ast.Measure | None = None
        self.subsets = {mx.canonical(s.name): tuple(mx.canonical(v) for v in s.variables) for s in clause.subsets}
        self.lowered = lowered
        self.registers: list[Register] = []
        self.columns: list[str] = []  # the input columns the registers read, in order

    def mask(self, name: str | None) -> int:
        """The bits of the variables a qualifier stands for (the planner has checked it names one)."""
        members = mx.members(name, self.variables, self.subsets)
        return (1 << len(self.variables)) - 1 if members is None else sum(1 << v for v in members)

    def register(self, kind: int, mask: int, column: exp.Column | None = None) -> str:
        index = -1
        if column is not None:
            real = self.lowered.get(column.name.lower())
            if real is None:  # as the local engine says it (exec/mr_measures.py)
                raise AnalysisError.at(self.text, mx.node_offset(self.measure.expr, column),
                                       f"Unknown column '{column.name}'", "UNKNOWN_COLUMN",
                                       f"the input has columns {', '.join(dict.fromkeys(self.lowered.values()))}")
            if real not in self.columns:
                self.columns.append(real)
            index = self.columns.index(real)
        reg = Register(kind, mask, index)
        if reg not in self.registers:
            self.registers.append(reg)
        return quoted(REGISTER.format(self.registers.index(reg)))

    def sql(self, measure: mr_ast.Measure) -> str:
        self.measure = measure
        replaced: dict[int, str] = {}
        self._visit(measure.expr.tree, measure.expr.source, replaced)
        return spark_sql(measure.expr.tree, measure.expr.source, lambda n: n, replaced=replaced)

    def _visit(self, node: exp.Expression, source: str, replaced: dict[int, str]) -> None:
        name = mx.function_name(node)
        if name in (mx.RUNNING, mx.FINAL):
            inner = mx.arguments(node)[0]
            self._visit(inner, source, replaced)
            replaced[id(node)] = "(" + spark_sql(inner, source, lambda n: n, replaced=replaced) + ")"
        elif name in mx.LOGICAL:
            args = mx.arguments(node)
            column = args[0].unnest() if args else None
            if mx.navigation_offset(node) != 0 or not isinstance(column, exp.Column) or mx.is_star(column):
                raise _NotHere(f"{name} with an offset or over an expression")
            replaced[id(node)] = self.register(FIRST if name == mx.FIRST else LAST,
                                               self.mask(mx.qualifier(column)), column)
        elif name == mx.CLASSIFIER:
            args = mx.arguments(node)
            reg = self.register(CLASSIFIER, self.mask(args[0].name if args else None))
            cases = " ".join(f"WHEN {v} THEN '" + variable.replace("\\", "\\\\").replace("'", "\\'") + "'"
                             for v, variable in enumerate(self.variables))
            replaced[id(node)] = f"(CASE {reg} {cases} END)"  # NULL for an empty match
        elif name == mx.MATCH_NUMBER:
            replaced[id(node)] = quoted(MATCH)
        elif name is not None:
            raise _NotHere(f"{name} in a measure")
        elif mx.is_aggregate(node):
            args = mx.aggregate_arguments(node) if mx.aggregate_kind(node) == "count" else None
            if not args or len(args) != 1 or not mx.is_star(args[0]) or mx.is_distinct(node) or node.args.get("filter"):
                raise _NotHere("an aggregate other than COUNT(*) or COUNT(v.*) in a measure")
            star = args[0]
            replaced[id(node)] = self.register(COUNT, self.mask(star.table or None if isinstance(star, exp.Column)
                                                                 else None))
        elif isinstance(node, exp.Column) and not mx.is_star(node):
            replaced[id(node)] = self.register(LAST, self.mask(mx.qualifier(node)), node)
        else:
            for child in node.iter_expressions():
                self._visit(child, source, replaced)


def why_not(spark, planned: front.RowPatternPlanned) -> str | None:
    """Why this query is matched in Python, not in the JVM; None when the JVM takes it."""
    clause = planned.clause
    setting = (read_conf(spark, JVM_CONF) or "true").strip().lower()
    if setting == "false":
        return f"{JVM_CONF} is false"
    if is_connect(spark):
        return "a Spark Connect session"
    if clause.rows_per_match.mode != mr_ast.ONE_ROW:
        return "ALL ROWS PER MATCH"
    if clause.after_match.mode not in (mr_ast.PAST_LAST_ROW, mr_ast.TO_NEXT_ROW):
        # TO FIRST/LAST v can fail at run time (AFTER_MATCH_SKIP_FAILED), which the Python path raises
        return f"AFTER MATCH SKIP {clause.after_match.mode} {clause.after_match.variable}"
    defined = {mx.canonical(d.variable) for d in clause.defines}
    if not defined <= planned.analysis.row_local:
        return "a DEFINE reads the match's history (FIRST/LAST, an aggregate, CLASSIFIER, another variable)"
    if len(planned.nfa.variables) > 63:
        return "more than 63 pattern variables"
    try:
        for measure in clause.measures:
            _Measures(clause, planned.nfa.variables, _AnyColumn()).sql(measure)
        jvm.compiled_jar()
    except _NotHere as why:
        return str(why)
    except jvm.JvmUnavailable as why:
        return f"cerql's Java matcher is unavailable: {why}"
    return None


class _AnyColumn(dict):
    """A column map that takes every name (the shape check of ``why_not`` runs before the schema)."""

    def get(self, key, default=None):
        return key


def _block(rows, clause: mr_ast.MatchRecognize, variables: tuple[str, ...], text: str):
    """``(read, arguments, navs, shifts, conditions)``: the block is the columns the DEFINEs read
    (``read``), then one per PREV/NEXT argument (``arguments``, Spark SQL over ``rows``);
    ``navs`` as ``mr_bits.define_sql`` fills it; per navigation, its column's name in the
    DEFINEs, its argument's index in the block and its shift; per variable, its condition as
    Spark SQL over the block and those names, None without DEFINE."""
    lowered = mr_bits.by_lower_name(rows.columns)
    spell = speller({c: c for c in rows.columns})
    defines = {mx.canonical(d.variable): d.condition for d in clause.defines}
    navs: dict[tuple[str, int], str] = {}
    conditions, read = [], []
    for variable in variables:
        condition = defines.get(variable)
        if condition is not None:
            mr_bits.check_define(rows, condition, lowered, text)
            for column in condition.tree.find_all(exp.Column):
                if not mx.is_star(column) and lowered[column.name.lower()] not in read:
                    read.append(lowered[column.name.lower()])
        conditions.append(None if condition is None else mr_bits.define_sql(condition, spell, navs))
    plain = {quoted(c): i for i, c in enumerate(read)}  # PREV(price): price itself, no column of its own
    arguments = list(dict.fromkeys(argument for argument, _ in navs if argument not in plain))
    shifts = [(name, plain[argument] if argument in plain else len(read) + arguments.index(argument), shift)
              for (argument, shift), name in navs.items()]
    return read, arguments, navs, shifts, conditions


_BOUND: dict[tuple, Any] = {}  # (session, query, block's fields) -> the bound DEFINEs, for a query run again


def _bound_defines(spark, block: list, navs: dict[tuple[str, int], str], shifts, conditions: list[str | None],
                   clause: mr_ast.MatchRecognize, variables: tuple[str, ...], text: str):
    """The DEFINEs bound by Spark (``MatchRecognizeFunction.defines``): one BIGINT of the bits of
    the variables whose condition holds, over a relation of the block's fields and one column
    per navigation, each of its argument's type; each condition with the checks and errors of
    the Window's bits (``mr_bits.define_column``). A variable without DEFINE is left out (the
    function sets its bit). Kept per session, query and block: a notebook runs the same query
    again, and each DataFrame step is an analysis."""
    from pyspark.sql.types import IntegerType, StructField, StructType

    fields = list(block) + [StructField(name, block[index].dataType, True) for name, index, _ in shifts]
    # a last column no DEFINE reads (analyzed_type needs one): bound past the task's window row, unread
    fields.append(StructField("__cerql_mr_probe", IntegerType(), True))
    key = (jvm.context_key(spark), text, StructType(fields).json())
    if key in _BOUND:
        return _BOUND[key]
    relation = spark.createDataFrame([], StructType(fields))
    F = functions_for(relation)
    by_variable = {mx.canonical(d.variable): d.condition for d in clause.defines}
    terms = []
    for v, (variable, sql) in enumerate(zip(variables, conditions)):
        if sql is not None:
            holds = mr_bits.define_column(relation, by_variable[variable], sql, navs, text).cast("boolean")
            bit = F.lit(mr_bits.signed(1 << v)).cast("long")
            terms.append(F.when(F.coalesce(holds, F.lit(False)), bit).otherwise(F.lit(0).cast("long")))
    bits = [reduce(lambda a, b: a.bitwiseOR(b), terms).cast("long")] if terms else []
    bound = jvm.static_call(spark, FUNCTION, "defines", relation.select(*bits)._jdf)
    if len(_BOUND) > 64:
        _BOUND.clear()
    _BOUND[key] = bound
    return bound


def _too_long(clause: mr_ast.MatchRecognize, max_rows: int) -> str:
    """MATCH_RECOGNIZE_MATCH_TOO_LONG as a Python worker's traceback ends with it, so that
    spark/task_errors.py rebuilds the same CeqlError from the Java task's failure; the partition
    is ``\x01``, which the task replaces."""
    err = match_too_long(max_rows, "\x01" if clause.partition_by else None)
    return f"cerql.errors.{type(err).__name__}: {err}"


class JvmColumns:
    """What the JVM matcher reads of the source (``project``, before the shuffle): the columns
    the DEFINEs read and their PREV/NEXT arguments (the block), and those the measures' registers
    read; and each measure as Spark SQL over the registers."""

    def __init__(self, planned: front.RowPatternPlanned):
        self.planned = planned

    def project(self, frame) -> tuple[list[str], dict]:
        """``(keep, extra)`` for ``mr_bits.with_keys``: the source's columns kept, and the
        arguments' columns added (``ARG``)."""
        clause, variables, text = self.planned.clause, self.planned.nfa.variables, self.planned.text
        self.read, self.arguments, self.navs, self.shifts, self.conditions = _block(frame, clause, variables, text)
        self.measures = _Measures(clause, variables, mr_bits.by_lower_name(frame.columns), text)
        self.sqls = [self.measures.sql(m) for m in clause.measures]
        F = functions_for(frame)
        extra = {ARG.format(k): F.expr(a) for k, a in enumerate(self.arguments)}
        return list(dict.fromkeys(self.read + self.measures.columns)), extra


def match_on_jvm(spark, planned: front.RowPatternPlanned, columns: JvmColumns, ordered, keys: list[str | None],
                 schema: pa.Schema, max_rows: int):
    """The item's result (``schema``) matched in the JVM over ``ordered``, the rows shuffled and
    sorted by spark/mr_lower.py (``columns.project``'s columns, the key columns ``keys``);
    ``max_rows`` how far behind the first undecided start row may fall
    (``cerql.matchRecognize.maxMatchRows``: the task holds the matches found after it, which wait
    for it)."""
    from pyspark.sql import DataFrame
    from pyspark.sql.types import IntegerType, LongType, StructField, StructType

    F = functions_for(ordered)
    clause, nfa, text = planned.clause, planned.nfa, planned.text
    position = {name: i for i, name in enumerate(ordered.columns)}
    fields = ordered.schema.fields
    key_at = [position[c] for c in mr_bits.partition_columns(clause, keys, ordered.columns)]
    block_at = [position[c] for c in columns.read] + [position[ARG.format(k)] for k in range(len(columns.arguments))]
    value_at = [position[c] for c in columns.measures.columns]
    always = sum(1 << v for v, c in enumerate(columns.conditions) if c is None)
    layout = [len(key_at), *key_at, len(block_at), *block_at, always, len(columns.shifts)]
    for _, index, shift in columns.shifts:
        layout += [index, shift]
    layout += [len(value_at), *value_at]
    defines = _bound_defines(spark, [fields[i] for i in block_at], columns.navs, columns.shifts, columns.conditions,
                             clause, nfa.variables, text)
    registers = columns.measures.registers
    kinds = ([fields[i].dataType for i in key_at] + [LongType()]
             + [fields[value_at[r.column]].dataType if r.kind in (FIRST, LAST) else
                LongType() if r.kind == COUNT else IntegerType() for r in registers])
    direct = _direct(columns.sqls, kinds, schema, len(key_at))
    names = [f.name for f in schema] if direct else (
        [KEY_OUT.format(i) for i in range(len(key_at))] + [MATCH] + [REGISTER.format(i) for i in range(len(registers))])
    outputs = direct or list(range(len(kinds)))
    layout += [len(outputs), *outputs]
    function = jvm.new_instance(spark, FUNCTION, nfa_spec(nfa), register_spec(registers), planned.skip.mode,
                                " ".join(map(str, layout)),
                                defines, ordered._jdf.schema(), max_rows,
                                "\0".join(sql.text for sql in clause.partition_by), _too_long(clause, max_rows))
    # every column nullable, as the Python path gives them
    produced = jvm.java_schema(spark, StructType([StructField(n, kinds[c], True) for n, c in zip(names, outputs)]))
    matched = DataFrame(jvm.static_call(spark, MATCHED, "frame", ordered._jdf, function, produced), spark)
    if direct:
        return matched  # each column a key or register of the result's type: no projection
    items = [F.col(KEY_OUT.format(i)) for i in range(len(key_at))] + [F.expr(s) for s in columns.sqls]
    return matched.select(*[item.cast(spark_type(f.type)).alias(f.name) for item, f in zip(items, schema)])


def input_plans(spark, result) -> str:
    """Spark's plans of the sorted rows the Java matcher reads under ``result`` (a scan of its
    rows is all ``result``'s own plan shows of them): for ``cerql.explain``."""
    return jvm.static_call(spark, MATCHED, "inputPlans", result._jdf)


def _direct(sqls: list[str], kinds: list, schema: pa.Schema, keys: int) -> list[int] | None:
    """The function's output columns when the result is the keys and registers as they are
    (``kinds``: the type of key k, the match number, then each register): per result column,
    its key, match number or register; None when a measure is more than one, or of another type."""
    codes = {quoted(MATCH): keys}
    codes.update({quoted(REGISTER.format(r)): keys + 1 + r for r in range(len(kinds) - keys - 1)})
    outputs = list(range(keys)) + [codes.get(sql, -1) for sql in sqls]
    if -1 in outputs or len(outputs) != len(schema):
        return None
    if any(kinds[c] != spark_type(f.type) for c, f in zip(outputs, schema)):
        return None
    return outputs


__all__ = ["JVM_CONF", "JvmColumns", "input_plans", "match_on_jvm", "why_not"]
