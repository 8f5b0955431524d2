-- Two plugs of one household both above 200 W within 10 seconds, in either order: ALL takes
-- a match of each side anywhere in the window, before, after or overlapping the other.
SELECT a, b FROM plugs
WHERE (plugs AS a ALL plugs AS b)
FILTER a[load > 200] AND b[load > 200] AND a.plug_id < b.plug_id
PARTITION BY [household_id]
WITHIN 10 SECONDS
