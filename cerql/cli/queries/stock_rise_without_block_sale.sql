-- A rise of more than 1 % of one stock within a minute, with no block sale (a SELL of 1000
-- shares or more) from the first trade to the last: UNLESS drops every match whose interval
-- holds a match of its right side. NEXT keeps, per closing trade, the rise from the earliest
-- trade.
SELECT NEXT lo, hi FROM stock
WHERE ((BUY OR SELL) AS lo ; (BUY OR SELL) AS hi FILTER hi.price > lo.price * 1.01)
UNLESS (SELL FILTER SELL[volume >= 1000])
PARTITION BY [name]
WITHIN 1 MINUTE
