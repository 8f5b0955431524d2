"""What the kernel and the driver say to each other: status codes, strategy codes, and the named
slots of the int64 state vector ``st``.

The kernel keeps no state between calls: everything a batch leaves for the next (the position
in the substream, the arena's fill, the number of active runs, the event to resume at) lives in
``st``, which the driver owns and hands back on every call. Naming each slot here, once, lets
both sides read it without magic indices.
"""

from __future__ import annotations

from typing import NamedTuple

from numba import njit

from cerql.automaton import START  # noqa: F401  (re-exported: the START marker's label bit)


class Options(NamedTuple):
    """The query's settings the kernel reads, fixed for a whole run."""

    windowed: bool    # WITHIN: results start at window value >= the end's value - amount
    amount: object    # the window's size, in the window values' dtype
    strategy: int     # ALL, ANY, NEXT, LAST, MAX or STRICT
    consume: bool     # CONSUME BY: an event with results consumes the positions up to it
    max_matches: int  # maxMatchesPerEvent
    first_selected: bool  # every result selects its first event (its start is its smallest position)
    bounds_starts: bool   # the run of an UNLESS right side: it writes Events.bound instead of results
    max_work: int     # candidate events at one end event (candidate_events), 0: no such budget
    unless_bit: int   # the label of the left side of the one UNLESS inside the pattern (not under
                      # + or :+) of a post-filtered run, 0: none; enumeration cuts its failures
    ordered: int      # NEXT or LAST: a post-filtered run whose check decides among its candidates
                      # under that strategy (kernel/ordered.py), 0: none
    selected: int     # the label bits of the selected variables: the positions a data set holds
    plain: int        # Options.ordered: an end event with more candidates than this (or holding more
                      # than max_work events) hands them over in the strategy's order instead ...
    chunk: int        # ... this many first, then twice as many each time none passed


# How the phases run_batch calls per event are compiled. numba counts a reference to every array
# a function reads from its arguments, at each call; for a per-event phase that costs more than
# the event (5-20x on the bench_kernel families). The phases only read and write the elements of
# arrays the caller holds and allocate nothing (numba refuses to compile an allocation without
# its runtime, ``_nrt=False``), so they are compiled without reference counting.
PHASE = dict(nogil=True, cache=True, _nrt=False)

# status codes run_batch returns to the driver
DONE = 0              # every event of the batch is run
NEED_TRANSITION = 1   # the transition of state st[NEED_D] on symbol st[NEED_S] is not known yet
NEED_ARENA = 2        # the event needs st[BOUND] more arena nodes
NEED_OUTPUT = 3       # the results buffer is full: take the results, then call again
TOO_MANY = 4          # one event completes st[COUNT] > max_matches results
TOO_MANY_CANDIDATES = 5  # NEXT, LAST or MAX has st[COUNT] > candidate_limit candidates at one event
NEED_ACTIVE = 6       # room for st[BOUND] active runs is needed (registers)
TOO_MANY_RUNS = 7     # st[COUNT] > max_matches runs apart on register values after one event
OVERFLOW = 8          # an integer sum in FILTER left the BIGINT range
TOO_MANY_CANDIDATE_EVENTS = 9  # one end event's candidates hold st[WORK] > Options.max_work events
TOO_MANY_STEPS = 10   # NEXT's or LAST's search at one end event took st[WORK] > st[STEPS] steps
NEED_CHECK = 11       # Options.ordered: the buffer ends with the best data sets of event st[CURSOR]
                      # not handed over yet; the driver has them checked, and sets st[ORDER] to
                      # DECIDED when one passed (kernel/ordered.py)

# strategy codes
ALL, ANY, NEXT, LAST, MAX, STRICT = 0, 1, 2, 3, 4, 5

# slots of the int64 state vector ``st``
POS = 0        # position in the current substream of the event being run
CONSUMED = 1   # last position consumed by CONSUME BY (-1: none); results must start after it
ARENA = 2      # arena nodes in use (node 0 is BOTTOM)
NACT = 3       # active runs
NRES = 4       # results in the output buffer
NLAB = 5       # (position, label) pairs in the output buffer
CURSOR = 6     # the batch's next event to run
PENDING = 7    # 1: the event at CURSOR has stepped its runs, its results are still to enumerate
NEED_D = 8     # with NEED_TRANSITION: the deterministic state ...
NEED_S = 9     # ... and the symbol whose transitions are missing
COUNT = 10     # candidates of the event (NEXT, LAST, MAX), or the count a TOO_MANY status reports
BOUND = 11     # with NEED_ARENA, NEED_ACTIVE: how many nodes or runs the event needs
MOVING = 12    # active runs whose state is not a fixed point of the TRUE gaps
KMIN = 13      # MAX: the least ...
KMAX = 14      # ... and greatest size of the results kept so far for the event
FINALS = 15    # active runs in a final state (at most: compact may drop some); none: no results
STAMP = 16     # the last search stamp of selection.py (arena.seen); only grows
NSTART = 17    # start nodes (first events of results) numbered so far in the substream (arena.starts)
LIVE = 18      # no start numbered below this one is alive (NEXT's search moves it on)
MSTAMP = 19    # MAX: the stamp of the end event's position index (Output.idx_stamp); only grows
MINDEX = 20    # MAX: 1 while the index holds every position of the event's kept results
WORK = 21      # the events of the candidates enumerated at the event (Options.max_work), or
               # the steps of NEXT's and LAST's search at the event (selection.py)
STEPS = 22     # the steps NEXT's and LAST's search may take at one end event (search_steps)
HANDED = 23    # Options.ordered: the events of the candidates handed over at the event so far
ORDER = 24     # Options.ordered, at the event: 0 while its candidates are enumerated as they come;
               # k + 1 once k of its data sets (in the strategy's order) are handed over; DECIDED
ROUND = 25     # Options.ordered: how many times the event's data sets were handed over
STATE_SIZE = 26
DECIDED = -1   # st[ORDER]: the check found the event's match: nothing more is written for it

# what enumeration reports (TOO_MANY and TOO_MANY_CANDIDATES are shared with the statuses)
OK, FULL = 0, 1
OPEN = NEED_CHECK  # Options.ordered: more candidates at the event than Options.plain
# Options.plain: as they come, candidates cost least (no walk of the trie, no round trip to the
# check), so only an event whose candidates pass the events budget hands them over in order
ORDER_PLAIN = 1 << 62
ORDER_CHUNK = 1024  # Options.chunk: few enough that a check of them costs milliseconds
# NEXT, LAST and MAX choose among every result ALL would give at an end event. That number can
# grow exponentially with the events in reach (no WITHIN); past this many candidates per event
# (scaled by maxMatchesPerEvent) the run fails with an error instead of running for hours.
CANDIDATES_PER_MATCH = 100
MIN_CANDIDATES = 1_000_000


@njit(nogil=True, cache=True)
def candidate_limit(max_matches):
    return max(MIN_CANDIDATES, CANDIDATES_PER_MATCH * max_matches)


# Where candidates are enumerated and then checked (the post-filter's relaxed automaton, MAX
# with registers), what they cost is their size, not their number: a candidate of 20 events
# takes ~20 times the kernel's buffer and, as the Python objects the post-filter checks,
# ~500 bytes per event. So the events of one end event's candidates (each counts its path's
# nodes plus one) are bounded too: a fifth of the candidate limit (20 x maxMatchesPerEvent, at
# least 200 000: 2 000 000 by default, ~32 MB in the kernel's buffer, ~1 GB as Python objects).
CANDIDATE_EVENTS_DIVISOR = 5


@njit(nogil=True, cache=True)
def candidate_events(limit):
    """The events one end event's candidates may hold, for a candidate limit ``limit``
    (:func:`candidate_limit` of maxMatchesPerEvent)."""
    return limit // CANDIDATE_EVENTS_DIVISOR


@njit(nogil=True, cache=True)
def search_steps(max_matches):
    """The steps (nodes visited, positions compared) NEXT's and LAST's search for their match
    may take at one end event (kernel/selection.py): the candidate limit, 100 x
    maxMatchesPerEvent, at least 1 000 000 (10 000 000 by default, some 10-100 ms). The search is
    polynomial in the arena, which the window bounds; without WITHIN, or with a long one over
    runs kept apart by their registers, one end event's search could otherwise take seconds."""
    return candidate_limit(max_matches)
