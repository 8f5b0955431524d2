-- Seed 001, Figure 1, Q2: two trades (BUY or SELL) of the same stock and the same volume
-- within one minute; only the second trade of each pair is returned.
SELECT b FROM stock
WHERE (BUY OR SELL) AS s ; (BUY OR SELL) AS b
PARTITION BY [name], [volume]
WITHIN 1 MINUTE
