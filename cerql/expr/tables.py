"""Input tables with the column types Spark's ``createDataFrame`` gives them.

Arrow has types Spark has not (dictionaries, half floats, date64, unsigned 64-bit integers):
before any expression reads a table, the engines convert those columns to the type Spark reads
them as (cerql.exec.stream), so that every engine sees one type per Spark type and the
expression families need handle Spark's types only.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from cerql.errors import UnsupportedError
from cerql.expr.kinds import BIGINT_MAX


def signed_columns(table: pa.Table) -> pa.Table:
    """Unsigned 64-bit columns as BIGINT, Spark's type for them (Spark has no unsigned types and
    ``createDataFrame`` reads a pandas uint64 column as bigint). Spark turns a value above
    2**63 - 1 into NULL without a word; cerql refuses it instead of losing it."""
    for k, field in enumerate(table.schema):
        if not pa.types.is_uint64(field.type):
            continue
        column = table.column(k)
        top = pc.max(column).as_py() if len(column) else None
        if top is not None and top > BIGINT_MAX:
            raise UnsupportedError(
                f"Column '{field.name}' is unsigned 64-bit and holds {top}, above BIGINT's maximum 2**63 - 1",
                error_class="UNSUPPORTED_COLUMN_TYPE", params={"column": field.name},
                hint="Spark has no unsigned 64-bit type (it would read the value as NULL): cast the column "
                     "to float64 or to a decimal before the query, or subtract an offset")
        table = table.set_column(k, field.with_type(pa.int64()), pc.cast(column, pa.int64()))
    return table


def spark_types(table: pa.Table) -> pa.Table:
    """The table's columns as Spark's ``createDataFrame`` types them, where Arrow has a type Spark
    has not: a dictionary column (a pandas ``category``) as its values' type, half floats as
    DOUBLE, date64 (milliseconds) as DATE (days; Spark's only date type), unsigned 64-bit as
    BIGINT (:func:`signed_columns`). Every engine then sees one type per Spark type."""
    for k, field in enumerate(table.schema):
        kind = field.type
        target = None
        if pa.types.is_dictionary(kind):
            kind = target = kind.value_type
        if pa.types.is_float16(kind):
            target = pa.float64()
        elif pa.types.is_date64(kind):
            target = pa.date32()
        if target is not None:
            column = table.column(k)
            if pa.types.is_dictionary(column.type):
                column = pc.cast(column, column.type.value_type)
            table = table.set_column(k, field.with_type(target), pc.cast(column, target, safe=False))
    return signed_columns(table)
