package io.sparkmv.commands

import org.apache.spark.sql.{Row, SaveMode}
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.command.{DataWritingCommand, LeafRunnableCommand, RunnableCommand}
import org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand

import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.sparkmv.SparkInternals

import io.sparkmv.bridge.MvHandlerRegistry

/** Reports a write to the handler before and after it runs; only a write that succeeded is logged. */
object Capture {
  /**
   * What the handler is told a write does: a `SaveMode` name, "Drop" (DROP TABLE) or
   * "ReplaceTable" (`saveAsTable` overwrite: the table is dropped and created again).
   */
  val Drop = "Drop"
  val ReplaceTable = "ReplaceTable"

  def around[T](spark: org.apache.spark.sql.SparkSession, table: TableIdentifier, kind: String)(
      write: => T): T = {
    val database = table.database.getOrElse(spark.catalog.currentDatabase)
    val token = MvHandlerRegistry.captureWrite("BEFORE", database, table.table, kind)
    val result =
      try write
      catch {
        case failure: Throwable =>
          MvHandlerRegistry.captureWrite("ABORT", database, table.table, token)
          throw failure
      }
    MvHandlerRegistry.captureWrite("AFTER", database, table.table, token)
    result
  }
}

/**
 * A file write to a tracked table (INSERT, INSERT OVERWRITE, `insertInto`, `saveAsTable`
 * append), captured around its run.
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

  override def run(sparkSession: SparkSession, child: SparkPlan): Seq[Row] =
    Capture.around(sparkSession, write.catalogTable.get.identifier, write.mode.name) {
      write.copy(partitionColumns = partitionColumns).run(sparkSession, child)
    }

  override protected def withNewChildInternal(newChild: LogicalPlan): CapturedWriteCommand =
    copy(write = write.copy(query = newChild))
}

object CapturedWriteCommand {
  def apply(write: InsertIntoHadoopFsRelationCommand): CapturedWriteCommand =
    CapturedWriteCommand(write, write.partitionColumns)
}

/**
 * A command that removes or replaces a table's data without a file write of its own plan,
 * reported around its run: TRUNCATE, ALTER TABLE DROP PARTITION and `saveAsTable` overwrite
 * of tracked tables (as an overwrite), and DROP TABLE (so sparkmv can remove what it keeps
 * beside the table's data).
 */
case class CapturedReplaceCommand(
    command: RunnableCommand,
    table: TableIdentifier,
    kind: String = SaveMode.Overwrite.name)
    extends LeafRunnableCommand {

  override val output: Seq[Attribute] = command.output

  override def run(sparkSession: org.apache.spark.sql.SparkSession): Seq[Row] =
    Capture.around(sparkSession, table, kind)(command.run(sparkSession))
}

/**
 * DROP TABLE of a session-catalog table, reported around its run. Spark 4 plans it as a V2
 * command, so this runs the original (marked, so it is not wrapped again) as its own plan.
 */
case class CapturedDropTable(drop: LogicalPlan, table: TableIdentifier)
    extends LeafRunnableCommand {

  override val output: Seq[Attribute] = drop.output

  override def run(sparkSession: org.apache.spark.sql.SparkSession): Seq[Row] =
    Capture.around(sparkSession, table, Capture.Drop) {
      SparkInternals.ofRows(sparkSession, drop).collect().toSeq
    }
}

object CapturedDropTable {
  val Marker: TreeNodeTag[Unit] = TreeNodeTag[Unit]("sparkmv.capturedDrop")
}
