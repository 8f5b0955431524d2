-- MATCH_RECOGNIZE: a dip then a climb (a V) in each stock's trade prices, three or more trades
-- down then three or more up, with where it started, its bottom and where it climbed back to.
SELECT m.name, m.start_ts, m.end_ts, m.start_price, m.bottom, m.end_price, m.downs, m.ups
FROM stock MATCH_RECOGNIZE (
  PARTITION BY name ORDER BY ts
  MEASURES FIRST(ts) AS start_ts, LAST(ts) AS end_ts, FIRST(price) AS start_price,
           LAST(DOWN.price) AS bottom, LAST(price) AS end_price,
           count(DOWN.*) AS downs, count(UP.*) AS ups
  PATTERN (STRT DOWN{3,} UP{3,})
  DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price)
) AS m
ORDER BY m.name, m.start_ts
