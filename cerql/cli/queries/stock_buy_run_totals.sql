-- Buying runs after a sale: a SELL of a stock followed at once by one or more BUYs of it (`:`
-- and `:+`, so nothing of that stock trades in between), within one minute. Each buy of the
-- run ends one result, which sums up the run so far with aggregates (docs/language.md, "SELECT").
SELECT s.price AS sell_price, count(b) AS buys, sum(b.volume) AS volume,
       avg(b.price) AS avg_buy_price, max(b.price) - s.price AS max_gain
FROM stock
WHERE SELL AS s : BUY :+ AS b
PARTITION BY [name]
WITHIN 1 MINUTE
