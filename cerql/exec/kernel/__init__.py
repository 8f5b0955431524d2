"""The compiled kernel: deterministic CEA runs over a time-ordered ECS, in numba.

Used by ``cerql.exec.driver`` (and :mod:`.gather` by ``cerql.exec.output``, :mod:`.aggregate` by
``cerql.exec.aggregate``), and the only package that imports numba. Every function is
``@njit(nogil=True, cache=True)`` over NumPy arrays and integers: no dicts, objects or Arrow.
One module per job: :mod:`.state` (statuses and the slots of the state vector the driver keeps),
:mod:`.arena` (the enumerable structure and its compaction), :mod:`.stepping` (the per-event
loop, :func:`run_batch`), :mod:`.enumeration`, :mod:`.selection` (LAST's winner, searched on the
arena) and :mod:`.strategies` (NEXT and MAX among an end event's candidates), :mod:`.registers`
(FILTER comparisons and aggregates checked as events are bound), :mod:`.gather` (the result
builder's per-variable gathering and match-id sums), :mod:`.aggregate` (the SELECT aggregates'
sums, min and max over many results at once).
Its arguments come in bundles (NamedTuples of arrays, which numba takes as they are), built
by the driver: :class:`Options`, :class:`Events`, :class:`Transitions`, :class:`RegisterPlan`,
:class:`Runs`, :class:`Arena`, :class:`Output`. This module re-exports what the driver reads.
The functions run_batch calls at each event are compiled without reference counting
(``state.PHASE``): with it a call costs more than the event.

numba's cache (``cache=True``) checks only the source file of the function it compiled, not
the files of the functions it calls: :func:`cerql.exec.kernel.cache.drop_stale` runs first and
drops the kernel's cache whenever any of these modules changed.
"""

from cerql.exec.kernel.cache import drop_stale

drop_stale()

from cerql.exec.kernel.arena import Arena, compact  # noqa: E402  (after drop_stale)
from cerql.exec.kernel.enumeration import Output
from cerql.exec.kernel.registers import (AGG_AVG, AGG_COUNT, AGG_COUNT_EVENTS, AGG_MAX, AGG_MIN, AGG_SUM,
                                         AGG_SUM_RISING, COMPARE, MAX_REGISTERS, OP_EQ, OP_GE, OP_GT, OP_LE, OP_LT,
                                         OP_NE, REGISTER_COLUMNS, RegisterPlan, Sides)
from cerql.exec.kernel.state import (ALL, ANY, ARENA, BOUND, CONSUMED, COUNT, CURSOR, DECIDED, DONE, LAST, MAX, NACT,
                                     NEED_ACTIVE, NEED_ARENA, NEED_CHECK, NEED_D, NEED_OUTPUT, NEED_S,
                                     NEED_TRANSITION, NEXT, NLAB, NRES, ORDER, ORDER_CHUNK, ORDER_PLAIN, OVERFLOW,
                                     POS, STATE_SIZE, STRICT, TOO_MANY, TOO_MANY_CANDIDATE_EVENTS,
                                     TOO_MANY_CANDIDATES, TOO_MANY_RUNS, TOO_MANY_STEPS, WORK, Options,
                                     candidate_events, candidate_limit, search_steps)
from cerql.exec.kernel.stepping import Events, Runs, Transitions, run_batch
from cerql.exec.kernel.strategies import INDEX

__all__ = [
    "Arena", "Events", "Options", "Output", "RegisterPlan", "Runs", "Sides", "Transitions", "AGG_AVG", "AGG_COUNT",
    "AGG_COUNT_EVENTS", "AGG_MAX", "AGG_MIN", "AGG_SUM", "AGG_SUM_RISING", "ALL", "ANY", "ARENA", "BOUND", "INDEX",
    "COMPARE", "CONSUMED", "COUNT", "CURSOR", "DECIDED", "DONE", "LAST", "MAX", "MAX_REGISTERS", "NACT",
    "NEED_ACTIVE", "NEED_ARENA", "NEED_CHECK", "NEED_D", "NEED_OUTPUT", "NEED_S", "NEED_TRANSITION", "NEXT", "NLAB",
    "NRES", "OP_EQ", "OP_GE", "OP_GT", "OP_LE", "OP_LT", "OP_NE", "ORDER", "ORDER_CHUNK", "ORDER_PLAIN", "OVERFLOW",
    "POS", "REGISTER_COLUMNS", "STATE_SIZE", "STRICT", "TOO_MANY", "TOO_MANY_CANDIDATE_EVENTS", "TOO_MANY_CANDIDATES",
    "TOO_MANY_RUNS", "TOO_MANY_STEPS", "WORK", "candidate_events", "candidate_limit", "search_steps", "compact",
    "run_batch",
]
