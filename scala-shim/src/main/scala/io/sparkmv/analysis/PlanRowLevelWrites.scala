package io.sparkmv.analysis

import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.{DeleteFromTable, LogicalPlan, MergeIntoTable, UpdateTable}
import org.apache.spark.sql.catalyst.rules.Rule

import io.sparkmv.bridge.MvHandlerRegistry
import io.sparkmv.capture.{ClearedKeys, RowLevelChanges}
import io.sparkmv.commands.RowLevelWriteCommand

/**
 * Post-hoc resolution: `DELETE`, `UPDATE` and `MERGE` on parquet tables of the session
 * catalog, which plain Spark refuses at planning time, become [[RowLevelWriteCommand]]s.
 * Their conditions and assignments are fully resolved here. Other tables are left alone.
 */
object PlanRowLevelWrites extends Rule[LogicalPlan] {
  import RowLevelWriteCommand.{Delete, Merge, Update}

  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!MvHandlerRegistry.isRegistered) plan
    else
      plan.resolveOperators {
        case d: DeleteFromTable if d.resolved =>
          command(Delete, d.table, RowLevelChanges.delete(_, d.condition))
            .map(_.copy(clearedKeys = ClearedKeys.of(d.table, d.condition)))
            .getOrElse(d)
        case u: UpdateTable if u.resolved =>
          command(Update, u.table, RowLevelChanges.update(_, u.assignments, u.condition))
            .map(_.copy(assigned = u.assignments.map(_.key).collect { case a: Attribute => a.name }))
            .getOrElse(u)
        case m: MergeIntoTable if m.resolved =>
          command(Merge, m.targetTable, RowLevelChanges.merge(_, m)).getOrElse(m)
      }

  private def command(
      kind: String,
      target: LogicalPlan,
      changes: org.apache.spark.sql.execution.datasources.LogicalRelation => LogicalPlan)
      : Option[RowLevelWriteCommand] =
    RowLevelChanges.parquetTarget(target).map { case (relation, table) =>
      try RowLevelWriteCommand(kind, table, Some(changes(relation)), "")
      catch {
        case RowLevelChanges.Unsupported(reason) => RowLevelWriteCommand(kind, table, None, reason)
      }
    }
}
