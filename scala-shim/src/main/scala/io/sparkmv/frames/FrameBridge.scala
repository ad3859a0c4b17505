package io.sparkmv.frames

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.apache.spark.sql.{DataFrame, Observation, Row}
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.functions.expr
import org.apache.spark.sql.sparkmv.SparkInternals
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * DataFrame (and session conf) operations in one py4j round trip each, taking and returning strings (lists as
 * JSON arrays). Through PySpark each costs several: a reader and its options, a Python list
 * converted element by element, a `Column` per expression, an `Observation` and its Row (and
 * releases of the proxies of all of them), and an incremental refresh makes dozens of these
 * calls.
 */
object FrameBridge {
  private val json = new ObjectMapper()

  /**
   * `spark.sql(text)` as a DataFrame over its analyzed plan. Spark completes an `Observation`
   * only when it finds the observed node in the logical plan of the query an action runs, and
   * that of `spark.sql`'s DataFrame is its parsed plan, where a temporary view is a name: an
   * observation inside the view would never complete, its metrics never arrive.
   */
  def sql(spark: SparkSession, text: String): DataFrame =
    SparkInternals.overAnalyzedPlan(spark.sql(text))

  /** `sql(spark, text)`, analyzed with `database` as the current database. */
  def sqlIn(spark: SparkSession, text: String, database: String): DataFrame = {
    val catalog = spark.catalog
    val previous = catalog.currentDatabase
    if (previous == database) return sql(spark, text)
    catalog.setCurrentDatabase(database)
    try sql(spark, text)
    finally catalog.setCurrentDatabase(previous)
  }

  /**
   * Parquet reads united by column name: `reads` is a JSON array of objects, each `paths`
   * (files, directories or globs) read with `schema` (a schema's JSON: nothing inferred),
   * partition directories below `basePath` (optional) adding their columns, then turned into
   * the SQL select list `select` (optional).
   */
  def readParquet(spark: SparkSession, readsJson: String): DataFrame =
    json.readTree(readsJson).elements().asScala.map { read =>
      val reader = spark.read.schema(structType(read.get("schema").asText()))
      val base = read.get("basePath")
      val based = if (base == null || base.isNull) reader else reader.option("basePath", base.asText())
      val rows = based.parquet(strings(read.get("paths")): _*)
      val select = read.get("select")
      if (select == null || select.isNull) rows else rows.selectExpr(strings(select): _*)
    }.reduce(_ unionByName _)

  /** No rows, with `schema` (JSON). */
  def empty(spark: SparkSession, schemaJson: String): DataFrame =
    spark.createDataFrame(java.util.Collections.emptyList[Row](), structType(schemaJson))

  /** `frame`'s rows that pass `condition` (SQL; null: all) as the SQL select list `items`. */
  def select(frame: DataFrame, condition: String, itemsJson: String): DataFrame = {
    val kept = if (condition == null) frame else frame.where(condition)
    kept.selectExpr(strings(itemsJson): _*)
  }

  /**
   * `frame`'s rows whose `expressionSql` (a BIGINT) is one of the integers of the JSON array
   * `valuesJson`: an `IN` list built as the hash set Spark's optimizer turns a long one into,
   * so that its literals, thousands of them, are neither parsed nor analyzed.
   */
  def whereIn(frame: DataFrame, expressionSql: String, valuesJson: String): DataFrame = {
    val values: Set[Any] = json.readTree(valuesJson).elements().asScala.map(_.asLong(): Any).toSet
    SparkInternals.whereInSet(frame, expressionSql, values)
  }

  /**
   * Writes `frame` as parquet files under `path` in save mode `mode` (`append`,
   * `errorifexists`), partitioned by the columns of the JSON array `partitionJson`.
   */
  def writeParquet(frame: DataFrame, path: String, mode: String, partitionJson: String): Unit =
    frame.write.mode(mode).partitionBy(strings(partitionJson): _*).parquet(path)

  /** `frame` hash-partitioned by the columns of the JSON array `columnsJson`. */
  def repartition(frame: DataFrame, columnsJson: String): DataFrame =
    frame.repartition(strings(columnsJson).map(frame.col): _*)

  /**
   * Drops the temporary views of the JSON array `namesJson` through the session catalog:
   * `spark.catalog.dropTempView` would also uncache each view's plan, which may be a cached
   * input's.
   */
  def dropTempViews(spark: SparkSession, namesJson: String): Unit =
    strings(namesJson).foreach(SparkInternals.dropTempView(spark, _))

  /**
   * The observations of the DataFrames `observe` returned, by DataFrame: held weakly, so
   * that an entry goes when its DataFrame does (Python's reference to it is released). An
   * `Observation` holds no reference to its DataFrame.
   */
  private val observations =
    java.util.Collections.synchronizedMap(new java.util.WeakHashMap[DataFrame, Observation]())

  /**
   * `frame` observed by a new observation named `name` (unique among the observations of
   * one action): `metrics` are SQL aggregates, each `... AS name`. One round trip and one
   * JVM object for Python: the observation is found again by the returned DataFrame
   * (`metrics`).
   */
  def observe(frame: DataFrame, name: String, metricsJson: String): DataFrame = {
    val observation = Observation(name)
    val metrics = strings(metricsJson).map(expr)
    val observed = frame.observe(observation, metrics.head, metrics.tail: _*)
    observations.put(observed, observation)
    observed
  }

  /**
   * The metrics of the observation of `observed` (a DataFrame `observe` returned) as a JSON
   * object, once an action that ran it ended: `{}` when Spark pruned the observed plan (no
   * metrics arrived), null when no ended action carried it. Never waits for an action:
   * whether one ended is `ObservationCompat`'s (per Spark line: 4.2 completes an observation
   * before the action returns, 4.1 later).
   */
  def metrics(observed: DataFrame): String = {
    val observation = observations.get(observed)
    require(observation != null, "metrics of a DataFrame that FrameBridge.observe did not return")
    if (!ObservationCompat.completed(observation)) null
    else {
      val row = SparkInternals.observedRow(observation)
      if (row == null || row.length == 0) "{}" else row.json
    }
  }

  /** The bytes `frame`'s cached column batches take (0: not cached, or not computed yet). */
  def cachedBytes(frame: DataFrame): Long = SparkInternals.cachedBytes(frame)

  /** `frame`'s schema as JSON. */
  def schemaJson(frame: DataFrame): String = frame.schema.json

  /** Whether `frame`'s analyzed plan is deterministic (the same rows for the same inputs). */
  def deterministic(frame: DataFrame): Boolean = SparkInternals.analyzed(frame).deterministic

  /**
   * Sets the session confs of the JSON object `values` (a null value unsets its key); returns
   * what they were before, as such an object (null: not set), which undoes it.
   */
  def swapConfs(spark: SparkSession, valuesJson: String): String = {
    val previous = new java.util.LinkedHashMap[String, String]()
    for (entry <- json.readTree(valuesJson).fields().asScala) {
      val key = entry.getKey
      previous.put(key, spark.conf.get(key, null))
      if (entry.getValue.isNull) spark.conf.unset(key) else spark.conf.set(key, entry.getValue.asText())
    }
    json.writeValueAsString(previous)
  }

  /**
   * The session confs set under `prefix`, and the value of each key of the JSON list
   * `keysJson` (its default when unset; null when it has none), as a JSON object: what a
   * statement reads of its conf, in one round trip.
   */
  def confs(spark: SparkSession, prefix: String, keysJson: String): String = {
    val values = new java.util.LinkedHashMap[String, String]()
    for ((key, value) <- spark.conf.getAll if key.startsWith(prefix)) values.put(key, value)
    for (key <- strings(keysJson)) values.put(key, spark.conf.getOption(key).orNull)
    json.writeValueAsString(values)
  }

  private def structType(schemaJson: String): StructType =
    DataType.fromJson(schemaJson).asInstanceOf[StructType]

  private def strings(listJson: String): Seq[String] = strings(json.readTree(listJson))

  private def strings(list: JsonNode): Seq[String] = list.elements().asScala.map(_.asText()).toSeq
}
