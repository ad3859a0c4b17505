package io.sparkmv.commands

import scala.jdk.CollectionConverters._

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{Row, SaveMode}
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.catalog.CatalogTypes.TablePartitionSpec
import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.command.{LeafRunnableCommand, RunnableCommand}
import org.apache.spark.sql.execution.datasources.{FileFormat, InsertIntoHadoopFsRelationCommand, V1WriteCommand}

import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.sparkmv.SparkInternals

import io.sparkmv.bridge.MvHandlerRegistry
import io.sparkmv.catalog.CatalogBridge
import io.sparkmv.fs.FsBridge

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

  /**
   * `around` for a file write into `table`, the catalog entry its plan carries: the handler is
   * told the facts it needs in the details themselves, so it looks nothing up in the metastore
   * and lists nothing over py4j. BEFORE gets `{"mode", "table", "files"}`: the write's
   * `SaveMode` name, the table as `CatalogBridge.table` describes it, and its files before the
   * write; AFTER gets `{"token", "files"}`: the token BEFORE returned and the files after it.
   * ABORT gets the bare token, as from `around`.
   *
   * An INSERT changes neither the table's location, schema nor properties, so the entry read
   * when the plan was analysed holds for the whole write; its files (and, of a partitioned
   * table, its partitions) are listed afresh at each end.
   */
  def aroundFileWrite[T](spark: SparkSession, table: CatalogTable, mode: String)(
      write: => T): T = {
    val database = table.identifier.database.getOrElse(spark.catalog.currentDatabase)
    val name = table.identifier.table
    val before = WriteFacts.toJson(
      Map[String, AnyRef](
        "mode" -> mode,
        "table" -> CatalogBridge.describe(table),
        "files" -> WriteFacts.files(spark, table)))
    val token = MvHandlerRegistry.captureWrite("BEFORE", database, name, before)
    val result =
      try write
      catch {
        case failure: Throwable =>
          MvHandlerRegistry.captureWrite("ABORT", database, name, token)
          throw failure
      }
    val after = WriteFacts.toJson(
      Map[String, AnyRef]("token" -> token, "files" -> WriteFacts.files(spark, table)))
    MvHandlerRegistry.captureWrite("AFTER", database, name, after)
    result
  }
}

/** What a captured file write tells the handler (see `Capture.aroundFileWrite`). */
private[commands] object WriteFacts {
  private val json = new com.fasterxml.jackson.databind.ObjectMapper()

  def toJson(values: Map[String, AnyRef]): String = json.writeValueAsString(values.asJava)

  /**
   * The table's data units now, as `capture.files.list_table_files` lists them from Python:
   * `[[spec or null, qualified location, [[path, size, modified ms], ...]], ...]`, the spec and
   * location of each data unit as `CatalogBridge.dataUnits` gives them and its files as
   * `FsBridge.listDataFiles` finds them.
   */
  def files(spark: SparkSession, table: CatalogTable): java.util.List[java.util.List[AnyRef]] = {
    val conf = spark.sparkContext.hadoopConfiguration
    CatalogBridge.dataUnits(spark, table).map { case (spec, location) =>
      val listed = FsBridge.listDataFiles(conf, location)
      val files =
        if (listed.isEmpty) Seq.empty
        else
          listed.split("\u0000").grouped(3).map { case Array(path, size, modified) =>
            java.util.List.of[AnyRef](path, java.lang.Long.valueOf(size), java.lang.Long.valueOf(modified))
          }.toSeq
      java.util.Arrays.asList[AnyRef](spec, FsBridge.qualified(conf, location), files.asJava)
    }.asJava
  }
}

/**
 * A file write to a tracked table (INSERT, INSERT OVERWRITE, `insertInto`, `saveAsTable`
 * append), captured around its run.
 *
 * The write's partition columns are this node's own field: they refer to attributes of the
 * query, which Spark's optimizer may rewrite, and it rewrites only the wrapper's expressions.
 *
 * It is a `V1WriteCommand` like the write it wraps, so Spark's planned write (`V1Writes`)
 * applies to it as to an uncaptured write: the optimizer adds the `WriteFiles` node (and the
 * sort by dynamic partition columns) below this node, and the wrapped write, handed that plan,
 * runs exactly as it would on its own.
 */
case class CapturedWriteCommand(
    write: InsertIntoHadoopFsRelationCommand,
    partitionColumns: Seq[Attribute])
    extends V1WriteCommand {

  override def query: LogicalPlan = write.query
  override def outputColumnNames: Seq[String] = write.outputColumnNames
  override def fileFormat: FileFormat = write.fileFormat
  override def staticPartitions: TablePartitionSpec = write.staticPartitions
  override def bucketSpec: Option[org.apache.spark.sql.catalyst.catalog.BucketSpec] =
    write.bucketSpec
  override def options: Map[String, String] = write.options
  override def requiredOrdering: Seq[SortOrder] = effective.requiredOrdering

  /** The wrapped write with this node's (possibly rewritten) partition columns. */
  private def effective: InsertIntoHadoopFsRelationCommand =
    write.copy(partitionColumns = partitionColumns)

  override def run(sparkSession: SparkSession, child: SparkPlan): Seq[Row] =
    Capture.aroundFileWrite(sparkSession, write.catalogTable.get, write.mode.name) {
      effective.run(sparkSession, child)
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
