package io.cerql.mr;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.catalyst.CatalystTypeConverters$;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.InternalRow$;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.JoinedRow;
import org.apache.spark.sql.catalyst.expressions.MutableProjection;
import org.apache.spark.sql.catalyst.expressions.MutableProjection$;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.optimizer.ReplaceExpressions$;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * ONE ROW PER MATCH, AFTER MATCH SKIP PAST LAST ROW or TO NEXT ROW, over the rows of one Spark partition sorted
 * by (PARTITION BY, ORDER BY, input ordinal): a PARTITION BY group after another, each through a
 * {@link PikeMatcher}; one output row per match, as soon as the match is final.
 *
 * <p>Input row: the sorted rows as Spark holds them ({@code InternalRow}s, {@link MatchedRDD}); the
 * layout names, by position, the group's keys, the DEFINEs' inputs (the "block": the columns the
 * conditions read and the arguments of their PREV/NEXT, each computed by Spark beforehand) and the
 * columns the registers read. A DEFINE is Spark's own expression (bound on the driver, {@link
 * #defines}) over the block of the current row and one value per navigation: block column {@code
 * navColumn[n]} of the row {@code navShift[n]} rows away in the group (NULL outside it), so PREV and
 * NEXT cost a few rows kept, not a Window. The task binds them to the current row joined with a
 * copy of the row at each distinct shift: no value is copied or boxed to evaluate them.
 * NULL is false. The bits of a row are known once {@code ahead} rows after it have come (or its
 * group has ended): only {@code back + ahead + 1} rows are held; the matcher keeps the values the
 * measures read (TO NEXT ROW, and the rows' bits, which it replays after a match) from the first
 * start row whose match is undecided on, and that start falling
 * more than {@code maxRows} rows behind fails the task (cerql.matchRecognize.maxMatchRows).
 *
 * <p>Output row: the columns {@code outputs} names, each a key, the match number in its group
 * (from 1) or a register.
 */
public final class MatchRecognizeFunction implements java.io.Serializable {
  private static final long serialVersionUID = 1L;

  private final String nfa;
  private final String registers;
  private final int skip;
  private final int keys;
  private final int[] keyColumns;
  private final int blockWidth;
  private final int[] blockColumns;
  private final int[] navColumn;
  private final int[] navShift;
  private final int back;
  private final int ahead;
  private final int[] valueColumns;
  private final int[] outputs;
  private final long always;
  private final Expression[] defines;
  private final Seq<Attribute> defineInput;
  private final StructType input;
  private final long maxRows;
  private final String[] keyNames;
  private final String tooLong;

  /**
   * @param skip AFTER MATCH SKIP, {@link PikeMatcher#PAST_LAST_ROW} or {@link PikeMatcher#TO_NEXT_ROW}
   * @param layout whitespace-separated integers: the number of keys then each key's input column,
   *     the block's width then each of its input columns, always (the bits
   *     of the variables without DEFINE), the number of navigations then (column, shift) per
   *     navigation, the number of value columns then each, the number of output columns then
   *     each (k below keys: key k; keys: the match number; keys + 1 + r: register r)
   * @param definesAndInput what {@link #defines} returned
   * @param input the schema of the input rows
   * @param maxRows how far the first undecided start row may fall behind the rows matched
   * @param keyNames the PARTITION BY items as written, separated by NUL, for the error
   * @param tooLong that error as a Python worker's last traceback line ends (cerql/spark/task_errors.py
   *     reads it back), the partition written {@code \u0001}
   */
  public MatchRecognizeFunction(String nfa, String registers, int skip, String layout, Object[] definesAndInput,
      StructType input, long maxRows, String keyNames, String tooLong) {
    this.maxRows = maxRows;
    this.keyNames = keyNames.isEmpty() ? new String[0] : keyNames.split("\u0000", -1);
    this.tooLong = tooLong;
    this.nfa = nfa;
    this.registers = registers;
    this.skip = skip;
    long[] v = Arrays.stream(layout.trim().split("\\s+")).mapToLong(Long::parseLong).toArray();
    int i = 0;
    keys = (int) v[i++];
    keyColumns = new int[keys];
    for (int n = 0; n < keys; n++) keyColumns[n] = (int) v[i++];
    blockWidth = (int) v[i++];
    blockColumns = new int[blockWidth];
    for (int n = 0; n < blockWidth; n++) blockColumns[n] = (int) v[i++];
    always = v[i++];
    int navs = (int) v[i++];
    navColumn = new int[navs];
    navShift = new int[navs];
    int b = 0, a = 0;
    for (int n = 0; n < navs; n++) {
      navColumn[n] = (int) v[i++];
      navShift[n] = (int) v[i++];
      b = Math.max(b, -navShift[n]);
      a = Math.max(a, navShift[n]);
    }
    back = b;
    ahead = a;
    valueColumns = new int[(int) v[i++]];
    for (int n = 0; n < valueColumns.length; n++) valueColumns[n] = (int) v[i++];
    outputs = new int[(int) v[i++]];
    for (int n = 0; n < outputs.length; n++) outputs[n] = (int) v[i++];
    defines = (Expression[]) definesAndInput[0];
    @SuppressWarnings("unchecked")
    Seq<Attribute> attrs = (Seq<Attribute>) definesAndInput[1];
    defineInput = attrs;
    this.input = input;
  }

  /**
   * The DEFINEs of {@code probe}, a projection over a relation whose columns are the block and
   * then the navigations: nothing when no DEFINE is evaluated, else one BIGINT, the bits of the
   * variables whose condition holds (NULL false): {@code [Expression[] that projection,
   * Seq<Attribute> its input]}. Analyzed by Spark, with its runtime replacements made, as the
   * optimizer would; one projection, so Spark's code generation evaluates a PREV shared by
   * several conditions once.
   */
  public static Object[] defines(Dataset<?> probe) {
    LogicalPlan plan = ReplaceExpressions$.MODULE$.apply(probe.queryExecution().analyzed());
    if (!(plan instanceof Project)) {
      throw new IllegalArgumentException("the DEFINE probe is not a projection: " + plan);
    }
    Project project = (Project) plan;
    List<NamedExpression> list = CollectionConverters.asJava(project.projectList());
    Expression[] out = new Expression[list.size()];
    for (int n = 0; n < out.length; n++) {
      Expression e = (Expression) list.get(n);
      if (e instanceof Alias) e = ((Alias) e).child();
      out[n] = e;
    }
    return new Object[] {out, project.child().output()};
  }

  /** The output rows of one task: {@code rows}, Spark's own rows of the sorted input (MatchedRDD). */
  public Iterator<InternalRow> call(Iterator<InternalRow> rows) {
    return new Matches(rows);
  }

  /** A value as Python's repr writes it, for the few kinds a key is in an error message. */
  static String pythonRepr(Object value) {
    if (value == null) return "None";
    if (value instanceof Boolean) return (Boolean) value ? "True" : "False";
    if (value instanceof String) {
      return "'" + ((String) value).replace("\\", "\\\\").replace("'", "\\'") + "'";
    }
    return String.valueOf(value);
  }

  // how a column is read: a primitive Spark keeps as a long, an int or a double, or any other value
  private static final int OTHER = 0;
  private static final int LONG = 1;
  private static final int INT = 2;
  private static final int DOUBLE = 3;

  private static int kindOf(DataType type) {
    if (type instanceof LongType || type instanceof TimestampType || type instanceof TimestampNTZType) return LONG;
    if (type instanceof IntegerType || type instanceof DateType) return INT;
    return type instanceof DoubleType ? DOUBLE : OTHER;
  }

  static boolean sameDouble(double x, double y) {
    return x == y || (x != x && y != y);
  }

  /** Key equality as Spark groups (its GROUP BY normalizes the floats of a key): NaN equals NaN,
   *  -0.0 equals 0.0, NULL equals NULL, and a struct's fields and an array's elements compared
   *  alike, not by their bytes (an UnsafeRow holding -0.0 is not equal() to one holding 0.0). */
  static boolean sameKey(Object a, Object b, DataType type) {
    if (a == b) return true;
    if (a == null || b == null) return false;
    if (type instanceof StructType) {
      StructField[] fields = ((StructType) type).fields();
      InternalRow x = (InternalRow) a, y = (InternalRow) b;
      for (int i = 0; i < fields.length; i++) {
        if (!sameAt(x, y, i, fields[i].dataType())) return false;
      }
      return true;
    }
    if (type instanceof ArrayType) {
      DataType t = ((ArrayType) type).elementType();
      ArrayData x = (ArrayData) a, y = (ArrayData) b;
      if (x.numElements() != y.numElements()) return false;
      for (int i = 0; i < x.numElements(); i++) {
        if (!sameAt(x, y, i, t)) return false;
      }
      return true;
    }
    if (a instanceof Double && b instanceof Double) return sameDouble((Double) a, (Double) b);
    if (a instanceof Float && b instanceof Float) return sameDouble((Float) a, (Float) b);
    if (a instanceof byte[] && b instanceof byte[]) return Arrays.equals((byte[]) a, (byte[]) b);
    return a.equals(b);
  }

  /** Field or element i of two structs or arrays, of type {@code type}, equal as {@link #sameKey}. */
  private static boolean sameAt(SpecializedGetters x, SpecializedGetters y, int i, DataType type) {
    return sameKey(x.isNullAt(i) ? null : x.get(i, type), y.isNullAt(i) ? null : y.get(i, type), type);
  }

  /** The iterator of one task's output: the input's groups matched one after another. */
  private final class Matches implements Iterator<InternalRow> {
    private final Iterator<InternalRow> in;
    private final PikeMatcher matcher = new PikeMatcher(nfa, registers, skip);
    private final DataType[] types;
    private final int[] kinds;               // per column: how value() and sameGroup() read it
    private final MutableProjection bitsOf;  // the DEFINEs' bits of a row; null when none is evaluated
    private final int size = back + ahead + 1;
    private final InternalRow[] ring = new InternalRow[size];  // copies of the group's last rows
    private final Object[][] values = new Object[size][];
    private final int[] shifts;              // the distinct navigation shifts, in the DEFINEs' input order
    private final JoinedRow[] joined;        // the current row, then the row at each shift
    private final InternalRow outside;       // a row of NULLs: a navigation out of the group
    private final ArrayDeque<InternalRow> ready = new ArrayDeque<>();
    private Object[] group;  // the keys of the current group, null before the first row
    private long received;   // rows of the group received
    private long evaluated;  // rows of the group handed to the matcher
    private long matchNumber;

    Matches(Iterator<InternalRow> in) {
      this.in = in;
      int width = input.fields().length;
      types = new DataType[width];
      kinds = new int[width];
      for (int c = 0; c < width; c++) {
        types[c] = input.fields()[c].dataType();
        kinds[c] = kindOf(types[c]);
      }
      shifts = Arrays.stream(navShift).distinct().toArray();
      joined = new JoinedRow[shifts.length];
      for (int n = 0; n < joined.length; n++) joined[n] = new JoinedRow();
      for (int n = 0; n + 1 < joined.length; n++) joined[n].withRight(joined[n + 1]);
      outside = new GenericInternalRow(width);
      if (defines.length == 0) {
        bitsOf = null;
      } else {
        int partition = TaskContext.get() == null ? 0 : TaskContext.getPartitionId();
        bitsOf = MutableProjection$.MODULE$.create(CollectionConverters.asScala(Arrays.asList(defines)).toSeq(),
            CollectionConverters.asScala(joinedInput(width)).toSeq());
        bitsOf.initialize(partition);
      }
    }

    /** The DEFINEs' input attributes laid out as the row they are evaluated over: the current
     *  row's columns, then all columns again for each shift; a block column sits at its column,
     *  a navigation at its column in its shift's copy (the other places hold an unread attribute). */
    private List<Attribute> joinedInput(int width) {
      List<Attribute> given = CollectionConverters.asJava(defineInput);
      Attribute unread = given.get(given.size() - 1);
      Attribute[] layout = new Attribute[width * (1 + shifts.length)];
      Arrays.fill(layout, unread);
      for (int c = 0; c < blockWidth; c++) layout[blockColumns[c]] = given.get(c);
      for (int n = 0; n < navColumn.length; n++) {
        int copy = 1 + Arrays.stream(shifts).boxed().toList().indexOf(navShift[n]);
        layout[copy * width + blockColumns[navColumn[n]]] = given.get(blockWidth + n);
      }
      return Arrays.asList(layout);
    }

    @Override
    public boolean hasNext() {
      while (ready.isEmpty()) {
        if (in.hasNext()) {
          take(in.next());
        } else if (group != null) {
          endGroup();
          group = null;
        } else {
          return false;
        }
      }
      return true;
    }

    @Override
    public InternalRow next() {
      if (!hasNext()) throw new NoSuchElementException();
      return ready.poll();
    }

    private void take(InternalRow row) {
      if (group == null || !sameGroup(row)) {
        if (group != null) endGroup();
        group = new Object[keys];
        for (int k = 0; k < keys; k++) group[k] = value(row, keyColumns[k]);
        received = 0;
        evaluated = 0;
        matchNumber = 0;
        matcher.begin();
      }
      int slot = (int) (received % size);
      if (bitsOf != null) {  // the row is kept while a DEFINE may read it: a copy (the input's row object is reused)
        if (row instanceof UnsafeRow && ring[slot] instanceof UnsafeRow) {
          ((UnsafeRow) ring[slot]).copyFrom((UnsafeRow) row);
        } else {
          ring[slot] = row.copy();
        }
      }
      Object[] vals = values[slot];
      if (vals == null) vals = values[slot] = new Object[valueColumns.length];
      for (int c = 0; c < valueColumns.length; c++) vals[c] = value(row, valueColumns[c]);
      received++;
      while (evaluated + ahead < received) evaluate();
    }

    /** Column c of the row, a value of its own (the row's memory is reused for the next row). */
    private Object value(InternalRow row, int c) {
      switch (kinds[c]) {
        case LONG:
          return row.isNullAt(c) ? null : (Object) row.getLong(c);
        case INT:
          return row.isNullAt(c) ? null : (Object) row.getInt(c);
        case DOUBLE:
          return row.isNullAt(c) ? null : (Object) row.getDouble(c);
        default:
          return InternalRow$.MODULE$.copyValue(row.get(c, types[c]));
      }
    }

    /** Whether the row is of the current group: its keys compared as Spark groups them
     *  ({@link #sameKey}), the common types read without boxing. */
    private boolean sameGroup(InternalRow row) {
      for (int k = 0; k < keys; k++) {
        int c = keyColumns[k];
        Object key = group[k];
        if (kinds[c] == OTHER || key == null || row.isNullAt(c)) {
          if (!sameKey(key, row.isNullAt(c) ? null : row.get(c, types[c]), types[c])) return false;
        } else if (kinds[c] == LONG ? (Long) key != row.getLong(c)
            : kinds[c] == INT ? (Integer) key != row.getInt(c)
            : !sameDouble((Double) key, row.getDouble(c))) {
          return false;
        }
      }
      return true;
    }

    private void endGroup() {
      while (evaluated < received) evaluate();
      matcher.end();
      drain();
    }

    /** Hands row {@code evaluated} of the group, with its DEFINE bits, to the matcher. */
    private void evaluate() {
      long i = evaluated++;
      int slot = (int) (i % size);
      long bits = always;
      if (bitsOf != null) {
        InternalRow current = ring[slot];
        if (joined.length == 0) {
          bits |= bitsOf.apply(current).getLong(0);
        } else {
          joined[0].withLeft(current);
          for (int n = 0; n < shifts.length; n++) {
            long j = i + shifts[n];
            InternalRow at = j >= 0 && j < received ? ring[(int) (j % size)] : outside;
            if (n + 1 < shifts.length) {
              joined[n + 1].withLeft(at);
            } else {
              joined[n].withRight(at);
            }
          }
          bits |= bitsOf.apply(joined[0]).getLong(0);
        }
      }
      matcher.row(bits, values[slot]);
      drain();
      if (i + 1 - matcher.undecidedFrom() > maxRows) {
        throw new IllegalStateException("\n" + tooLong.replace("\u0001", describe()));
      }
    }

    /** The group's keys as the local engine writes them in an error ({@code sym='x'}). */
    private String describe() {
      StringBuilder text = new StringBuilder();
      for (int k = 0; k < keys; k++) {
        if (k > 0) text.append(", ");
        Object key = CatalystTypeConverters$.MODULE$.convertToScala(group[k], types[keyColumns[k]]);
        text.append(k < keyNames.length ? keyNames[k] : "?").append('=').append(pythonRepr(key));
      }
      return text.toString();
    }

    private void drain() {
      while (matcher.hasMatch()) {
        Object[] match = matcher.nextMatch();
        Long number = ++matchNumber;
        Object[] out = new Object[outputs.length];
        for (int c = 0; c < outputs.length; c++) {
          int code = outputs[c];
          out[c] = code < keys ? group[code] : code == keys ? number : match[2 + code - keys - 1];
        }
        ready.add(new GenericInternalRow(out));
      }
    }
  }
}
