package io.sparkmv.jobs

import java.util.UUID
import java.util.concurrent.{ConcurrentHashMap, CountDownLatch, TimeUnit}
import java.util.concurrent.atomic.AtomicLong

import org.apache.spark.SparkContext
import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent, SparkListenerJobStart, SparkListenerStageSubmitted, SparkListenerTaskEnd}
import org.apache.spark.sql.sparkmv.{ListenerMarker, SparkInternals}

/**
 * Counts the Spark jobs a refresh runs and the bytes their tasks read, with no job of its own:
 * `begin` tags the statement thread's jobs (a local property, which Spark copies to the
 * threads a query starts, e.g. for broadcasts), a listener adds up what Spark reports of the
 * tagged jobs, and `end` waits until the listener has seen every event Spark posted before it
 * (a marker event behind them), then answers `jobs,bytes` and untags the thread.
 */
object RefreshJobs {
  val Property = "sparkmv.refresh.id"
  private val MarkerWaitSeconds = 10L

  private final class Counts {
    val jobs = new AtomicLong
    val bytes = new AtomicLong
  }

  private object Listener extends SparkListener {
    val counts = new ConcurrentHashMap[String, Counts]()
    val stages = new ConcurrentHashMap[Integer, String]() // stage id -> refresh id

    private def tagged(properties: java.util.Properties): Option[Counts] =
      Option(properties).flatMap(p => Option(p.getProperty(Property))).flatMap(id =>
        Option(counts.get(id)))

    override def onJobStart(event: SparkListenerJobStart): Unit =
      tagged(event.properties).foreach(_.jobs.incrementAndGet())

    override def onStageSubmitted(event: SparkListenerStageSubmitted): Unit =
      Option(event.properties).flatMap(p => Option(p.getProperty(Property))).foreach { id =>
        stages.put(event.stageInfo.stageId, id)
      }

    override def onTaskEnd(event: SparkListenerTaskEnd): Unit =
      for {
        id <- Option(stages.get(event.stageId))
        counted <- Option(counts.get(id))
        metrics <- Option(event.taskMetrics)
      } counted.bytes.addAndGet(metrics.inputMetrics.bytesRead)

    override def onOtherEvent(event: SparkListenerEvent): Unit = event match {
      case ListenerMarker(latch) => latch.countDown()
      case _ =>
    }
  }

  @volatile private var listening: Option[SparkContext] = None

  private def listen(context: SparkContext): Unit = synchronized {
    if (!listening.contains(context)) {
      context.addSparkListener(Listener)
      listening = Some(context)
    }
  }

  /** Tags the calling thread's jobs from now on (on the active Spark context); the tag. */
  def begin(): String = {
    val context = SparkContext.getOrCreate()
    listen(context)
    val id = UUID.randomUUID().toString
    Listener.counts.put(id, new Counts)
    context.setLocalProperty(Property, id)
    id
  }

  /**
   * Untags the calling thread and answers `jobs,bytes` for the jobs tagged `id` (`-1,-1` when
   * Spark's listener bus did not catch up within the wait).
   */
  def end(id: String): String = {
    val context = SparkContext.getOrCreate()
    context.setLocalProperty(Property, null)
    val marker = ListenerMarker(new CountDownLatch(1))
    SparkInternals.postEvent(context, marker)
    val caughtUp = marker.latch.await(MarkerWaitSeconds, TimeUnit.SECONDS)
    val counted = Listener.counts.remove(id)
    Listener.stages.values.removeIf(_ == id)
    if (!caughtUp || counted == null) "-1,-1" else s"${counted.jobs.get},${counted.bytes.get}"
  }
}
