package io.sparkmv.testing

import org.apache.spark.sql.connector.catalog._
import org.apache.spark.sql.connector.catalog.ChangelogRange.VersionRange
import org.apache.spark.sql.connector.expressions.{Expressions, NamedReference}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.types._
import org.apache.spark.sql.util.CaseInsensitiveStringMap

// TEST ONLY. Spark's changelog API (Spark >= 4.2): `tests/versioned_catalog.py` compiles this
// directory (`scala-spark-4.2`) for Spark 4.2 and every later line; `scala-spark-4.1` holds a
// `ChangelogCatalog` without one.

/** `VersionedCatalog` whose tables answer Spark's changelog. */
class ChangelogCatalog extends VersionedCatalog {
  override def loadChangelog(
      ident: Identifier,
      context: ChangelogContext,
      options: CaseInsensitiveStringMap): Changelog = context.range() match {
    case range: VersionRange =>
      val table = versionedTable(ident)
      val first = range.startingVersion().toLong + (if (range.startingBoundInclusive()) 0 else 1)
      val end = range.endingVersion()
      val last = (if (end.isPresent) end.get.toLong else table.currentVersion) -
        (if (range.endingBoundInclusive()) 0 else 1)
      new VersionedChangelog(table, first, last)
    case other =>
      throw new UnsupportedOperationException(s"the test catalog reads changes by version, not $other")
  }
}

/** The changes of versions `first` to `last` of a table, as Spark's changelog reads them. */
class VersionedChangelog(table: VersionedTable, first: Long, last: Long) extends Changelog {
  private val readSchema = table.schema
    .add("_row_id", LongType, nullable = false)
    .add("_change_type", StringType, nullable = false)
    .add("_commit_version", LongType, nullable = false)
    .add("_commit_timestamp", TimestampType, nullable = false)
  // Read now: a range the table cannot answer fails when the changelog is loaded (analysis).
  private val rows = table.changeRows(first, last).toVector

  override def name(): String = s"${table.name} changes $first to $last"
  override def columns(): Array[Column] =
    readSchema.fields.map(f => Column.create(f.name, f.dataType, f.nullable))
  override def containsCarryoverRows(): Boolean = false
  override def containsIntermediateChanges(): Boolean = true
  override def representsUpdateAsDeleteAndInsert(): Boolean = false
  // Rows may repeat (no key): each stored row has an identity of its own, which Spark's
  // post-processing requires of a changelog that may hold several changes of one row.
  override def rowId(): Array[NamedReference] = Array(Expressions.column("_row_id"))
  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder =
    () => new RowsScan(readSchema, rows)
}
