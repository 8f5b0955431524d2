"""Lowering a resolved query to a Spark DataFrame (docs/semantics.md, "On Spark").

Input: a :class:`cerql.plan.QueryPlan` and one Spark DataFrame per FROM source (keyed like the
schemas the plan was resolved against). Output: a lazy DataFrame of results in the schema of
docs/language.md, "The output schema". The pipeline, in order:

1. each source gets its position in FROM and a row ordinal (``monotonically_increasing_id``,
   taken before any shuffle), its columns renamed to the stream's spelling and cast to the
   union's type; the sources are unioned by name; the PREV/NEXT columns are computed with
   ``lag``/``lead`` over the partitions in stream order (``with_navigation``);
2. one boolean per automaton condition (atom or unary FILTER predicate, with ``F.expr``) is
   packed into an integer bit vector, rows that can take part in no match are dropped (NULL
   ordering value, NULL partition key, and, unless the query counts positions, rows that satisfy
   no atom), and only the columns the rest of the plan reads are kept;
3. ``repartition`` by the partition keys (one partition without PARTITION BY) and
   ``sortWithinPartitions`` by (keys, ordering columns, source, ordinal);
4. ``mapInArrow`` runs :class:`cerql.exec.task.MatchTask` (the numba kernel, state carried
   across batches), which emits the result rows itself;
5. SELECT expressions are evaluated by Spark on the matched events' struct fields, and LIMIT
   takes the first n rows in (keys, match_end, match_start, match_id) order.

Spark resolves names case-insensitively and reads dots and backticks in them (pyspark's own
``mapInArrow`` looks its input columns up by name), so a source with both ``x`` and ``X``, a
column ``a.b``, or outputs ``a`` and ``A`` (``SELECT * ... WHERE A AS a ; A``) cannot be
referred to by name. The plan never does: the sources' columns are renamed by position
(``toDF``) to ``__cerql_c<k>``, the task sees the real names again (its batches are renamed by
position), its results come back as ``__cerql_r<k>``, and only the last select names the
columns (docs/language.md, "The output schema").
"""

from __future__ import annotations

import dataclasses
from functools import reduce
from typing import Callable, Mapping

import pyarrow as pa
from sqlglot import exp

from cerql import ast
from cerql.errors import UnsupportedError
from cerql.parser import written
from cerql.exec.registers import RegisterSpec
from cerql.plan import ORDINAL_COLUMN, SOURCE_COLUMN, OutputPlan, QueryPlan, TaskPlan
from cerql.planner import aggregates
from cerql.planner.resolve import UNCARRIED_TYPE
from cerql.exec.bits import firing_masks, gap_masks, non_null_columns
from cerql.exec.task import BITS_COLUMN, POSITION_COLUMN, RISING_COLUMN
from cerql.spark import expressions
from cerql.spark.expressions import quoted
from cerql.spark.compat import functions_for, window_for
from cerql.spark.streaming import match_stream

EXPR_STRUCT_PREFIX = "__cerql_v_"  # hidden struct of a variable read by a SELECT expression
HIDDEN_INPUT = "__cerql_in"        # a source's column k, renamed by position
HIDDEN_COLUMN = "__cerql_c"        # stream column k (``plan.columns[k]``) on Spark
HIDDEN_RESULT = "__cerql_r"        # the task's result column k, before the last select


def arrow_schema(struct, text: str, offset: int, owner: str, hint: str, mark: bool = False) -> pa.Schema:
    """The Arrow schema of a source's Spark StructType, as the tasks will see it (timestamps in
    UTC). A column Arrow cannot carry is the query's UNSUPPORTED_COLUMN_TYPE error at ``offset``
    of ``text``, naming the column of ``owner`` (the source, as the user wrote it) and ``hint``;
    with ``mark``, it is a NULL field marked with its Spark type (``UNCARRIED_TYPE``), which the
    stream leaves out and only a query that reads it refuses (planner/resolve.py)."""
    from pyspark.sql.pandas.types import to_arrow_type

    fields = []
    for f in struct.fields:
        try:
            fields.append(pa.field(f.name, to_arrow_type(f.dataType, timezone="UTC"), True))
        except Exception:  # noqa: BLE001 - pyspark raises several kinds for unsupported types
            if mark:
                fields.append(pa.field(f.name, pa.null(), True,
                                       metadata={UNCARRIED_TYPE: f.dataType.simpleString().encode()}))
                continue
            raise UnsupportedError.at(text, offset, f"Column '{f.name}' of {owner} has type "
                                      f"{f.dataType.simpleString()}, which cerql cannot carry through Arrow",
                                      "UNSUPPORTED_COLUMN_TYPE", hint) from None
    return pa.schema(fields)


def hidden_columns(plan: QueryPlan) -> dict[str, str]:
    """The Spark name of each stream column (see module docstring)."""
    return {c: f"{HIDDEN_COLUMN}{k}" for k, c in enumerate(plan.columns)}


def speller(names: Mapping[str, str]) -> Callable[[str], str]:
    """``names`` (stream column -> its name on Spark) looked up as an expression writes a column:
    the exact spelling first, else case-insensitively (the first column of that spelling, as
    planner/resolve.py reads it)."""
    lowered: dict[str, str] = {}
    for real, spelled in names.items():
        lowered.setdefault(real.lower(), spelled)
    return lambda name: names.get(name, lowered.get(name.lower(), name))


def spark_sql(tree: exp.Expression, source: str, spell: Callable[[str], str], qualify=None,
              bare: Mapping[str, str] | None = None, replaced: Mapping[int, str] | None = None) -> str:
    """Spark SQL of a predicate or SELECT expression: its text as the user wrote it in ``source``
    (parser/written.py: sqlglot's printing is not always the same expression), with every column
    spelled by ``spell`` (quoted), ``var.col`` turned into ``qualify(var).col`` when given, a bare
    name found in ``bare`` (a SELECT item's ``match_start``, PARTITION BY column or whole
    variable) as the column it maps to, and each node whose ``id`` is in ``replaced`` as that
    text (an aggregate's SQL over a variable's events)."""
    def replace(node: exp.Expression) -> str | None:
        if replaced and id(node) in replaced:
            return replaced[id(node)]
        if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
            return None
        if bare is not None and not node.table and node.name in bare:
            return quoted(bare[node.name])
        table = qualify(node.table) if (qualify and node.table) else None
        return (quoted(table) + "." if table else "") + quoted(spell(node.name))

    text = written.spark_text(tree, source, replace)
    if text is None:
        raise UnsupportedError(f"cerql cannot place every part of '{tree.sql(dialect='spark')}' in the text "
                               "it was written in", error_class="UNPLACED_EXPRESSION")
    return text


def expression_sql(o: OutputPlan, spell: Callable[[str], str], structs: Mapping[str, str],
                   schema: pa.Schema | None = None, results: Mapping[str, str] | None = None) -> str:
    """Spark SQL of a SELECT expression over the hidden struct columns of its variables
    (``structs``: variable -> column name) and the result columns it names bare (``results``:
    ``match_*`` and PARTITION BY columns as the plan names them -> column name). Each
    aggregate call is replaced in the sqlglot tree by its Spark SQL over the variable's events
    (planner/aggregates.py), as a raw-text node, so nothing inside the user's string literals is
    ever rewritten."""
    tree = o.sql.tree
    replaced = {}
    for call, a in zip(aggregates.calls(tree), o.aggregates):
        column = a.column.replace("`", "``") if a.column else None  # aggregates.spark_sql quotes it
        column_type = schema.field(a.column).type if (schema is not None and a.column) else None  # decimal avg's
        replaced[id(call)] = "(" + aggregates.spark_sql(a.kind, quoted(structs[a.var]), column, a.many, a.type,
                                                        column_type) + ")"
    bare = {}
    for col in tree.find_all(exp.Column):
        if not col.table and col.name in dict(o.expr_variables):
            bare[col.name] = structs[col.name]
        elif not col.table and results:
            found = [c for c in o.expr_results if c.lower() == col.name.lower()]
            if found:
                bare[col.name] = results[found[0]]
    return spark_sql(tree, o.sql.source, spell, qualify=lambda v: structs[v], bare=bare, replaced=replaced)


def predicate_trees(plan: QueryPlan) -> dict[str, ast.SqlExpr]:
    """Each unary FILTER predicate, keyed like ``plan.predicates``."""
    out: dict[str, ast.SqlExpr] = {}
    for node in ast.walk(plan.select.pattern):  # walk enters FILTER conditions too
        if isinstance(node, ast.VarPredicate):
            out.setdefault(node.predicate.text, node.predicate)
    return out


def spark_only_predicates(plan: QueryPlan) -> list[ast.SqlExpr]:
    """The unary FILTER predicates only Spark evaluates (planner/resolve.py left them None)."""
    out: dict[str, ast.SqlExpr] = {}
    for node in ast.walk(plan.select.pattern):
        if isinstance(node, ast.VarPredicate) and plan.predicates.get(node.predicate.text, True) is None:
            out.setdefault(node.predicate.text, node.predicate)
    return list(out.values())


def shown_names(plan: QueryPlan) -> dict[str, str]:
    """Hidden stream column names (``__cerql_c<k>``) -> the user's, for Spark's messages."""
    return {hidden: real for real, hidden in hidden_columns(plan).items()}


# -- step 1: the union of the sources
def source_field(name: str, fields: list, columns) -> int | None:
    """The index among a source's ``fields`` of the stream column ``name`` (one of ``columns``):
    the field spelled exactly so, else the one field equal to it case-insensitively when no
    other stream column is (the union is by name, case-insensitively: docs/semantics.md,
    "Names and sources")."""
    exact = [k for k, f in enumerate(fields) if f.name == name]
    if exact:
        return exact[0]
    if sum(c.lower() == name.lower() for c in columns) > 1:
        return None
    similar = [k for k, f in enumerate(fields) if f.name.lower() == name.lower()]
    return similar[0] if len(similar) == 1 else None


def _source_frame(plan: QueryPlan, src, frame, union: pa.Schema, spark_type):
    """One source as the stream's hidden columns, read by position, never by name. The row
    ordinal is ``monotonically_increasing_id`` on a table, a hash of the row on a stream (which
    has no input order to read, spark/streaming/)."""
    F = functions_for(frame)
    fields = frame.schema.fields
    frame = frame.toDF(*[f"{HIDDEN_INPUT}{k}" for k in range(len(fields))])
    columns = []
    for name, hidden in hidden_columns(plan).items():
        k = source_field(name, fields, plan.columns)
        target = spark_type(union.field(name).type)
        if k is None:
            columns.append(F.lit(None).cast(target).alias(hidden))
        else:
            column = F.col(f"{HIDDEN_INPUT}{k}")
            columns.append((column if fields[k].dataType == target else column.cast(target)).alias(hidden))
    if frame.isStreaming:  # the event time is hashable, so there is always a column to hash
        ordinal = F.xxhash64(*[F.col(f"{HIDDEN_INPUT}{k}") for k, f in enumerate(fields) if _hashable(f.dataType)])
    else:
        ordinal = F.monotonically_increasing_id()
    return frame.select(*columns, F.lit(src.index).cast("int").alias(SOURCE_COLUMN), ordinal.alias(ORDINAL_COLUMN))


def _hashable(data_type) -> bool:
    """Whether Spark's hash functions take a column of this type (they refuse maps)."""
    name = data_type.typeName()
    if name == "map":
        return False
    if name == "struct":
        return all(_hashable(f.dataType) for f in data_type.fields)
    if name == "array":
        return _hashable(data_type.elementType)
    return True


def spark_type(t: pa.DataType):
    """The Spark type of an Arrow type as cerql's results carry it: a timestamp without a zone
    is TIMESTAMP_NTZ, one with a zone TIMESTAMP."""
    from pyspark.sql.pandas.types import from_arrow_type

    return from_arrow_type(t, prefer_timestamp_ntz=not (pa.types.is_timestamp(t) and t.tz is not None))


def union_frames(plan: QueryPlan, frames: Mapping):
    """The stream (docs/language.md, "Events and the stream") as one DataFrame, with source and
    ordinal columns."""
    parts = [_source_frame(plan, src, frames[src.key], plan.schema, spark_type) for src in plan.sources]
    return reduce(lambda a, b: a.unionByName(b), parts)


def with_navigation(plan: QueryPlan, stream, text: str = "", streaming: bool = False):
    """The stream with each PREV/NEXT column (``plan.navigation``, planner/navigation.py), which
    holds the navigated column's own value, replaced by ``lag``/``lead`` of it over the
    PARTITION BY partition in the stream's order (ordering columns, source, ordinal), as
    exec/stream.py ``navigated`` computes it locally. A row with a NULL first ordering value is
    in no substream: it is its own window partition, so no other row reads it. A stream cannot
    do this (a row's NEXT is not known when the row arrives): a streaming query refuses it."""
    if not plan.navigation:
        return stream
    if streaming:
        first = plan.navigation[0]
        name = "PREV" if first.offset < 0 else "NEXT"
        raise UnsupportedError.at(text, first.at, f"{name} is not supported on a stream", "NAVIGATION_ON_STREAM",
                                  "run the query on a table (a batch DataFrame), or compute the neighbouring value "
                                  "as a column upstream")
    F = functions_for(stream)
    hidden = hidden_columns(plan)
    placed = F.col(hidden[plan.order_columns[0]]).isNull()
    window = (window_for(stream).partitionBy(*[F.col(hidden[c]) for c in plan.partition_columns], placed)
              .orderBy(*[F.col(hidden[c]) for c in plan.order_columns], F.col(SOURCE_COLUMN), F.col(ORDINAL_COLUMN)))
    shifted = {}
    for nav in plan.navigation:
        column = F.col(hidden[nav.column])
        shifted[hidden[nav.column]] = (F.lag(column, -nav.offset) if nav.offset < 0
                                       else F.lead(column, nav.offset)).over(window)
    return stream.withColumns(shifted)


# -- step 2: condition bits and row pruning
def _condition(F, plan: QueryPlan, cond, predicate_sql: Mapping[str, str]):
    if isinstance(cond, ast.Not):  # as the local engine's (exec/driver.condition_rows): NULL is false inside
        inner = _condition(F, plan, cond.atom, predicate_sql)
        if cond.condition is not None:
            inner = inner & _filter_column(F, cond.condition, predicate_sql)
        return ~inner
    if isinstance(cond, ast.Atom):
        terms = []
        for index, type_column, value in plan.atoms[cond].alternatives:
            term = F.col(SOURCE_COLUMN) == F.lit(index)
            if type_column is not None:
                term = term & (F.col(hidden_columns(plan)[type_column]).cast("string") == F.lit(value))
            terms.append(term)
        column = reduce(lambda a, b: a | b, terms)
    else:
        column = F.expr(predicate_sql[cond])
    return F.coalesce(column, F.lit(False))


def _filter_column(F, cond, predicate_sql: Mapping[str, str]):
    if isinstance(cond, ast.FilterAnd):
        return _filter_column(F, cond.left, predicate_sql) & _filter_column(F, cond.right, predicate_sql)
    if isinstance(cond, ast.FilterOr):
        return _filter_column(F, cond.left, predicate_sql) | _filter_column(F, cond.right, predicate_sql)
    return F.coalesce(F.expr(predicate_sql[cond.predicate.text]), F.lit(False))


def _bit(k: int) -> int:
    """Bit k of a signed 64-bit Spark long."""
    return _signed(1 << k)


def with_bits(plan: QueryPlan, stream, text: str = ""):
    """Add ``__cerql_bits``: bit k set when the row satisfies ``automaton.conditions[k]``. A
    predicate the local engine cannot run (None in ``plan.predicates``) is checked first by
    Spark's analyzer (spark/expressions.py); ``text`` is the query, for its errors."""
    F = functions_for(stream)
    spell = speller(hidden_columns(plan))
    trees = predicate_trees(plan)
    predicate_sql = {key: spark_sql(sql.tree, sql.source, spell) for key, sql in trees.items()}
    for predicate in spark_only_predicates(plan):
        expressions.check_builtins(stream.sparkSession, predicate, text)
        expressions.check_predicate(stream, F.expr(predicate_sql[predicate.text]), predicate, text,
                                    shown_names(plan))
    conditions = plan.automaton.conditions
    kind = "short" if len(conditions) <= 15 else "int" if len(conditions) <= 31 else "long"  # fewer bytes to Python
    terms = [F.when(_condition(F, plan, c, predicate_sql), F.lit(_bit(k))).otherwise(F.lit(0)).cast(kind)
             for k, c in enumerate(conditions)]
    bits = reduce(lambda a, b: a.bitwiseOR(b), terms) if terms else F.lit(0).cast(kind)
    return stream.withColumn(BITS_COLUMN, bits)


def _signed(mask: int) -> int:
    """A 64-bit mask as the signed long Spark holds."""
    return mask - (1 << 64) if mask >= 1 << 63 else mask


def _fires(F, masks: list[int]):
    """Whether a row's bits hold every bit of one of ``masks``."""
    fires = [F.col(BITS_COLUMN).bitwiseAND(F.lit(_signed(m))) == F.lit(_signed(m)) for m in masks]
    return reduce(lambda a, b: a | b, fires) if fires else F.lit(False)


def kept_rows(plan: QueryPlan, stream):
    """Drop rows that take part in no match, by the rule of ``cerql.exec.bits`` (the local
    engine's, in Spark columns): a NULL in one of its ``non_null_columns``; and, unless the
    query counts positions, rows with no mask of its ``firing_masks``. So most rows of a
    selective query never reach Python (the JVM-to-Python hop is most of the cost of a query on
    Spark; docs/benchmarks.md)."""
    F = functions_for(stream)
    hidden = hidden_columns(plan)
    keep = reduce(lambda a, b: a & b, [F.col(hidden[c]).isNotNull() for c in non_null_columns(plan)])
    masks = firing_masks(plan)
    if masks is not None:
        keep = keep & _fires(F, masks)
    return stream.filter(keep)


def positioned_rows(plan: QueryPlan, stream, keys: list, order: list):
    """For a query that counts positions (``cerql.exec.bits.gap_masks``): the stream shuffled
    and sorted as for any query, each row numbered by ``monotonically_increasing_id`` after the
    sort (consecutive numbers down the sorted rows of a task, so the differences between the
    rows of one substream are their distances in it), then only the rows that can fire a
    transition. The task puts the inert rows back as gaps (exec/task.py), so they never
    cross to Python. Cheaper than a ``row_number`` window, which sorts again (measured: 0.97
    against 0.89 of the bare shuffle, docs/benchmarks.md)."""
    F = functions_for(stream)
    stream = (stream.repartition(*keys) if keys else stream.repartition(1)).sortWithinPartitions(*order)
    stream = stream.withColumn(POSITION_COLUMN, F.monotonically_increasing_id())
    return stream.filter(_fires(F, gap_masks(plan)))


def with_rising_sums(plan: QueryPlan, stream):
    """Add ``__cerql_rising`` when the kernel checks a sum over a + variable: bit p set when
    check p's column is a non-negative number on every row, adding up to less than 2**62
    (registers.RegisterSpec.for_stream, the local engine's rule). Such a sum stays above a
    constant once above it, so the task lets its runs meet; without it they cannot, and may
    stop at TOO_MANY_RUNS_PER_EVENT where cerql.run answers. A one-row aggregate over the
    input, broadcast to every row: lazy, one more scan of the input, for these queries only."""
    candidates = RegisterSpec.rising_candidates(plan.registers)
    if not candidates:
        return stream
    F = functions_for(stream)
    hidden = hidden_columns(plan)
    terms = []
    for p, column in candidates:
        value = F.col(hidden[column]).cast("double")
        rises = ((F.min(value) >= 0) | F.min(value).isNull()) & (F.sum(F.isnan(value).cast("int")) == 0) & (
            F.coalesce(F.sum(value), F.lit(0.0)) < F.lit(2.0**62))
        terms.append(F.when(F.coalesce(rises, F.lit(False)), F.lit(1 << p)).otherwise(F.lit(0)))
    flags = stream.agg(reduce(lambda a, b: a.bitwiseOR(b), terms).cast("long").alias(RISING_COLUMN))
    return stream.crossJoin(F.broadcast(flags))


# -- step 4: the task plan and its output schema
def task_plan(plan: QueryPlan) -> TaskPlan:
    """What the Spark tasks run: the plan's :class:`cerql.plan.TaskPlan` part with variable
    outputs only (each variable a SELECT expression reads becomes a hidden struct of the columns
    it needs); no compiled predicates, no query AST."""
    outputs: list[OutputPlan] = []
    needed: dict[str, list[str]] = {}
    many: dict[str, bool] = {}
    whole: set[str] = set()  # read as a value (size(b), b[0].price): every column
    for o in plan.outputs:
        if o.var is not None:
            outputs.append(o)
        reads = [(var, col, False) for var, col in o.expr_columns]
        reads += [(a.var, a.column or plan.order_columns[0], a.many) for a in o.aggregates]
        reads += [(var, plan.order_columns[0], var_many) for var, var_many in o.expr_variables]
        whole.update(var for var, _ in o.expr_variables)
        for var, col, var_many in reads:
            cols = needed.setdefault(var, [])
            many[var] = many.get(var, False) or var_many
            if col not in cols:
                cols.append(col)
    for var, cols in needed.items():  # an array of structs for a variable that can hold several events
        shown = plan.shown_columns if var in whole else tuple(cols)
        outputs.append(OutputPlan(EXPR_STRUCT_PREFIX + var, var=var, columns=shown, many=many[var]))
    shared = {f.name: getattr(plan, f.name) for f in dataclasses.fields(TaskPlan)}
    return TaskPlan(**{**shared, "outputs": tuple(outputs)})


def shuffled_columns(plan: QueryPlan) -> list[str]:
    """Stream columns the tasks read: keys, ordering columns, the outputs' columns and those
    FILTER predicates across variables read (the task checks them, exec/post_filter.py)."""
    cols = list(plan.substream_columns) + list(plan.order_columns)
    for o in plan.outputs:
        if o.var is not None:
            cols += list(o.columns or plan.columns)
        else:
            cols += [c for _, c in o.expr_columns] + [a.column for a in o.aggregates if a.column]
            cols += list(plan.shown_columns) if o.expr_variables else []  # a variable read whole
    for cross in plan.cross_predicates.values():
        cols += [c for _, c in cross.columns] + [a.column for a in cross.aggregates if a.column]
    return list(dict.fromkeys(cols))


def output_schema(task: TaskPlan, schema):
    """Spark schema of the task's rows, from the Spark schema of its input."""
    from pyspark.sql.types import ArrayType, LongType, StructField, StructType

    field = {f.name: f for f in schema.fields}
    fields = [StructField(name, field[c].dataType, True)
              for c, name in zip(task.partition_columns, task.partition_result_names)]
    order = field[task.order_columns[0]].dataType
    fields += [StructField("match_id", LongType(), False), StructField("match_start", order, True),
               StructField("match_end", order, True)]
    for o in task.outputs:
        struct = StructType([StructField(c, field[c].dataType, True) for c in (o.columns or task.columns)])
        fields.append(StructField(o.name, ArrayType(struct, True) if o.many else struct, True))
    return StructType(fields)


def _matcher(task: TaskPlan, names: list[str], results: list[str]):
    """The function ``mapInArrow`` runs: batches whose columns are renamed by position to
    ``names`` (the real ones) through a MatchTask, results renamed by position to ``results``.
    A batch's results go back to the JVM in Arrow batches of at most ``CHUNK_ROWS`` rows and
    about ``CHUNK_BYTES`` bytes (spark/ipc.py), as the streaming stages' values do: results
    holding many events each (a Kleene variable over a long window) would otherwise be one
    Arrow batch of gigabytes in the JVM's memory (issue 38 item 4)."""
    from cerql.spark.ipc import CHUNK_BYTES, CHUNK_ROWS

    max_rows, max_bytes = CHUNK_ROWS, CHUNK_BYTES  # read here, on the driver: sent with the function

    def cerql_match(batches):  # the name shows in Spark's plan
        import pyarrow as pa  # on the executor

        from cerql.exec.task import MatchTask

        def renamed(out):
            rows = max(1, min(max_rows, max_bytes * out.num_rows // max(1, out.nbytes)))
            for b in out.to_batches(max_chunksize=rows):
                yield pa.RecordBatch.from_arrays(b.columns, names=results)

        matcher = MatchTask(task)
        for batch in batches:
            out = matcher.process(pa.RecordBatch.from_arrays(batch.columns, names=names))
            if out.num_rows:
                yield from renamed(out)

    return cerql_match


def _renamed(schema, names: list[str]):
    """A Spark StructType with its top-level fields renamed by position."""
    from pyspark.sql.types import StructField, StructType

    return StructType([StructField(n, f.dataType, f.nullable) for f, n in zip(schema.fields, names)])


# -- the whole pipeline
def lower(plan: QueryPlan, frames: Mapping, text: str = "", streaming=None):
    """The lazy Spark DataFrame of the query's results (see module docstring); ``text``, the
    query, places the errors of the expressions Spark's analyzer checks. With ``streaming``
    (a :class:`cerql.spark.streaming.StreamSettings`) the sources are streams and so are the
    results: a watermark of ``streaming.watermark_ms`` goes on the stream before any row is
    dropped (when the sources have none of their own: Spark allows one), no sum is known to
    rise (the input never ends), every row of a query that counts positions is sent, and the
    processor of ``streaming.match_stream`` takes the place of the shuffle, the sort and
    ``mapInArrow``."""
    stream = union_frames(plan, frames)
    hidden = hidden_columns(plan)
    if streaming is not None and streaming.watermark_ms is not None:
        stream = stream.withWatermark(hidden[plan.order_columns[0]], f"{streaming.watermark_ms} milliseconds")
    stream = with_navigation(plan, stream, text, streaming is not None)
    stream = with_bits(plan, stream, text)
    stream = kept_rows(plan, stream if streaming is not None else with_rising_sums(plan, stream))
    F = functions_for(stream)
    # with one source its position is always 0: the task assumes so when the column is absent
    ties = ([SOURCE_COLUMN] if len(plan.sources) > 1 else []) + [ORDINAL_COLUMN]
    extra = [RISING_COLUMN] if RISING_COLUMN in stream.columns else []
    keep = shuffled_columns(plan)
    stream = stream.select(*[F.col(hidden[c]) for c in keep], *[F.col(c) for c in ties + [BITS_COLUMN] + extra])
    keys = [F.col(hidden[c]) for c in plan.substream_columns]
    order = [F.col(hidden[c]) for c in plan.substream_columns + plan.order_columns] + [F.col(c) for c in ties]
    if streaming is None and gap_masks(plan) is not None:  # shuffled, sorted, numbered, then pruned
        stream = positioned_rows(plan, stream, keys, order)
        extra.append(POSITION_COLUMN)
    elif streaming is None:
        stream = (stream.repartition(*keys) if keys else stream.repartition(1)).sortWithinPartitions(*order)
    task = task_plan(plan)
    names = keep + ties + [BITS_COLUMN] + extra
    schema = output_schema(task, _renamed(stream.schema, names))
    results = [f"{HIDDEN_RESULT}{k}" for k in range(len(schema.fields))]
    if streaming is not None:
        matches = match_stream(task, stream, [hidden[c] for c in plan.substream_columns], names,
                               _renamed(schema, results), streaming)
    else:
        matches = stream.mapInArrow(_matcher(task, names, results), _renamed(schema, results))
    p = len(plan.partition_columns)
    if plan.limit is not None:
        order = results[:p] + [results[p + 2], results[p + 1], results[p]]  # match_end, _start, _id
        matches = matches.orderBy(*[F.col(c) for c in order]).limit(plan.limit)
    selected = [F.col(r).alias(f.name) for r, f in zip(results[:p + 3], schema.fields)]
    # the task's outputs follow: the variables in plan.outputs' order, then the hidden structs
    shown = iter(results[p + 3:])
    outputs = {id(o): next(shown) for o in plan.outputs if o.var is not None}
    structs = {o.var: next(shown) for o in task.outputs[len(outputs):]}
    spell = speller({c: c for c in plan.columns})  # the structs' fields have the real names
    named = dict(zip(["match_id", "match_start", "match_end"], results[p:p + 3]))
    named.update(zip(plan.partition_result_names, results[:p]))
    as_written = {**{c: f.name for c, f in zip(results, schema.fields)}, **{c: v for v, c in structs.items()}}
    for o in plan.outputs:
        if o.var is not None:
            selected.append(F.col(outputs[id(o)]).alias(o.name))
            continue
        column = F.expr(expression_sql(o, spell, structs, plan.schema, named))
        if o.expr is None:  # only Spark evaluates it: Spark's analyzer checks it now
            expressions.check_builtins(matches.sparkSession, o.sql, text)
            expressions.analyzed_type(matches, column, o.sql, text, as_written, "the SELECT item")
        selected.append(column.alias(o.name))
    return matches.select(*selected)
