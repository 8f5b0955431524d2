"""cerql.run's pandas result reads well (issue 34): timestamps inside variables' structs show as
timestamps, ``astype(str)`` and ``to_string()`` work on every result, a pandas NaN reads as NULL
(docs/semantics.md, "cerql.run builds its result with Arrow"; cerql/exec/output.py, to_pandas)."""

import pickle

import numpy as np
import pandas as pd
import pyarrow as pa

import cerql

EVENTS = pd.DataFrame({
    "ts": pd.to_datetime(["2026-11-23 10:00:00", "2026-11-23 10:00:01", "2026-11-23 10:00:02",
                          "2026-11-23 10:00:03"]),
    "type": ["A", "B", "B", "C"],
    "x": [1.0, float("nan"), 3.0, 4.0],  # the NaN is read as NULL
})
# one match per B run and one with C, so b (a list) can be empty and c (a struct) unbound
QUERY = ("SELECT a, b, c, collect_list(b.ts) AS times FROM s "
         "WHERE A AS a ; (B+ AS b OR C AS c) ORDER BY ts")
NANOS = str(pd.Timestamp("2026-11-23 10:00:01").value)  # 1795428001000000000: how pandas showed it


def result():
    out = cerql.run(QUERY, {"s": EVENTS})
    assert out["match_end"].tolist() == list(pd.to_datetime(
        ["2026-11-23 10:00:01", "2026-11-23 10:00:02", "2026-11-23 10:00:02", "2026-11-23 10:00:03"]))
    return out


def test_timestamps_inside_structs_and_lists_show_as_timestamps():
    out = result()
    for text in (out.to_string(), repr(out), out._repr_html_(), out["b"].to_string()):
        assert "2026-11-23 10:00:01" in text
        assert NANOS not in text
    lines = out.to_string().splitlines()
    assert len(lines) == 1 + len(out)  # a list cell stays on its row (it was a NumPy array's repr)
    assert ("[{'ts': 2026-11-23 10:00:01, 'type': 'B', 'x': None}, "
            "{'ts': 2026-11-23 10:00:02, 'type': 'B', 'x': 3.0}]") in lines[3]
    assert "<NA>" in lines[1]  # c unbound


def test_astype_str_works_on_every_column():
    out = result()
    text = out.astype(str)
    assert all(text[c].map(type).eq(str).all() for c in text.columns)
    assert text["b"].tolist() == [
        "[{'ts': 2026-11-23 10:00:01, 'type': 'B', 'x': None}]",
        "[{'ts': 2026-11-23 10:00:02, 'type': 'B', 'x': 3.0}]",
        "[{'ts': 2026-11-23 10:00:01, 'type': 'B', 'x': None}, {'ts': 2026-11-23 10:00:02, 'type': 'B', 'x': 3.0}]",
        "[]",
    ]
    assert text["a"][0] == "{'ts': 2026-11-23 10:00:00, 'type': 'A', 'x': 1.0}"
    assert text["c"].tolist() == ["<NA>"] * 3 + ["{'ts': 2026-11-23 10:00:03, 'type': 'C', 'x': 4.0}"]
    assert text["times"][2] == "[2026-11-23 10:00:01, 2026-11-23 10:00:02]"
    assert text["match_start"][0] == "2026-11-23 10:00:00"
    strings = out[["b", "c"]].astype("string")  # pandas' string dtype keeps NULL as NULL
    assert strings["b"][0] == text["b"][0] and strings["c"].isna().tolist() == [True] * 3 + [False]
    empty = cerql.run(QUERY.replace("ORDER BY", "FILTER a[x > 100] ORDER BY"), {"s": EVENTS})
    assert len(empty) == 0 and list(empty.columns)[-4:] == ["a", "b", "c", "times"]
    assert len(empty.astype(str)) == 0 and "Empty DataFrame" in empty.to_string()


def test_nan_reads_as_null_and_shows_as_none():
    """Documented: cerql reads a pandas NaN as NULL (as PySpark's Arrow path does), so the
    event whose x is NaN has x NULL (None in a cell, NA in a field, "None" in text) and fails
    x > 0 and x <= 0 alike."""
    out = result()
    assert out["b"][0][0]["x"] is None
    assert out["b"].list.flatten().struct.field("x").isna().sum() == 2  # the same event, twice
    assert out.astype(str)["b"][0] == "[{'ts': 2026-11-23 10:00:01, 'type': 'B', 'x': None}]"
    either = cerql.run("SELECT b FROM s WHERE B AS b FILTER b[x > 0 OR x <= 0] ORDER BY ts", {"s": EVENTS})
    assert [b["x"] for b in either["b"]] == [3.0]


def test_object_values_are_python_cells_with_timestamps():
    out = result()
    b = out["b"].to_numpy()
    assert b.dtype == object and b.shape == (4,)
    assert b[2] == [{"ts": pd.Timestamp("2026-11-23 10:00:01"), "type": "B", "x": None},
                    {"ts": pd.Timestamp("2026-11-23 10:00:02"), "type": "B", "x": 3.0}]
    assert isinstance(b[2], list) and b[3] == [] and b[0] == out["b"][0]
    row = next(out.iterrows())[1]
    assert row["a"]["ts"] == pd.Timestamp("2026-11-23 10:00:00") and row["c"] is pd.NA
    assert out.astype(object)["a"][0]["ts"] == pd.Timestamp("2026-11-23 10:00:00")


def test_nested_columns_stay_arrow_backed():
    """What the conversion keeps: pd.ArrowDtype equal to pandas' own (either way round), the
    .struct and .list accessors, pickling, concat, and the Arrow round trip."""
    out = result()
    arrow = cerql.run(QUERY, {"s": EVENTS}, output="arrow")
    for name in ("a", "b", "c", "times"):
        dtype = out[name].dtype
        assert isinstance(dtype, pd.ArrowDtype)
        plain = pd.ArrowDtype(arrow.schema.field(name).type)
        assert dtype == plain and plain == dtype and hash(dtype) == hash(plain) and dtype == str(plain)
    assert out["b"].list.len().tolist() == [1, 1, 2, 0]
    assert out["a"].struct.field("ts").tolist() == [pd.Timestamp("2026-11-23 10:00:00")] * 4
    assert out["b"].list.flatten().struct.field("x").isna().tolist() == [True, False, True, False]
    assert pa.Table.from_pandas(out, preserve_index=False).to_pylist() == arrow.to_pylist()
    again = pickle.loads(pickle.dumps(out))
    assert again.astype(str).equals(out.astype(str))
    both = pd.concat([out, out], ignore_index=True)
    assert len(both.astype(str)) == 8 and NANOS not in both.to_string()
    assert out["b"].to_numpy(dtype=np.dtype(object))[1][0]["x"] == 3.0
