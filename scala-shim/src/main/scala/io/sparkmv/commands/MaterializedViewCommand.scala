package io.sparkmv.commands

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.types.StructType

import io.sparkmv.bridge.{MvHandlerRegistry, ResultRows}
import io.sparkmv.parser.MvStatementKind

/**
 * A claimed statement: its kind, its text, and the result schema the handler declared for it
 * at parse time (a command's output is fixed before `run()`).
 */
abstract class MaterializedViewCommand extends LeafRunnableCommand {
  def kind: String
  def sqlText: String

  override def run(sparkSession: SparkSession): Seq[Row] =
    ResultRows.fromJson(
      MvHandlerRegistry.execute(kind, sqlText, sparkSession).asInstanceOf[String],
      output)
}

object MaterializedViewCommand {
  /** One command class per statement kind, each carrying the declared output. */
  def apply(kind: String, sqlText: String): MaterializedViewCommand = {
    val output = outputFor(kind, sqlText)
    kind match {
      case MvStatementKind.Create => CreateMaterializedViewCommand(sqlText, output)
      case MvStatementKind.Refresh => RefreshMaterializedViewCommand(sqlText, output)
      case MvStatementKind.Drop => DropMaterializedViewCommand(sqlText, output)
      case MvStatementKind.Alter => AlterMaterializedViewCommand(sqlText, output)
      case MvStatementKind.Describe => DescribeMaterializedViewCommand(sqlText, output)
      case MvStatementKind.Show => ShowMaterializedViewsCommand(sqlText, output)
      case MvStatementKind.ShowRefreshes =>
        ShowMaterializedViewRefreshesCommand(sqlText, output)
      case MvStatementKind.Explain => ExplainMaterializedViewCommand(sqlText, output)
    }
  }

  /** The output the handler declares for a statement of `kind`. */
  def outputFor(kind: String, sqlText: String): Seq[Attribute] = {
    val ddl = MvHandlerRegistry.resultSchema(kind, sqlText)
    if (ddl.trim.isEmpty) Seq.empty else DataTypeUtils.toAttributes(StructType.fromDDL(ddl))
  }
}

case class CreateMaterializedViewCommand(sqlText: String, override val output: Seq[Attribute])
    extends MaterializedViewCommand { val kind: String = MvStatementKind.Create }

case class RefreshMaterializedViewCommand(sqlText: String, override val output: Seq[Attribute])
    extends MaterializedViewCommand { val kind: String = MvStatementKind.Refresh }

case class DropMaterializedViewCommand(sqlText: String, override val output: Seq[Attribute])
    extends MaterializedViewCommand { val kind: String = MvStatementKind.Drop }

case class AlterMaterializedViewCommand(sqlText: String, override val output: Seq[Attribute])
    extends MaterializedViewCommand { val kind: String = MvStatementKind.Alter }

case class DescribeMaterializedViewCommand(sqlText: String, override val output: Seq[Attribute])
    extends MaterializedViewCommand { val kind: String = MvStatementKind.Describe }

case class ShowMaterializedViewsCommand(sqlText: String, override val output: Seq[Attribute])
    extends MaterializedViewCommand { val kind: String = MvStatementKind.Show }

case class ShowMaterializedViewRefreshesCommand(
    sqlText: String,
    override val output: Seq[Attribute])
    extends MaterializedViewCommand { val kind: String = MvStatementKind.ShowRefreshes }

case class ExplainMaterializedViewCommand(sqlText: String, override val output: Seq[Attribute])
    extends MaterializedViewCommand { val kind: String = MvStatementKind.Explain }
