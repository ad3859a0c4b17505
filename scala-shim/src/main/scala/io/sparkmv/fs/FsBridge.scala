package io.sparkmv.fs

import java.io.FileNotFoundException
import java.nio.charset.StandardCharsets
import java.nio.file.Files

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

import org.apache.commons.io.IOUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException, FileStatus, FileSystem, FileUtil, Options, Path, StreamCapabilities}
import org.apache.parquet.{HadoopReadOptions, ParquetReadOptions}
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.metadata.{BlockMetaData, ColumnPath}
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.schema.{LogicalTypeAnnotation, MessageType, PrimitiveType}

/**
 * File-system listings and reads in one py4j round trip each. Walked from Python, a listing
 * costs several round trips per entry (status, path, name, size, ...); a refresh of a view
 * over many tables lists every table's files and reads every change log's commits.
 *
 * Results are strings with fields and entries separated by NUL, which no path contains.
 */
object FsBridge {
  private val Nul = "\u0000"

  /** The names of `directory`'s entries ("" when it does not exist). */
  def listNames(conf: Configuration, directory: String): String = names(conf, directory).mkString(Nul)

  /**
   * The names of the entries of each of `directories` (NUL-separated), in one round trip:
   * for each, in order, the count of its names and then the names, all NUL-separated (a
   * directory that does not exist has none). A refresh lists the logs of all its base
   * tables together.
   */
  def listNamesOf(conf: Configuration, directories: String): String =
    directories.split(Nul).filter(_.nonEmpty).flatMap { directory =>
      val found = names(conf, directory)
      found.length.toString +: found
    }.mkString(Nul)

  private def names(conf: Configuration, directory: String): Array[String] = {
    val path = new Path(directory)
    val fs = path.getFileSystem(conf)
    if (!fs.exists(path)) Array.empty else fs.listStatus(path).map(_.getPath.getName)
  }

  /**
   * The data files under `directory`, recursively, skipping hidden entries (`_`, `.`) at any
   * depth, as Spark does: path, size and modification time of each ("" when it does not
   * exist).
   */
  def listDataFiles(conf: Configuration, directory: String): String =
    dataFilesUnder(conf, directory)
      .flatMap(status => Seq(status.getPath.toString, status.getLen.toString, status.getModificationTime.toString))
      .mkString(Nul)

  /** The statuses of the data files under `directory` (none when it does not exist). */
  private def dataFilesUnder(conf: Configuration, directory: String): Seq[FileStatus] = {
    val root = new Path(directory)
    if (root.getFileSystem(conf).exists(root)) dataFiles(conf, root) else Nil
  }

  /** The statuses of the data files under the existing directory `root`. */
  private def dataFiles(conf: Configuration, root: Path): Seq[FileStatus] = {
    val fs = root.getFileSystem(conf)
    val found = ArrayBuffer.empty[FileStatus]
    val pending = scala.collection.mutable.Stack(root)
    while (pending.nonEmpty) {
      for (status <- fs.listStatus(pending.pop())) {
        if (!isHidden(status.getPath.getName)) {
          if (status.isDirectory) pending.push(status.getPath) else found += status
        }
      }
    }
    found.toSeq
  }

  /**
   * The data files under `directory` (as `listDataFiles` finds them) with the number of rows
   * each holds, read from its parquet footer: path and row count of each ("" when it does not
   * exist). A footer read costs a file open, no Spark job; meant for a refresh's own small
   * outputs (its staged change, a mask), not for a view's data.
   */
  def parquetRowCounts(conf: Configuration, directory: String): String = {
    lazy val options = readOptions(conf)
    dataFilesUnder(conf, directory)
      .map { file =>
        val reader = openFooter(file, conf, options)
        try s"${file.getPath}$Nul${reader.getRecordCount}"
        finally reader.close()
      }
      .mkString(Nul)
  }

  /**
   * The read options of every footer one call opens, made once from the caller's `conf`:
   * `ParquetFileReader.open(file)` makes them from a new Hadoop `Configuration`, which parses
   * Hadoop's default resources (XML) again for every file (docs/benchmarks.md: 40 footers took
   * 406 ms that way, 34 ms this way).
   */
  private def readOptions(conf: Configuration): ParquetReadOptions = HadoopReadOptions.builder(conf).build()

  /** A reader of `file`'s footer, from its listed status: no second status request. */
  private def openFooter(file: FileStatus, conf: Configuration, options: ParquetReadOptions): ParquetFileReader =
    ParquetFileReader.open(HadoopInputFile.fromStatus(file, conf), options)

  /**
   * The range of each of `columns` (NUL-separated top-level names) over every row of the
   * parquet files `paths` (NUL-separated; a directory stands for its data files), from the
   * footers' row-group statistics alone: per column, NUL-separated, `low,high` (its smallest
   * and largest non-null value), `` (no non-null value) or `?` (unknown: a file without the
   * column or a row group without its statistics, or a type other than a signed integer or
   * a date, which parquet stores as INT32 or INT64 and orders as Spark does). No Spark job:
   * one footer read per file.
   */
  def integerRanges(conf: Configuration, paths: String, columns: String, cachedRanges: Int): String = {
    val names = columns.split(Nul).filter(_.nonEmpty).toSeq
    val files = parquetFiles(conf, paths)
    // A path gone (compacted away meanwhile) leaves rows unaccounted for: nothing is known.
    val start = if (files.isEmpty) None else Some(ColumnRange.Empty)
    val ranges = Array.fill[Option[ColumnRange]](names.length)(start)
    footerRanges.bound(cachedRanges)
    lazy val options = readOptions(conf)
    for (file <- files.getOrElse(Nil) if ranges.exists(_.isDefined)) {
      for ((found, index) <- fileRanges(file, names, conf, options).zipWithIndex) {
        ranges(index) = for (known <- ranges(index); more <- found) yield known.union(more)
      }
    }
    ranges.map(_.fold("?")(_.toString)).mkString(Nul)
  }

  /**
   * `names`' ranges in one file, from the cache or its footer. A parquet file is never
   * rewritten in place by Spark or sparkmv, and a file replaced at the same path has another
   * length or modification time, which the key holds: a cached range is the file's own.
   */
  private def fileRanges(
      file: FileStatus,
      names: Seq[String],
      conf: Configuration,
      options: => ParquetReadOptions): Seq[Option[ColumnRange]] = {
    val keys = names.map(FooterKey(file.getPath.toString, file.getLen, file.getModificationTime, _))
    val cached = keys.map(footerRanges.get)
    if (cached.forall(_.isDefined)) return cached.map(_.get)
    val reader = openFooter(file, conf, options)
    try {
      val schema = reader.getFooter.getFileMetaData.getSchema
      val groups = reader.getRowGroups.asScala.toSeq
      keys.map { key =>
        val range = fileRange(schema, groups, key.column)
        footerRanges.put(key, range)
        range
      }
    } finally reader.close()
  }

  private final case class FooterKey(path: String, length: Long, modified: Long, column: String)

  /**
   * Footer ranges already read in this JVM, least recently used dropped beyond the bound the
   * caller passes (`spark.sparkmv.refresh.keyProofs.cachedFooterRanges`; 0 keeps none): the
   * files a table keeps between refreshes, and those every view over it reads, are read once.
   */
  private object footerRanges {
    private var limit = 0
    private val entries = new java.util.LinkedHashMap[FooterKey, Option[ColumnRange]](16, 0.75f, true) {
      override def removeEldestEntry(eldest: java.util.Map.Entry[FooterKey, Option[ColumnRange]]): Boolean =
        size > limit
    }

    def bound(max: Int): Unit = synchronized {
      limit = max
      if (entries.size > limit) entries.clear()
    }

    def get(key: FooterKey): Option[Option[ColumnRange]] = synchronized(Option(entries.get(key)))

    def put(key: FooterKey, range: Option[ColumnRange]): Unit = synchronized {
      if (limit > 0) entries.put(key, range)
    }
  }

  /** The smallest and largest non-null value of some rows' column; none when `low > high`. */
  private case class ColumnRange(low: Long, high: Long) {
    def union(other: ColumnRange): ColumnRange =
      if (low > high) other
      else if (other.low > other.high) this
      else ColumnRange(math.min(low, other.low), math.max(high, other.high))
    override def toString: String = if (low > high) "" else s"$low,$high"
  }

  private object ColumnRange {
    val Empty: ColumnRange = ColumnRange(1, 0)
  }

  /** `name`'s range in one file's row groups; None when its statistics do not say. */
  private def fileRange(
      schema: MessageType,
      groups: Seq[BlockMetaData],
      name: String): Option[ColumnRange] = {
    if (!schema.containsField(name) || !integral(schema.getType(schema.getFieldIndex(name)))) return None
    val column = ColumnPath.get(name)
    groups.foldLeft(Option(ColumnRange.Empty)) { (known, group) =>
      known.flatMap { range =>
        group.getColumns.asScala.find(_.getPath == column).flatMap { chunk =>
          val statistics = chunk.getStatistics
          if (chunk.getValueCount == 0) Some(range)
          else if (statistics == null || statistics.isEmpty) None
          else if (statistics.hasNonNullValue) {
            val (low, high) = (statistics.genericGetMin, statistics.genericGetMax)
            Some(range.union(ColumnRange(long(low), long(high))))
          } else if (statistics.isNumNullsSet && statistics.getNumNulls == chunk.getValueCount) {
            Some(range) // only NULLs, which match no key
          } else None
        }
      }
    }
  }

  private def long(value: Any): Long = value match {
    case int: java.lang.Integer => int.longValue
    case long: java.lang.Long => long.longValue
  }

  private def integral(field: org.apache.parquet.schema.Type): Boolean = field.isPrimitive && {
    val primitive = field.asPrimitiveType
    val stored = primitive.getPrimitiveTypeName
    val stores = stored == PrimitiveType.PrimitiveTypeName.INT32 ||
      stored == PrimitiveType.PrimitiveTypeName.INT64
    stores && (primitive.getLogicalTypeAnnotation match {
      case null => true
      case int: LogicalTypeAnnotation.IntLogicalTypeAnnotation => int.isSigned
      case _: LogicalTypeAnnotation.DateLogicalTypeAnnotation => true
      case _ => false
    })
  }

  /** The data files of `paths` (NUL-separated files or directories); None if one is gone. */
  private def parquetFiles(conf: Configuration, paths: String): Option[Seq[FileStatus]] = {
    val found = paths.split(Nul).filter(_.nonEmpty).toSeq.map { file =>
      val path = new Path(file)
      try {
        val status = path.getFileSystem(conf).getFileStatus(path)
        Some(if (status.isDirectory) dataFiles(conf, path) else Seq(status))
      } catch { case _: FileNotFoundException => None }
    }
    if (found.contains(None)) None else Some(found.flatten.flatten)
  }

  /** The text of the file `file` (UTF-8). */
  def readText(conf: Configuration, file: String): String = {
    val path = new Path(file)
    val stream = path.getFileSystem(conf).open(path)
    try IOUtils.toString(stream, StandardCharsets.UTF_8)
    finally stream.close()
  }

  /**
   * The texts (UTF-8) of `files` (NUL-separated), in one round trip: each answered as "+"
   * and its text, or as "-" when it does not exist, NUL-separated. A table format's log read
   * as metadata: a Delta table's commits of a range, one file each.
   */
  def readTexts(conf: Configuration, files: String): String =
    files.split(Nul).filter(_.nonEmpty).map { file =>
      try "+" + readText(conf, file)
      catch { case _: FileNotFoundException => "-" }
    }.mkString(Nul)

  /**
   * Creates `file` holding `text` (UTF-8) atomically, only if it does not exist: of two
   * writers exactly one publishes, and a reader sees all of the text or no file. The change
   * log's commit point (`docs/cluster.md`, "What sparkmv needs from the file system").
   * Answers `Published`, `Exists` (`file` was there already, or another writer's won), or
   * `Unsupported` (this file system offers no atomic create-if-absent: nothing is written).
   * Each kind of file system has its own way:
   *
   *  - local (`file:`): a hidden temporary file, then a hard link to the name, which fails
   *    if the name exists (a rename would replace it);
   *  - a store of objects, whose new file appears whole when its stream closes (its stream
   *    cannot `hflush`: S3A, GCS, the tests' `objstore:`): `create(file, overwrite = false)`,
   *    a conditional put;
   *  - a file system whose files are visible while written (its streams can `hflush`: HDFS,
   *    ABFS with hierarchical namespace): a hidden temporary file, then `rename`, which must
   *    fail onto an existing name (it does there, atomically). A file system whose rename
   *    replaces instead cannot publish safely: `Unsupported`.
   *
   * Which kind a file system is, is learnt from its first publish (the temporary file's
   * stream, and for the third kind a rename of one probe file onto another) and remembered
   * by file system URI. A crash leaves at most a stray hidden file.
   */
  def publishText(conf: Configuration, file: String, text: String): String = {
    val target = new Path(file)
    val fs = target.getFileSystem(conf)
    val bytes = text.getBytes(StandardCharsets.UTF_8)
    if (fs.exists(target)) return Exists
    if (fs.getScheme == "file") return publishByLink(fs, target, bytes)
    val uri = fs.getUri.toString
    Option(publishWays.get(uri)) match {
      case Some(ByPut) => return put(fs, target, bytes)
      case Some(Unsupported) => return Unsupported
      case _ =>
    }
    val temporary = hiddenBeside(target)
    val visibleWhileWritten = write(fs, temporary, bytes)
    val way = Option(publishWays.get(uri)).getOrElse {
      val learnt = if (!visibleWhileWritten) ByPut else renameWay(fs, target)
      publishWays.put(uri, learnt)
      learnt
    }
    if (way != ByRename) {
      fs.delete(temporary, false)
      if (way == ByPut) put(fs, target, bytes) else Unsupported
    } else if (!fs.rename(temporary, target)) {
      fs.delete(temporary, false)
      Exists
    } else Published
  }

  val Published = "published"
  val Exists = "exists"
  val Unsupported = "unsupported"
  private val ByPut = "put"
  private val ByRename = "rename"

  /** File system URI → how `publishText` publishes there (`ByPut`, `ByRename`, `Unsupported`). */
  private val publishWays = new java.util.concurrent.ConcurrentHashMap[String, String]()

  private def hiddenBeside(target: Path): Path =
    new Path(target.getParent, s".${java.util.UUID.randomUUID()}.tmp")

  /** Writes `bytes` to the new file `path`; whether its stream could `hflush`. */
  private def write(fs: FileSystem, path: Path, bytes: Array[Byte]): Boolean = {
    val stream = fs.create(path, false)
    try {
      stream.write(bytes)
      stream.hasCapability(StreamCapabilities.HFLUSH)
    } finally stream.close()
  }

  /**
   * Whether a rename onto an existing file fails on `fs` (`ByRename`) or replaces it
   * (`Unsupported`): one probe file renamed onto another, beside `target`.
   */
  private def renameWay(fs: FileSystem, target: Path): String = {
    val (from, onto) = (hiddenBeside(target), hiddenBeside(target))
    try {
      write(fs, from, Array.emptyByteArray)
      write(fs, onto, Array.emptyByteArray)
      if (fs.rename(from, onto)) Unsupported else ByRename
    } finally {
      fs.delete(from, false)
      fs.delete(onto, false)
    }
  }

  /**
   * A conditional put of `bytes` at `target`: false if something is there already. The
   * builder's conditional-create option makes S3A (Hadoop 3.5) send `If-None-Match: *`;
   * connectors that do not know it ignore it (`opt`), and their `create(overwrite = false)`
   * is what they offer (GCS and ABFS: conditional requests).
   */
  private def put(fs: FileSystem, target: Path, bytes: Array[Byte]): String = {
    val stream =
      try {
        fs.createFile(target)
          .overwrite(false)
          .opt(Options.CreateFileOptionKeys.FS_OPTION_CREATE_CONDITIONAL_OVERWRITE, true)
          .build()
      } catch { case _: FileAlreadyExistsException => return Exists }
    try {
      stream.write(bytes)
      stream.close() // an object store's conditional put is decided here
      Published
    } catch {
      case _: FileAlreadyExistsException => Exists
    }
  }

  /** Local: a hidden temporary file linked to `target` (fails if `target` exists). */
  private def publishByLink(fs: FileSystem, target: Path, bytes: Array[Byte]): String = {
    val local = new java.io.File(fs.makeQualified(target).toUri).toPath
    Files.createDirectories(local.getParent)
    val temporary = local.resolveSibling(s".${java.util.UUID.randomUUID()}.tmp")
    Files.write(temporary, bytes)
    try {
      Files.createLink(local, temporary)
      Published
    } catch {
      case _: java.nio.file.FileAlreadyExistsException => Exists
    } finally Files.delete(temporary)
  }

  /** Whether `path` exists. */
  def exists(conf: Configuration, path: String): Boolean = {
    val hadoopPath = new Path(path)
    hadoopPath.getFileSystem(conf).exists(hadoopPath)
  }

  /** Deletes each of `paths` (NUL-separated) recursively, if present. */
  def removeAll(conf: Configuration, paths: String): Unit =
    for (path <- paths.split(Nul) if path.nonEmpty) {
      val hadoopPath = new Path(path)
      hadoopPath.getFileSystem(conf).delete(hadoopPath, true)
    }

  /** Whether `directory` holds any file (hidden ones included), at any depth. */
  def hasFiles(conf: Configuration, directory: String): Boolean = {
    val root = new Path(directory)
    val fs = root.getFileSystem(conf)
    fs.exists(root) && fs.listFiles(root, true).hasNext
  }

  /** The hidden files (`_`, `.`) directly in `directory`, NUL-separated ("" when none). */
  def hiddenFiles(conf: Configuration, directory: String): String = {
    val root = new Path(directory)
    val fs = root.getFileSystem(conf)
    if (!fs.exists(root)) return ""
    fs.listStatus(root)
      .filter(status => status.isFile && isHidden(status.getPath.getName))
      .map(_.getPath.toString)
      .mkString(Nul)
  }

  private def isHidden(name: String): Boolean = name.startsWith("_") || name.startsWith(".")

  /** Creates `directory` and its parents. */
  def makeDirs(conf: Configuration, directory: String): Unit = {
    val path = new Path(directory)
    path.getFileSystem(conf).mkdirs(path)
  }

  /**
   * Renames `source` to `target`, copying (then deleting `source`) across file systems or
   * where the rename is refused. Not atomic on an object store: callers move files only into
   * directories that nothing committed names yet (`docs/cluster.md`).
   */
  def move(conf: Configuration, source: String, target: String): Unit = {
    val (from, onto) = (new Path(source), new Path(target))
    val (fromFs, ontoFs) = (from.getFileSystem(conf), onto.getFileSystem(conf))
    ontoFs.mkdirs(onto.getParent)
    if (!(fromFs.getUri == ontoFs.getUri && fromFs.rename(from, onto))) {
      copy(conf, from, onto, deleteSource = true)
    }
  }

  /**
   * Makes each target a second name of its source's bytes (`pairs`: source, target, ...,
   * NUL-separated): a hard link where both are on the local file system (no copy), else a
   * copy (an object store has no links). Either way the source can be deleted afterwards
   * without affecting the target.
   */
  def linkAll(conf: Configuration, pairs: String): Unit =
    for (Array(source, target) <- pairs.split(Nul).filter(_.nonEmpty).grouped(2)) {
      val (from, onto) = (new Path(source), new Path(target))
      val (fromFs, ontoFs) = (from.getFileSystem(conf), onto.getFileSystem(conf))
      if (!(fromFs.getScheme == "file" && ontoFs.getScheme == "file" &&
          hardLink(fromFs, from, ontoFs, onto))) {
        copy(conf, from, onto, deleteSource = false)
      }
    }

  private def hardLink(fromFs: FileSystem, from: Path, ontoFs: FileSystem, onto: Path): Boolean = {
    val target = new java.io.File(ontoFs.makeQualified(onto).toUri).toPath
    Files.createDirectories(target.getParent)
    try {
      Files.createLink(target, new java.io.File(fromFs.makeQualified(from).toUri).toPath)
      true
    } catch { case _: java.io.IOException => false } // e.g. another device: copied instead
  }

  private def copy(conf: Configuration, from: Path, onto: Path, deleteSource: Boolean): Unit =
    if (!FileUtil.copy(from.getFileSystem(conf), from, onto.getFileSystem(conf), onto,
        deleteSource, conf)) {
      throw new java.io.IOException(s"could not copy $from to $onto")
    }

  /** `path` with its file system's scheme and authority, as Hadoop lists it. */
  def qualified(conf: Configuration, path: String): String = {
    val hadoopPath = new Path(path)
    hadoopPath.getFileSystem(conf).makeQualified(hadoopPath).toString
  }
}
