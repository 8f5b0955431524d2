package io.cerql.mr;

import org.apache.spark.OneToOneDependency;
import org.apache.spark.Partition;
import org.apache.spark.TaskContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.LogicalRDD;
import org.apache.spark.sql.types.StructType;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * The rows of one MATCH_RECOGNIZE item's result: {@link MatchRecognizeFunction} over Spark's own
 * rows ({@code InternalRow}s) of the sorted input, as a lazy DataFrame ({@link #frame}).
 *
 * <p>Why not {@code Dataset.mapPartitions}: it hands the function external {@code Row}s, each
 * value boxed, and takes them back the same way; converting every input row costs about as much
 * as the matching (docs/benchmarks.md, "In the JVM"). The input's plan is only turned into an
 * RDD when a job first asks for this RDD's partitions, on the thread that submits it (Spark
 * computes an RDD's ancestors' partitions there): with adaptive query execution that step runs
 * the shuffle, so doing it when the DataFrame is built would run a job before any action.
 */
public final class MatchedRDD extends RDD<InternalRow> {
  private static final long serialVersionUID = 1L;
  private static final ClassTag<InternalRow> ROWS = ClassTag$.MODULE$.apply(InternalRow.class);

  private final transient Dataset<Row> ordered;
  private final MatchRecognizeFunction function;
  private RDD<InternalRow> input;  // the sorted rows, once a job needed them (then shipped with the tasks)

  public MatchedRDD(Dataset<Row> ordered, MatchRecognizeFunction function) {
    super(ordered.sparkSession().sparkContext(), CollectionConverters.asScala(java.util.List.<org.apache.spark.Dependency<?>>of()).toSeq(), ROWS);
    this.ordered = ordered;
    this.function = function;
  }

  /** A lazy DataFrame of {@code schema} whose rows are {@code function}'s over {@code ordered}. */
  public static Dataset<Row> frame(Dataset<Row> ordered, MatchRecognizeFunction function, StructType schema) {
    MatchedRDD rdd = new MatchedRDD(ordered, function);
    return ((org.apache.spark.sql.classic.SparkSession) ordered.sparkSession()).internalCreateDataFrame(rdd, schema, false);
  }

  /**
   * The physical plans of the sorted rows under {@code result}'s matches, one per MatchedRDD in
   * its plan (for cerql.explain: the plan of a result shows a scan of this RDD). Plans only, no
   * job: with adaptive execution, the plan as it stands before running.
   */
  public static String inputPlans(Dataset<?> result) {
    StringBuilder text = new StringBuilder();
    LogicalPlan plan = ((org.apache.spark.sql.classic.Dataset<?>) result).queryExecution().optimizedPlan();
    for (LogicalPlan leaf : CollectionConverters.asJava(plan.collectLeaves())) {
      if (leaf instanceof LogicalRDD && ((LogicalRDD) leaf).rdd() instanceof MatchedRDD) {
        Dataset<Row> input = ((MatchedRDD) ((LogicalRDD) leaf).rdd()).ordered;
        text.append(((org.apache.spark.sql.classic.Dataset<Row>) input).queryExecution().executedPlan().treeString());
      }
    }
    return text.toString();
  }

  private synchronized RDD<InternalRow> input() {
    if (input == null) {
      input = ((org.apache.spark.sql.classic.Dataset<Row>) ordered).queryExecution().toRdd();
    }
    return input;
  }

  @Override
  public Partition[] getPartitions() {
    return input().partitions();
  }

  @Override
  public Seq<org.apache.spark.Dependency<?>> getDependencies() {
    java.util.List<org.apache.spark.Dependency<?>> one = java.util.List.of(new OneToOneDependency<>(input()));
    return CollectionConverters.asScala(one).toSeq();
  }

  @Override
  public scala.collection.Iterator<InternalRow> compute(Partition split, TaskContext context) {
    java.util.Iterator<InternalRow> rows = CollectionConverters.asJava(input.iterator(split, context));
    return CollectionConverters.asScala(function.call(rows));
  }
}
