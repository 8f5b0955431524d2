-- A device switching on: a plug in standby (under 10 W), then readings of the same plug
-- above 76 W within 30 seconds. NEXT keeps one set of readings per closing reading.
SELECT NEXT * FROM plugs
WHERE plugs AS idle ; plugs+ AS running
FILTER idle[load < 10] AND running[load > 76]
PARTITION BY [plug_id]
WITHIN 30 SECONDS
