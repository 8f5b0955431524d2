/**
 * cerql's MATCH_RECOGNIZE matcher inside Spark's JVM (cerql/spark/jvm.py compiles and loads it):
 * the rows of a PARTITION BY group are matched where Spark's sort left them, without crossing to
 * Python.
 */
package io.cerql.mr;
