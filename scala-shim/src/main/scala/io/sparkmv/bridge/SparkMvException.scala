package io.sparkmv.bridge

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.core.`type`.TypeReference
import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.catalyst.trees.Origin

/**
 * A Spark-style error raised by sparkmv: an error class, a SQLSTATE, the parameters of the
 * class's message and the message they fill in, which says what to do. The error classes
 * themselves are defined once, in `sparkmv/errors.py`; the jar carries them as
 * [[SparkMvErrors.Resource]].
 *
 * The exception answers `getCondition`, `getSqlState`, `getMessageParameters` and
 * `getMessage` itself, so every client that asks the exception (Spark Connect, the JDBC
 * server, PySpark's accessors) sees sparkmv's class without a registry lookup; lookups by
 * class name in Spark's registry (PySpark's `getMessage()`) find it there too
 * ([[SparkMvErrors.registerWithSpark]]).
 *
 * It keeps no query context: the analyzer gives an error raised while it resolves a table
 * function (`sparkmv_refresh_history`) the position of the call, as a copy that is a plain
 * `AnalysisException`, which would lose sparkmv's class and parameters.
 */
class SparkMvException(
    condition: String,
    state: String,
    text: String,
    parameters: Map[String, String])
    extends AnalysisException(
      message = s"[$condition] $text SQLSTATE: $state",
      line = None,
      startPosition = None,
      cause = None,
      errorClass = Some(condition),
      messageParameters = parameters,
      context = Array.empty,
      sqlState = Some(state)) {

  /**
   * What the Python side raises (`sparkmv.bridge.java_exception`): `parametersJson` is a
   * JSON object of the message's parameters (strings), `text` the template filled with them.
   */
  def this(condition: String, state: String, text: String, parametersJson: String) =
    this(condition, state, text, SparkMvException.parameters(parametersJson))

  override def getCondition: String = condition

  override def getSqlState: String = state

  override def getMessageParameters: java.util.Map[String, String] = parameters.asJava

  override def withPosition(origin: Origin): AnalysisException = this
}

object SparkMvException {
  private val mapper = new ObjectMapper()

  private def parameters(json: String): Map[String, String] =
    mapper
      .readValue(json, new TypeReference[java.util.Map[String, String]]() {})
      .asScala
      .toMap
}
