"""Arrow IPC: the form a stream's rows travel in between Spark's stages and rest in its state.

Input: Arrow tables. Output: bytes for a BINARY value of Spark's rows, and back. Used by the
stages and the processor of spark/streaming.py and by the state of spark/stream_state.py.
"""

from __future__ import annotations

import io

import pyarrow as pa

CHUNK_ROWS = 1 << 16  # rows per Arrow IPC value of results and of waiting rows
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


def chunks_ipc(table: pa.Table, rows: int = CHUNK_ROWS, compressed: bool = False) -> list[bytes]:
    """``table`` as Arrow IPC values of at most ``rows`` rows each (none when it is empty), so
    that no value of Spark's rows nears the 2 GiB a BINARY value can hold."""
    return [to_ipc(table.slice(at, rows), compressed) for at in range(0, table.num_rows, rows)]
