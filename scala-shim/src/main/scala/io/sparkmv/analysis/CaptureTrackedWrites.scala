package io.sparkmv.analysis

import org.apache.spark.sql.SaveMode
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.analysis.ResolvedIdentifier
import org.apache.spark.sql.catalyst.plans.logical.{DropTable, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.command.{AlterTableDropPartitionCommand, CreateDataSourceTableAsSelectCommand, DropTableCommand, TruncateTableCommand}
import org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand
import org.apache.spark.sql.sparkmv.SparkInternals

import io.sparkmv.bridge.MvHandlerRegistry
import io.sparkmv.commands.{Capture, CapturedDropTable, CapturedReplaceCommand, CapturedWriteCommand}

/**
 * Post-hoc resolution (after Spark's DataSourceAnalysis): writes to tracked tables run inside
 * a capturing command. The check is one property lookup on the table the plan already
 * carries (or, for commands that name a table, one catalog lookup); other tables are
 * untouched. DROP TABLE and `saveAsTable` overwrite (which drops the table first) are always
 * reported, so that copy-on-write directories and change logs go with the table.
 */
object CaptureTrackedWrites extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = MvHandlerRegistry.trackingProperty match {
    case None => plan
    case Some(_) if plan.exists(captured) => plan // wrapped already
    case Some(key) =>
      def catalog = org.apache.spark.sql.SparkSession.active.sessionState.catalog
      def exists(table: TableIdentifier): Boolean = catalog.tableExists(table)
      def tracked(table: TableIdentifier): Boolean =
        exists(table) && catalog.getTableMetadata(table).properties.contains(key)
      // Bottom-up, so the wrapper's own child is not visited again.
      plan.transformUp {
        case write: InsertIntoHadoopFsRelationCommand
            if write.catalogTable.exists(_.properties.contains(key)) =>
          CapturedWriteCommand(write)
        case truncate: TruncateTableCommand if tracked(truncate.tableName) =>
          CapturedReplaceCommand(truncate, truncate.tableName)
        case drop: AlterTableDropPartitionCommand if tracked(drop.tableName) =>
          CapturedReplaceCommand(drop, drop.tableName)
        case replace: CreateDataSourceTableAsSelectCommand
            if replace.mode == SaveMode.Overwrite && exists(replace.table.identifier) =>
          CapturedReplaceCommand(replace, replace.table.identifier, Capture.ReplaceTable)
        case drop: DropTableCommand if !drop.isView =>
          CapturedReplaceCommand(drop, drop.tableName, Capture.Drop)
        case drop @ DropTable(ResolvedIdentifier(catalog, ident), _, _)
            if SparkInternals.isSessionCatalog(catalog) &&
              ident.namespace.length == 1 && drop.getTagValue(CapturedDropTable.Marker).isEmpty =>
          drop.setTagValue(CapturedDropTable.Marker, ())
          CapturedDropTable(drop, TableIdentifier(ident.name, Some(ident.namespace.head)))
      }
  }

  private def captured(plan: LogicalPlan): Boolean =
    plan.isInstanceOf[CapturedWriteCommand] || plan.isInstanceOf[CapturedReplaceCommand] ||
      plan.isInstanceOf[CapturedDropTable]
}
