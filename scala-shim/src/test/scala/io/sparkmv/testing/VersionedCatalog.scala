package io.sparkmv.testing

import java.util
import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{Dataset, Row}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.{NoSuchTableException, TableAlreadyExistsException}
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.connector.catalog._
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.connector.read._
import org.apache.spark.sql.connector.write._
import org.apache.spark.sql.types._
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import org.apache.spark.unsafe.types.UTF8String

/**
 * TEST ONLY (never in the product jar). A DSv2 catalog of in-memory versioned tables, standing
 * in for Delta or Iceberg, which cannot be fetched here. Every write commits a new version
 * (`CREATE TABLE` is version 0); each version keeps its rows and its change rows, so a table
 * answers `VERSION AS OF v` and, in `ChangelogCatalog` (`scala-spark-<line>`), Spark's changelog
 * (`SELECT ... FROM t CHANGES FROM VERSION a TO VERSION b`) with inserts, deletes and update
 * pre/post-images. This class itself offers no changelog (`TableCatalog.loadChangelog` keeps
 * Spark's default, which refuses). Writes: SQL `INSERT INTO`, and `VersionedCatalog.commit`
 * over py4j for deletes and updates of chosen copies of rows (SQL cannot pick one of two
 * equal rows).
 */
class VersionedCatalog extends TableCatalog {
  private var catalogName: String = _
  private val tables = new ConcurrentHashMap[Seq[String], VersionedTable]()

  override def initialize(name: String, options: CaseInsensitiveStringMap): Unit =
    catalogName = name

  override def name(): String = catalogName

  private def key(ident: Identifier): Seq[String] =
    (ident.namespace().toSeq :+ ident.name()).map(_.toLowerCase(java.util.Locale.ROOT))

  def versionedTable(ident: Identifier): VersionedTable =
    Option(tables.get(key(ident))).getOrElse(throw new NoSuchTableException(ident))

  override def listTables(namespace: Array[String]): Array[Identifier] =
    tables.keySet().asScala.filter(_.init == namespace.toSeq)
      .map(k => Identifier.of(k.init.toArray, k.last)).toArray

  override def loadTable(ident: Identifier): Table = versionedTable(ident).at(None)

  override def loadTable(ident: Identifier, version: String): Table =
    versionedTable(ident).at(Some(version.toLong))

  override def createTable(
      ident: Identifier,
      columns: Array[Column],
      partitions: Array[Transform],
      properties: util.Map[String, String]): Table = {
    val schema = StructType(columns.map(c => StructField(c.name, c.dataType, c.nullable)))
    val created = new VersionedTable(s"$catalogName.${key(ident).mkString(".")}", schema)
    if (tables.putIfAbsent(key(ident), created) != null) {
      throw new TableAlreadyExistsException(ident)
    }
    created.at(None)
  }

  override def alterTable(ident: Identifier, changes: TableChange*): Table =
    throw new UnsupportedOperationException("the test catalog does not alter tables")

  override def dropTable(ident: Identifier): Boolean = tables.remove(key(ident)) != null

  override def renameTable(from: Identifier, to: Identifier): Unit =
    throw new UnsupportedOperationException("the test catalog does not rename tables")
}

/**
 * The change types of Spark's changelog (`Changelog.CHANGE_TYPE_*`, Spark >= 4.2) spelled out,
 * so that these common test sources compile on Spark 4.1 too, which has no `Changelog`.
 */
object ChangeTypes {
  val Insert = "insert"
  val Delete = "delete"
  val UpdatePreimage = "update_preimage"
  val UpdatePostimage = "update_postimage"
}

/** A stored row and its identity: an update keeps it, so the changelog can name the row. */
case class IdentifiedRow(id: Long, row: UnsafeRow)

/** One commit: the table's rows after it, and the change rows it made (kind, row). */
case class Commit(
    version: Long,
    timestampMicros: Long,
    rows: Vector[IdentifiedRow],
    changes: Vector[(String, IdentifiedRow)])

/** A table and its versions; `at` gives the DSv2 `Table` of one version (None: the latest). */
class VersionedTable(val name: String, val schema: StructType) {
  val id: String = UUID.randomUUID().toString
  private val commits = ArrayBuffer(Commit(0L, micros(), Vector.empty, Vector.empty))
  private var nextRowId = 0L
  @volatile private var expiredThrough = -1L // the changes of versions <= this have expired

  private def micros(): Long = System.currentTimeMillis() * 1000L

  def currentVersion: Long = synchronized(commits.last.version)

  def at(version: Option[Long]): VersionedTableVersion = synchronized {
    val commit = version.map { v =>
      commits.find(_.version == v).getOrElse(throw new IllegalArgumentException(
        s"$name has no version $v (its versions are 0 to ${commits.last.version})"))
    }.getOrElse(commits.last)
    new VersionedTableVersion(this, commit)
  }

  /**
   * Commit the next version: `deleted` removes one copy of each of its rows, `preimages(i)`
   * one copy that then becomes `postimages(i)` (same identity); `inserted` adds rows. Every
   * row deleted or updated must be there. Returns the version.
   */
  def commit(
      inserted: Seq[UnsafeRow],
      deleted: Seq[UnsafeRow],
      preimages: Seq[UnsafeRow],
      postimages: Seq[UnsafeRow]): Long = synchronized {
    require(preimages.size == postimages.size, "an update has as many pre- as post-images")
    val rows = ArrayBuffer.from(commits.last.rows)
    def take(row: UnsafeRow): IdentifiedRow = {
      val index = rows.indexWhere(_.row == row)
      require(index >= 0, s"$name has no row $row to delete or update")
      rows.remove(index)
    }
    def fresh(row: UnsafeRow): IdentifiedRow = { nextRowId += 1; IdentifiedRow(nextRowId, row) }
    val removed = deleted.map(take)
    val updated = preimages.zip(postimages).map { case (pre, post) =>
      val old = take(pre)
      (old, IdentifiedRow(old.id, post))
    }
    val added = inserted.map(fresh)
    rows ++= added ++ updated.map(_._2)
    val changes = added.map(ChangeTypes.Insert -> _) ++
      removed.map(ChangeTypes.Delete -> _) ++
      updated.flatMap { case (pre, post) =>
        Seq(ChangeTypes.UpdatePreimage -> pre, ChangeTypes.UpdatePostimage -> post)
      }
    val version = commits.last.version + 1
    commits += Commit(version, micros(), rows.toVector, changes.toVector)
    version
  }

  /** Forget the changes of versions `<= through`, as a changelog's retention would. */
  def expireChanges(through: Long): Unit = expiredThrough = through

  /**
   * The change rows of versions `first` to `last`: the row's columns, its identity
   * (`_row_id`), then the change type and its commit's version and time.
   */
  def changeRows(first: Long, last: Long): Seq[InternalRow] = synchronized {
    if (first <= expiredThrough) {
      throw new IllegalArgumentException(
        s"the changes of $name up to version $expiredThrough have expired " +
          s"(asked for versions $first to $last)")
    }
    if (last > commits.last.version || first > last + 1) {
      throw new IllegalArgumentException(
        s"$name has versions 0 to ${commits.last.version}, not $first to $last")
    }
    for {
      commit <- commits.toSeq if commit.version >= first && commit.version <= last
      (kind, changed) <- commit.changes
    } yield {
      val values = changed.row.toSeq(schema) ++ Seq(
        changed.id, UTF8String.fromString(kind), commit.version, commit.timestampMicros)
      new GenericInternalRow(values.toArray): InternalRow
    }
  }

  def toUnsafe(rows: Seq[InternalRow]): Seq[UnsafeRow] = {
    val projection = UnsafeProjection.create(schema)
    rows.map(row => projection(row).copy())
  }
}

/** The DSv2 table of one version of a `VersionedTable`; writes commit a new version. */
class VersionedTableVersion(table: VersionedTable, commit: Commit)
  extends Table with SupportsRead with SupportsWrite {

  override def name(): String = table.name
  override def id(): String = table.id
  override def schema(): StructType = table.schema
  override def version(): String = commit.version.toString
  override def capabilities(): util.Set[TableCapability] =
    util.EnumSet.of(TableCapability.BATCH_READ, TableCapability.BATCH_WRITE)

  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder =
    () => new RowsScan(table.schema, commit.rows.map(_.row))

  override def newWriteBuilder(info: LogicalWriteInfo): WriteBuilder = new WriteBuilder {
    override def build(): Write = new Write {
    override def toBatch: BatchWrite = new BatchWrite {
      override def createBatchWriterFactory(info: PhysicalWriteInfo): DataWriterFactory =
        new CollectingWriterFactory
      override def commit(messages: Array[WriterCommitMessage]): Unit = {
        val rows = messages.toSeq.flatMap(_.asInstanceOf[CollectedRows].rows)
        table.commit(table.toUnsafe(rows), Nil, Nil, Nil)
      }
      override def abort(messages: Array[WriterCommitMessage]): Unit = ()
    }
    }
  }
}

/** A scan of rows held in memory, in one partition. */
class RowsScan(schema: StructType, rows: Seq[InternalRow]) extends Scan with Batch {
  override def readSchema(): StructType = schema
  override def toBatch: Batch = this
  override def planInputPartitions(): Array[InputPartition] = Array(RowsPartition(rows.toArray))
  override def createReaderFactory(): PartitionReaderFactory = RowsReaderFactory
}

case class RowsPartition(rows: Array[InternalRow]) extends InputPartition

object RowsReaderFactory extends PartitionReaderFactory {
  override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
    new PartitionReader[InternalRow] {
      private val rows = partition.asInstanceOf[RowsPartition].rows.iterator
      private var current: InternalRow = _
      override def next(): Boolean = rows.hasNext && { current = rows.next(); true }
      override def get(): InternalRow = current
      override def close(): Unit = ()
    }
}

case class CollectedRows(rows: Seq[InternalRow]) extends WriterCommitMessage

class CollectingWriterFactory extends DataWriterFactory {
  override def createWriter(partitionId: Int, taskId: Long): DataWriter[InternalRow] =
    new DataWriter[InternalRow] {
      private val rows = ArrayBuffer.empty[InternalRow]
      override def write(row: InternalRow): Unit = rows += row.copy()
      override def commit(): WriterCommitMessage = CollectedRows(rows.toSeq)
      override def abort(): Unit = ()
      override def close(): Unit = ()
    }
}

/** Test entry points over py4j. `table` is a multipart name such as `testcat.db.t`. */
object VersionedCatalog {
  private def versioned(spark: SparkSession, table: String): VersionedTable = {
    val parts = spark.sessionState.sqlParser.parseMultipartIdentifier(table)
    val catalog = spark.sessionState.catalogManager.catalog(parts.head)
    catalog.asInstanceOf[VersionedCatalog]
      .versionedTable(Identifier.of(parts.slice(1, parts.size - 1).toArray, parts.last))
  }

  private def rowsOf(table: VersionedTable, rows: Dataset[Row]): Seq[UnsafeRow] =
    // copied before collecting: a scan hands out one row object, refilled per row
    table.toUnsafe(rows.queryExecution.toRdd.map(_.copy()).collect().toSeq)

  /** Commit one version of `table` (see `VersionedTable.commit`); returns it. */
  def commit(
      spark: SparkSession,
      table: String,
      inserted: Dataset[Row],
      deleted: Dataset[Row],
      preimages: Dataset[Row],
      postimages: Dataset[Row]): Long = {
    val target = versioned(spark, table)
    target.commit(
      rowsOf(target, inserted),
      rowsOf(target, deleted),
      rowsOf(target, preimages),
      rowsOf(target, postimages))
  }

  /** Make the changes of versions `<= through` of `table` unreadable (retention). */
  def expireChanges(spark: SparkSession, table: String, through: Long): Unit =
    versioned(spark, table).expireChanges(through)
}
