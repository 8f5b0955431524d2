-- A buy of 1000 shares right after a quiet spell: up to three trades of the same stock in a
-- row, none of them a sale of 500 shares or more (NOT takes one event that the atom with its
-- FILTER does not match). LAST keeps the longest spell before each buy.
SELECT LAST quiet, b FROM stock
WHERE NOT (SELL FILTER SELL[volume >= 500]) :+ AS quiet : BUY AS b
FILTER b[volume = 1000]
PARTITION BY [name]
WITHIN 3 EVENTS
