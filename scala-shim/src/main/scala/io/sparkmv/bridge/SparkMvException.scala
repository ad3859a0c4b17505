package io.sparkmv.bridge

import org.apache.spark.sql.AnalysisException

/**
 * A Spark-style error raised by sparkmv: an error class, a SQLSTATE and a message that says
 * what to do. The error classes themselves are defined once, in `sparkmv/errors.py`.
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
      sqlState = Some(state))

object SparkMvException {
  def apply(errorClass: String, sqlState: String, message: String): SparkMvException =
    new SparkMvException(errorClass, sqlState, message)
}
