"""State buckets: partition keys hashed into a fixed number of state keys (see the package
docstring, "State keys are buckets").

Why a copy of Spark's hash: the bucket of a key is computed by Spark (``hash`` and ``pmod``,
``with_bucket``), and the state key of each bucket is chosen so that Spark's hash partitioning
sends bucket b to state partition b (``bucket_values``), which needs the hash Spark applies to
an INT on this side.
"""

from __future__ import annotations

from cerql.spark.compat import functions_for

BUCKET_COLUMN = "__cerql_bucket"  # the state key a row's partition key hashes to


def murmur3_int(value: int, seed: int = 42) -> int:
    """Spark's ``hash()`` of an INT (Murmur3 x86 32-bit, seed 42), as a signed int: what its
    hash partitioning reads to place a row of ``groupBy`` on an INT column."""
    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF

    k = (value & 0xFFFFFFFF) * 0xCC9E2D51 & 0xFFFFFFFF
    k = rotl(k, 15) * 0x1B873593 & 0xFFFFFFFF
    h = rotl(seed ^ k, 13)
    h = (h * 5 + 0xE6546B64) & 0xFFFFFFFF
    h ^= 4
    h ^= h >> 16
    h = h * 0x85EBCA6B & 0xFFFFFFFF
    h ^= h >> 13
    h = h * 0xC2B2AE35 & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def bucket_values(buckets: int) -> list[int]:
    """The state key of each bucket: ``buckets`` distinct INTs that Spark's hash partitioning
    into ``buckets`` partitions sends to partitions 0, 1, ... in turn, so that with as many
    state partitions as buckets each partition holds one bucket (any other count only changes
    how evenly they spread)."""
    values, taken = [], set()
    for b in range(buckets):
        v = 0
        while v in taken or murmur3_int(v) % buckets != b:  # Python's % is Spark's pmod here
            v += 1
        values.append(v)
        taken.add(v)
    return values


def with_bucket(stream, key_columns: list[str], buckets: int):
    """``stream`` with ``BUCKET_COLUMN``: the state key its partition key hashes to. Floating
    keys are normalized first (-0.0 is 0.0, every NaN one NaN), as Spark groups them."""
    F = functions_for(stream)
    if not key_columns:
        return stream.withColumn(BUCKET_COLUMN, F.lit(0))
    keys = []
    for c in key_columns:
        col = F.col(c)
        if stream.schema[c].dataType.typeName() in ("float", "double"):
            col = F.when(F.isnan(col), F.lit(float("nan"))).when(col == 0, F.lit(0.0)).otherwise(col)
        keys.append(col)
    index = F.pmod(F.hash(*keys), F.lit(buckets))
    value = F.element_at(F.array(*[F.lit(v) for v in bucket_values(buckets)]), index + 1)
    return stream.withColumn(BUCKET_COLUMN, value.cast("int"))
