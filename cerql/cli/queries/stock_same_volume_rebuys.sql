-- A sale, then within a minute a buy of the same stock for the same volume. `s.volume = b.volume`
-- ties both events to one volume, so cerql runs it as if it were also partitioned by volume (a
-- hidden key, not a result column) instead of checking every sale/buy pair: docs/semantics.md,
-- "Equalities across variables run as partitioning".
SELECT s.price AS sold_at, b.price AS bought_at, b.volume AS volume
FROM stock
WHERE SELL AS s ; BUY AS b
FILTER s.volume = b.volume
PARTITION BY [name]
WITHIN 1 MINUTE
