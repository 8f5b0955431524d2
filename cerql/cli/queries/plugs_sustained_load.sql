-- Sustained load: three or more consecutive readings of one plug above 150 W within one
-- minute (`:` and `:+`: no lower reading of that plug in between). LAST keeps the longest
-- run ending at each reading.
SELECT LAST run FROM plugs
WHERE (plugs : plugs : plugs :+) AS run
FILTER run[load > 150]
PARTITION BY [household_id], [plug_id]
WITHIN 1 MINUTE
