-- Heavy buying runs: after a SELL of a stock, one or more BUYs of it with nothing of that stock
-- in between, adding up to at least 1500 shares. The FILTER's sum is over the run's buys
-- (docs/language.md, "Predicates across variables and aggregates").
SELECT s.price AS sell_price, count(b) AS buys, sum(b.volume) AS volume
FROM stock
WHERE SELL AS s : BUY :+ AS b
FILTER sum(b.volume) >= 1500
PARTITION BY [name]
WITHIN 1 MINUTE
