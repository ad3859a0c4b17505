"""File-system calls through Hadoop's FileSystem on the JVM, so any warehouse URI works."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession


@dataclass(frozen=True)
class _Hadoop:
    """The JVM classes this module calls and the session's Hadoop configuration, looked up
    once per Spark context: py4j resolves ``jvm.org.apache.hadoop.fs.Path`` one package
    segment per round trip, and a refresh makes hundreds of file-system calls."""

    context: Any  # the JavaSparkContext the handles belong to
    configuration: Any
    path: Any  # org.apache.hadoop.fs.Path
    file_util: Any  # org.apache.hadoop.fs.FileUtil
    io_utils: Any  # org.apache.commons.io.IOUtils
    array_seq: Any  # scala.collection.mutable.ArraySeq: joins a Java array in one call


_hadoop_handles: list[_Hadoop] = []  # at most one: the current Spark context's


def _hadoop(spark: SparkSession) -> _Hadoop:
    context: Any = spark._jsc
    if _hadoop_handles and _hadoop_handles[0].context is context:
        return _hadoop_handles[0]
    jvm: Any = spark._jvm
    handles = _Hadoop(
        context,
        context.hadoopConfiguration(),
        jvm.org.apache.hadoop.fs.Path,
        jvm.org.apache.hadoop.fs.FileUtil,
        jvm.org.apache.commons.io.IOUtils,
        jvm.scala.collection.mutable.ArraySeq,
    )
    _hadoop_handles[:] = [handles]
    return handles


def filesystem(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """The Hadoop FileSystem serving ``path``, and ``path`` as a Hadoop Path."""
    hadoop = _hadoop(spark)
    hadoop_path = hadoop.path(path)
    return hadoop_path.getFileSystem(hadoop.configuration), hadoop_path


def qualified(spark: SparkSession, path: str) -> str:
    """``path`` with its file-system scheme, as Hadoop lists it."""
    fs, hadoop_path = filesystem(spark, path)
    return str(fs.makeQualified(hadoop_path).toString())


def warehouse_path(spark: SparkSession, *parts: str) -> str:
    """A qualified path under the session's warehouse directory."""
    warehouse = qualified(spark, spark.conf.get("spark.sql.warehouse.dir") or "")
    return "/".join([warehouse.rstrip("/"), *parts])


def exists(spark: SparkSession, path: str) -> bool:
    fs, hadoop_path = filesystem(spark, path)
    return bool(fs.exists(hadoop_path))


_NUL = "\u0000"


def list_names(spark: SparkSession, directory: str) -> list[str]:
    """Names of the entries of ``directory`` (none if it does not exist)."""
    fs, hadoop_path = filesystem(spark, directory)
    if not fs.exists(hadoop_path):
        return []
    hadoop = _hadoop(spark)
    paths = hadoop.file_util.stat2Paths(fs.listStatus(hadoop_path))
    # Joined in the JVM (NUL is in no path): one round trip, not two per entry.
    joined = str(hadoop.array_seq.make(paths).mkString(_NUL))
    return sorted(path.rsplit("/", 1)[-1] for path in joined.split(_NUL) if path)


def remove(spark: SparkSession, path: str) -> None:
    """Delete ``path`` recursively, if present."""
    fs, hadoop_path = filesystem(spark, path)
    fs.delete(hadoop_path, True)


def read_text(spark: SparkSession, path: str) -> str:
    fs, hadoop_path = filesystem(spark, path)
    stream = fs.open(hadoop_path)
    try:
        return str(_hadoop(spark).io_utils.toString(stream, "UTF-8"))
    finally:
        stream.close()


def publish_text(spark: SparkSession, path: str, text: str) -> bool:
    """Create ``path`` holding ``text`` atomically; False if ``path`` already exists.

    The text goes to a hidden temporary file first and is renamed into place, so a reader
    sees the whole file or none, and a crash leaves at most a stray temporary file.
    """
    fs, target = filesystem(spark, path)
    temporary = _hadoop(spark).path(target.getParent(), f".{uuid.uuid4().hex}.tmp")
    stream = fs.create(temporary, False)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()
    if fs.exists(target) or not fs.rename(temporary, target):
        fs.delete(temporary, False)
        return False
    return True


@dataclass(frozen=True)
class FileStatus:
    path: str  # qualified, as Hadoop lists it
    size: int
    modified_ms: int


def is_hidden(name: str) -> bool:
    """Spark's rule for data directories: ``_`` and ``.`` entries are not data."""
    return name.startswith(("_", "."))


def data_files(spark: SparkSession, directory: str) -> Iterator[FileStatus]:
    """Data files under ``directory``, recursively, skipping hidden entries at any depth."""
    fs, root = filesystem(spark, directory)
    if not fs.exists(root):
        return
    pending = [root]
    while pending:
        for status in fs.listStatus(pending.pop()):
            path = status.getPath()
            if is_hidden(str(path.getName())):
                continue
            if status.isDirectory():
                pending.append(path)
            else:
                yield FileStatus(
                    str(path.toString()), int(status.getLen()), int(status.getModificationTime())
                )


def hidden_files(spark: SparkSession, directory: str) -> list[str]:
    """Hidden files directly in ``directory`` (``_SUCCESS``, checksums): not data, but they
    keep a directory from being empty."""
    fs, root = filesystem(spark, directory)
    if not fs.exists(root):
        return []
    return [
        str(status.getPath().toString())
        for status in fs.listStatus(root)
        if status.isFile() and is_hidden(str(status.getPath().getName()))
    ]


def has_files(spark: SparkSession, directory: str) -> bool:
    """Whether ``directory`` holds any file (hidden ones included), at any depth."""
    fs, root = filesystem(spark, directory)
    return bool(fs.exists(root) and fs.listFiles(root, True).hasNext())


def make_dirs(spark: SparkSession, path: str) -> None:
    fs, hadoop_path = filesystem(spark, path)
    fs.mkdirs(hadoop_path)


def move(spark: SparkSession, source: str, target: str) -> None:
    """Rename ``source`` to ``target`` (copying when they are on different file systems)."""
    fs, source_path = filesystem(spark, source)
    target_fs, target_path = filesystem(spark, target)
    target_fs.mkdirs(target_path.getParent())
    if fs.getUri().equals(target_fs.getUri()) and fs.rename(source_path, target_path):
        return
    _copy(spark, source, target, delete_source=True)


def link(spark: SparkSession, source: str, target: str) -> None:
    """Make ``target`` a second name of ``source``'s bytes: a hard link on a local file
    system (no copy: copy-on-write and preserved files cost a directory entry), else a copy.
    Either way ``source`` can be deleted afterwards without affecting ``target``."""
    source_local, target_local = _local_path(spark, source), _local_path(spark, target)
    if source_local is not None and target_local is not None:
        os.makedirs(os.path.dirname(target_local), exist_ok=True)
        try:
            os.link(source_local, target_local)
            return
        except OSError:
            pass  # e.g. another device: fall through to a copy
    _copy(spark, source, target, delete_source=False)


def _copy(spark: SparkSession, source: str, target: str, delete_source: bool) -> None:
    hadoop = _hadoop(spark)
    fs, source_path = filesystem(spark, source)
    target_fs, target_path = filesystem(spark, target)
    if not hadoop.file_util.copy(
        fs, source_path, target_fs, target_path, delete_source, hadoop.configuration
    ):
        raise OSError(f"could not copy {source} to {target}")


def _local_path(spark: SparkSession, path: str) -> str | None:
    """The operating-system path of a ``file:`` URI, None for other file systems."""
    if path.startswith("file:"):  # as Hadoop writes them; read without a JVM round trip
        rest = path[len("file:") :]
        if not rest.startswith("//"):
            return rest
        authority, slash, rest = rest[2:].partition("/")
        if authority in ("", "localhost") and slash:
            return "/" + rest
    _, hadoop_path = filesystem(spark, path)
    uri = hadoop_path.toUri()
    if uri.getScheme() not in (None, "file"):
        return None
    return str(uri.getPath())
