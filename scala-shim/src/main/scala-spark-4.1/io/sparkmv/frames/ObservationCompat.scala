package io.sparkmv.frames

import java.util.concurrent.{CountDownLatch, TimeUnit}

import org.apache.spark.SparkContext
import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent}
import org.apache.spark.sql.Observation
import org.apache.spark.sql.sparkmv.{ListenerMarker, SparkInternals}

/**
 * When an `Observation`'s metrics are known. Spark 4.1 completes an observation from a
 * `QueryExecutionListener` (`ObservationManager.Listener`), which Spark's listener bus calls
 * on its shared queue some time after the action ended, so right after the action an
 * observation may still be pending: it is known once the shared queue has dispatched every
 * event posted before now (the action's `SparkListenerSQLExecutionEnd` among them). This
 * directory (`scala-spark-4.1`) is compiled only against a 4.1 pyspark (`sparkmv.jar`);
 * Spark 4.2 completes observations before the action returns (`scala-spark-4.2`).
 */
object ObservationCompat {

  /** How long to wait for the listener bus (a stuck bus: the metrics count as missing). */
  private val WaitSeconds = 60L

  /** Counts down a marker's latch; on the shared queue, as `ExecutionListenerBus` is. */
  private object Listener extends SparkListener {
    override def onOtherEvent(event: SparkListenerEvent): Unit = event match {
      case ListenerMarker(latch) => latch.countDown()
      case _ =>
    }
  }

  @volatile private var listening: Option[SparkContext] = None

  private def listen(context: SparkContext): Unit = synchronized {
    if (!listening.contains(context)) {
      context.addSparkListener(Listener) // the shared queue
      listening = Some(context)
    }
  }

  /**
   * Whether an action that ran `observation`'s DataFrame ended (its metrics are known): when
   * the observation is still pending, after the listener bus caught up with every event
   * posted so far.
   */
  def completed(observation: Observation): Boolean =
    observation.future.isCompleted || {
      val context = SparkContext.getOrCreate()
      listen(context)
      val marker = ListenerMarker(new CountDownLatch(1))
      SparkInternals.postEvent(context, marker)
      marker.latch.await(WaitSeconds, TimeUnit.SECONDS)
      observation.future.isCompleted
    }
}
