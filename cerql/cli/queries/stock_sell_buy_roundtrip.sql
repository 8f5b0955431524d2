-- Round trips: a sale of at least 500 shares, then a buy of at least 500 shares of the same
-- stock within 20 seconds. CONSUME BY PARTITION uses each trade in at most one round trip
-- per stock; LIMIT returns the first 10 (by stock, then end time).
SELECT s, b FROM stock
WHERE SELL AS s ; BUY AS b
FILTER s[volume >= 500] AND b[volume >= 500]
PARTITION BY [name]
WITHIN 20 SECONDS
CONSUME BY PARTITION
LIMIT 10
