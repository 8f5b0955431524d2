-- Airport runs: a pickup directly followed (`:`) by the same taxi's drop-off at JFK Airport
-- within 90 minutes; only the zone, time and fare columns of the two events are returned.
SELECT p[zone, ts], d[zone, fare, ts] FROM trips
WHERE PICKUP AS p : DROPOFF AS d
FILTER d[zone = 'JFK Airport']
PARTITION BY [taxi_id]
WITHIN 90 MINUTES
