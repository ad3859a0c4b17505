package io.sparkmv.bridge

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.types._

/**
 * Result rows cross the bridge as one JSON array of arrays (one py4j round trip instead of one
 * per value) and are typed here by the command's declared output.
 */
object ResultRows {
  private val mapper = new ObjectMapper()

  def fromJson(json: String, output: Seq[Attribute]): Seq[Row] = {
    if (json == null || json.isEmpty) return Seq.empty
    mapper.readTree(json).elements().asScala.toSeq.map { row =>
      Row.fromSeq(output.zipWithIndex.map { case (attr, i) => typed(row.get(i), attr.dataType) })
    }
  }

  private def typed(node: JsonNode, dataType: DataType): Any =
    if (node == null || node.isNull) null
    else dataType match {
      case StringType => node.asText()
      case LongType => node.asLong()
      case IntegerType => node.asInt()
      case DoubleType => node.asDouble()
      case BooleanType => node.asBoolean()
      case TimestampType => new java.sql.Timestamp(node.asLong()) // epoch milliseconds
      case MapType(StringType, valueType, _) => // a JSON object
        node.properties().asScala.map(e => e.getKey -> typed(e.getValue, valueType)).toMap
      case other => throw new IllegalArgumentException(s"unsupported result type $other")
    }
}
