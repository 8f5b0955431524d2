-- A large sale (500 shares or more) of a stock followed by buys of the same stock within
-- 10 seconds. NEXT keeps, for each closing buy, one set of events: the one that takes the
-- earliest trades.
SELECT NEXT * FROM stock
WHERE SELL AS s ; BUY+ AS b
FILTER s[volume >= 500]
PARTITION BY [name]
WITHIN 10 SECONDS
