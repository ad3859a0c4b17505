package io.sparkmv.analysis

import org.apache.spark.sql.catalyst.plans.logical.{CreateMaterializedViewAsSelect, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule

import io.sparkmv.commands.MaterializedViewCommand
import io.sparkmv.parser.MvStatementKind

/**
 * Spark's own grammar turns `CREATE MATERIALIZED VIEW` into `CreateMaterializedViewAsSelect`
 * where the shim's parser never sees the statement text (inside SQL scripts). Reroute that node
 * to sparkmv using the statement text recorded in its origin.
 */
object RerouteSparkMaterializedView extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsDown {
    case create: CreateMaterializedViewAsSelect if statementText(create).isDefined =>
      MaterializedViewCommand(MvStatementKind.Create, statementText(create).get)
  }

  private def statementText(create: CreateMaterializedViewAsSelect): Option[String] = {
    val origin = create.origin
    for {
      text <- origin.sqlText
      start <- origin.startIndex
      stop <- origin.stopIndex
    } yield text.substring(start, stop + 1)
  }
}
