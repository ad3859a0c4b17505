package io.sparkmv.jobs

import org.apache.spark.SparkContext

/**
 * Names the calling thread's Spark jobs by the sparkmv step that submits them: `enter` sets
 * the thread's job group and job description (local properties, which Spark copies to the
 * threads a query starts) and answers what they were, an opaque token that `restore` puts back.
 * One py4j round trip each, on the thread of the statement: the properties are per JVM thread,
 * and sparkmv's calls from Python reach the JVM on the statement's thread (a pinned PySpark
 * thread, or the thread of the py4j callback a JDBC or Connect statement runs on).
 */
object JobSteps {
  val Group = "spark.jobGroup.id" // SparkContext.SPARK_JOB_GROUP_ID
  val Description = "spark.job.description" // SparkContext.SPARK_JOB_DESCRIPTION
  private val Properties = Seq(Group, Description)
  private val Separator = "\u0000"

  /** Sets the thread's job group and description; the token of the ones it had. */
  def enter(group: String, description: String): String = {
    val context = SparkContext.getOrCreate()
    val previous = Properties.map(p => encode(context.getLocalProperty(p))).mkString(Separator)
    context.setLocalProperty(Group, group)
    context.setLocalProperty(Description, description)
    previous
  }

  /** Puts back the job group and description `enter` answered `token` for (unset if none). */
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
