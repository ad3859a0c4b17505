package io.sparkmv.commands

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.sparkmv.SparkInternals

import io.sparkmv.bridge.MvHandlerRegistry

/**
 * `DROP DATABASE database CASCADE` with sparkmv attached: first `DROP MATERIALIZED VIEW IF
 * EXISTS database.v CASCADE` for each materialized view of `database` (one statement each,
 * run by the Python handler like any other: it removes the view's storage and stops
 * tracking its base tables; `CASCADE` also drops the views that read it, in whatever
 * database), then `drop` (Spark's plan, tagged so that it is not wrapped again) as Spark
 * runs it. A failure stops before the database is dropped; the views dropped by then stay
 * dropped, each completely.
 */
case class DropDatabaseWithMaterializedViews(drop: LogicalPlan, database: String)
    extends LeafRunnableCommand {

  override val output: Seq[Attribute] = drop.output

  override def run(sparkSession: SparkSession): Seq[Row] = {
    val catalog = sparkSession.sessionState.catalog
    for (marker <- MvHandlerRegistry.viewMarkerProperty if catalog.databaseExists(database)) {
      val names = catalog.listTables(database).filterNot(catalog.isTempView)
      val views = catalog.getTablesByName(names).filter(_.properties.contains(marker))
      // Materialized view names are letters, digits and `_` (the metastore's rule).
      for (view <- views) {
        val name = s"${view.identifier.database.getOrElse(database)}.${view.identifier.table}"
        sparkSession.sql(s"DROP MATERIALIZED VIEW IF EXISTS $name CASCADE").collect()
      }
    }
    SparkInternals.ofRows(sparkSession, drop).collect().toSeq
  }
}

object DropDatabaseWithMaterializedViews {
  val Marker: TreeNodeTag[Unit] = TreeNodeTag[Unit]("sparkmv.droppedDatabase")
}
