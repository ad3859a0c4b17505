package io.sparkmv.fs

import java.nio.file.Files
import java.nio.file.attribute.PosixFilePermission

import org.apache.hadoop.fs.{LocalFileSystem, Path, RawLocalFileSystem}
import org.apache.hadoop.fs.permission.FsPermission

/**
 * Hadoop's local file system, setting permissions through java.nio instead of a `chmod`
 * child process. Without Hadoop's native library (pyspark's wheel has none) every file Spark
 * writes locally, and its checksum file, costs a process start (12-17 ms here): a refresh
 * that writes a few small files per bucket spent most of its time there. Same semantics (a
 * file system without POSIX permissions falls back to Hadoop's way).
 */
class RawLocalFileSystemWithNioPermissions extends RawLocalFileSystem {
  override def setPermission(p: Path, permission: FsPermission): Unit = {
    val mode = permission.toShort.toInt
    val bits = PosixFilePermission.values() // OWNER_READ ... OTHERS_EXECUTE: bits 8 to 0
    val granted = new java.util.HashSet[PosixFilePermission]()
    for (i <- bits.indices if (mode & (1 << (8 - i))) != 0) granted.add(bits(i))
    try Files.setPosixFilePermissions(pathToFile(p).toPath, granted)
    catch { case _: UnsupportedOperationException => super.setPermission(p, permission) }
  }
}

/** `spark.hadoop.fs.file.impl`: the checksummed local file system over the one above. */
class LocalFileSystemWithNioPermissions
    extends LocalFileSystem(new RawLocalFileSystemWithNioPermissions)
