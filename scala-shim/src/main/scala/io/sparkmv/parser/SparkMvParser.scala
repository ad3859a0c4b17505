package io.sparkmv.parser

import org.apache.spark.sql.catalyst.{FunctionIdentifier, TableIdentifier}
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.parser.{ParameterContext, ParserInterface}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.{DataType, StructType}

import io.sparkmv.commands.MaterializedViewCommand

/**
 * Claims materialized-view statements and hands everything else to Spark's parser untouched.
 * Claimed statements become one [[MaterializedViewCommand]] per statement kind; the statement
 * text itself is parsed by the Python handler when the command runs.
 *
 * The methods only some Spark lines' `ParserInterface` has are delegated by [[ParserCompat]],
 * one per line (`src/main/scala-spark-<line>`, chosen by `sparkmv.jar`).
 */
class SparkMvParser(protected val delegate: ParserInterface)
    extends ParserInterface
    with ParserCompat {

  override def parsePlan(sqlText: String): LogicalPlan =
    claim(sqlText).getOrElse(delegate.parsePlan(sqlText))

  override def parsePlanWithParameters(
      sqlText: String,
      parameterContext: ParameterContext): LogicalPlan =
    claim(sqlText).getOrElse(delegate.parsePlanWithParameters(sqlText, parameterContext))

  private def claim(sqlText: String): Option[LogicalPlan] =
    MvStatementKind.of(sqlText).map(kind => MaterializedViewCommand(kind, sqlText))

  // Everything below is a one-line delegation (and so is all of ParserCompat).
  override def parseExpression(sqlText: String): Expression = delegate.parseExpression(sqlText)
  override def parseTableIdentifier(sqlText: String): TableIdentifier =
    delegate.parseTableIdentifier(sqlText)
  override def parseFunctionIdentifier(sqlText: String): FunctionIdentifier =
    delegate.parseFunctionIdentifier(sqlText)
  override def parseMultipartIdentifier(sqlText: String): Seq[String] =
    delegate.parseMultipartIdentifier(sqlText)
  override def parseQuery(sqlText: String): LogicalPlan = delegate.parseQuery(sqlText)
  override def parseRoutineParam(sqlText: String): StructType = delegate.parseRoutineParam(sqlText)
  override def parseTableSchema(sqlText: String): StructType = delegate.parseTableSchema(sqlText)
  override def parseDataType(sqlText: String): DataType = delegate.parseDataType(sqlText)
}
