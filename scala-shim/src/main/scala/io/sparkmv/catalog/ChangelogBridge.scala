package io.sparkmv.catalog

import java.util.Optional

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.catalyst.analysis.{NoSuchNamespaceException, NoSuchTableException}
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.connector.catalog.{CatalogNotFoundException, ChangelogContext, Identifier, TableCatalog}
import org.apache.spark.sql.connector.catalog.ChangelogContext.DeduplicationMode
import org.apache.spark.sql.connector.catalog.ChangelogRange.VersionRange
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * What a refresh asks a DSv2 catalog about a base table whose changes it would read from
 * Spark's changelog (`SELECT ... FROM t CHANGES FROM VERSION a TO VERSION b`, Spark >= 4.2):
 * facts py4j cannot gather in one round trip.
 */
object ChangelogBridge {

  /**
   * The table `qualified` (a multipart name, its catalog first) as one JSON object: `version`
   * (`Table.version()`, null when the table reports none), `id` (`Table.id()`), `schema`,
   * and `refusal`: null when the catalog answers `loadChangelog` for the table, else what
   * it said. Null when no such table exists.
   */
  def describe(spark: SparkSession, qualified: String): String = {
    val parts = spark.sessionState.sqlParser.parseMultipartIdentifier(qualified)
    val plugin =
      try spark.sessionState.catalogManager.catalog(parts.head)
      catch { case _: CatalogNotFoundException => return null }
    val facts: Map[String, AnyRef] = plugin match {
      case catalog: TableCatalog if parts.size > 1 =>
        val ident = Identifier.of(parts.slice(1, parts.size - 1).toArray, parts.last)
        val table =
          try catalog.loadTable(ident)
          catch { case _: NoSuchTableException | _: NoSuchNamespaceException => return null }
        val version = Option(table.version())
        Map(
          "version" -> version.orNull,
          "id" -> table.id(),
          "schema" -> table.schema().json,
          "refusal" -> version.map(refusal(catalog, ident, _)).getOrElse(
            s"catalog ${parts.head} gives it no version (Table.version()), so no changelog"))
      case _ =>
        Map("refusal" -> s"catalog ${parts.head} holds no tables (it is not a TableCatalog)")
    }
    json.writeValueAsString(facts.asJava)
  }

  /**
   * Why `catalog` offers no changelog of `ident` (null when it does): asked for the empty
   * range after `version`, a catalog without one refuses, as `TableCatalog.loadChangelog`
   * does by default. Any other complaint is about the range, which later reads ask again.
   */
  private def refusal(catalog: TableCatalog, ident: Identifier, version: String): String = {
    val empty = new VersionRange(version, Optional.of(version), false, true)
    val context = new ChangelogContext(empty, DeduplicationMode.NONE, false)
    try {
      catalog.loadChangelog(ident, context, CaseInsensitiveStringMap.empty())
      null
    } catch {
      case e: UnsupportedOperationException =>
        s"catalog ${catalog.name()} offers no changelog (TableCatalog.loadChangelog: ${e.getMessage})"
      case _: Exception => null
    }
  }

  private val json = new com.fasterxml.jackson.databind.ObjectMapper()
}
