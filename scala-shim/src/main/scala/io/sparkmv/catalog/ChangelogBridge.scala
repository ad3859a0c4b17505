package io.sparkmv.catalog

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.catalyst.analysis.{NoSuchNamespaceException, NoSuchTableException}
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.connector.catalog.{CatalogNotFoundException, Identifier, TableCatalog}

/**
 * What a refresh asks a DSv2 catalog about a base table whose changes it would read from
 * Spark's changelog (`SELECT ... FROM t CHANGES FROM VERSION a TO VERSION b`, Spark >= 4.2):
 * facts py4j cannot gather in one round trip. The changelog API itself is touched only by
 * `ChangelogCompat` (one per Spark line: on 4.1, which lacks it, every table is refused).
 */
object ChangelogBridge {

  /**
   * The table `qualified` (a multipart name, its catalog first) as one JSON object: `version`
   * (`Table.version()`, null when the table reports none), `id` (`Table.id()`), `schema`,
   * and `refusal`: null when the catalog answers `loadChangelog` for the table, else what
   * it said (`ChangelogCompat.refusal`). Null when no such table exists.
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
          "refusal" -> version.map(ChangelogCompat.refusal(catalog, ident, _)).getOrElse(
            s"catalog ${parts.head} gives it no version (Table.version()), so no changelog"))
      case _ =>
        Map("refusal" -> s"catalog ${parts.head} holds no tables (it is not a TableCatalog)")
    }
    json.writeValueAsString(facts.asJava)
  }

  private val json = new com.fasterxml.jackson.databind.ObjectMapper()
}
