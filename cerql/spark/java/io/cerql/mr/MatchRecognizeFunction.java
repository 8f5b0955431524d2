package io.cerql.mr;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.CatalystTypeConverters$;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.MutableProjection;
import org.apache.spark.sql.catalyst.expressions.MutableProjection$;
import org.apache.spark.sql.catalyst.optimizer.ReplaceExpressions$;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StructType;
import scala.Function1;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * ONE ROW PER MATCH, AFTER MATCH SKIP PAST LAST ROW, over the rows of one Spark partition sorted
 * by (PARTITION BY, ORDER BY, input ordinal): a PARTITION BY group after another, each through a
 * {@link PikeMatcher}; one output row per match, as soon as the match is final.
 *
 * <p>Input row: the sorted rows as they are; the layout names, by position, the group's keys,
 * the DEFINEs' inputs (the "block": the columns the conditions read and the arguments of their
 * PREV/NEXT, each computed by Spark beforehand) and the columns the registers read. A DEFINE is
 * Spark's own
 * expression (bound on the driver, {@link #defines}) over the block of the current row followed by
 * one value per navigation: block column {@code navColumn[n]} of the row {@code navShift[n]}
 * rows away in the group (NULL outside it), so PREV and NEXT cost a few rows kept, not a Window.
 * NULL is false. The bits of a row are known once {@code ahead} rows after it have come (or its
 * group has ended): only {@code back + ahead + 1} rows are held; the matcher keeps the values the
 * measures read from the first start row whose match is undecided on, and that start falling
 * more than {@code maxRows} rows behind fails the task (cerql.matchRecognize.maxMatchRows).
 *
 * <p>Output row: the columns {@code outputs} names, each a key, the match number in its group
 * (from 1) or a register.
 */
public final class MatchRecognizeFunction implements MapPartitionsFunction<Row, Row> {
  private static final long serialVersionUID = 1L;

  private final String nfa;
  private final String registers;
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
  public MatchRecognizeFunction(String nfa, String registers, String layout, Object[] definesAndInput,
      StructType input, long maxRows, String keyNames, String tooLong) {
    this.maxRows = maxRows;
    this.keyNames = keyNames.isEmpty() ? new String[0] : keyNames.split("\u0000", -1);
    this.tooLong = tooLong;
    this.nfa = nfa;
    this.registers = registers;
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

  @Override
  public Iterator<Row> call(Iterator<Row> rows) {
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

  /** Key equality as Spark groups: NaN equals NaN, -0.0 equals 0.0, NULL equals NULL. */
  static boolean sameKey(Object a, Object b) {
    if (a == b) return true;
    if (a == null || b == null) return false;
    if (a instanceof Double && b instanceof Double) {
      double x = (Double) a, y = (Double) b;
      return x == y || (x != x && y != y);
    }
    if (a instanceof Float && b instanceof Float) {
      float x = (Float) a, y = (Float) b;
      return x == y || (x != x && y != y);
    }
    if (a instanceof byte[] && b instanceof byte[]) return Arrays.equals((byte[]) a, (byte[]) b);
    return a.equals(b);
  }

  /** The iterator of one task's output: the input's groups matched one after another. */
  private final class Matches implements Iterator<Row> {
    private final Iterator<Row> in;
    private final PikeMatcher matcher = new PikeMatcher(nfa, registers);
    private final MutableProjection bitsOf;  // the DEFINEs' bits of a row; null when none is evaluated
    private final Function1<Object, Object>[] toCatalyst;
    private final int size = back + ahead + 1;
    private final Object[][] blocks = new Object[size][];
    private final Object[][] values = new Object[size][];
    private final GenericInternalRow window;
    private final ArrayDeque<Row> ready = new ArrayDeque<>();
    private Object[] group;  // the keys of the current group, null before the first row
    private long received;   // rows of the group received
    private long evaluated;  // rows of the group handed to the matcher
    private long matchNumber;

    @SuppressWarnings("unchecked")
    Matches(Iterator<Row> in) {
      this.in = in;
      int partition = TaskContext.get() == null ? 0 : TaskContext.getPartitionId();
      if (defines.length == 0) {
        bitsOf = null;
      } else {
        bitsOf = MutableProjection$.MODULE$.create(CollectionConverters.asScala(Arrays.asList(defines)).toSeq(),
            defineInput);
        bitsOf.initialize(partition);
      }
      toCatalyst = new Function1[blockWidth];
      for (int c = 0; c < blockWidth; c++) {
        DataType type = input.fields()[blockColumns[c]].dataType();
        boolean same = type instanceof LongType || type instanceof DoubleType || type instanceof IntegerType
            || type instanceof BooleanType || type instanceof ShortType || type instanceof ByteType
            || type instanceof FloatType;  // the external value is Spark's own: no conversion
        toCatalyst[c] = same ? null : CatalystTypeConverters$.MODULE$.createToCatalystConverter(type);
      }
      window = new GenericInternalRow(blockWidth + navColumn.length);
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
    public Row next() {
      if (!hasNext()) throw new NoSuchElementException();
      return ready.poll();
    }

    private void take(Row row) {
      if (group == null || !sameGroup(row)) {
        if (group != null) endGroup();
        group = new Object[keys];
        for (int k = 0; k < keys; k++) group[k] = row.get(keyColumns[k]);
        received = 0;
        evaluated = 0;
        matchNumber = 0;
        matcher.begin();
      }
      int slot = (int) (received % size);
      Object[] block = blocks[slot];  // the slot's arrays are reused: the row they held is done with
      if (block == null) {
        block = blocks[slot] = new Object[blockWidth];
        values[slot] = new Object[valueColumns.length];
      }
      for (int c = 0; c < blockWidth; c++) {
        Object value = row.get(blockColumns[c]);
        block[c] = toCatalyst[c] == null ? value : toCatalyst[c].apply(value);
      }
      Object[] vals = values[slot];
      for (int c = 0; c < valueColumns.length; c++) vals[c] = row.get(valueColumns[c]);
      received++;
      while (evaluated + ahead < received) evaluate();
    }

    private boolean sameGroup(Row row) {
      for (int k = 0; k < keys; k++) {
        if (!sameKey(group[k], row.get(keyColumns[k]))) return false;
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
        Object[] block = blocks[slot];
        for (int c = 0; c < blockWidth; c++) window.update(c, block[c]);
        for (int n = 0; n < navColumn.length; n++) {
          long j = i + navShift[n];
          Object value = j >= 0 && j < received ? blocks[(int) (j % size)][navColumn[n]] : null;
          window.update(blockWidth + n, value);
        }
        bits |= bitsOf.apply(window).getLong(0);
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
        text.append(k < keyNames.length ? keyNames[k] : "?").append('=').append(pythonRepr(group[k]));
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
        ready.add(RowFactory.create(out));
      }
    }
  }
}
