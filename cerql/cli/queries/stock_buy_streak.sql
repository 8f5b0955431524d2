-- Buying streaks: three or more consecutive BUY trades of one stock (no trade of that stock
-- in between, hence `:` and `:+`), each of at least 200 shares, within one minute. MAX keeps
-- the longest streak ending at each trade.
SELECT MAX run FROM stock
WHERE (BUY : BUY : BUY :+) AS run
FILTER run[volume >= 200]
PARTITION BY [name]
WITHIN 1 MINUTE
