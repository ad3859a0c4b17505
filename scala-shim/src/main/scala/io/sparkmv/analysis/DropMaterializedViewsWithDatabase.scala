package io.sparkmv.analysis

import org.apache.spark.sql.catalyst.analysis.ResolvedNamespace
import org.apache.spark.sql.catalyst.plans.logical.{DropNamespace, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.sparkmv.SparkInternals

import io.sparkmv.bridge.MvHandlerRegistry
import io.sparkmv.commands.DropDatabaseWithMaterializedViews

/**
 * Post-hoc resolution: `DROP DATABASE db CASCADE` of the session catalog drops the
 * materialized views of `db` through sparkmv before Spark drops the database
 * ([[DropDatabaseWithMaterializedViews]]). Spark alone would drop their catalog entries and
 * leave their stored rows and their base tables' change logs behind. Without `CASCADE`,
 * Spark refuses a database that holds any entry, materialized views included.
 */
object DropMaterializedViewsWithDatabase extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan match {
    case drop @ DropNamespace(ResolvedNamespace(catalog, Seq(database), _), _, true)
        if SparkInternals.isSessionCatalog(catalog) && MvHandlerRegistry.isRegistered &&
          drop.getTagValue(DropDatabaseWithMaterializedViews.Marker).isEmpty =>
      drop.setTagValue(DropDatabaseWithMaterializedViews.Marker, ())
      DropDatabaseWithMaterializedViews(drop, database)
    case other => other
  }
}
