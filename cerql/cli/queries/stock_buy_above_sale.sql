-- Buys above the sale before them: a SELL of a stock, then within ten seconds a BUY of the same
-- stock at a higher price. `b.price > s.price` compares two events of the match (docs/language.md,
-- "Predicates across variables and aggregates").
SELECT s.price AS sold_at, b.price AS bought_at, b.price - s.price AS markup
FROM stock
WHERE SELL AS s ; BUY AS b
FILTER b.price > s.price
PARTITION BY [name]
WITHIN 10 SECONDS
