package io.sparkmv.catalog

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.analysis.{NoSuchNamespaceException, NoSuchTableException}
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.classic.SparkSession

/**
 * Catalog calls that py4j cannot express comfortably (Scala options, case-class copies).
 * Each is one metastore round trip; `commitView` is the atomic commit point of a refresh.
 */
object CatalogBridge {

  /** What Python needs of one catalog entry, from a single metastore lookup. */
  case class TableInfo(
      tableType: String,
      provider: String,
      location: String,
      properties: java.util.Map[String, String],
      schemaJson: String,
      comment: String)

  /** The table or view `db.name`, or null when it does not exist. */
  def table(spark: SparkSession, db: String, name: String): TableInfo = {
    val table =
      try spark.sessionState.catalog.getTableMetadata(TableIdentifier(name, Some(db)))
      catch { case _: NoSuchTableException | _: NoSuchNamespaceException => return null }
    TableInfo(
      table.tableType.name,
      table.provider.orNull,
      table.storage.locationUri.map(_.toString).orNull,
      table.properties.asJava,
      table.schema.json,
      table.comment.orNull)
  }

  /** Properties of every table and view of `db` that has property `key`, by name. */
  def propertiesWithKey(
      spark: SparkSession,
      db: String,
      key: String): java.util.Map[String, java.util.Map[String, String]] = {
    val catalog = spark.sessionState.catalog
    val tables: Seq[CatalogTable] = catalog.getTablesByName(catalog.listTables(db, "*", false))
    tables
      .filter(_.properties.contains(key))
      .map(t => t.identifier.table -> t.properties.asJava)
      .toMap
      .asJava
  }

  /**
   * Replaces a view's text and sets properties in one metastore call, so a reader sees either
   * the old text and properties or the new ones. The view's schema must not change.
   */
  def commitView(
      spark: SparkSession,
      db: String,
      name: String,
      viewText: String,
      setProperties: java.util.Map[String, String]): Unit = {
    val catalog = spark.sessionState.catalog
    val ident = TableIdentifier(name, Some(db))
    val current = catalog.getTableMetadata(ident)
    catalog.alterTable(
      current.copy(
        viewText = Some(viewText),
        viewOriginalText = Some(viewText),
        properties = current.properties ++ setProperties.asScala))
    catalog.refreshTable(ident)
  }
}
