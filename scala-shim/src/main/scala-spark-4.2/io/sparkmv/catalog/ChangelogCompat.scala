package io.sparkmv.catalog

import java.util.Optional

import org.apache.spark.sql.connector.catalog.{ChangelogContext, Identifier, TableCatalog}
import org.apache.spark.sql.connector.catalog.ChangelogContext.DeduplicationMode
import org.apache.spark.sql.connector.catalog.ChangelogRange.VersionRange
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * Spark's changelog API (`TableCatalog.loadChangelog`, `ChangelogContext`, `ChangelogRange`),
 * which Spark 4.2 has and 4.1 lacks: the one place [[ChangelogBridge]] touches it. This
 * directory (`scala-spark-4.2`) is compiled only against a 4.2 pyspark (`sparkmv.jar`);
 * `scala-spark-4.1` holds the same object for a Spark without the API.
 */
object ChangelogCompat {

  /**
   * Why `catalog` offers no changelog of `ident` at `version` (null when it does): asked
   * for the empty range after `version`, a catalog without one refuses, as
   * `TableCatalog.loadChangelog` does by default. Any other complaint is about the range,
   * which later reads ask again.
   */
  def refusal(catalog: TableCatalog, ident: Identifier, version: String): String = {
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
}
