package io.sparkmv.testing

import java.io.{FileNotFoundException, IOException, OutputStream}
import java.net.URI
import java.nio.file.{Files, NoSuchFileException, Paths, StandardCopyOption}
import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{CreateFlag, FileAlreadyExistsException, FileStatus, FileSystem, FSDataInputStream, FSDataOutputStream, Path, RawLocalFileSystem, StreamCapabilities}
import org.apache.hadoop.fs.permission.FsPermission
import org.apache.hadoop.security.UserGroupInformation
import org.apache.hadoop.util.Progressable

/**
 * TEST ONLY (never in the product jar). A Hadoop file system with a scheme of its own,
 * `objstore://bucket/key`, over a local directory (`fs.objstore.root`, default
 * `$java.io.tmpdir/sparkmv-objstore`; a bucket is a directory under it), that behaves as an
 * object store (S3 through S3A, GCS, ABFS without hierarchical namespace) where it matters to
 * a commit protocol, so that the tests run what sparkmv and Spark do on one:
 *
 *  - An object appears whole or not at all: `create` writes to a staging file outside the
 *    store and puts it in place when the stream closes (a reader never sees a partial file).
 *  - `create(path, overwrite = false)` is a conditional put (S3's `If-None-Match: *`): of two
 *    writers of one key exactly one succeeds, the other's `close` (or its `create`, when the
 *    key already exists then) fails with `FileAlreadyExistsException`. It is the one atomic
 *    primitive sparkmv may rely on.
 *  - `rename` is not atomic: it copies each file (one object at a time) and then deletes the
 *    source, a directory's tree file by file; between the two both are visible, and a crash
 *    leaves a partial copy. Rename onto an existing file fails (returns false).
 *    `fs.objstore.rename.delayMs` sleeps between the copies, to widen that window in a test.
 *  - Two switches make it another kind of file system, for the tests of how sparkmv tells
 *    them apart: `fs.objstore.hdfs=true` makes it behave as HDFS where sparkmv can tell
 *    (its streams claim `hflush`, as those of a file system whose files are visible while
 *    written do, and the rename of a file is atomic and refuses to replace one);
 *    `fs.objstore.rename.replaces=true` then makes that rename replace an existing file (as
 *    a POSIX rename does).
 *  - No `append`, `truncate`, `concat`, hard links or symlinks (UnsupportedOperationException).
 *  - No checksum files, and permissions, owners and times are not kept (as S3A).
 *  - Directories are real local directories, but implicit as on a store: `create` makes the
 *    missing parents, and `rename` makes the target's.
 *
 * Registered with `spark.hadoop.fs.objstore.impl=io.sparkmv.testing.ObjectStoreFileSystem`.
 */
class ObjectStoreFileSystem extends FileSystem {
  private var uri: URI = _
  private var base: java.nio.file.Path = _ // the bucket's local directory
  private var staging: java.nio.file.Path = _ // outside the bucket: not listed
  private var workingDirectory: Path = _
  private var renameDelayMs: Long = 0L
  private var hdfs = false
  private var renameReplaces = false
  private val local = new RawLocalFileSystem

  override def getScheme: String = ObjectStoreFileSystem.Scheme

  override def getUri: URI = uri

  override def initialize(name: URI, conf: Configuration): Unit = {
    super.initialize(name, conf)
    setConf(conf)
    val bucket = Option(name.getAuthority).getOrElse("")
    uri = new URI(ObjectStoreFileSystem.Scheme, bucket, "/", null, null)
    val root = Paths.get(
      conf.get(
        ObjectStoreFileSystem.RootConf,
        Paths.get(System.getProperty("java.io.tmpdir"), "sparkmv-objstore").toString))
    base = root.resolve(if (bucket.isEmpty) "_" else bucket).toAbsolutePath
    staging = root.resolve(".staging").toAbsolutePath
    Files.createDirectories(base)
    Files.createDirectories(staging)
    renameDelayMs = conf.getLong(ObjectStoreFileSystem.RenameDelayConf, 0L)
    hdfs = conf.getBoolean(ObjectStoreFileSystem.HdfsConf, false)
    renameReplaces = conf.getBoolean(ObjectStoreFileSystem.RenameReplacesConf, false)
    local.initialize(URI.create("file:///"), conf)
    val user = UserGroupInformation.getCurrentUser.getShortUserName
    workingDirectory = new Path(s"/user/$user").makeQualified(uri, null)
  }

  override def getWorkingDirectory: Path = workingDirectory

  override def setWorkingDirectory(directory: Path): Unit =
    workingDirectory = qualify(directory)

  private def qualify(path: Path): Path = path.makeQualified(uri, workingDirectory)

  /** The store's key of `path` ("" for the bucket's root). */
  private def key(path: Path): String = {
    val qualified = qualify(path)
    if (qualified.toUri.getScheme != getScheme) {
      throw new IllegalArgumentException(s"wrong file system: $path is not in $uri")
    }
    qualified.toUri.getPath.stripPrefix("/").stripSuffix("/")
  }

  private def file(path: Path): java.nio.file.Path = {
    val k = key(path)
    if (k.isEmpty) base else base.resolve(k)
  }

  private def localPath(path: Path): Path = new Path(file(path).toUri)

  private def storePath(file: java.nio.file.Path): Path = {
    val relative = base.relativize(file).toString
    new Path(uri.getScheme, uri.getAuthority, "/" + relative)
  }

  private def status(file: java.nio.file.Path): FileStatus = {
    if (!Files.exists(file)) throw new FileNotFoundException(s"${storePath(file)} does not exist")
    val directory = Files.isDirectory(file)
    val user = UserGroupInformation.getCurrentUser.getShortUserName
    new FileStatus(
      if (directory) 0L else Files.size(file),
      directory,
      1,
      getDefaultBlockSize(storePath(file)),
      Files.getLastModifiedTime(file).toMillis,
      0L,
      if (directory) FsPermission.getDirDefault else FsPermission.getFileDefault,
      user,
      user,
      storePath(file))
  }

  override def getFileStatus(path: Path): FileStatus = status(file(path))

  override def listStatus(path: Path): Array[FileStatus] = {
    val directory = file(path)
    if (!Files.exists(directory)) throw new FileNotFoundException(s"$path does not exist")
    if (!Files.isDirectory(directory)) return Array(status(directory))
    val entries = Files.list(directory)
    try {
      val found = scala.collection.mutable.ArrayBuffer.empty[FileStatus]
      entries.forEach { entry =>
        try found += status(entry)
        catch { case _: FileNotFoundException => () } // deleted while listed
      }
      found.sortBy(_.getPath.getName).toArray
    } finally entries.close()
  }

  override def open(path: Path, bufferSize: Int): FSDataInputStream = {
    if (Files.isDirectory(file(path))) throw new FileNotFoundException(s"$path is a directory")
    local.open(localPath(path), bufferSize)
  }

  override def create(
      path: Path,
      permission: FsPermission,
      overwrite: Boolean,
      bufferSize: Int,
      replication: Short,
      blockSize: Long,
      progress: Progressable): FSDataOutputStream = {
    val target = file(path)
    if (Files.isDirectory(target)) throw new FileAlreadyExistsException(s"$path is a directory")
    if (!overwrite && Files.exists(target)) {
      throw new FileAlreadyExistsException(s"$path already exists")
    }
    val staged = staging.resolve(UUID.randomUUID().toString)
    new FSDataOutputStream(new PutOnClose(path, staged, target, overwrite), statistics)
  }

  /** The stream of one object: its bytes go to `staged`, put in place by `close`. */
  private class PutOnClose(
      path: Path,
      staged: java.nio.file.Path,
      target: java.nio.file.Path,
      overwrite: Boolean)
      extends OutputStream
      with StreamCapabilities {
    private val out = Files.newOutputStream(staged)
    private var closed = false

    override def hasCapability(capability: String): Boolean =
      hdfs && Set(StreamCapabilities.HFLUSH, StreamCapabilities.HSYNC)(capability)

    override def write(b: Int): Unit = out.write(b)
    override def write(b: Array[Byte], off: Int, len: Int): Unit = out.write(b, off, len)
    override def flush(): Unit = out.flush()

    override def close(): Unit = if (!closed) {
      closed = true
      out.close()
      try put(path, staged, target, overwrite)
      finally Files.deleteIfExists(staged)
    }
  }

  /**
   * Put the complete file `staged` at `target` atomically: replacing what is there
   * (`overwrite`), or only if nothing is (a hard link inside the backing directory, which
   * fails if the name exists: the store's conditional put; nothing a client can call).
   */
  private def put(
      path: Path,
      staged: java.nio.file.Path,
      target: java.nio.file.Path,
      overwrite: Boolean): Unit = {
    Files.createDirectories(target.getParent)
    if (overwrite) {
      Files.move(staged, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING)
    } else {
      try Files.createLink(target, staged)
      catch {
        case _: java.nio.file.FileAlreadyExistsException =>
          throw new FileAlreadyExistsException(s"$path already exists (conditional put)")
      }
    }
  }

  override def createNonRecursive(
      path: Path,
      permission: FsPermission,
      overwrite: Boolean,
      bufferSize: Int,
      replication: Short,
      blockSize: Long,
      progress: Progressable): FSDataOutputStream =
    create(path, permission, overwrite, bufferSize, replication, blockSize, progress)

  override def createNonRecursive(
      path: Path,
      permission: FsPermission,
      flags: java.util.EnumSet[CreateFlag],
      bufferSize: Int,
      replication: Short,
      blockSize: Long,
      progress: Progressable): FSDataOutputStream = {
    val overwrite = flags.contains(CreateFlag.OVERWRITE)
    create(path, permission, overwrite, bufferSize, replication, blockSize, progress)
  }

  override def append(path: Path, bufferSize: Int, progress: Progressable): FSDataOutputStream =
    throw new UnsupportedOperationException(s"$getScheme: append is not supported ($path)")

  override def truncate(path: Path, newLength: Long): Boolean =
    throw new UnsupportedOperationException(s"$getScheme: truncate is not supported ($path)")

  override def concat(target: Path, sources: Array[Path]): Unit =
    throw new UnsupportedOperationException(s"$getScheme: concat is not supported ($target)")

  override def createSymlink(target: Path, link: Path, createParent: Boolean): Unit =
    throw new UnsupportedOperationException(s"$getScheme: no symlinks ($link)")

  override def supportsSymlinks(): Boolean = false

  /**
   * Copy, then delete: each file is copied whole (an object appears whole), a directory's
   * tree one file at a time, and only then is the source deleted. Not atomic. False, as
   * S3A, when the source is missing, the target is an existing file or non-empty directory,
   * or the target is inside the source.
   */
  override def rename(source: Path, destination: Path): Boolean = {
    val from = file(source)
    if (!Files.exists(from) || key(source).isEmpty) return false
    var to = file(destination)
    if (Files.isDirectory(to)) {
      to = to.resolve(from.getFileName)
    }
    if (from == to) return Files.isRegularFile(from)
    if (to.startsWith(from) || (Files.isRegularFile(to) && !renameReplaces)) return false
    if (Files.isDirectory(to) && Files.list(to).findAny().isPresent) return false
    if (Files.isRegularFile(from) && hdfs && !renameReplaces) {
      Files.createDirectories(to.getParent)
      try Files.createLink(to, from) // atomic, and fails onto an existing name
      catch { case _: java.nio.file.FileAlreadyExistsException => return false }
      Files.delete(from)
      return true
    }
    if (Files.isRegularFile(from)) copyFile(from, to)
    else {
      val tree = Files.walk(from)
      try {
        tree.forEach { entry =>
          val target = to.resolve(from.relativize(entry))
          if (Files.isDirectory(entry)) Files.createDirectories(target) else copyFile(entry, target)
        }
      } finally tree.close()
    }
    local.delete(new Path(from.toUri), true)
    true
  }

  private def copyFile(from: java.nio.file.Path, to: java.nio.file.Path): Unit = {
    if (renameDelayMs > 0) Thread.sleep(renameDelayMs)
    val staged = staging.resolve(UUID.randomUUID().toString)
    try {
      Files.copy(from, staged)
      Files.createDirectories(to.getParent)
      Files.move(staged, to, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING)
    } catch {
      case _: NoSuchFileException => () // deleted meanwhile: an object store copies what it lists
    } finally Files.deleteIfExists(staged)
  }

  override def delete(path: Path, recursive: Boolean): Boolean = {
    val target = file(path)
    if (!Files.exists(target)) return false
    if (Files.isDirectory(target) && !recursive && Files.list(target).findAny().isPresent) {
      throw new IOException(s"$path is a non-empty directory")
    }
    local.delete(new Path(target.toUri), recursive)
  }

  override def mkdirs(path: Path, permission: FsPermission): Boolean = {
    val target = file(path)
    var ancestor = target
    while (ancestor != null && ancestor.startsWith(base)) {
      if (Files.isRegularFile(ancestor)) {
        throw new FileAlreadyExistsException(s"${storePath(ancestor)} is a file")
      }
      ancestor = ancestor.getParent
    }
    Files.createDirectories(target)
    true
  }
}

object ObjectStoreFileSystem {
  val Scheme = "objstore"
  val RootConf = "fs.objstore.root"
  val RenameDelayConf = "fs.objstore.rename.delayMs"
  val HdfsConf = "fs.objstore.hdfs"
  val RenameReplacesConf = "fs.objstore.rename.replaces"
}
