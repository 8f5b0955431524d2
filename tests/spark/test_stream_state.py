"""The kept rows of a streaming bucket (spark/streaming/state.py), on an in-memory handle: under a
time window without CONSUME BY a call stores only its new rows and drops the chunks the window
left, and what a later call loads is exactly the rows the window still reaches; otherwise, and
once too many chunks piled up, the chunks are written anew."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import cerql

from cerql.spark.streaming import state as stream_state
from cerql.spark.streaming.state import KeptStore


class _Value:
    def __init__(self):
        self.value = None

    def get(self):
        return self.value

    def exists(self):
        return self.value is not None

    def update(self, value):
        self.value = value

    def clear(self):
        self.value = None


class _Map:
    def __init__(self):
        self.entries, self.writes = {}, 0

    def values(self):
        return iter(list(self.entries.values()))

    def updateValue(self, key, value):
        self.entries[key] = value
        self.writes += 1

    def removeKey(self, key):
        del self.entries[key]

    def clear(self):
        self.entries.clear()


class _Handle:
    def __init__(self):
        self.values, self.map = {}, _Map()

    @property
    def value(self):
        return self.values.setdefault("meta", _Value())

    def getValueState(self, name, schema):
        return self.values.setdefault(name, _Value())

    def getMapState(self, name, key_schema, schema):
        return self.map


def _time(table: pa.Table) -> np.ndarray:
    return table.column("t").to_numpy()


def _rows(times) -> pa.Table:
    return pa.table({"t": pa.array(times, pa.int64())})


def _store(window, appends=True):
    handle = _Handle()
    return handle, KeptStore(handle, _time, window, appends)


def _no_check(rows, size):
    raise AssertionError("no chunk is that large here")


def test_a_time_window_appends_chunks_and_loads_what_it_still_reaches():
    handle, store = _store(window=10)
    before = store.load()
    assert not before.found and before.rows is None
    store.save(before, _rows([1, 5]), _rows([1, 5]), done=6, buckets=4, check=_no_check)
    before = store.load()
    assert before.rows.column("t").to_pylist() == [1, 5] and before.done == 6 and before.buckets == 4
    # at edge 14 row 1 left the window (14 - 10 = 4): the caller keeps [5, 12], 12 new
    store.save(before, _rows([5, 12]), _rows([12]), done=14, buckets=4, check=_no_check)
    assert len(handle.map.entries) == 2 and handle.map.writes == 2  # the first chunk stays: 5 is in it
    assert sorted(store.load().rows.column("t").to_pylist()) == [5, 12]  # 1 dropped on reading
    # at edge 30 the first chunk (newest 5) and the second (newest 12) are out
    before = store.load()
    store.save(before, _rows([25]), _rows([25]), done=30, buckets=4, check=_no_check)
    assert len(handle.map.entries) == 1 and store.load().rows.column("t").to_pylist() == [25]
    store.clear(store.load())
    assert handle.map.entries == {} and handle.value.value is None and not store.load().found


def test_chunks_are_written_anew_when_rows_leave_for_other_reasons_or_pile_up(monkeypatch):
    handle, store = _store(window=None, appends=False)  # n EVENTS: a key keeps its last rows
    store.save(store.load(), _rows([1, 2, 3]), _rows([1, 2, 3]), done=4, buckets=1, check=_no_check)
    store.save(store.load(), _rows([2, 3, 4]), _rows([4]), done=5, buckets=1, check=_no_check)
    assert len(handle.map.entries) == 1 and store.load().rows.column("t").to_pylist() == [2, 3, 4]

    monkeypatch.setattr(stream_state, "MAX_CHUNKS", 3)
    handle, store = _store(window=1_000)
    kept = []
    for t in range(6):
        kept.append(t)
        store.save(store.load(), _rows(kept), _rows([t]), done=t + 1, buckets=1, check=_no_check)
        assert len(handle.map.entries) <= 4  # three chunks, then one written anew, and so on
        assert sorted(store.load().rows.column("t").to_pylist()) == kept


def test_a_checkpoint_in_the_earlier_layout_is_refused():
    """cerql stored a bucket's kept rows as one value before chunks; a query restarted from
    such a checkpoint would read its waiting rows but not its kept ones, and lose the matches
    those take part in without a word."""
    handle, store = _store(window=10)
    handle.getValueState(stream_state.LEGACY_NAME, stream_state.LEGACY_SCHEMA).update((b"rows", 4, 6))
    with pytest.raises(cerql.CeqlError) as err:
        store.load()
    assert err.value.error_class == "STREAM_STATE_LAYOUT_CHANGED" and "new checkpoint" in err.value.hint
