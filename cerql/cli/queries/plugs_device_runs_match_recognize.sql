-- MATCH_RECOGNIZE: each run of a plug's device, a standby reading (under 10 W), three or more
-- readings above 50 W in a row, then standby again; the next run may start at that standby
-- reading (AFTER MATCH SKIP TO LAST STOP).
SELECT m.household_id, m.plug_id, m.started, m.stopped, m.readings, m.peak, m.avg_load
FROM plugs MATCH_RECOGNIZE (
  PARTITION BY household_id, plug_id ORDER BY ts
  MEASURES FIRST(RUN.ts) AS started, STOP.ts AS stopped, count(RUN.*) AS readings,
           max(RUN.load) AS peak, avg(RUN.load) AS avg_load
  AFTER MATCH SKIP TO LAST STOP
  PATTERN (IDLE RUN{3,} STOP)
  DEFINE IDLE AS IDLE.load < 10, RUN AS RUN.load > 50, STOP AS STOP.load < 10
) AS m
ORDER BY m.household_id, m.plug_id, m.started
