package io.sparkmv.fs

import java.nio.charset.StandardCharsets

import scala.collection.mutable.ArrayBuffer

import org.apache.commons.io.IOUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile

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
  def listNames(conf: Configuration, directory: String): String = {
    val path = new Path(directory)
    val fs = path.getFileSystem(conf)
    if (!fs.exists(path)) "" else fs.listStatus(path).map(_.getPath.getName).mkString(Nul)
  }

  /**
   * The data files under `directory`, recursively, skipping hidden entries (`_`, `.`) at any
   * depth, as Spark does: path, size and modification time of each ("" when it does not
   * exist).
   */
  def listDataFiles(conf: Configuration, directory: String): String = {
    val root = new Path(directory)
    val fs = root.getFileSystem(conf)
    if (!fs.exists(root)) return ""
    val fields = ArrayBuffer.empty[String]
    val pending = scala.collection.mutable.Stack(root)
    while (pending.nonEmpty) {
      for (status <- fs.listStatus(pending.pop())) {
        val name = status.getPath.getName
        if (!name.startsWith("_") && !name.startsWith(".")) {
          if (status.isDirectory) pending.push(status.getPath)
          else {
            fields += status.getPath.toString
            fields += status.getLen.toString
            fields += status.getModificationTime.toString
          }
        }
      }
    }
    fields.mkString(Nul)
  }

  /**
   * The data files under `directory` (as `listDataFiles` finds them) with the number of rows
   * each holds, read from its parquet footer: path and row count of each ("" when it does not
   * exist). A footer read costs a file open, no Spark job; meant for a refresh's own small
   * outputs (its staged change, a mask), not for a view's data.
   */
  def parquetRowCounts(conf: Configuration, directory: String): String = {
    val listed = listDataFiles(conf, directory)
    if (listed.isEmpty) return ""
    listed
      .split(Nul)
      .grouped(3)
      .map { case Array(file, _, _) =>
        val reader = ParquetFileReader.open(HadoopInputFile.fromPath(new Path(file), conf))
        try s"$file$Nul${reader.getRecordCount}"
        finally reader.close()
      }
      .mkString(Nul)
  }

  /** The text of the file `file` (UTF-8). */
  def readText(conf: Configuration, file: String): String = {
    val path = new Path(file)
    val stream = path.getFileSystem(conf).open(path)
    try IOUtils.toString(stream, StandardCharsets.UTF_8)
    finally stream.close()
  }

  /**
   * Creates `file` holding `text` (UTF-8) atomically: written to a hidden file beside it,
   * then renamed into place, so a reader sees all of it or nothing, and a crash leaves at
   * most a stray hidden file. False when `file` already exists.
   */
  def publishText(conf: Configuration, file: String, text: String): Boolean = {
    val target = new Path(file)
    val fs = target.getFileSystem(conf)
    if (fs.exists(target)) return false
    val temporary = new Path(target.getParent, s".${java.util.UUID.randomUUID()}.tmp")
    val stream = fs.create(temporary, false)
    try stream.write(text.getBytes(StandardCharsets.UTF_8))
    finally stream.close()
    if (fs.exists(target) || !fs.rename(temporary, target)) {
      fs.delete(temporary, false)
      false
    } else true
  }

  /** `path` with its file system's scheme and authority, as Hadoop lists it. */
  def qualified(conf: Configuration, path: String): String = {
    val hadoopPath = new Path(path)
    hadoopPath.getFileSystem(conf).makeQualified(hadoopPath).toString
  }
}
