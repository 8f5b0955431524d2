"""The time units a window is written in, as microseconds (Spark's precision): the parser adds
them up (``WITHIN 1 MINUTE 30 SECONDS``), the printer writes microseconds back in them, and the
local engine measures DATE ordering values in days of them."""

MICROS_PER_UNIT = {
    "millisecond": 1_000,
    "second": 1_000_000,
    "minute": 60_000_000,
    "hour": 3_600_000_000,
    "day": 86_400_000_000,
}
