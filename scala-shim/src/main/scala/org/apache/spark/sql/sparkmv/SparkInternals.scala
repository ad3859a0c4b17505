package org.apache.spark.sql.sparkmv

import java.net.URL

import org.apache.spark.{ErrorClassesJsonReader, SparkThrowableHelper}
import org.apache.spark.SparkContext
import org.apache.spark.scheduler.SparkListenerEvent
import org.apache.spark.sql.{DataFrame, Observation, Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions.InSet
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan}
import org.apache.spark.sql.classic
import org.apache.spark.sql.connector.catalog.{CatalogManager, CatalogPlugin}

/**
 * An event a listener waits for to know it has seen every event posted before it; never
 * written to Spark's event log.
 */
final case class ListenerMarker(latch: java.util.concurrent.CountDownLatch)
    extends SparkListenerEvent {
  override protected[spark] def logEvent: Boolean = false
}

/** The only places the shim needs Spark's `private[sql]` (and `private[spark]`) API. */
object SparkInternals {

  /** Posts `event` to `context`'s listener bus, behind every event posted before it. */
  def postEvent(context: SparkContext, event: SparkListenerEvent): Unit =
    context.listenerBus.post(event)

  /**
   * A DataFrame over an analyzed plan. Row-level commands hand such DataFrames to Python,
   * which never sees Catalyst expressions.
   */
  def ofRows(spark: SparkSession, plan: LogicalPlan): DataFrame =
    classic.Dataset.ofRows(spark.asInstanceOf[classic.SparkSession], plan)

  /** Drops the temporary view `name` from the session catalog, leaving the cache alone. */
  def dropTempView(spark: SparkSession, name: String): Unit =
    spark.asInstanceOf[classic.SparkSession].sessionState.catalog.dropTempView(name)

  def isSessionCatalog(catalog: CatalogPlugin): Boolean =
    catalog.name == CatalogManager.SESSION_CATALOG_NAME

  /** `frame`'s analyzed plan. */
  def analyzed(frame: DataFrame): LogicalPlan = classicOf(frame).logicalPlan

  /**
   * A DataFrame over `frame`'s analyzed plan, so an action on it runs a query whose logical
   * plan is that analyzed plan: Spark completes an `Observation` only when it finds the
   * observed node there, and a DataFrame that `spark.sql` returned over a temporary view has
   * that view's name there, not its plan.
   */
  def overAnalyzedPlan(frame: DataFrame): DataFrame = {
    val dataset = classicOf(frame)
    classic.Dataset.ofRows(dataset.sparkSession, dataset.logicalPlan)
  }

  /**
   * `frame`'s rows for which the SQL expression `expressionSql` is one of `values` (of its
   * type, as Catalyst holds them): `InSet`, which no SQL text spells.
   */
  def whereInSet(frame: DataFrame, expressionSql: String, values: Set[Any]): DataFrame = {
    val dataset = classicOf(frame)
    val session = dataset.sparkSession
    val tested = session.sessionState.sqlParser.parseExpression(expressionSql)
    classic.Dataset.ofRows(session, Filter(InSet(tested, values), dataset.logicalPlan))
  }

  /**
   * The bytes of `frame`'s cached column batches, as far as they are computed (0 when it is
   * not cached, or no action has read it yet).
   */
  def cachedBytes(frame: DataFrame): Long = {
    val dataset = classicOf(frame)
    val session = dataset.sparkSession
    session.sharedState.cacheManager.lookupCachedData(dataset) match {
      case Some(data) =>
        // The blocks of its column batches, as the block manager reports them.
        val id = data.cachedRepresentation.cacheBuilder.cachedColumnBuffers.id
        session.sparkContext.getRDDStorageInfo.filter(_.id == id).map(i => i.memSize + i.diskSize).sum
      case None => 0L
    }
  }

  /** The metrics row of `observation` once its action finished (waits for it). */
  def observedRow(observation: Observation): Row = observation.getRow

  private def classicOf(frame: DataFrame): classic.Dataset[Row] =
    frame.asInstanceOf[classic.Dataset[Row]]

  /**
   * Adds the error classes of the JSON file at `conditions` (Spark's format) to Spark's own
   * registry, `SparkThrowableHelper.errorReader`, keeping Spark's definition of any class it
   * has. Spark reads its registry from one file and offers no way to add to it, so its map
   * is replaced, by reflection, with the union (one reference swap: readers see the old map
   * or the new one). Idempotent.
   */
  def addErrorClasses(conditions: URL): Unit = synchronized {
    val registry = SparkThrowableHelper.errorReader
    val known = registry.errorInfoMap
    val added = new ErrorClassesJsonReader(Seq(conditions)).errorInfoMap.filter {
      case (name, _) => !known.contains(name)
    }
    if (added.nonEmpty) {
      val field = classOf[ErrorClassesJsonReader].getDeclaredField("errorInfoMap")
      field.setAccessible(true)
      field.set(registry, known ++ added)
    }
  }
}
