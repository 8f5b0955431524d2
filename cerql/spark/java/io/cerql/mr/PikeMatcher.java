package io.cerql.mr;

import java.io.Serializable;
import java.util.ArrayDeque;

/**
 * The MATCH_RECOGNIZE matcher for row-local DEFINEs inside Spark's JVM: a Pike VM over one ordered
 * partition, fed a row at a time, for AFTER MATCH SKIP PAST LAST ROW and TO NEXT ROW.
 *
 * <p>It follows the semantics of cerql/exec/kernel/pike.py (its module docstring says why they
 * are right): threads in priority order (earlier start first, then preference order); at each
 * position only the first thread to reach an NFA state is kept; an ACCEPT cuts the less preferred
 * threads of its start and, PAST LAST ROW, the threads after it of the starts before the match's
 * end; a state already reached from which ACCEPT is reachable without a row ({@code nullable})
 * still gives a later start its match there; a start row's match is final once none of its
 * threads is left, and matches are handed out in start order as soon as they are final. The NFA
 * and its tables are cerql/mr_plan.py's, encoded by cerql/spark/mr_jvm_nfa.py.
 *
 * <p>Two differences, both for a stream of rows of unknown length. Threads carry registers (the
 * first or last row over the rows of some variables, a count, a classifier) instead of a path:
 * what a match's measures need, a few longs per thread. And the epsilon closure at a position is
 * run when the next row arrives or the partition ends, since only then is it known whether
 * {@code $} holds there; a thread that consumed a row waits in the "stepped" list until then. The
 * closures of one position still run in the kernel's order (the stepped threads in priority
 * order, then the new start), so every decision is the kernel's; a match ending before row p is
 * known when row p arrives (or the partition ends).
 *
 * <p>Start rows are kept, in order, only while they can still matter (threads left, or a match
 * waiting for an earlier start to be decided): memory follows the live threads and pending matches,
 * not the partition. The values FIRST and LAST report are kept once per row, for the rows from
 * the first undecided start on (a register holds a row's position): the span a caller already
 * bounds with {@link #undecidedFrom()}.
 *
 * <p>TO NEXT ROW (pike.py's module docstring says why): an ACCEPT cuts every thread after it in
 * its round and no later start is begun; once a start's match is decided the search restarts at
 * the row after that start, every thread dropped, since threads of later starts may have been
 * dropped in favour of threads of the decided one. The rows from there on have already come, so
 * the matcher keeps each row's DEFINE bits over the same span as the values (from the first
 * undecided start on) and replays them: the work is the rows plus, per match, its length and how
 * far its preferred threads looked past its end.
 *
 * <p>Why this shape (it runs once per row of the input): the closures follow walks precomputed
 * per state (no stack), a row is handed to the threads in the same pass that makes them, a
 * thread is copied as a few longs (copying object references costs the collector's write
 * barrier), a row touches only the registers of its variable, and a COUNT of every variable's
 * rows is the match's length, not counted.
 */
public final class PikeMatcher implements Serializable {
    private static final long serialVersionUID = 1L;

    // state kinds (cerql/mr_plan.py)
    static final int CONSUME = 0;
    static final int SPLIT = 1;
    static final int ANCHOR_START = 2;
    static final int ANCHOR_END = 3;
    static final int ACCEPT = 4;
    // anchors that hold at a position: bits of the nullable column (cerql/mr_plan.py)
    private static final int AT_START = 1;
    private static final int AT_END = 2;

    /** Register kinds (cerql/spark/mr_jvm_nfa.py, Register). */
    public static final int FIRST = 0;
    public static final int LAST = 1;
    public static final int COUNT = 2;
    public static final int CLASSIFIER = 3;

    /** AFTER MATCH SKIP modes (cerql/mr_plan.py). */
    public static final int PAST_LAST_ROW = 0;
    public static final int TO_NEXT_ROW = 1;

    private final int skip;        // PAST_LAST_ROW or TO_NEXT_ROW
    // the NFA
    private final int nStates;
    private final int nVars;
    private final int startState;
    private final int[] kind;
    private final int[] var;       // CONSUME: the variable of the state's label; else -1
    private final int[] nullable;  // bit a: ACCEPT reachable without a row where anchors a hold
    private final int[] outStart;  // successors of s: out[outStart[s] .. outStart[s + 1]]
    private final int[] out;
    // the epsilon closures' depth-first walks, built from the NFA (cerql/mr_plan.py, Nfa.walks): the
    // walk from root r where anchors a hold is walkState[walkStart[r * 4 + a] .. walkStart[r * 4 + a + 1]],
    // the states in the order the walk meets them; walkSkip[e] is where the walk goes on when the state
    // of entry e was reached already (past the states the walk lists below it)
    private final int[] walkStart;
    private final int[] walkState;
    private final int[] walkSkip;
    // the registers
    private final int nReg;
    private final int[] regKind;
    private final long[] regMask;
    private final int[] regColumn;
    // where a thread keeps register r: at num[regAt[r]] (FIRST / LAST: the row's position + 1,
    // 0 before any; COUNT: the count; CLASSIFIER: the variable + 1); -1 for a COUNT of every
    // variable's rows, which is the match's length
    private final int[] regAt;
    private final int nNum;
    // the columns FIRST / LAST read, each once: the matcher keeps their values of the recent rows;
    // register r reads valueColumns[regValue[r]]
    private final int[] valueColumns;
    private final int[] regValue;
    // per variable, what its rows change: (kind, regAt) pairs, only the registers whose mask has
    // the variable
    private final int[][] seeOps;

    /** The matcher's state within a partition: built on the first begin() (also after the matcher
     *  was shipped to an executor). */
    private transient Work w;

    /** Threads: an NFA state, the slot of the thread's start row, and its registers at
     *  {@code num[i * nNum ..]} (regAt). */
    private static final class Threads {
        int n;
        final int[] state;
        final int[] slot;
        final long[] num;

        Threads(int capacity, int nNum) {
            state = new int[capacity];
            slot = new int[capacity];
            num = new long[capacity * nNum];
        }
    }

    /** Everything that changes while a partition runs. */
    private static final class Work {
        Threads stepped;          // threads that consumed row p - 1, their closure not yet followed
        Threads next;             // the round at p: the threads that took row p, in priority order
        final long[] visited;     // the closure round that last reached each state
        long gen;                 // the current closure round
        long p;                   // the next row of the partition
        long cut;                 // in this round, threads after this point with a start below it are cut
        long floor;               // no start row below this is begun (TO NEXT ROW: none after an ACCEPT)
        boolean open;             // begin() was called, end() not yet
        // start rows, by slot: the row, its live threads, its best match so far and its registers
        long[] slotStart = new long[0];
        int[] slotCnt = new int[0];
        long[] slotEnd = new long[0];
        long[] slotNum = new long[0];
        int[] free = new int[0];  // the free slots
        int nFree;
        // the slots of the start rows still undecided, in start order (a ring)
        int[] ring = new int[16];
        int ringHead;
        int ringSize;
        final ArrayDeque<Object[]> done = new ArrayDeque<>();
        final long[] noNum;       // the registers of a new start: no row seen
        // the values of valueColumns of the rows from the first start row still undecided on
        // (all a register can point to): row q's at (q & (kept - 1)) * valueColumns.length;
        // TO NEXT ROW, their DEFINE bits too, at keptBits[q & (kept - 1)] (what a restart replays)
        Object[] kept;
        long[] keptBits;
        int keptRows = 16;

        Work(int nStates, int nNum, int nColumns) {
            noNum = new long[nNum];
            stepped = new Threads(nStates, nNum);
            next = new Threads(nStates, nNum);
            visited = new long[nStates];
            kept = new Object[keptRows * nColumns];
            keptBits = new long[keptRows];
        }
    }

    /**
     * @param nfa       the NFA, as cerql/spark/mr_jvm_nfa.py's nfa_spec writes it
     * @param registers the registers, as its register_spec writes them
     */
    public PikeMatcher(String nfa, String registers) {
        this(nfa, registers, PAST_LAST_ROW);
    }

    /**
     * @param nfa       the NFA, as cerql/spark/mr_jvm_nfa.py's nfa_spec writes it
     * @param registers the registers, as its register_spec writes them
     * @param skip      AFTER MATCH SKIP: PAST_LAST_ROW or TO_NEXT_ROW
     */
    public PikeMatcher(String nfa, String registers, int skip) {
        if (skip != PAST_LAST_ROW && skip != TO_NEXT_ROW) {
            throw new IllegalArgumentException("AFTER MATCH SKIP mode " + skip + " is not matched here");
        }
        this.skip = skip;
        Tokens t = new Tokens(nfa);
        nStates = t.nextInt();
        nVars = t.nextInt();
        startState = t.nextInt();
        if (nStates <= 0 || nVars < 0 || nVars > 64 || startState < 0 || startState >= nStates) {
            throw new IllegalArgumentException("bad NFA header: " + nStates + " states, " + nVars + " variables");
        }
        kind = new int[nStates];
        var = new int[nStates];
        nullable = new int[nStates];
        outStart = new int[nStates + 1];
        int[] succ = new int[16];
        int nOut = 0;
        for (int s = 0; s < nStates; s++) {
            kind[s] = t.nextInt();
            int label = t.nextInt();
            nullable[s] = t.nextInt();
            int k = t.nextInt();
            if (kind[s] == CONSUME && (label < 0 || nVars == 0)) {
                throw new IllegalArgumentException("state " + s + ": CONSUME without a label");
            }
            var[s] = kind[s] == CONSUME ? label % nVars : -1;
            outStart[s] = nOut;
            for (int i = 0; i < k; i++) {
                if (nOut == succ.length) {
                    succ = java.util.Arrays.copyOf(succ, 2 * succ.length);
                }
                succ[nOut++] = t.nextInt();
            }
            checkState(s, k);
        }
        outStart[nStates] = nOut;
        out = java.util.Arrays.copyOf(succ, nOut);
        for (int x : out) {
            if (x < 0 || x >= nStates) {
                throw new IllegalArgumentException("successor " + x + " out of range");
            }
        }
        t.end();
        Tokens r = new Tokens(registers);
        nReg = r.done() ? 0 : r.nextInt();
        regKind = new int[nReg];
        regMask = new long[nReg];
        regColumn = new int[nReg];
        for (int i = 0; i < nReg; i++) {
            regKind[i] = r.nextInt();
            regMask[i] = r.nextLong();
            regColumn[i] = r.nextInt();
            if (regKind[i] < FIRST || regKind[i] > CLASSIFIER || regKind[i] <= LAST && regColumn[i] < 0) {
                throw new IllegalArgumentException("bad register " + i);
            }
        }
        r.end();
        regAt = new int[nReg];
        regValue = new int[nReg];
        int[] columns = new int[nReg];
        int nColumns = 0;
        long every = nVars == 64 ? -1L : (1L << nVars) - 1;
        int nn = 0;
        for (int i = 0; i < nReg; i++) {
            boolean length = regKind[i] == COUNT && (regMask[i] & every) == every;
            regAt[i] = length ? -1 : nn++;  // every row of a match is some variable's: its length
            regValue[i] = -1;
            if (regKind[i] <= LAST) {
                int c = 0;
                while (c < nColumns && columns[c] != regColumn[i]) {
                    c++;
                }
                if (c == nColumns) {
                    columns[nColumns++] = regColumn[i];
                }
                regValue[i] = c;
            }
        }
        nNum = nn;
        valueColumns = java.util.Arrays.copyOf(columns, nColumns);
        seeOps = new int[nVars][];
        for (int v = 0; v < nVars; v++) {
            int[] ops = new int[2 * nReg];
            int n = 0;
            for (int i = 0; i < nReg; i++) {
                if (regAt[i] >= 0 && (regMask[i] >>> v & 1L) != 0) {
                    ops[n++] = regKind[i];
                    ops[n++] = regAt[i];
                }
            }
            seeOps[v] = java.util.Arrays.copyOf(ops, n);
        }
        int[][] walks = buildWalks();
        walkStart = walks[0];
        walkState = walks[1];
        walkSkip = walks[2];
    }

    /** The walks of the closures (the fields' comment), for the roots a closure starts from: the
     *  start state and the successors of the CONSUME states. */
    private int[][] buildWalks() {
        int[] start = new int[4 * nStates + 1];
        int[][] list = {new int[16], new int[16]};  // states, skips
        int[] size = {0};
        for (int root = 0; root < nStates; root++) {
            boolean used = root == startState;
            for (int s = 0; s < nStates && !used; s++) {
                used = kind[s] == CONSUME && out[outStart[s]] == root;
            }
            for (int a = 0; a < 4; a++) {
                if (used) {
                    walk(root, a, new boolean[nStates], list, size);
                }
                start[root * 4 + a + 1] = size[0];
            }
        }
        return new int[][] {start, java.util.Arrays.copyOf(list[0], size[0]), java.util.Arrays.copyOf(list[1], size[0])};
    }

    /** Meets state s in the walk where anchors a hold, and then (on its first meeting) its
     *  successors in preference order; true when the walk reached ACCEPT, which ends it. */
    private boolean walk(int s, int a, boolean[] seen, int[][] list, int[] size) {
        int e = size[0]++;
        if (e == list[0].length) {
            list[0] = java.util.Arrays.copyOf(list[0], 2 * e);
            list[1] = java.util.Arrays.copyOf(list[1], 2 * e);
        }
        list[0][e] = s;
        list[1][e] = e + 1;
        if (seen[s]) {
            return false;
        }
        seen[s] = true;
        int k = kind[s];
        if (k == ACCEPT) {
            return true;
        }
        if (k == CONSUME || k == ANCHOR_START && (a & AT_START) == 0 || k == ANCHOR_END && (a & AT_END) == 0) {
            return false;
        }
        for (int i = outStart[s]; i < outStart[s + 1]; i++) {
            if (walk(out[i], a, seen, list, size)) {
                list[1][e] = size[0];
                return true;
            }
        }
        list[1][e] = size[0];
        return false;
    }

    private void checkState(int s, int nOut) {
        int k = kind[s];
        boolean ok = k == ACCEPT ? nOut == 0 : k == SPLIT ? nOut >= 1 : k >= CONSUME && k <= ACCEPT && nOut == 1;
        if (!ok) {
            throw new IllegalArgumentException("state " + s + ": kind " + k + " with " + nOut + " successors");
        }
    }

    /** A partition starts: the next row is its first ({@code ^} holds before it). */
    public void begin() {
        if (w == null) {
            w = new Work(nStates, nNum, valueColumns.length);
        }
        w.next.n = 0;
        w.cut = -1;
        restart(w, 0);
        w.open = true;
    }

    /** The search starts afresh at row {@code from}: no thread, no start row pending. */
    private static void restart(Work k, long from) {
        k.stepped.n = 0;
        k.p = from;
        k.floor = from;
        k.ringSize = 0;
        k.ringHead = 0;
        k.nFree = k.slotStart.length;
        for (int i = 0; i < k.nFree; i++) {
            k.free[i] = i;
        }
    }

    /**
     * The partition's next row.
     *
     * @param bits   bit v set when the row satisfies variable v's DEFINE
     * @param values the row's values that the registers read (by their column)
     */
    public void row(long bits, Object[] values) {
        Work k = open();
        if (valueColumns.length != 0 || skip == TO_NEXT_ROW) {
            keep(k, bits, values);
        }
        round(k, false, bits);
        k.p++;
        settle(k, false);
    }

    /** The partition ended after the rows given ({@code $} holds after the last): every pending
     *  start is decided. */
    public void end() {
        Work k = open();
        round(k, true, 0L);  // no row: the threads that would wait for one die
        settle(k, true);
        if (k.ringSize != 0) {
            throw new IllegalStateException("a start row is left undecided at the partition's end");
        }
        k.open = false;
    }

    /** The first start row whose match is not known yet (the next row when every start is
     *  decided): a caller bounds how far behind the rows it lets that fall. */
    public long undecidedFrom() {
        Work k = open();
        return k.ringSize > 0 ? k.slotStart[k.ring[k.ringHead]] : k.p;
    }

    /** Whether a finished match waits to be taken. */
    public boolean hasMatch() {
        return w != null && !w.done.isEmpty();
    }

    /** The next finished match: {@code {Long start, Long end (exclusive), reg0, reg1, ...}}, rows
     *  counted from the partition's first; null when there is none. */
    public Object[] nextMatch() {
        return w == null ? null : w.done.poll();
    }

    private Work open() {
        if (w == null || !w.open) {
            throw new IllegalStateException("begin() a partition first");
        }
        return w;
    }

    /** The starts whose threads are all gone are decided ({@link #decide}); TO NEXT ROW, each
     *  decided match restarts the search at the row after its start, which replays the rows come
     *  since from their kept bits (and, once the partition has ended, its end). */
    private void settle(Work k, boolean atEnd) {
        long seen = k.p;
        long resume = decide(k);
        while (resume >= 0) {
            restart(k, resume);
            resume = -1;
            while (resume < 0 && k.p < seen) {
                round(k, false, k.keptBits[(int) (k.p & (k.keptRows - 1))]);
                k.p++;
                resume = decide(k);
            }
            if (resume < 0 && atEnd) {
                round(k, true, 0L);
                resume = decide(k);
            }
        }
    }

    /** The epsilon closures at position p, in priority order: the threads that consumed row p - 1,
     *  then, before a row, a new start at p unless an ACCEPT raised the floor (TO NEXT ROW; PAST
     *  LAST ROW never raises it past p here: a match found in this round ends at p, past its
     *  start). The
     *  CONSUME states reached take row p ({@code bits}) at once: those whose variable it satisfies
     *  become the next round's threads, in the same order, the others die where they are reached
     *  (one pass, no list of threads waiting for the row). */
    private void round(Work k, boolean atEnd, long bits) {
        k.gen++;
        k.cut = -1;
        k.next.n = 0;
        int anchors = (k.p == 0 ? AT_START : 0) | (atEnd ? AT_END : 0);
        Threads st = k.stepped;
        for (int i = 0; i < st.n; i++) {
            int slot = st.slot[i];
            k.slotCnt[slot]--;
            if (k.slotStart[slot] < k.cut) {
                continue;
            }
            closure(k, out[outStart[st.state[i]]], slot, st.num, i * nNum, anchors, bits);
        }
        st.n = 0;
        if (!atEnd && k.p >= k.floor) {
            int slot = newSlot(k, k.p);
            closure(k, startState, slot, k.noNum, 0, anchors, bits);
            if (k.slotCnt[slot] == 0 && k.slotEnd[slot] < 0) {
                k.free[k.nFree++] = slot;  // no thread and no match: decided at once, nothing to keep
            } else {
                ringPush(k, slot);
            }
        }
        k.stepped = k.next;
        k.next = st;
    }

    /** Follow the epsilon moves from {@code root} at position p depth-first in preference order:
     *  the CONSUME states reached first in this round whose variable row p satisfies become
     *  threads (with the registers at {@code num[off..]}, which then see the row), an ACCEPT
     *  reached records the match. A state
     *  another thread reached in this round is not entered again: its successors were reached too
     *  (the walk skips the states it lists below it); but when ACCEPT is reachable from it without
     *  a row, this start's match ends here too (pike.py, _closure). */
    private void closure(Work k, int root, int slot, long[] num, int off, int anchors, long bits) {
        long[] visited = k.visited;
        long gen = k.gen;
        int w = root * 4 + anchors;
        int e = walkStart[w];
        int end = walkStart[w + 1];
        while (e < end) {
            int s = walkState[e];
            if (visited[s] == gen) {
                if ((nullable[s] >> anchors & 1) != 0) {
                    accept(k, slot, num, off);
                    return;
                }
                e = walkSkip[e];
                continue;
            }
            visited[s] = gen;
            int kd = kind[s];
            if (kd == CONSUME) {
                if ((bits >>> var[s] & 1L) != 0) {
                    take(k, s, slot, num, off);
                }
            } else if (kd == ACCEPT) {
                accept(k, slot, num, off);
                return;
            }
            e++;
        }
    }

    /** A thread at CONSUME state s takes row p: a thread of the next round, its registers
     *  (copied from {@code num[off..]}) seeing the row. */
    private void take(Work k, int s, int slot, long[] num, int off) {
        Threads t = k.next;
        int i = t.n++;
        t.state[i] = s;
        t.slot[i] = slot;
        int at = i * nNum;
        copy(num, off, t.num, at, nNum);
        int v = var[s];
        int[] ops = seeOps[v];
        if (ops.length != 0) {
            see(ops, t.num, at, v, k.p);
        }
        k.slotCnt[slot]++;
    }

    /** A few registers. The usual counts are written out: a loop's setup (the compiler's pre- and
     *  post-loops) costs more than the copy at two or three registers, and System.arraycopy's call
     *  more still. */
    private static void copy(long[] from, int off, long[] to, int at, int n) {
        switch (n) {
            case 0:
                return;
            case 1:
                to[at] = from[off];
                return;
            case 2:
                to[at] = from[off];
                to[at + 1] = from[off + 1];
                return;
            case 3:
                to[at] = from[off];
                to[at + 1] = from[off + 1];
                to[at + 2] = from[off + 2];
                return;
            default:
                for (int r = 0; r < n; r++) {
                    to[at + r] = from[off + r];
                }
        }
    }

    /** A thread reached ACCEPT at position p: the best match of its start so far (the threads
     *  before it still alive are preferred, the ones after it are cut). PAST LAST ROW: the next
     *  search starts where it ends, so the threads after it of the starts before its end are cut
     *  too (the ones before it are of its start or earlier ones). TO NEXT ROW: the search restarts
     *  after a start once its match is decided, so the threads after it, of any start, and the
     *  starts not begun yet, would only be run again: all are cut (pike.py, _accept). */
    private void accept(Work k, int slot, long[] num, int off) {
        long start = k.slotStart[slot];
        k.slotEnd[slot] = k.p;
        copy(num, off, k.slotNum, slot * nNum, nNum);
        if (skip == TO_NEXT_ROW) {
            k.cut = Long.MAX_VALUE;
            k.floor = Long.MAX_VALUE;
            return;
        }
        long resume = k.p > start ? k.p : start + 1;
        if (resume > k.cut) {
            k.cut = resume;
        }
    }

    /** The registers at {@code num[off..]} take row p, of variable v ({@code ops}: its seeOps). */
    private static void see(int[] ops, long[] num, int off, int v, long p) {
        for (int j = 0; j < ops.length; j += 2) {
            int i = off + ops[j + 1];
            switch (ops[j]) {
                case FIRST:
                    if (num[i] == 0) {
                        num[i] = p + 1;
                    }
                    break;
                case LAST:
                    num[i] = p + 1;
                    break;
                case COUNT:
                    num[i]++;
                    break;
                default:  // CLASSIFIER
                    num[i] = v + 1;
            }
        }
    }

    /** Row p's values of valueColumns, kept while a register may point to it: from the first
     *  undecided start row on (a thread's registers point into its rows, a start's past it); and,
     *  TO NEXT ROW, its bits, which a restart after that start replays. */
    private void keep(Work k, long bits, Object[] values) {
        int nColumns = valueColumns.length;
        long from = k.ringSize > 0 ? k.slotStart[k.ring[k.ringHead]] : k.p;
        if (k.p - from >= k.keptRows) {
            int rows = k.keptRows;
            while (k.p - from >= rows) {
                rows *= 2;
            }
            Object[] bigger = new Object[rows * nColumns];
            long[] biggerBits = new long[rows];
            for (long q = from; q < k.p; q++) {
                int at = (int) (q & (k.keptRows - 1));
                int to = (int) (q & (rows - 1));
                System.arraycopy(k.kept, at * nColumns, bigger, to * nColumns, nColumns);
                biggerBits[to] = k.keptBits[at];
            }
            k.kept = bigger;
            k.keptBits = biggerBits;
            k.keptRows = rows;
        }
        int row = (int) (k.p & (k.keptRows - 1));
        k.keptBits[row] = bits;
        int at = row * nColumns;
        for (int c = 0; c < nColumns; c++) {
            k.kept[at + c] = values[valueColumns[c]];
        }
    }

    /** The start rows whose threads are all gone are decided, in order: a match is handed out,
     *  and the starts inside it are skipped (PAST LAST ROW; after an empty match, the next row).
     *  TO NEXT ROW: after a match, the row where the search restarts (the row after its start);
     *  else -1. */
    private long decide(Work k) {
        while (k.ringSize > 0) {
            int slot = k.ring[k.ringHead];
            if (k.slotCnt[slot] != 0) {
                return -1;
            }
            ringPop(k);
            long s = k.slotStart[slot];
            long e = k.slotEnd[slot];
            k.free[k.nFree++] = slot;
            if (e < 0) {
                continue;
            }
            k.done.add(match(k, slot, s, e));
            if (skip == TO_NEXT_ROW) {
                return s + 1;  // every thread left is dropped (the module comment says why)
            }
            long resume = e > s ? e : s + 1;
            while (k.ringSize > 0 && k.slotStart[k.ring[k.ringHead]] < resume) {
                int x = ringPop(k);
                if (k.slotCnt[x] != 0) {  // the accept that ended the match cut them (pike.py)
                    throw new IllegalStateException("a start inside a match still has threads");
                }
                k.free[k.nFree++] = x;
            }
        }
        return -1;
    }

    private Object[] match(Work k, int slot, long s, long e) {
        Object[] m = new Object[2 + nReg];
        m[0] = s;
        m[1] = e;
        int off = slot * nNum;
        for (int r = 0; r < nReg; r++) {
            int at = regAt[r];
            if (at < 0) {
                m[2 + r] = e - s;  // a COUNT of every row
                continue;
            }
            long n = k.slotNum[off + at];
            switch (regKind[r]) {
                case COUNT:
                    m[2 + r] = n;
                    break;
                case CLASSIFIER:
                    m[2 + r] = n == 0 ? null : Integer.valueOf((int) n - 1);
                    break;
                default:  // FIRST, LAST: the value of row n - 1
                    m[2 + r] = n == 0 ? null
                        : k.kept[(int) ((n - 1) & (k.keptRows - 1)) * valueColumns.length + regValue[r]];
            }
        }
        return m;
    }

    // ------------------------------------------------------------------ start slots and their ring

    private int newSlot(Work k, long start) {
        if (k.nFree == 0) {
            growSlots(k);
        }
        int slot = k.free[--k.nFree];
        k.slotStart[slot] = start;
        k.slotCnt[slot] = 0;
        k.slotEnd[slot] = -1;
        return slot;
    }

    private void growSlots(Work k) {
        int old = k.slotStart.length;
        int cap = Math.max(16, 2 * old);
        k.slotStart = java.util.Arrays.copyOf(k.slotStart, cap);
        k.slotCnt = java.util.Arrays.copyOf(k.slotCnt, cap);
        k.slotEnd = java.util.Arrays.copyOf(k.slotEnd, cap);
        k.slotNum = java.util.Arrays.copyOf(k.slotNum, cap * nNum);
        k.free = java.util.Arrays.copyOf(k.free, cap);
        for (int i = old; i < cap; i++) {
            k.free[k.nFree++] = i;
        }
    }

    private void ringPush(Work k, int slot) {
        if (k.ringSize == k.ring.length) {
            dropDead(k);
            if (2 * k.ringSize > k.ring.length) {
                int[] bigger = new int[2 * k.ring.length];
                for (int i = 0; i < k.ringSize; i++) {
                    bigger[i] = k.ring[(k.ringHead + i) & (k.ring.length - 1)];
                }
                k.ring = bigger;
                k.ringHead = 0;
            }
        }
        k.ring[(k.ringHead + k.ringSize++) & (k.ring.length - 1)] = slot;
    }

    private int ringPop(Work k) {
        int slot = k.ring[k.ringHead];
        k.ringHead = (k.ringHead + 1) & (k.ring.length - 1);
        k.ringSize--;
        return slot;
    }

    /** Forget the starts whose threads died without a match: an earlier start still running
     *  keeps them in the ring, but they decide nothing (the ring stays as large as the live
     *  threads and pending matches, not the partition). */
    private void dropDead(Work k) {
        int mask = k.ring.length - 1;
        int kept = 0;
        for (int i = 0; i < k.ringSize; i++) {
            int slot = k.ring[(k.ringHead + i) & mask];
            if (k.slotCnt[slot] == 0 && k.slotEnd[slot] < 0) {
                k.free[k.nFree++] = slot;
            } else {
                k.ring[(k.ringHead + kept++) & mask] = slot;
            }
        }
        k.ringSize = kept;
    }

    // ------------------------------------------------------------------ parsing and the test entry

    /** Whitespace-separated integers. */
    private static final class Tokens {
        private final String[] items;
        private int i;

        Tokens(String text) {
            String s = text == null ? "" : text.trim();
            items = s.isEmpty() ? new String[0] : s.split("\\s+");
        }

        boolean done() {
            return i == items.length;
        }

        long nextLong() {
            if (done()) {
                throw new IllegalArgumentException("too few numbers");
            }
            String s = items[i++];
            return s.startsWith("-") ? Long.parseLong(s) : Long.parseUnsignedLong(s);
        }

        int nextInt() {
            return Math.toIntExact(nextLong());
        }

        void end() {
            if (!done()) {
                throw new IllegalArgumentException("extra numbers from " + items[i]);
            }
        }
    }

    /**
     * Every match of several partitions, for tests (one call instead of one per row): {@code bits}
     * a long per row, {@code partitionLengths} the partitions' row counts in order; a row's values
     * are {@code {Long rowIndexWithinPartition}}. Returns a line per match,
     * "partition start end reg0 reg1 ..." (partitions numbered from 0, null as "null").
     */
    public static String matchAll(String nfa, String registers, String bits, String partitionLengths) {
        return matchAll(nfa, registers, bits, partitionLengths, PAST_LAST_ROW);
    }

    /** {@link #matchAll(String, String, String, String)} under AFTER MATCH SKIP {@code skip}
     *  (PAST_LAST_ROW or TO_NEXT_ROW). */
    public static String matchAll(String nfa, String registers, String bits, String partitionLengths, int skip) {
        PikeMatcher m = new PikeMatcher(nfa, registers, skip);
        Tokens b = new Tokens(bits);
        Tokens lengths = new Tokens(partitionLengths);
        StringBuilder text = new StringBuilder();
        for (int part = 0; !lengths.done(); part++) {
            long n = lengths.nextLong();
            m.begin();
            for (long i = 0; i < n; i++) {
                m.row(b.nextLong(), new Object[] {i});
                drain(m, part, text);
            }
            m.end();
            drain(m, part, text);
        }
        b.end();
        return text.toString();
    }

    private static void drain(PikeMatcher m, int part, StringBuilder text) {
        while (m.hasMatch()) {
            text.append(part);
            for (Object x : m.nextMatch()) {
                text.append(' ').append(x);
            }
            text.append('\n');
        }
    }
}
