-- Seed 001, Appendix E, H3: readings above the average load (76 W) in household 0, then
-- household 2, then household 4, within 10 seconds. The atom `plugs` names the source, so
-- it matches every reading; l holds all three readings, so l[load > 76] checks each of them.
SELECT * FROM plugs
WHERE (plugs AS l1 ; plugs AS l2 ; plugs AS l3) AS l
FILTER l[load > 76]
   AND l1[household_id = 0] AND l2[household_id = 2] AND l3[household_id = 4]
WITHIN 10 SECONDS
