package io.sparkmv.commands

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.command.DataWritingCommand
import org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand

import io.sparkmv.bridge.MvHandlerRegistry

/**
 * A file write to a tracked table, reported to the handler before and after it runs, so the
 * handler can log what it changed; only a write that succeeded is logged.
 *
 * The write's partition columns are this node's own field: they refer to attributes of the
 * query, which Spark's optimizer may rewrite, and it rewrites only the wrapper's expressions.
 */
case class CapturedWriteCommand(
    write: InsertIntoHadoopFsRelationCommand,
    partitionColumns: Seq[Attribute])
    extends DataWritingCommand {

  override def query: LogicalPlan = write.query
  override def outputColumnNames: Seq[String] = write.outputColumnNames

  override def run(sparkSession: SparkSession, child: SparkPlan): Seq[Row] = {
    val table = write.catalogTable.get.identifier
    val database = table.database.getOrElse(sparkSession.catalog.currentDatabase)
    val token = MvHandlerRegistry.captureWrite("BEFORE", database, table.table, write.mode.name)
    val result =
      try write.copy(partitionColumns = partitionColumns).run(sparkSession, child)
      catch {
        case failure: Throwable =>
          MvHandlerRegistry.captureWrite("ABORT", database, table.table, token)
          throw failure
      }
    MvHandlerRegistry.captureWrite("AFTER", database, table.table, token)
    result
  }

  override protected def withNewChildInternal(newChild: LogicalPlan): CapturedWriteCommand =
    copy(write = write.copy(query = newChild))
}

object CapturedWriteCommand {
  def apply(write: InsertIntoHadoopFsRelationCommand): CapturedWriteCommand =
    CapturedWriteCommand(write, write.partitionColumns)
}
