package io.sparkmv.catalog

import org.apache.spark.sql.connector.catalog.{Identifier, TableCatalog}

/**
 * Spark 4.1 has no changelog API (`TableCatalog.loadChangelog`, `ChangelogContext`,
 * `ChangelogRange` and the `CHANGES FROM VERSION` clause are Spark 4.2's), so on 4.1 every
 * table is refused a changelog, with that reason, and views over it refresh fully. This
 * directory (`scala-spark-4.1`) is compiled only against a 4.1 pyspark (`sparkmv.jar`);
 * `scala-spark-4.2` and `scala-spark-4.3` hold the same object over the real API.
 */
object ChangelogCompat {

  /** Why `catalog` offers no changelog of `ident`: on Spark 4.1, none does. */
  def refusal(catalog: TableCatalog, ident: Identifier, version: String): String =
    s"Spark 4.1 has no changelog API (TableCatalog.loadChangelog is Spark 4.2's), so catalog " +
      s"${catalog.name()} cannot give a table's changes"
}
