"""Rows packed by bucket for the stateful operator, and its results unpacked (see the package
docstring, "Rows travel packed"): the two stateless ``mapInArrow`` stages around it.
"""

from __future__ import annotations

import numpy as np

from cerql.spark.ipc import from_ipc, to_ipc
from cerql.spark.streaming.buckets import BUCKET_COLUMN

ROWS_COLUMN = "__cerql_rows"      # a key's rows of one input batch, as Arrow IPC


def pack(names: list[str]):
    """The ``mapInArrow`` function that packs each batch's rows by bucket (see the package
    docstring): one row per bucket of the batch, its number, then its rows as Arrow IPC, the
    columns before ``BUCKET_COLUMN`` named ``names``."""
    def cerql_pack(batches):  # the name shows in Spark's plan
        import pyarrow as pa  # on the executor

        for batch in batches:
            table = pa.Table.from_batches([batch])
            if table.num_rows == 0:
                continue
            bucket = table.column(BUCKET_COLUMN).to_numpy()
            order = np.argsort(bucket, kind="stable")
            bucket = bucket[order]
            bounds = np.concatenate([[0], np.flatnonzero(np.diff(bucket)) + 1, [len(bucket)]])
            rows = table.select(list(range(len(names)))).rename_columns(names).take(order)
            blobs = [to_ipc(rows.slice(a, b - a)) for a, b in zip(bounds[:-1], bounds[1:])]
            yield pa.RecordBatch.from_arrays([pa.array(bucket[bounds[:-1]], pa.int32()), pa.array(blobs, pa.binary())],
                                             names=[BUCKET_COLUMN, ROWS_COLUMN])

    return cerql_pack


def unpack(names: list[str]):
    """The ``mapInArrow`` function that unpacks the processor's results, renamed by position."""
    def cerql_unpack(batches):
        import pyarrow as pa  # on the executor

        for batch in batches:
            for blob in batch.column(0).to_pylist():
                if blob is None:
                    continue
                for b in from_ipc(blob).to_batches():
                    yield pa.RecordBatch.from_arrays(b.columns, names=names)

    return cerql_unpack
