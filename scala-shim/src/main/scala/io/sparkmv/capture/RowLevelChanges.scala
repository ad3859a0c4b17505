package io.sparkmv.capture

import org.apache.spark.sql.catalyst.analysis.EliminateSubqueryAliases
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.Literal.{FalseLiteral, TrueLiteral}
import org.apache.spark.sql.catalyst.plans.{FullOuter, LeftOuter}
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.util.toPrettySQL
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.types.{StringType, StructType}

/**
 * `DELETE`, `UPDATE` and `MERGE` on a parquet table, as one plan of row changes that the
 * Python side applies by copy-on-write.
 *
 * The plan has the table's columns (the row's image after the statement) and:
 *  - `__sparkmv_before`: for an updated or deleted row, a struct of its values before the
 *    statement (its pre-image, for the change log); null for other rows;
 *  - `__sparkmv_file`, `__sparkmv_row`: where the target row lives (null for inserted rows);
 *  - `__sparkmv_action`: `keep`, `update`, `delete` or `insert`;
 *  - `__sparkmv_matched`: a MERGE matched this target row with a source row.
 * Every target row appears once, except in a MERGE: once per matching source row, which the
 * Python side rejects as a cardinality violation when a WHEN MATCHED clause exists (and
 * otherwise keeps once).
 *
 * Built from the resolved expressions: rendering them to SQL text would lose subqueries. A
 * statement this cannot express raises [[RowLevelChanges.Unsupported]] with the reason; the
 * Python side reports it under its own error class.
 */
object RowLevelChanges {
  case class Unsupported(reason: String) extends Exception(reason)

  val BeforeColumn = "__sparkmv_before"
  val FileColumn = "__sparkmv_file"
  val RowColumn = "__sparkmv_row"
  val ActionColumn = "__sparkmv_action"
  val MatchedColumn = "__sparkmv_matched"

  /** The parquet catalog table a row-level command targets, if that is what it targets. */
  def parquetTarget(target: LogicalPlan): Option[(LogicalRelation, CatalogTable)] =
    EliminateSubqueryAliases(target) match {
      case relation: LogicalRelation =>
        (relation.relation, relation.catalogTable) match {
          case (files: HadoopFsRelation, Some(table))
              if files.fileFormat.isInstanceOf[ParquetFileFormat] =>
            Some(relation -> table)
          case _ => None
        }
      case _ => None
    }

  def delete(relation: LogicalRelation, condition: Expression): LogicalPlan = {
    val target = Target(relation)
    val matches = EqualNullSafe(condition, TrueLiteral)
    Union(
      target.rows(
        Filter(matches, target.plan),
        target.columns,
        Literal("delete"),
        before = target.original),
      target.rows(Filter(Not(matches), target.plan), target.columns, Literal("keep")))
  }

  def update(
      relation: LogicalRelation,
      assignments: Seq[Assignment],
      condition: Option[Expression]): LogicalPlan = {
    val target = Target(relation)
    val matches = EqualNullSafe(condition.getOrElse(TrueLiteral), TrueLiteral)
    val values = target.assigned(assignments)
    Union(
      target.rows(
        Filter(matches, target.plan),
        target.columns.map(column => values.getOrElse(column.exprId, column)),
        Literal("update"),
        before = target.original),
      target.rows(Filter(Not(matches), target.plan), target.columns, Literal("keep")))
  }

  /**
   * Target ⟗ source on the merge condition; per joined row the first action whose condition
   * holds decides the row's image and action (SQL's `WHEN` clauses are tried in order).
   */
  def merge(relation: LogicalRelation, m: MergeIntoTable): LogicalPlan = {
    val target = Target(relation)
    val targetPresent = Alias(TrueLiteral, "__sparkmv_target_present")()
    val sourcePresent = Alias(TrueLiteral, "__sparkmv_source_present")()
    val joinType = if (m.notMatchedActions.nonEmpty) FullOuter else LeftOuter
    val joined = Join(
      Project(target.plan.output :+ targetPresent, target.plan),
      Project(m.sourceTable.output :+ sourcePresent, m.sourceTable),
      joinType,
      Some(m.mergeCondition),
      JoinHint.NONE)
    val inTarget = EqualNullSafe(targetPresent.toAttribute, TrueLiteral)
    val inSource = EqualNullSafe(sourcePresent.toAttribute, TrueLiteral)
    val matched = And(inTarget, inSource)
    val branches =
      m.matchedActions.map(target.branch(matched, _)) ++
        m.notMatchedActions.map(target.branch(And(inSource, Not(inTarget)), _)) ++
        m.notMatchedBySourceActions.map(target.branch(And(inTarget, Not(inSource)), _))
    val action = CaseWhen(
      branches.map(b => b.condition -> Literal(b.action)),
      If(inTarget, Literal("keep"), Literal(null, StringType)))
    val image = target.columns.map { column =>
      CaseWhen(branches.map(b => b.condition -> b.valueOf(column)), column)
    }
    val before = CaseWhen(
      branches.map(b => b.condition -> (if (b.changesTarget) target.original else target.none)),
      target.none)
    // Matching a target row twice is an error only where a WHEN MATCHED clause could act.
    val checked = if (m.matchedActions.nonEmpty) matched else FalseLiteral
    val changes = target.rows(joined, image, action, checked, before)
    Filter(IsNotNull(changes.output.find(_.name == ActionColumn).get), changes)
  }

  private case class Branch(
      condition: Expression,
      action: String,
      values: Map[ExprId, Expression],
      inserts: Boolean) {
    def valueOf(column: Attribute): Expression =
      values.getOrElse(column.exprId, if (inserts) Literal(null, column.dataType) else column)

    /** Whether the action updates or deletes a target row (which then has a pre-image). */
    def changesTarget: Boolean = action == "update" || action == "delete"
  }

  /** The target relation with its `_metadata` column, and how rows of it are described. */
  private case class Target(relation: LogicalRelation) {
    val plan: LogicalRelation = relation.withMetadataColumns()
    val columns: Seq[Attribute] = relation.output
    private val metadata: Attribute = plan.output.filterNot(relation.output.contains) match {
      case Seq(attribute) => attribute
      case other => throw new IllegalStateException(s"expected one metadata column: $other")
    }

    private def field(name: String): Expression = {
      val struct = metadata.dataType.asInstanceOf[StructType]
      GetStructField(metadata, struct.fieldIndex(name), Some(name))
    }

    /** The target row's values as a struct: its pre-image. */
    val original: Expression = CreateNamedStruct(columns.flatMap(c => Seq(Literal(c.name), c)))
    val none: Expression = Literal(null, original.dataType)

    def rows(
        child: LogicalPlan,
        image: Seq[Expression],
        action: Expression,
        matched: Expression = FalseLiteral,
        before: Expression = none): LogicalPlan =
      Project(
        columns.zip(image).map { case (column, value) => Alias(value, column.name)() } ++ Seq(
          Alias(before, BeforeColumn)(),
          Alias(field("file_path"), FileColumn)(),
          Alias(field("row_index"), RowColumn)(),
          Alias(action, ActionColumn)(),
          Alias(matched, MatchedColumn)()),
        child)

    /** Assigned values by target column, cast to the column's type as an INSERT would. */
    def assigned(assignments: Seq[Assignment]): Map[ExprId, Expression] =
      assignments.map { assignment =>
        val column = assignment.key match {
          case attribute: Attribute if columns.exists(_.exprId == attribute.exprId) => attribute
          case other =>
            throw Unsupported(
              s"only whole top-level columns can be assigned, not ${toPrettySQL(other)}")
        }
        val value =
          if (assignment.value.dataType == column.dataType) assignment.value
          else Cast(assignment.value, column.dataType, Option(conf.sessionLocalTimeZone))
        column.exprId -> value
      }.toMap

    def branch(scope: Expression, action: MergeAction): Branch = {
      val condition = action.condition match {
        case Some(c) => And(scope, EqualNullSafe(c, TrueLiteral))
        case None => scope
      }
      action match {
        case UpdateAction(_, assignments, _) =>
          Branch(condition, "update", assigned(assignments), inserts = false)
        case DeleteAction(_) => Branch(condition, "delete", Map.empty, inserts = false)
        case InsertAction(_, assignments) =>
          Branch(condition, "insert", assigned(assignments), inserts = true)
        case other =>
          throw Unsupported(s"the MERGE action ${other.getClass.getSimpleName} is not supported")
      }
    }

    private def conf = org.apache.spark.sql.internal.SQLConf.get
  }
}
