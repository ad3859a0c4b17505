package io.sparkmv.capture

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.spark.sql.catalyst.expressions.{Attribute, Cast, EqualTo, Expression, In, InSet, Or}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.{ByteType, DataType, DateType, IntegerType, LongType, ShortType}

/**
 * What a `DELETE`'s own condition proves about its table, read from the statement (metadata,
 * never rows): when the condition is one column compared with constants — `k = c`,
 * `k IN (c, ...)`, or a disjunction of those over the same `k` — of a signed integer or date
 * type, then after the statement no row holds one of those values in `k`, and every row it
 * deleted held one. The change log keeps them with the commit (`LogCommit.cleared_keys`), and
 * a join term uses them to read the other input from its own change
 * (`plan/key_proofs.py`). A condition of any other shape proves nothing here.
 */
object ClearedKeys {
  private val json = new com.fasterxml.jackson.databind.ObjectMapper()

  /**
   * `{"column": k, "values": [...]}` (each value as a long: a date as its day number; nulls
   * left out, since they match nothing) for a condition of the shape above over a column of
   * `target`, else "".
   */
  def of(target: LogicalPlan, condition: Expression): String = {
    val columns = target.outputSet
    try {
      compared(condition) match {
        case Some((column, values)) if columns.contains(column) && integral(column.dataType) =>
          json.writeValueAsString(
            Map[String, AnyRef](
              "column" -> column.name,
              "values" -> values.distinct.sorted.map(Long.box).asJava).asJava)
        case _ => ""
      }
    } catch {
      case NonFatal(_) => "" // a constant that does not evaluate proves nothing
    }
  }

  /** The column `condition` compares with constants and their non-null values. */
  private def compared(condition: Expression): Option[(Attribute, Seq[Long])] = condition match {
    case EqualTo(Column(column, keyType), value) if value.foldable => constants(column -> keyType, Seq(value))
    case EqualTo(value, Column(column, keyType)) if value.foldable => constants(column -> keyType, Seq(value))
    case In(Column(column, keyType), list) => constants(column -> keyType, list)
    case InSet(Column(column, _), set) if set.forall(v => v == null || v.isInstanceOf[Number]) =>
      Some(column -> set.toSeq.collect { case n: Number => n.longValue })
    case Or(left, right) =>
      for {
        (column, first) <- compared(left)
        (other, second) <- compared(right) if other.exprId == column.exprId
      } yield column -> (first ++ second)
    case _ => None
  }

  /**
   * A column with the type it is compared in, under the casts the analyzer puts around it: to
   * its own type (`IN`'s), or from an integer type to a wider one (`SMALLINT` compared with
   * `INT` constants), neither of which changes which values are equal.
   */
  private object Column {
    def unapply(expression: Expression): Option[(Attribute, DataType)] = expression match {
      case column: Attribute => Some(column -> column.dataType)
      case cast: Cast if cast.child.dataType == cast.dataType => unapply(cast.child)
      case cast: Cast if widens(cast.child.dataType, cast.dataType) =>
        unapply(cast.child).map { case (column, _) => column -> cast.dataType }
      case _ => None
    }
  }

  private val integers = Seq(ByteType, ShortType, IntegerType, LongType)

  private def widens(from: DataType, to: DataType): Boolean =
    integers.indexOf(from) >= 0 && integers.indexOf(from) < integers.indexOf(to)

  /** Constants of the type the column is compared in (the analyzer casts them to it). */
  private def constants(
      compared: (Attribute, DataType),
      values: Seq[Expression]): Option[(Attribute, Seq[Long])] = {
    val (column, dataType) = compared
    if (!values.forall(v => v.foldable && v.dataType == dataType)) None
    else Some(column -> values.map(_.eval()).collect { case n: Number => n.longValue })
  }

  private def integral(dataType: DataType): Boolean = dataType match {
    case ByteType | ShortType | IntegerType | LongType | DateType => true
    case _ => false
  }
}
