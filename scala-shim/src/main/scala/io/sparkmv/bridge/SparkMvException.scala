package io.sparkmv.bridge

import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.catalyst.trees.Origin

/**
 * A Spark-style error raised by sparkmv: an error class, a SQLSTATE and a message that says
 * what to do. The error classes themselves are defined once, in `sparkmv/errors.py`.
 *
 * It keeps no query context: the analyzer gives an error raised while it resolves a table
 * function (`sparkmv_refresh_history`) the position of the call, as a copy that is a plain
 * `AnalysisException`, and a client then looks the message up in Spark's own error classes,
 * which do not have sparkmv's.
 */
class SparkMvException(errorClass: String, state: String, text: String)
    extends AnalysisException(
      message = s"[$errorClass] $text SQLSTATE: $state",
      line = None,
      startPosition = None,
      cause = None,
      errorClass = Some(errorClass),
      messageParameters = Map("message" -> text),
      context = Array.empty,
      sqlState = Some(state)) {
  override def withPosition(origin: Origin): AnalysisException = this
}

object SparkMvException {
  def apply(errorClass: String, sqlState: String, message: String): SparkMvException =
    new SparkMvException(errorClass, sqlState, message)
}
