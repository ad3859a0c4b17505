package io.sparkmv.frames

import org.apache.spark.sql.Observation

/**
 * When an `Observation`'s metrics are known. Spark 4.3 completes an observation while the
 * action that carries it ends (`SQLExecution.withNewExecutionId`), before the action returns,
 * so there is nothing to wait for. This directory (`scala-spark-4.3`) is compiled only against
 * a 4.3 pyspark (`sparkmv.jar`); `scala-spark-4.1` holds this object for Spark 4.1, which
 * completes it later, from its listener bus.
 */
object ObservationCompat {

  /** Whether an action that ran `observation`'s DataFrame ended (its metrics are known). */
  def completed(observation: Observation): Boolean = observation.future.isCompleted
}
