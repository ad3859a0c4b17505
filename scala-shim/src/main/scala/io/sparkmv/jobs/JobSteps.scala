package io.sparkmv.jobs

import org.apache.spark.SparkContext

/**
 * Names the calling thread's Spark jobs by the sparkmv step that submits them: `enter` sets
 * the thread's job group, job description and call site (local properties, which Spark copies
 * to the threads a query starts) and answers what they were, an opaque token that `restore`
 * puts back. With the call site set, Spark names the step's jobs and stages by it instead of
 * by the frame of its own code that submitted them (a broadcast's is `CompletableFuture`), and
 * does not walk the thread's stack for every RDD a plan creates: a refresh's thread holds the
 * py4j callback's frames, hundreds deep.
 * One py4j round trip each, on the thread of the statement: the properties are per JVM thread,
 * and sparkmv's calls from Python reach the JVM on the statement's thread (a pinned PySpark
 * thread, or the thread of the py4j callback a JDBC or Connect statement runs on).
 */
object JobSteps {
  val Group = "spark.jobGroup.id" // SparkContext.SPARK_JOB_GROUP_ID
  val Description = "spark.job.description" // SparkContext.SPARK_JOB_DESCRIPTION
  val ShortCallSite = "callSite.short" // CallSite.SHORT_FORM
  val LongCallSite = "callSite.long" // CallSite.LONG_FORM
  private val Properties = Seq(Group, Description, ShortCallSite, LongCallSite)
  private val Separator = "\u0000"

  /** Sets the thread's job group, description and call site; the token of the ones it had. */
  def enter(group: String, description: String): String = {
    val context = SparkContext.getOrCreate()
    val previous = Properties.map(p => encode(context.getLocalProperty(p))).mkString(Separator)
    context.setLocalProperty(Group, group)
    Seq(Description, ShortCallSite, LongCallSite).foreach(context.setLocalProperty(_, description))
    previous
  }

  /** Puts back the properties `enter` answered `token` for (unset where they were). */
  def restore(token: String): Unit = {
    val context = SparkContext.getOrCreate()
    Properties.zip(token.split(Separator, -1)).foreach { case (property, value) =>
      context.setLocalProperty(property, decode(value))
    }
  }

  // A property that was unset (null) stays distinguishable from one set to "".
  private def encode(value: String): String = if (value == null) "-" else "+" + value
  private def decode(value: String): String = if (value.startsWith("+")) value.substring(1) else null
}
