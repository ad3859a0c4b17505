package io.sparkmv.commands

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.sparkmv.SparkInternals
import org.apache.spark.sql.types.LongType

import io.sparkmv.bridge.{MvHandlerRegistry, ResultRows}

/**
 * `DELETE`, `UPDATE` or `MERGE` on a parquet table, run by the Python handler as a
 * copy-on-write of the files that hold affected rows (and logged if the table is tracked).
 *
 * `changes` is the plan of [[io.sparkmv.capture.RowLevelChanges]]; when the statement cannot
 * be expressed, `unsupported` says why and the handler reports it. `assigned`: the columns
 * an UPDATE assigns (the change log records them: a view reading none of them ignores it).
 * `clearedKeys`: what a DELETE's condition proves about the table after it
 * ([[io.sparkmv.capture.ClearedKeys]]; "" for nothing), which the change log records too.
 */
case class RowLevelWriteCommand(
    kind: String,
    table: CatalogTable,
    changes: Option[LogicalPlan],
    unsupported: String,
    assigned: Seq[String] = Nil,
    clearedKeys: String = "")
    extends LeafRunnableCommand {

  override val output: Seq[Attribute] = RowLevelWriteCommand.outputNames(kind).map { name =>
    AttributeReference(name, LongType, nullable = false)()
  }

  override def run(sparkSession: SparkSession): Seq[Row] = {
    val frame = changes.map(SparkInternals.ofRows(sparkSession, _)).orNull
    val identifier = table.identifier
    val database = identifier.database.getOrElse(sparkSession.catalog.currentDatabase)
    val json = MvHandlerRegistry.rowLevelWrite(
      kind, database, identifier.table, frame, unsupported, assigned, clearedKeys, sparkSession)
    ResultRows.fromJson(json, output)
  }
}

object RowLevelWriteCommand {
  val Delete = "DELETE"
  val Update = "UPDATE"
  val Merge = "MERGE"

  /** Result columns, as Delta Lake and Databricks name them. */
  def outputNames(kind: String): Seq[String] = kind match {
    case Merge =>
      Seq("num_affected_rows", "num_updated_rows", "num_deleted_rows", "num_inserted_rows")
    case _ => Seq("num_affected_rows")
  }
}
