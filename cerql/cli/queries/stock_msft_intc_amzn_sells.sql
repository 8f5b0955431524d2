-- Seed 001, Figure 1, Q1: a sale of Microsoft above 100, then a sale of Intel (any price),
-- then a sale of Amazon below 2000, each possibly with other trades in between. The paper's
-- query has no window; one of 30 seconds keeps it to short-lived sell-offs (and small
-- enough for the reference engine).
SELECT * FROM stock
WHERE SELL AS msft ; SELL AS intel ; SELL AS amzn
FILTER msft[name = 'MSFT'] AND msft[price > 100]
   AND intel[name = 'INTC']
   AND amzn[name = 'AMZN'] AND amzn[price < 2000]
WITHIN 30 SECONDS
