-- Seed 001, Figure 1, Q3: an upward trend of one stock: a trade below a low price, then
-- trades in a middle band, then a trade above it. MAX keeps, for each closing trade, the
-- trends no other trend ending there contains (mid as long as possible). The paper's bands
-- (100 and 2000) are narrowed to the demo's Amazon prices (1990 to 2000), and the window is
-- 7 trades of the same stock after the first.
SELECT MAX * FROM stock
WHERE (BUY OR SELL) AS low ; (BUY OR SELL)+ AS mid ; (BUY OR SELL) AS high
FILTER low[price < 1990] AND mid[price >= 1990]
   AND mid[price <= 2000] AND high[price > 2000]
PARTITION BY [name]
WITHIN 7 EVENTS
