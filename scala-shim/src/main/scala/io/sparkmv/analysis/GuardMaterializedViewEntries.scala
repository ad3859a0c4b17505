package io.sparkmv.analysis

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.analysis.PersistedView
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.command.{AlterTableRenameCommand, AlterTableSetPropertiesCommand, AlterTableUnsetPropertiesCommand, AlterViewAsCommand, AlterViewSchemaBindingCommand, CreateViewCommand, DropTableCommand}

import io.sparkmv.bridge.MvHandlerRegistry
import io.sparkmv.commands.{CapturedDropTable, CapturedReplaceCommand, RefusedViewCommand}

/**
 * Post-hoc resolution (after `CaptureTrackedWrites`): Spark's own view and table commands must not change a materialized view's
 * catalog entry. A materialized view is a catalog view carrying sparkmv's marker property;
 * `DROP VIEW`, `ALTER VIEW ... AS`, `CREATE OR REPLACE VIEW`, `ALTER VIEW ... RENAME`, `SET` /
 * `UNSET TBLPROPERTIES` and `WITH SCHEMA` would replace or rename the entry and leave its
 * stored rows and its base tables' change logs behind. Such a command (always the root of its
 * plan) becomes a [[RefusedViewCommand]], whose run raises the error the Python handler words
 * (naming the MATERIALIZED VIEW statement to use). It fails when run, not here: Spark rewraps
 * an analysis error and drops its SQLSTATE.
 *
 * sparkmv's own `CREATE OR REPLACE VIEW` of the entry carries the marker property, so it
 * passes; sparkmv drops an entry through the catalog, not by statement. A temporary view of
 * the same name shadows the entry and is left alone.
 */
case class GuardMaterializedViewEntries(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = {
    val refused = for {
      marker <- MvHandlerRegistry.viewMarkerProperty
      (command, name) <- targetOf(plan, marker)
      view <- materializedView(name, marker)
    } yield RefusedViewCommand(command, view)
    refused.getOrElse(plan)
  }

  /** The command `node` runs on a persistent view or table, and the name it names. */
  private def targetOf(node: LogicalPlan, marker: String): Option[(String, TableIdentifier)] =
    node match {
      case create: CreateViewCommand
          if create.replace && create.viewType == PersistedView &&
            !create.properties.contains(marker) =>
        Some("CREATE OR REPLACE VIEW" -> create.name)
      case alter: AlterViewAsCommand => Some("ALTER VIEW ... AS" -> alter.name)
      case alter: AlterViewSchemaBindingCommand => Some("ALTER VIEW ... WITH SCHEMA" -> alter.name)
      case rename: AlterTableRenameCommand => Some(s"${kind(rename.isView)} ... RENAME" -> rename.oldName)
      case set: AlterTableSetPropertiesCommand =>
        Some(s"${kind(set.isView)} ... SET TBLPROPERTIES" -> set.tableName)
      case unset: AlterTableUnsetPropertiesCommand =>
        Some(s"${kind(unset.isView)} ... UNSET TBLPROPERTIES" -> unset.tableName)
      case drop: DropTableCommand => Some(s"DROP ${if (drop.isView) "VIEW" else "TABLE"}" -> drop.tableName)
      case drop: CapturedDropTable => Some("DROP TABLE" -> drop.table)
      case captured: CapturedReplaceCommand => targetOf(captured.command, marker)
      case _ => None
    }

  private def kind(isView: Boolean): String = if (isView) "ALTER VIEW" else "ALTER TABLE"

  /** `name`, qualified, when it names a materialized view (not a temporary view). */
  private def materializedView(name: TableIdentifier, marker: String): Option[TableIdentifier] = {
    val catalog = session.sessionState.catalog
    if (catalog.isTempView(name) || !catalog.tableExists(name)) None
    else Some(catalog.getTableMetadata(name)).filter(_.properties.contains(marker)).map(_.identifier)
  }
}
