-- Seed 001, Appendix F, T3: one taxi's chain of trips where each trip starts where the
-- previous one ended: Park Slope to Midwood, Midwood to Gravesend, Gravesend to West
-- Brighton, within 10000 seconds (2.7 hours). A trip is a PICKUP directly followed (`:`) by
-- the same taxi's DROPOFF; the paper's first zone is replaced by a neighbour of Midwood.
SELECT * FROM trips
WHERE (PICKUP AS p1 : DROPOFF AS d1)
    ; (PICKUP AS p2 : DROPOFF AS d2)
    ; (PICKUP AS p3 : DROPOFF AS d3)
FILTER p1[zone = 'Park Slope'] AND d1[zone = 'Midwood']
   AND p2[zone = 'Midwood'] AND d2[zone = 'Gravesend']
   AND p3[zone = 'Gravesend'] AND d3[zone = 'West Brighton']
PARTITION BY [taxi_id]
WITHIN 10000 SECONDS
