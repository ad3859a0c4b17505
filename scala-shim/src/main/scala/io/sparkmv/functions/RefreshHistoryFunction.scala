package io.sparkmv.functions

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo}
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan}

import io.sparkmv.bridge.{MvHandlerRegistry, ResultRows}
import io.sparkmv.commands.MaterializedViewCommand
import io.sparkmv.parser.MvStatementKind

/**
 * The table-valued function `sparkmv_refresh_history([view])`: the rows of `SHOW MATERIALIZED
 * VIEW REFRESHES [FOR view]` as a relation that a query can filter and join. The call, its
 * arguments as SQL text, goes to the Python handler like a statement (it parses and checks
 * them); the rows it returns are the relation, read when the query is analyzed.
 */
object RefreshHistoryFunction {
  val Name = "sparkmv_refresh_history"

  val description: (FunctionIdentifier, ExpressionInfo, Seq[Expression] => LogicalPlan) = (
    FunctionIdentifier(Name),
    new ExpressionInfo(
      getClass.getCanonicalName,
      null,
      Name,
      s"$Name([view]) - The refresh history of a materialized view (of every one without an " +
        "argument), newest first: SHOW MATERIALIZED VIEW REFRESHES as a table.",
      ""),
    build)

  private def build(arguments: Seq[Expression]): LogicalPlan = {
    val call = s"$Name(${arguments.map(_.sql).mkString(", ")})"
    val kind = MvStatementKind.ShowRefreshes
    val output = MaterializedViewCommand.outputFor(kind, call)
    val session = SparkSession.getActiveSession.orNull
    val json = MvHandlerRegistry.execute(kind, call, session).asInstanceOf[String]
    LocalRelation.fromExternalRows(output, ResultRows.fromJson(json, output))
  }
}
