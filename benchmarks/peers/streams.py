"""The generated streams every engine of the peer benchmark reads: stock trades and smart-plug loads.

Both have an integer ``ts`` so that a window means the same thing on every engine: CORE's
``WITHIN n [ts]`` needs an integer attribute, and Flink reads ``ts`` as milliseconds. Values are
rounded so that the CSV the external engines parse holds exactly what cerql sees. A ``Domain``
also says how to declare the stream to CORE and which columns Flink's table has.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_kernel import stock_table  # noqa: E402

HOUSEHOLDS = 17  # seed 001's house 28: 85 plugs in 17 households
PLUGS = 85
LOADS_PER_SECOND = 40
MEAN_LOAD = 47.0  # watts, exponential: about 20 % of readings are above seed 001's 76 W


@dataclass(frozen=True)
class Domain:
    name: str  # the source name in cerql queries
    columns: tuple[tuple[str, str], ...]  # (name, CORE type) after ``type``, in CSV order
    types: tuple[str, ...]  # event types (values of ``type``)
    ms_per_ts: int  # Flink reads ``ts`` as this many milliseconds

    def core_decl(self) -> str:
        attrs = ", ".join(f"{c}:{t}" for c, t in self.columns)
        return "CREATE STREAM S { " + ", ".join(f"EVENT {t} {{ {attrs} }}" for t in self.types) + " }"


STOCK = Domain("stock", (("name", "string"), ("price", "double"), ("volume", "int"), ("ts", "int")), ("BUY", "SELL"), 1)
PLUGS_DOMAIN = Domain("plugs", (("plug_id", "int"), ("household_id", "int"), ("value", "double"), ("ts", "int")),
                      ("LOAD",), 1000)
DOMAINS = {d.name: d for d in (STOCK, PLUGS_DOMAIN)}


def stock(rows: int, seed: int) -> pa.Table:
    """Seed 001's stock stream as ``bench_kernel`` generates it (ten tickers, BUY/SELL 1/2 each,
    price uniform on [0, 1000)), with ``ts`` = row number and prices rounded to cents."""
    t = stock_table(rows, seed)
    t = t.set_column(t.schema.get_field_index("price"), "price", pc.round(t.column("price"), 2))
    t = t.set_column(t.schema.get_field_index("ts"), "ts", pa.array(np.arange(rows, dtype=np.int64)))
    return t.select(["type"] + [c for c, _ in STOCK.columns])


def plugs(rows: int, seed: int) -> pa.Table:
    """Smart-plug load readings shaped like seed 001's DEBS 2014 house: 85 plugs in 17 households
    (plug p in household p // 5), 40 readings a second from 40 different plugs (``ts`` in
    seconds: a plug never has two readings with one ``ts``, so its readings have one order on
    every engine), loads exponential with mean 47 W (about 20 % above 76 W), to 0.01 W."""
    rng = np.random.default_rng(seed)
    seconds = -(-rows // LOADS_PER_SECOND)
    plug = np.argsort(rng.random((seconds, PLUGS)), axis=1)[:, :LOADS_PER_SECOND].ravel()[:rows]
    return pa.table({
        "type": pa.array(["LOAD"] * rows, pa.string()),
        "plug_id": pa.array(plug, pa.int64()),
        "household_id": pa.array(plug // (PLUGS // HOUSEHOLDS), pa.int64()),
        "value": np.round(rng.exponential(MEAN_LOAD, rows), 2),
        "ts": pa.array(np.arange(rows, dtype=np.int64) // LOADS_PER_SECOND),
    })


def generate(domain: str, rows: int, seed: int) -> pa.Table:
    return {"stock": stock, "plugs": plugs}[domain](rows, seed)
