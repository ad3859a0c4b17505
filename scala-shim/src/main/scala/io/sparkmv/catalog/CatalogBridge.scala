package io.sparkmv.catalog

import java.util.Locale

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.analysis.{NoSuchNamespaceException, NoSuchTableException}
import org.apache.spark.sql.catalyst.catalog.{CatalogTable, CatalogTablePartition, CatalogTableType}
import org.apache.spark.sql.classic.SparkSession

import io.sparkmv.fs.FsBridge

/**
 * Catalog calls that py4j cannot express comfortably (Scala options, case-class copies).
 * Each is one metastore round trip; `commitView` is the atomic commit point of a refresh.
 */
object CatalogBridge {

  /**
   * What Python needs of the table or view `db.name`, from a single metastore lookup, as one
   * JSON object (one py4j round trip; py4j walks Java collections element by element): type,
   * provider, location, properties, schema, comment, partition columns. Null when it does
   * not exist.
   */
  def table(spark: SparkSession, db: String, name: String): String = {
    val table =
      try spark.sessionState.catalog.getTableMetadata(TableIdentifier(name, Some(db)))
      catch { case _: NoSuchTableException | _: NoSuchNamespaceException => return null }
    json.writeValueAsString(describe(table))
  }

  /**
   * `table` for many tables at once: a JSON object from `db.name` to the table's description
   * (null when it does not exist), one metastore call per database. `names` is a JSON list of
   * `[db, name]` pairs (a view over dozens of base tables looks them all up per refresh).
   */
  def tables(spark: SparkSession, names: String): String = {
    val idents = json.readTree(names).elements().asScala.toSeq.map { pair =>
      TableIdentifier(pair.get(1).asText(), Some(pair.get(0).asText()))
    }
    json.writeValueAsString(lookUp(spark, idents).map { case (key, t) => key -> t.map(describe).orNull }.asJava)
  }

  /**
   * What a refresh of the view `db.name` reads from the catalog, from one py4j round trip:
   * a JSON object of `database` (the view's: `db`, or the current one when null; lower
   * case), `view` (its description, as `table` gives it, or null), `bases` (from `db.name` to
   * the description or null of each table its property `basesKey` lists, a JSON array of
   * `db.name`; the `catalog.namespace.name` of other catalogs are left out) and `files`
   * (from location to `FsBridge.listDataFiles` of each unpartitioned base table having
   * property `trackedKey`).
   *
   * `expected` (a JSON array of `db.name`, possibly empty) is the caller's guess of the
   * listed tables, from the view's last refresh: they are looked up with the view, in one
   * metastore call per database (one in all when they share the view's), and only listed
   * tables missing from the guess are looked up after the view is read. The guess never
   * changes the answer, only how many metastore calls it takes.
   */
  def refreshFacts(
      spark: SparkSession,
      db: String,
      name: String,
      basesKey: String,
      trackedKey: String,
      expected: String): String = {
    val database = Option(db).getOrElse(spark.catalog.currentDatabase).toLowerCase(Locale.ROOT)
    val ident = TableIdentifier(name.toLowerCase(Locale.ROOT), Some(database))
    val guessed = sessionTables(expected)
    val fetched = lookUp(spark, ident +: guessed)
    val view = fetched(key(ident))
    val listed = view.flatMap(_.properties.get(basesKey)).toSeq.flatMap(sessionTables)
    val unguessed = listed.filterNot(t => fetched.contains(key(t)))
    val looked = fetched ++ lookUp(spark, unguessed)
    val bases = listed.map(t => key(t) -> looked(key(t))).toMap
    val conf = spark.sparkContext.hadoopConfiguration
    val files = bases.values.flatten.collect {
      case t if t.partitionColumnNames.isEmpty && t.properties.contains(trackedKey) &&
          t.storage.locationUri.isDefined =>
        val location = t.storage.locationUri.get.toString
        location -> FsBridge.listDataFiles(conf, location)
    }
    json.writeValueAsString(
      Map[String, AnyRef](
        "database" -> database,
        "view" -> view.map(describe).orNull,
        "bases" -> bases.map { case (key, t) => key -> t.map(describe).orNull }.asJava,
        "files" -> files.toMap.asJava).asJava)
  }

  /** The session catalog's tables of a JSON array of qualified names: `db.name` (a
   * `catalog.namespace.name` names a table of another catalog, and is left out). */
  private def sessionTables(names: String): Seq[TableIdentifier] =
    json.readTree(names).elements().asScala.toSeq.map(_.asText()).filter(_.count(_ == '.') == 1)
      .map { qualified =>
        val dot = qualified.lastIndexOf('.')
        TableIdentifier(qualified.substring(dot + 1), Some(qualified.substring(0, dot)))
      }

  /** `lookUp`'s key of a qualified `ident`. */
  private def key(ident: TableIdentifier): String = s"${ident.database.get}.${ident.table}"

  /** Each of `idents` (qualified) by `db.name`, if it exists: one metastore call per database. */
  private def lookUp(
      spark: SparkSession,
      idents: Seq[TableIdentifier]): Map[String, Option[CatalogTable]] = {
    val catalog = spark.sessionState.catalog
    val found = idents.groupBy(_.database).toSeq.flatMap { case (db, group) =>
      val existing =
        try catalog.getTablesByName(group)
        catch { case _: NoSuchNamespaceException => Seq.empty }
      existing.map(t => s"${db.get}.${t.identifier.table}".toLowerCase(Locale.ROOT) -> t)
    }.toMap
    idents.map(ident => key(ident) -> found.get(key(ident).toLowerCase(Locale.ROOT))).toMap
  }

  /** The description `table` returns (also what a captured write carries, `Capture`). */
  def describe(table: CatalogTable): java.util.Map[String, AnyRef] = Map[String, AnyRef](
    "tableType" -> table.tableType.name,
    "provider" -> table.provider.orNull,
    "location" -> table.storage.locationUri.map(_.toString).orNull,
    "properties" -> table.properties.asJava,
    "schema" -> table.schema.json,
    "comment" -> table.comment.orNull,
    "partitionColumns" -> table.partitionColumnNames.asJava).asJava

  /** Properties of every table and view of `db` that has property `key`, by name (JSON). */
  def propertiesWithKey(spark: SparkSession, db: String, key: String): String = {
    val catalog = spark.sessionState.catalog
    val tables: Seq[CatalogTable] = catalog.getTablesByName(catalog.listTables(db, "*", false))
    json.writeValueAsString(
      tables
        .filter(_.properties.contains(key))
        .map(t => t.identifier.table -> t.properties.asJava)
        .toMap
        .asJava)
  }

  /**
   * Replaces a view's text and sets properties in one metastore call, so a reader sees either
   * the old text and properties or the new ones, if the view's property `tokenKey` still is
   * `expectedToken` (absent: ""); the compare-and-set of a commit. Returns null when it
   * committed, else the token found (nothing changed). The view's schema must not change.
   * Exact across processes only under the caller's commit lock (`catalog/metastore.py`):
   * Hive's alter_table has no condition.
   */
  def commitView(
      spark: SparkSession,
      db: String,
      name: String,
      viewText: String,
      setPropertiesJson: String,
      tokenKey: String,
      expectedToken: String): String = {
    val catalog = spark.sessionState.catalog
    val ident = TableIdentifier(name, Some(db))
    val current = catalog.getTableMetadata(ident)
    val found = current.properties.getOrElse(tokenKey, "")
    if (found != expectedToken) return found
    catalog.alterTable(
      current.copy(
        viewText = Some(viewText),
        viewOriginalText = Some(viewText),
        properties = current.properties ++ stringMap(setPropertiesJson)))
    catalog.refreshTable(ident)
    null
  }

  /**
   * Sets and removes table properties in one metastore call, as `ALTER TABLE ... SET` /
   * `UNSET TBLPROPERTIES` would, without parsing and analysing a statement (a view over many
   * base tables changes the tracking properties of each when it is created or dropped).
   */
  def alterProperties(
      spark: SparkSession,
      db: String,
      name: String,
      setPropertiesJson: String,
      unsetKeysJson: String): Unit = {
    val catalog = spark.sessionState.catalog
    val ident = TableIdentifier(name, Some(db))
    val current = catalog.getTableRawMetadata(ident)
    val unset = json.readTree(unsetKeysJson).elements().asScala.map(_.asText()).toSet
    catalog.alterTable(
      withoutSizeStatistics(current.copy(properties =
        current.properties.filter { case (key, _) => !unset.contains(key) } ++
          stringMap(setPropertiesJson))))
    catalog.invalidateCachedTable(ident)
  }

  /**
   * `table` altered so that the Hive metastore leaves its size statistics unset. Hive
   * recomputes a table's size (lists its files) on every alter_table unless the table's
   * parameters carry the marker `DO_NOT_UPDATE_STATS`, which it then drops; Spark in turn
   * invalidates a table's statistics after each write with one more alter_table
   * (`CommandUtils.updateTableStats`), which Hive answers by recomputing them. So once any
   * alter had run on a table, every later write to it paid a metastore write of its own.
   * sparkmv's alters of a base table (tracking properties, a copy-on-write's new location)
   * carry the marker and drop statistics that only give a size (Spark's, and the Hive
   * parameters it reads them from), so writes to a tracked table cost what writes to any
   * other table cost; Spark sizes the table from its files, as it does a table never
   * altered. Statistics with row or column counts (ANALYZE TABLE) are kept, as Spark keeps
   * them until the next write. Views and partitioned tables are left as they are: Hive
   * computes no table statistics for them on alter_table (and so would keep the marker).
   */
  private def withoutSizeStatistics(table: CatalogTable): CatalogTable = {
    val counted = table.stats.exists(s => s.rowCount.isDefined || s.colStats.nonEmpty)
    if (table.tableType == CatalogTableType.VIEW || table.partitionColumnNames.nonEmpty) table
    else if (counted) table.copy(properties = table.properties + SkipHiveStatistics)
    else
      table.copy(
        stats = None,
        ignoredProperties = table.ignoredProperties -- HiveSizeStatistics,
        properties = table.properties + SkipHiveStatistics)
  }

  /** The table parameter that makes Hive's alter_table leave statistics alone (it drops it). */
  private val SkipHiveStatistics = "DO_NOT_UPDATE_STATS" -> "true"

  /** The Hive table parameters Spark reads a table's size statistics from (Hive's own). */
  private val HiveSizeStatistics =
    Set("totalSize", "numFiles", "rawDataSize", "numRows", "COLUMN_STATS_ACCURATE")

  /**
   * Uncaches and drops the catalog entry of the view `db.name`, as `DROP VIEW` would: the
   * commit point of DROP MATERIALIZED VIEW. Through the catalog, since Spark's statement is
   * refused on a materialized view's entry (`GuardMaterializedViewEntries`).
   */
  def dropView(spark: SparkSession, db: String, name: String): Unit = {
    spark.sharedState.cacheManager.uncacheTableOrView(spark, Seq("spark_catalog", db, name), true)
    spark.sessionState.catalog.dropTable(
      TableIdentifier(name, Some(db)), ignoreIfNotExists = false, purge = false)
  }

  /**
   * Where the table's data lives: `[[null, location]]` for an unpartitioned table, otherwise
   * `[[{column: value}, location], ...]` per partition (values as the catalog stores them).
   */
  def dataLocations(spark: SparkSession, db: String, name: String): String = {
    val table = spark.sessionState.catalog.getTableMetadata(TableIdentifier(name, Some(db)))
    val units = dataUnits(spark, table).map { case (spec, location) =>
      java.util.Arrays.asList[AnyRef](spec, location)
    }
    json.writeValueAsString(units.asJava)
  }

  /**
   * The table's data units as `dataLocations` lists them: the spec (null for an unpartitioned
   * table) and location of each (one metastore call for a partitioned table, none for another).
   */
  def dataUnits(spark: SparkSession, table: CatalogTable): Seq[(AnyRef, String)] =
    if (table.partitionColumnNames.isEmpty) Seq((null, table.location.toString))
    else
      spark.sessionState.catalog.listPartitions(table.identifier).map { partition =>
        (partition.spec.asJava, partition.location.toString)
      }

  /**
   * Points data units at new locations in one metastore call, so a reader sees all the old
   * locations or all the new ones: the table's location (`[[null, location]]`) or partitions'
   * (`[[{column: value}, location], ...]`). Partitions that do not exist yet are first created
   * over `emptyLocation` (no rows, so the two calls are one change to a reader).
   */
  def swapLocations(
      spark: SparkSession,
      db: String,
      name: String,
      unitsJson: String,
      emptyLocation: String): Unit = {
    val catalog = spark.sessionState.catalog
    val ident = TableIdentifier(name, Some(db))
    val units = json.readTree(unitsJson).elements().asScala.toSeq.map { unit =>
      val spec = unit.get(0)
      val location = new java.net.URI(unit.get(1).asText())
      val values =
        if (spec.isNull) None
        else Some(spec.fields().asScala.map(e => e.getKey -> e.getValue.asText()).toMap)
      values -> location
    }
    units.collectFirst { case (None, location) => location } match {
      case Some(location) =>
        val table = catalog.getTableMetadata(ident)
        catalog.alterTable(withoutSizeStatistics(
          table.copy(storage = table.storage.copy(locationUri = Some(location)))))
      case None =>
        val specs = units.flatMap(_._1)
        val existing = catalog.listPartitions(ident).map(p => p.spec -> p).toMap
        val missing = specs.filterNot(existing.contains)
        if (missing.nonEmpty) {
          val storage = catalog.getTableMetadata(ident).storage
          val empty = storage.copy(locationUri = Some(new java.net.URI(emptyLocation)))
          catalog.createPartitions(
            ident,
            missing.map(spec => CatalogTablePartition(spec, empty)),
            ignoreIfExists = true)
        }
        val current = catalog.listPartitions(ident).map(p => p.spec -> p).toMap
        catalog.alterPartitions(
          ident,
          units.collect { case (Some(spec), location) =>
            val partition = current(spec)
            partition.copy(storage = partition.storage.copy(locationUri = Some(location)))
          })
    }
    catalog.refreshTable(ident)
  }

  /** A JSON object of strings (py4j would send a Python dict one entry per round trip). */
  private def stringMap(text: String): Map[String, String] =
    json.readTree(text).fields().asScala.map(e => e.getKey -> e.getValue.asText()).toMap

  private val json = new com.fasterxml.jackson.databind.ObjectMapper()
}
