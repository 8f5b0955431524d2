"""Arrow IPC: the form a stream's rows travel in between Spark's stages and rest in its state.

Input: Arrow tables. Output: bytes for a BINARY value of Spark's rows, and back. Used by the
stages and the processor of spark/streaming/ and by its state (spark/streaming/state.py), and
for their sizes by the batch path's results (spark/lower.py).
"""

from __future__ import annotations

import io
from typing import Iterator

import pyarrow as pa

CHUNK_ROWS = 1 << 16  # rows per Arrow IPC value of results and of waiting rows, at most
CHUNK_BYTES = 8 << 20  # and bytes of Arrow data per value, at most (by the rows' average size)
MAX_VALUE_BYTES = (1 << 31) - (1 << 24)  # a BINARY value of Spark's rows stays below 2 GiB


def to_ipc(table: pa.Table, compressed: bool = False) -> bytes:
    """``table`` as Arrow IPC bytes; ``compressed`` (LZ4 frames, which ``from_ipc`` reads as
    well) for the rows the state holds: each micro-batch reads and writes them through the state
    API's socket and RocksDB, at a cost per byte far above LZ4's."""
    sink = io.BytesIO()
    options = pa.ipc.IpcWriteOptions(compression="lz4") if compressed else None
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return sink.getvalue()


def from_ipc(blob) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(blob)).read_all()


def chunks_ipc(table: pa.Table, rows: int = CHUNK_ROWS, compressed: bool = False,
               max_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """``table`` as Arrow IPC values of at most ``rows`` rows and about ``max_bytes`` bytes each
    (none when it is empty), made one at a time. Why bytes too: Spark gathers these values into
    Arrow batches in the JVM's direct memory (1 GiB by default) on their way between stages, and
    a batch of values grows to Spark's 64 MB batch limit plus one value, so the values, not the
    rows a micro-batch brings, must bound it; a value also stays far below the 2 GiB a BINARY
    value holds."""
    if table.num_rows:
        rows = max(1, min(rows, max_bytes * table.num_rows // max(1, table.nbytes)))
    for at in range(0, table.num_rows, rows):
        yield to_ipc(table.slice(at, rows), compressed)
