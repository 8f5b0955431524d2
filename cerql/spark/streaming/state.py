"""Where a streaming bucket's kept rows rest between micro-batches (spark/streaming/processor.py).

Input: the handle of :class:`cerql.spark.streaming.processor.MatchProcessor` and, per call, the rows a
bucket keeps. Output: those rows again at the bucket's next call.

Why this shape: at each micro-batch in which its keys get rows, a bucket runs its kept rows
again with the new ones and keeps those a later match can reach. Through pandas' state API a
value costs far more per byte to load and store (pickled, sent over a socket, written to
RocksDB) than the rows cost to match: with a one-hour window over 1M-row micro-batches,
loading and storing the whole kept table was most of a micro-batch. So:

- Rows rest as chunks of Arrow IPC in a MapState, one (or a few, ``CHUNK_ROWS``) per call
  that kept new rows. Under a time window without CONSUME BY, rows leave only when the window
  passes them, so a call appends the chunk of its new rows and removes the chunks whose newest
  row left the window; the rows of a chunk partly out are dropped when it is read (by
  ``done``, the edge the bucket processed to). Otherwise (``n EVENTS`` keeps a key's last
  rows, CONSUME BY drops those before a key's last match), and whenever more than
  ``MAX_CHUNKS`` chunks have piled up, the chunks are written anew.
- A small ValueState (``meta``) holds the chunk index (id, newest event time), the bucket
  count the rows were hashed by, and ``done``.

Loading still reads every chunk: a worker cannot keep the rows in memory for the bucket's next
call, since Spark gives a partition's next micro-batch to whichever of its Python workers is
free (measured: the two buckets of a local[2] stream changed workers at most micro-batches).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from cerql.errors import UnsupportedError
from cerql.exec.window import reachable
from cerql.spark.ipc import MAX_VALUE_BYTES, from_ipc, to_ipc

META_SCHEMA = "buckets INT, done BIGINT, chunks BINARY, next_chunk BIGINT"  # chunks: the index, int64 pairs
CHUNK_KEY_SCHEMA = "chunk BIGINT"
CHUNK_SCHEMA = "rows BINARY, newest BIGINT"  # Arrow IPC rows, and the newest event time among them (µs)
# the kept rows as cerql stored them before chunks: one value per bucket. A checkpoint that holds
# one is refused (its rows would be lost without a word, and with them the matches they take part in)
LEGACY_NAME, LEGACY_SCHEMA = "kept", "rows BINARY, buckets INT, done BIGINT"
MAX_CHUNKS = 64  # chunks of a bucket before they are written anew as few
CHUNK_ROWS = 1 << 20  # rows per stored chunk: a value far below the 2 GiB Spark's rows hold


@dataclass
class Kept:
    """A bucket's kept state as a call finds it."""

    found: bool                   # the bucket has state
    rows: pa.Table | None         # its kept rows (None: none)
    done: int | None              # every row before it (µs) was processed
    buckets: int | None           # the bucket count its rows were hashed by
    index: np.ndarray             # (chunk id, newest µs) per stored chunk
    next_chunk: int = 0


class KeptStore:
    """The kept rows of a query's buckets, through one processor's handle (see module
    docstring); each call is for the bucket Spark set as the handle's key. ``time`` gives a
    table's event times (µs); ``window`` is a time window's length in µs, or None under
    ``n EVENTS``; ``appends`` says whether rows leave only as the time window passes them
    (no CONSUME BY)."""

    def __init__(self, handle, time, window: int | None, appends: bool):
        self.meta = handle.getValueState("meta", META_SCHEMA)
        self.chunks = handle.getMapState("chunks", CHUNK_KEY_SCHEMA, CHUNK_SCHEMA)
        self.legacy = handle.getValueState(LEGACY_NAME, LEGACY_SCHEMA)
        self.time, self.window = time, window
        self.appends = appends and window is not None

    def load(self) -> Kept:
        meta = self.meta.get()
        if meta is None:
            if self.legacy.exists():
                raise UnsupportedError("[STREAM_STATE_LAYOUT_CHANGED] The stream's checkpoint holds state in the "
                                       "layout of an earlier cerql version",
                                       error_class="STREAM_STATE_LAYOUT_CHANGED",
                                       hint="start the query with a new checkpoint location (its matches so far "
                                            "are in the sink already), or finish it with the cerql version that "
                                            "wrote the checkpoint")
            return Kept(False, None, None, None, np.zeros((0, 2), np.int64))
        buckets, done, chunks, next_chunk = meta
        index = np.frombuffer(chunks, np.int64).reshape(-1, 2) if chunks else np.zeros((0, 2), np.int64)
        parts = [from_ipc(blob) for blob, _ in self.chunks.values()] if len(index) else []
        rows = pa.concat_tables(parts) if parts else None
        if rows is not None and self.window is not None:  # rows of chunks partly out of the window
            keep = reachable(self.time(rows), done, self.window)
            rows = rows if keep.all() else rows.filter(pa.array(keep))
        rows = rows if rows is not None and rows.num_rows else None
        return Kept(True, rows, done, buckets, index, next_chunk)

    def save(self, before: Kept, rows: pa.Table | None, added: pa.Table | None, done: int,
             buckets: int, check) -> None:
        """Store ``rows``, the bucket's kept rows now, of which ``added`` came since ``before``
        was loaded (the others are ``before.rows`` less those the window left behind ``done``);
        ``check(rows, bytes)`` refuses a chunk too large for a value of Spark's rows."""
        index, next_chunk = before.index, before.next_chunk
        if self.appends and len(index) < MAX_CHUNKS:
            out = ~reachable(index[:, 1], done, self.window)  # every row of these left the window
            for chunk in index[out, 0]:
                self.chunks.removeKey((int(chunk),))
            index = index[~out]
            new = added
        else:
            if len(index):
                self.chunks.clear()
            index = np.zeros((0, 2), np.int64)
            new = rows
        entries = [index]
        if new is not None and new.num_rows:
            for at in range(0, new.num_rows, CHUNK_ROWS):
                part = new.slice(at, CHUNK_ROWS)
                blob = to_ipc(part, compressed=True)
                if len(blob) > MAX_VALUE_BYTES:
                    check(part.num_rows, len(blob))
                newest = int(self.time(part).max())
                self.chunks.updateValue((next_chunk,), (blob, newest))
                entries.append(np.array([[next_chunk, newest]], np.int64))
                next_chunk += 1
        index = np.concatenate(entries)
        self.meta.update((buckets, done, index.tobytes(), next_chunk))

    def clear(self, before: Kept) -> None:
        if len(before.index):
            self.chunks.clear()
        self.meta.clear()
