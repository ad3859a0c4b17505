package io.sparkmv.bridge

import java.net.URL

import scala.util.control.NonFatal

import org.apache.spark.ErrorClassesJsonReader
import org.apache.spark.internal.Logging
import org.apache.spark.sql.sparkmv.SparkInternals

/**
 * sparkmv's error classes as the jar carries them: [[Resource]], written from
 * `sparkmv/errors.py` (their one definition) when the jar is built, in the format of Spark's
 * `error/error-conditions.json`.
 */
object SparkMvErrors extends Logging {
  val Resource = "/io/sparkmv/error-conditions.json"

  private lazy val url: URL = Option(getClass.getResource(Resource)).getOrElse(
    throw new IllegalStateException(s"$Resource is missing from the sparkmv jar; rebuild it"))

  private lazy val reader = new ErrorClassesJsonReader(Seq(url))

  /** The error of class `condition`, its message filled with `parameters`. */
  def exception(condition: String, parameters: Map[String, String] = Map.empty)
      : SparkMvException =
    new SparkMvException(
      condition,
      reader.getSqlState(condition),
      reader.getErrorMessage(condition, parameters),
      parameters)

  private lazy val registered: Boolean =
    try {
      SparkInternals.addErrorClasses(url)
      true
    } catch {
      case NonFatal(error) =>
        logWarning(
          "sparkmv could not add its error classes to Spark's registry: PySpark's " +
            s"getMessage() of a sparkmv error will fail ($error)")
        false
    }

  /**
   * Adds sparkmv's error classes to Spark's registry, once per JVM: PySpark's
   * `getMessage()` renders an error from its class and parameters by Spark's registry
   * (`SparkThrowableHelper.getMessage`), not by asking the exception, and so do the JDBC
   * server's JSON error formats (`spark.sql.error.messageFormat`).
   */
  def registerWithSpark(): Boolean = registered
}
