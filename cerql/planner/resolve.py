"""Name resolution: an analyzed query against the schemas of its sources.

Input: an :class:`~cerql.planner.analyze.Analysis` and ``{source name: pyarrow.Schema}``.
Output: a :class:`cerql.plan.QueryPlan`. This is where the stream is decided (docs/language.md,
"Events and the stream"): which table each source is, its type column, what each atom matches,
the ordering column, the window kind, and every column a predicate or SELECT item reads. Unknown
names, impossible event types and wrong types are :class:`cerql.errors.AnalysisError` with a
position, before any data is read.

How the automaton engines then evaluate the query (partitioning, registers, the automaton,
post-filters) is not decided here: ``resolve`` hands the query's
:class:`~cerql.plan.Evaluation` to planner/rules.py (``optimize``), with the resolver as the
catalog the rules ask for column names, key types and compiled register checks.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Mapping

import pyarrow as pa
from sqlglot import exp

from cerql import ast
from cerql.errors import AnalysisError, CeqlError, UnsupportedError, position_of
from cerql.expr import evaluate
from cerql.parser import written
from cerql.parser.sqlexpr import expr_position
from cerql.plan import (AGGREGATE_COLUMN, MAX_MATCHES_PER_EVENT, AggregatePlan, AtomPlan, CrossPlan,
                        OutputPlan, QueryPlan, RegisterCheck, SourcePlan, WindowPlan, shown_columns)
from cerql.planner import aggregates, rules
from cerql.planner.analyze import MATCH_COLUMNS, Analysis, OutputVar, bare_reference, find_name
from cerql.expr import ExprError, LocalTypeRefusal, SparkTypeMismatch, compile_expr, guard, refuse_call
from cerql.planner.equality import keyable_type
from cerql.planner.registers import Candidate

TYPE_COLUMN_NAMES = ("type", "event_type")


def bounding(window: WindowPlan | None, order_type: pa.DataType) -> WindowPlan | None:
    """The window, or None when it bounds nothing: no two positions, timestamps (microseconds)
    or integers of a BIGINT column are further apart than 2**63 - 1 as the engines measure them,
    so ``WITHIN 1e21 [ts]`` is no window at all (it used to overflow the kernel's int64)."""
    if window is None or (window.kind == "column" and not pa.types.is_integer(order_type)):
        return window
    return None if float(window.amount) >= 2.0**63 else window  # the driver takes a column's amount as a float


#: Field metadata of a source column Arrow cannot carry (a Spark year-month interval): its Spark
#: type, as cerql.spark.lower.arrow_schema marks it. The column stays out of the stream; a query
#: that reads it, or shows a whole variable, is UNSUPPORTED_COLUMN_TYPE naming it.
UNCARRIED_TYPE = b"cerql.uncarried_type"


def partition_key_type(kind: pa.DataType) -> bool:
    """Column types a PARTITION BY key may have on every engine (:meth:`_Resolver.partition_column`)."""
    return not (pa.types.is_nested(kind) or pa.types.is_interval(kind) or pa.types.is_dictionary(kind)
                or pa.types.is_float16(kind))


class _Resolver:
    def __init__(self, analysis: Analysis, schemas: Mapping[str, pa.Schema], spark: bool = False,
                 time_zone: str | None = None):
        self.a = analysis
        self.text = analysis.text
        self.select = analysis.select
        self.schemas = schemas
        self.spark = spark
        self.time_zone = time_zone

    def error(self, message, error_class, hint=None, span=None, offset=None, cls=AnalysisError):
        where = offset if offset is not None else (span.start if span else 0)
        line, column = position_of(self.text, where)
        return cls(message, error_class=error_class, line=line, column=column, hint=hint, text=self.text)

    # -- sources and columns
    def find_table(self, source: ast.Source) -> str:
        lowered = {k.lower(): k for k in self.schemas}
        for candidate in (source.name, source.name.split(".")[-1]):
            if candidate.lower() in lowered:
                return lowered[candidate.lower()]
        known = ", ".join(sorted(self.schemas)) or "none"
        raise self.error(f"Unknown source '{source.name}'", "UNKNOWN_SOURCE",
                         f"tables given: {known}", span=source.span)

    def build_union(self, keys: list[str]) -> pa.Schema:
        """Union by column name, case-insensitively; the first spelling seen wins. Names one
        source spells two ways (``x`` and ``X``) stay two columns, as Spark keeps both for
        ``SELECT *``; naming either is AMBIGUOUS_REFERENCE (``column``)."""
        self.canonical: dict[str, str] = {}
        self.uncarried: dict[str, tuple[str, str]] = {}  # lower-case name -> (name, Spark type)
        for key in keys:
            for f in self.schemas[key]:
                if f.metadata and UNCARRIED_TYPE in f.metadata:
                    self.uncarried.setdefault(f.name.lower(), (f.name, f.metadata[UNCARRIED_TYPE].decode()))
        self.ambiguous = {n.lower() for key in keys for n in self.schemas[key].names
                          if sum(m.lower() == n.lower() for m in self.schemas[key].names) > 1
                          and n.lower() not in self.uncarried}
        fields: dict[str, pa.Field] = {}
        for key in keys:
            for f in self.schemas[key]:
                lower = f.name.lower()
                if lower in self.uncarried:
                    continue
                name = f.name if lower in self.ambiguous else self.canonical.setdefault(lower, f.name)
                if name in fields and fields[name].type != f.type:
                    try:
                        merged = pa.unify_schemas([pa.schema([fields[name]]), pa.schema([f.with_name(name)])],
                                                  promote_options="permissive")
                    except (pa.ArrowInvalid, pa.ArrowTypeError):
                        raise self.error(
                            f"Column '{name}' has types {fields[name].type} and {f.type} in different sources",
                            "INCOMPATIBLE_COLUMN_TYPES", "cast one of them before the query")
                    fields[name] = merged.field(0)
                else:
                    fields.setdefault(name, f.with_name(name).with_nullable(True))
        return pa.schema(list(fields.values()))

    def column(self, name: str, span=None, offset=None) -> str:
        if name.lower() in self.ambiguous:
            spellings = ", ".join(f"'{n}'" for n in self.union.names if n.lower() == name.lower())
            raise self.error(f"Column '{name}' is ambiguous: the stream has {spellings}", "AMBIGUOUS_REFERENCE",
                             "names match case-insensitively, as in Spark: rename one of the columns before "
                             "the query", span=span, offset=offset)
        if name.lower() in self.uncarried:
            raise self.uncarried_error(span=span, offset=offset, name=name)
        try:
            return self.canonical[name.lower()]
        except KeyError:
            raise self.error(f"Unknown column '{name}'", "UNKNOWN_COLUMN",
                             f"the stream has columns {', '.join(self.union.names)}",
                             span=span, offset=offset) from None

    def uncarried_error(self, span=None, offset=None, name: str | None = None) -> UnsupportedError:
        """A query reads a column Arrow cannot carry (``UNCARRIED_TYPE``): ``name``, or the first
        such column when a whole variable is shown."""
        column, kind = self.uncarried[(name or next(iter(self.uncarried))).lower()]
        err = self.error(f"Column '{column}' has type {kind}, which cerql cannot carry through Arrow",
                         "UNSUPPORTED_COLUMN_TYPE",
                         f"cast '{column}' (to a string, or months as an integer) or leave it out of the source "
                         "with a subquery or DataFrame.select; a query that does not read it, and shows "
                         "variables by their columns (SELECT a[x, ts]), runs without it",
                         span=span, offset=offset, cls=UnsupportedError)
        err.params = {"column": column}
        return err

    def keyable(self, column: str) -> bool:
        """Whether a stream column may be a hidden partition key (planner/equality.py)."""
        return keyable_type(self.union.field(column).type)

    def clause_column(self, name: str, keyword: str) -> str:
        """A column named in a clause after the pattern; the AST keeps no position for it."""
        return self.column(name, offset=self.clause_offset(name, keyword))

    def clause_offset(self, name: str, keyword: str) -> int | None:
        after = self.select.pattern.span.end if self.select.pattern.span else 0
        clause = find_name(self.text, keyword, after)
        return find_name(self.text, name, clause or after)

    def partition_column(self, name: str) -> str:
        """A PARTITION BY column, whose values both engines can group and sort: not an array,
        map or struct (Spark cannot sort a map; arrays and structs the local engines do not
        compare), nor an interval (Spark's CalendarInterval is not orderable)."""
        column = self.clause_column(name, "PARTITION")
        kind = self.union.field(column).type
        if not partition_key_type(kind):
            raise self.error(f"Column '{column}' has type {kind}, which cannot be a PARTITION BY key",
                             "UNSUPPORTED_PARTITION_KEY",
                             "a key is a number, string, boolean, date, timestamp or binary value: compute one from "
                             "the column in a view over the source (to_json(k), or one of its fields) and "
                             "partition by that",
                             offset=self.clause_offset(name, "PARTITION"), cls=UnsupportedError)
        return column

    def type_column(self, source: ast.Source, key: str) -> str | None:
        schema = self.schemas[key]
        if source.typed_by:
            for f in schema:
                if f.name.lower() == source.typed_by.lower():
                    return self.column(f.name, span=source.span)
            typed = find_name(self.text, "TYPED", source.span.start if source.span else 0) or 0
            raise self.error(f"TYPED BY column '{source.typed_by}' is not a column of '{source.name}'",
                             "UNKNOWN_COLUMN", f"'{source.name}' has {', '.join(schema.names)}",
                             offset=find_name(self.text, source.typed_by, typed + 5))
        found = [f.name for f in schema if f.name.lower() in TYPE_COLUMN_NAMES]
        if len(found) > 1:
            raise self.error(f"Source '{source.name}' has both 'type' and 'event_type' columns",
                             "AMBIGUOUS_TYPE_COLUMN",
                             f"say which one holds event types: FROM {source.name} TYPED BY {found[0]}",
                             span=source.span)
        return self.canonical[found[0].lower()] if found else None

    # -- atoms
    def atom(self, atom: ast.Atom, sources: list[SourcePlan]) -> AtomPlan:
        by_ref = {s.ref.lower(): s for s in sources}
        if atom.source is not None:
            src = by_ref[atom.source.lower()]
            if src.type_column is None:
                raise self.error(f"Source '{atom.source}' has no type column for '{atom.source}>{atom.type}'",
                                 "NO_TYPE_COLUMN", f"add TYPED BY column to {atom.source} in FROM", span=atom.span)
            return AtomPlan(atom.type, atom.source, ((src.index, src.type_column, atom.type),))
        if atom.type.lower() in by_ref:
            return AtomPlan(atom.type, None, ((by_ref[atom.type.lower()].index, None, None),))
        alternatives = tuple((s.index, s.type_column, atom.type) for s in sources if s.type_column)
        if not alternatives:
            raise self.error(
                f"Event type '{atom.type}' cannot match any row: no source is named '{atom.type}' "
                "and no source has a type column",
                "UNKNOWN_EVENT_TYPE",
                f"sources: {', '.join(s.ref for s in sources)}; name a source, or give a type "
                "column ('type', 'event_type' or TYPED BY col)", span=atom.span)
        return AtomPlan(atom.type, None, alternatives)

    # -- expressions
    def compile(self, sql: ast.SqlExpr, resolve, spark_may_run: bool = False):
        """``sql`` compiled for the local engine (cerql/expr/). With ``spark_may_run``
        (a unary FILTER predicate or a SELECT item of a query planned for Spark, which Spark
        evaluates itself), an expression the local engine cannot run is None: Spark's analyzer
        checks it instead (spark/expressions.py). Names are resolved either way."""
        def positioned(err: ExprError) -> CeqlError:
            return self.error(err.message, err.error_class, err.hint,
                              offset=expr_position(sql, err.node) if err.offset is None else err.offset, cls=err.cls)

        try:
            call = written.unsupported_call(sql.tree, sql.source)
            if call is not None:
                raise refuse_call(call[0], sql.offset + call[1])
            return guard(compile_expr(sql.tree, resolve, self.time_zone), positioned)  # errors while evaluating
        except ExprError as err:
            if spark_may_run and self.spark and err.cls is not AnalysisError:
                for col in sql.tree.find_all(exp.Column):  # unknown names are still this stage's errors
                    with contextlib.suppress(ExprError):  # a whole variable: Spark reads it
                        resolve(col)
                return None
            raise positioned(err) from None

    def check(self, fn, sql: ast.SqlExpr, table: pa.Table, boolean: bool, what: str,
              spark_may_run: bool = False) -> pa.DataType | None:
        """Run ``fn`` on an empty table of the right schema: type errors surface here. Returns
        the type of its value; None for an expression left to Spark (``fn`` None: Spark's
        analyzer checks it). An expression the local engine compiles is type-checked here on
        every engine, so a comparison of a string with a number is TYPE_MISMATCH before Spark
        runs, not a CAST_INVALID_INPUT in the middle of a job. Operand types the local engine
        does not take where Spark casts them (``LocalTypeRefusal``) are left to Spark when it
        may run the expression (``compile``), and are an UnsupportedError otherwise."""
        if fn is None:
            return None
        try:
            out = evaluate(fn, table)
        except LocalTypeRefusal as err:
            if spark_may_run and self.spark:
                return None
            if isinstance(err, SparkTypeMismatch):  # Spark's analyzer refuses it too: its class on both engines
                raise self.error(str(err), err.error_class, err.hint, offset=expr_position(sql)) from None
            raise self.error(str(err), "UNSUPPORTED_EXPRESSION", "cast the operands to the types the function takes",
                             offset=expr_position(sql), cls=UnsupportedError) from None
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, ValueError) as err:
            raise self.error(f"Type error in {what} '{sql.text}': {str(err).splitlines()[0]}",
                             "TYPE_MISMATCH", "compare columns with values of the same type",
                             offset=expr_position(sql)) from None
        if boolean and not (pa.types.is_boolean(out.type) or pa.types.is_null(out.type)):
            raise self.error(f"FILTER predicate '{sql.text}' is {out.type}, not boolean",
                             "NON_BOOLEAN_FILTER", "a predicate compares, e.g. price > 10",
                             offset=expr_position(sql))
        return out.type

    def predicates(self) -> dict:
        empty = self.union.empty_table()
        out = {}
        for node in ast.walk(self.select.pattern):  # walk enters FILTER conditions too
            if isinstance(node, ast.VarPredicate) and node.predicate.text not in out:
                sql = node.predicate

                def resolve(col: exp.Column, sql=sql) -> str:
                    return self.column(col.name, offset=expr_position(sql, col.this))

                fn = self.compile(sql, resolve, spark_may_run=True)
                checked = self.check(fn, sql, empty, True, "FILTER", spark_may_run=True) is not None
                out[sql.text] = fn if checked else None  # None: Spark evaluates and checks it
        return out

    def item_span(self, name: str):
        for item in () if isinstance(self.select.projection, ast.Star) else self.select.projection:
            if getattr(item, "var", None) == name:
                return item.span
        return None

    def output(self, o) -> OutputPlan:
        if isinstance(o, OutputVar):
            if o.columns is None and self.uncarried:  # every column shown, one Arrow cannot carry
                star = self.select.projection
                span = star.span if isinstance(star, ast.Star) else self.item_span(o.name)
                raise self.uncarried_error(span=span)
            cols = None
            if o.columns is None and len(shown_columns(self.union.names)) < len(self.union.names):
                cols = shown_columns(self.union.names)  # derived columns are never shown
            if o.columns is not None:
                start = o_span.start if (o_span := self.item_span(o.name)) else 0
                cols = tuple(self.column(c, offset=find_name(self.text, c, start + len(o.var))) for c in o.columns)
            return OutputPlan(o.name, var=o.var, columns=cols, many=o.many)
        sql, aggs = self.with_aggregate_columns(o.expr)
        fn, used, value_type = self.qualified(sql, boolean=False, what="SELECT", extra=aggs, result=True)
        bare = [(c.name, bare_reference(c.name, self.select, self.a.variables))  # aggregates are columns here
                for c in sql.tree.find_all(exp.Column) if not c.table]
        results = [self.result_column(name) for name, kind in bare if kind == "result"]
        wholes = [(name, self.a.cardinality[name] > 1) for name, kind in bare if kind == "variable"]
        if wholes and self.uncarried:  # a variable read as a value has every column
            raise self.uncarried_error(offset=expr_position(o.expr))
        return OutputPlan(o.name, expr=fn if value_type is not None else None, expr_columns=used, sql=o.expr,
                          aggregates=aggs, expr_type=value_type, expr_results=tuple(dict.fromkeys(results)),
                          expr_variables=tuple(dict.fromkeys(wholes)))

    def result_column(self, name: str) -> str:
        """A bare name of a SELECT expression that is a column of the result row: ``match_*``
        (lower case, as the result names them) or a PARTITION BY column (its stream spelling, or
        a key expression's name)."""
        if name.lower() in MATCH_COLUMNS:
            return name.lower()
        shown = {key.lower(): key for _, key in self.select.key_names}
        if name.lower() in shown:
            return shown[name.lower()]
        return self.clause_column(name, "PARTITION")

    def result_field(self, name: str) -> pa.Field:
        """The type a result column has in the result table (exec/output.schema)."""
        if name == "match_id":
            return pa.field(name, pa.int64())
        if name in MATCH_COLUMNS:
            return pa.field(name, self.union.field(self.order[0]).type)
        derived = {key: column for column, key in self.select.key_names}
        if name in derived:
            return self.union.field(derived[name]).with_name(name)
        return self.union.field(name)

    def with_aggregate_columns(self, sql: ast.SqlExpr) -> tuple[ast.SqlExpr, tuple[AggregatePlan, ...]]:
        """The expression with each aggregate call made the column ``__agg<k>`` of the table it
        is compiled over, and the aggregates' plans."""
        aggs = self.aggregate_plans(sql)
        if not aggs:
            return sql, aggs
        return dataclasses.replace(sql, tree=aggregates.as_columns(sql.tree, AGGREGATE_COLUMN)), aggs

    def aggregate_plans(self, sql: ast.SqlExpr) -> tuple[AggregatePlan, ...]:
        out = []
        for call in aggregates.calls(sql.tree):
            kind = aggregates.KINDS[type(call)]
            var, name = aggregates.argument(call)
            column = None if name is None else self.column(name, offset=expr_position(sql, call.this.this))
            col_type = None if column is None else self.union.field(column).type
            if column is not None and not aggregates.accepts(kind, col_type):
                raise self.error(f"{kind}() needs a numeric column; '{var}.{column}' is {col_type}",
                                 "AGGREGATE_TYPE", "use min, max, first, last, count or collect_list",
                                 offset=expr_position(sql, call))
            many = self.a.cardinality.get(var, 1) > 1
            out.append(AggregatePlan(kind, var, column, aggregates.result_type(kind, col_type), many))
        return tuple(out)

    def qualified(self, sql: ast.SqlExpr, boolean: bool, what: str, extra=(), result: bool = False):
        """(function over a table of "var.col" columns, the (var, column) pairs it reads, the type
        of its value) of an expression over qualified columns, type-checked on an empty table.
        ``extra`` are the aggregates it reads as columns ``__agg<k>``. With ``result`` (a SELECT
        item) it may also read bare names of the result row (``match_start``, a PARTITION BY
        column: columns of that name) and whole variables, which only Spark evaluates."""
        used: list[tuple[str, str]] = []
        results: list[str] = []

        def resolve(col: exp.Column) -> str:
            if not col.table and col.name.startswith(AGGREGATE_COLUMN):
                return col.name
            if result and not col.table:
                if bare_reference(col.name, self.select, self.a.variables) == "variable":
                    raise ExprError(UnsupportedError, f"Variable '{col.name}' as a value (its event, or the array "
                                    "of its events) is not supported by cerql's local engine; spark.cer_sql runs it",
                                    col, "UNSUPPORTED_EXPRESSION", "select the variable itself, or its columns")
                name = self.result_column(col.name)
                results.append(name)
                return name
            name = self.column(col.name, offset=expr_position(sql, col.this))
            if (col.table, name) not in used:
                used.append((col.table, name))
            return f"{col.table}.{name}"

        fn = self.compile(sql, resolve, spark_may_run=result)
        fields = [pa.field(f"{v}.{c}", self.union.field(c).type) for v, c in used]
        fields += [pa.field(f"{AGGREGATE_COLUMN}{k}", agg.type) for k, agg in enumerate(extra)]
        fields += [self.result_field(name) for name in dict.fromkeys(results)]
        value_type = self.check(fn, sql, pa.schema(fields).empty_table(), boolean, what, spark_may_run=result)
        return fn, tuple(used), value_type

    def register_check(self, candidate: Candidate) -> RegisterCheck | None:
        """The kernel's check of a register candidate, or None when its sides do not compare as
        int64 or float64 (strings, decimals, mixed kinds: left to the post-filter)."""
        if candidate.aggregate is not None:
            return self.aggregate_check(candidate)
        (left, lcols, lt), (right, rcols, rt) = (self.register_side(candidate, t)
                                                 for t in (candidate.left, candidate.right))
        number = lambda t: pa.types.is_integer(t) or pa.types.is_floating(t)  # noqa: E731
        if number(lt) and number(rt):
            if pa.types.is_uint64(lt) or pa.types.is_uint64(rt):
                return None
            floating = pa.types.is_floating(lt) or pa.types.is_floating(rt)
        elif lt == rt and (pa.types.is_timestamp(lt) or pa.types.is_date(lt) or pa.types.is_boolean(lt)):
            floating = False
        else:
            return None
        return RegisterCheck(candidate.leaf.expr.text, candidate.op, candidate.x, candidate.y,
                             left, lcols, right, rcols, floating, candidate.single)

    def register_side(self, candidate, tree: exp.Expression) -> tuple:
        """(function, columns it reads, value type) of one side of a register candidate, an
        expression over "var.col" columns taken from the candidate's FILTER predicate."""
        source = candidate.leaf.expr
        sql = ast.SqlExpr(tree.sql(dialect="spark"), tree, source.source, source.offset, source.span)
        fn, used, kind = self.qualified(sql, boolean=False, what="FILTER")
        return fn, tuple(col for _, col in used), kind

    def aggregate_check(self, candidate) -> RegisterCheck | None:
        """The kernel's check of ``agg(x.col) op constant``, or None unless the column (for
        count(x.col), sum, avg, min, max) and the constant are numbers (not unsigned 64-bit)."""
        number = lambda t: (pa.types.is_integer(t) and not pa.types.is_uint64(t)) or pa.types.is_floating(t)  # noqa: E731
        constant, _, constant_type = self.register_side(candidate, candidate.right)
        if not number(constant_type):
            return None
        kind = candidate.aggregate
        if candidate.left is None:  # count(x): the events, no column
            left, columns, floating = constant, (), pa.types.is_floating(constant_type)
            kind = "count_events"
        else:
            left, columns, column_type = self.register_side(candidate, candidate.left)
            if not number(column_type):
                return None
            value_floats = kind == "avg" or pa.types.is_floating(column_type)
            floating = value_floats or pa.types.is_floating(constant_type)
        return RegisterCheck(candidate.leaf.expr.text, candidate.op, candidate.x, candidate.x, left, columns, constant, (),
                             floating, single=False, aggregate=kind)

    def cross_predicates(self) -> dict[str, CrossPlan]:
        out = {}
        for node in ast.walk(self.select.pattern):
            if isinstance(node, ast.CrossPredicate) and node.expr.text not in out:
                sql, aggs = self.with_aggregate_columns(node.expr)
                fn, used, _ = self.qualified(sql, boolean=True, what="FILTER", extra=aggs)
                out[node.expr.text] = CrossPlan(fn, used, node.expr, aggs)
        return out

    # -- ordering and windows
    def ordering(self) -> tuple[str, ...]:
        sel = self.select
        if sel.order_by:
            return tuple(self.clause_column(c, "ORDER") for c in sel.order_by)
        window = sel.within
        if isinstance(window, (ast.TimeWindow, ast.ColumnWindow)) and window.column:
            return (self.column(window.column, span=window.span),)
        times = [f.name for f in self.union if pa.types.is_timestamp(f.type) or pa.types.is_date(f.type)]
        if len(times) == 1:
            return (times[0],)
        what = "no TIMESTAMP or DATE column" if not times else f"several time columns ({', '.join(times)})"
        raise self.error(f"Cannot tell the order of events: the sources have {what}", "NO_ORDER_COLUMN",
                         "add ORDER BY <column>", offset=len(self.text.rstrip()))

    def order_kind(self, column: str) -> str:
        t = self.union.field(column).type
        if pa.types.is_timestamp(t):
            return "timestamp"
        if pa.types.is_date(t):
            return "date"
        if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
            return "numeric"
        return "other"

    def window(self, kind: str) -> WindowPlan | None:
        w = self.select.within
        if w is None:
            return None
        if isinstance(w, ast.EventsWindow):
            return WindowPlan("events", w.events)
        if isinstance(w, ast.TimeWindow):
            if kind not in ("timestamp", "date"):
                raise self.error("A window in time units needs a TIMESTAMP or DATE ordering column",
                                 "WINDOW_NEEDS_TIME",
                                 "order by a time column, or write WITHIN n [column] for a numeric column",
                                 span=w.span)
            return WindowPlan("time", w.micros)
        if kind != "numeric":
            raise self.error(f"WITHIN n [{w.column}] needs a numeric column",
                             "WINDOW_NEEDS_NUMBER",
                             "for a time column write WITHIN 10 SECONDS" if kind in ("timestamp", "date")
                             else f"'{w.column}' is not a number; window on a numeric column or use n EVENTS",
                             span=w.span)
        return WindowPlan("column", w.amount)

    def plan(self, max_matches_per_event: int) -> QueryPlan:
        sel = self.select
        keys = [self.find_table(s) for s in sel.sources]
        self.union = self.build_union(keys)
        sources = [SourcePlan(i, key, s.ref, self.type_column(s, key))
                   for i, (s, key) in enumerate(zip(sel.sources, keys))]
        atoms = {}
        for node in ast.walk(sel.pattern):
            if isinstance(node, ast.Atom) and node not in atoms:
                atoms[node] = self.atom(node, sources)
        partition = tuple(self.partition_column(c) for c in sel.partition_by)
        shown = dict(sel.key_names)  # a key expression's derived column -> its name
        partition_names = tuple(shown.get(c, c) for c in partition) if shown else ()
        order = self.order = self.ordering()
        for column in order:  # sorted as the keys are: the same types (partition_column)
            kind = self.union.field(column).type
            if not partition_key_type(kind):
                raise self.error(f"Column '{column}' has type {kind}, which cannot order events",
                                 "UNSUPPORTED_ORDER_COLUMN",
                                 "order by a timestamp, date, number or string column (ORDER BY ts)",
                                 offset=self.clause_offset(column, "ORDER"), cls=UnsupportedError)
        kind = self.order_kind(order[0])
        window = bounding(self.window(kind), self.union.field(order[0]).type)
        cross = self.cross_predicates()
        evaluation = rules.optimize(rules.start(self.a, partition), self)
        return QueryPlan(
            select=sel, view=self.a.view, sources=tuple(sources), columns=tuple(self.union.names),
            atoms=atoms, predicates=self.predicates(), order_columns=order, order_kind=kind,
            partition_columns=partition, partition_names=partition_names, window=window,
            outputs=tuple(self.output(o) for o in self.a.outputs), selected=self.a.selected,
            strategy=sel.strategy, consume=sel.consume, limit=sel.limit, evaluation=evaluation,
            max_matches_per_event=max_matches_per_event, uses_positions=evaluation.counts_positions,
            schema=self.union, cross_predicates=cross,
        )


def resolve(analysis: Analysis, schemas: Mapping[str, pa.Schema],
            max_matches_per_event: int = MAX_MATCHES_PER_EVENT, spark: bool = False,
            time_zone: str | None = None) -> QueryPlan:
    """Resolve every name of an analyzed query against the source schemas, then choose how it
    is evaluated (planner/rules.py) with the resolver as the catalog. ``spark``: the plan is
    for Spark, which evaluates unary FILTER predicates and SELECT items itself, so those may
    use any of Spark SQL's functions; their predicates and expressions the local engine cannot
    run are None in the plan (cerql/spark/expressions.py checks them with Spark's analyzer).
    ``time_zone``: the session time zone the compiled expressions read times in (Spark's
    ``spark.sql.session.timeZone`` for the parts a Spark task evaluates; UTC by default)."""
    try:
        return _Resolver(analysis, schemas, spark, time_zone).plan(max_matches_per_event)
    except CeqlError as err:
        raise err.with_text(analysis.text)
