"""File-system calls through Hadoop's FileSystem on the JVM, so any warehouse URI works.

On the local file system (a ``file:`` path) the simple calls — exists, list, read, remove,
publish, link — are made here, by the operating system, with Hadoop's conventions (its
checksum files ``.name.crc`` are not listed and go with their file): through Hadoop each
costs the driver a few py4j round trips, and a refresh makes dozens.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import threading
import uuid
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from sparkmv.config import FS_BRIDGE_CLASS
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.jvm import helper


@dataclass(frozen=True)
class _Hadoop:
    """The JVM classes this module calls and the session's Hadoop configuration, looked up
    once per Spark context: py4j resolves ``jvm.org.apache.hadoop.fs.Path`` one package
    segment per round trip, and a refresh makes hundreds of file-system calls."""

    context: Any  # the JavaSparkContext the handles belong to
    configuration: Any
    path: Any  # org.apache.hadoop.fs.Path
    file_util: Any  # org.apache.hadoop.fs.FileUtil
    bridge: Any  # io.sparkmv.fs.FsBridge: listings and reads in one round trip each
    # What ``qualified`` answered, by path: the file system and its working directory that
    # qualification depends on are fixed once Hadoop has made them (it caches them).
    qualified: dict[str, str] = field(default_factory=dict)
    warehouse: list[str] = field(default_factory=list)  # the qualified warehouse, once known


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
        helper(spark, FS_BRIDGE_CLASS),
    )
    _hadoop_handles[:] = [handles]
    return handles


def filesystem(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """The Hadoop FileSystem serving ``path``, and ``path`` as a Hadoop Path."""
    hadoop = _hadoop(spark)
    hadoop_path = hadoop.path(path)
    return hadoop_path.getFileSystem(hadoop.configuration), hadoop_path


def qualified(spark: SparkSession, path: str) -> str:
    """``path`` with its file-system scheme, as Hadoop lists it (asked once per path: a
    refresh qualifies the same few paths, a view's storage and its base tables', every time)."""
    hadoop = _hadoop(spark)
    known = hadoop.qualified.get(path)
    if known is None:
        if len(hadoop.qualified) >= _MAX_QUALIFIED:
            hadoop.qualified.clear()
        known = str(hadoop.bridge.qualified(hadoop.configuration, path))
        hadoop.qualified[path] = known
    return known


_MAX_QUALIFIED = 4096
"""Paths whose qualified form ``qualified`` keeps (then it starts over)."""


def warehouse_path(spark: SparkSession, *parts: str) -> str:
    """A qualified path under the session's warehouse directory (a static conf: fixed for
    the life of the Spark context, so looked up once)."""
    hadoop = _hadoop(spark)
    if not hadoop.warehouse:
        hadoop.warehouse.append(qualified(spark, spark.conf.get("spark.sql.warehouse.dir") or ""))
    return "/".join([hadoop.warehouse[0].rstrip("/"), *parts])


def exists(spark: SparkSession, path: str) -> bool:
    local = os_path(spark, path)
    if local is not None:
        return os.path.exists(local)
    fs, hadoop_path = filesystem(spark, path)
    return bool(fs.exists(hadoop_path))


_NUL = "\u0000"
"""Separates the fields of ``FsBridge``'s answers: it is in no path."""


def list_names(spark: SparkSession, directory: str) -> list[str]:
    """Names of the entries of ``directory`` (none if it does not exist)."""
    local = os_path(spark, directory)
    if local is not None:
        try:
            return sorted(name for name in os.listdir(local) if not _is_checksum(name))
        except (FileNotFoundError, NotADirectoryError):
            return [os.path.basename(local)] if os.path.isfile(local) else []
    hadoop = _hadoop(spark)
    joined = str(hadoop.bridge.listNames(hadoop.configuration, directory))
    return sorted(name for name in joined.split(_NUL) if name)


def remove(spark: SparkSession, path: str) -> None:
    """Delete ``path`` recursively, if present."""
    local = os_path(spark, path)
    if local is None:
        fs, hadoop_path = filesystem(spark, path)
        fs.delete(hadoop_path, True)
    elif os.path.isdir(local) and not os.path.islink(local):
        shutil.rmtree(local, ignore_errors=True)
    else:
        directory, name = os.path.split(local)
        for file in (local, os.path.join(directory, f".{name}.crc")):
            with contextlib.suppress(FileNotFoundError):
                os.remove(file)


def read_text(spark: SparkSession, path: str) -> str:
    local = os_path(spark, path)
    if local is not None:
        with open(local, encoding="utf-8") as stream:
            return stream.read()
    hadoop = _hadoop(spark)
    return str(hadoop.bridge.readText(hadoop.configuration, path))


def publish_text(spark: SparkSession, path: str, text: str) -> bool:
    """Create ``path`` holding ``text`` atomically; False if ``path`` already exists.

    The commit point of a change log (``docs/cluster.md``): of two writers exactly one
    publishes, and a reader sees the whole file or none. On the local file system that is
    done here: the text goes to a hidden temporary file, then a hard link to ``path``, which
    fails if ``path`` exists (a crash leaves at most a stray temporary file). Hadoop's local
    file system would set each new file's permissions by running ``chmod`` in a child
    process when its native library is absent (twice: the file and its checksum), 12-17 ms
    per file; a captured write publishes a manifest each. Elsewhere (and for paths with
    escaped characters, which Hadoop decodes) ``FsBridge.publishText`` does it the file
    system's way: a conditional put on an object store (which has no atomic rename), a
    rename that refuses to replace on HDFS. A file system with neither is refused
    (FILE_SYSTEM_CANNOT_COMMIT) before anything is written.
    """
    local = os_path(spark, path)
    if local is None:
        hadoop = _hadoop(spark)
        published = str(hadoop.bridge.publishText(hadoop.configuration, path, text))
        if published == "unsupported":
            raise SparkMvError(ErrorClass.FILE_SYSTEM_CANNOT_COMMIT, path=path)
        return published == "published"
    directory = os.path.dirname(local)
    os.makedirs(directory, exist_ok=True)
    temporary = os.path.join(directory, f".{uuid.uuid4().hex}.tmp")
    with open(temporary, "w", encoding="utf-8") as stream:
        stream.write(text)
    try:
        os.link(temporary, local)
    except FileExistsError:
        return False
    finally:
        os.remove(temporary)
    return True


@dataclass(frozen=True)
class FileStatus:
    path: str  # qualified, as Hadoop lists it
    size: int
    modified_ms: int


def is_hidden(name: str) -> bool:
    """Spark's rule for data directories: ``_`` and ``.`` entries are not data."""
    return name.startswith(("_", "."))


def data_files(spark: SparkSession, directory: str) -> list[FileStatus]:
    """Data files under ``directory``, recursively, skipping hidden entries at any depth."""
    hadoop = _hadoop(spark)
    return statuses(str(hadoop.bridge.listDataFiles(hadoop.configuration, directory)))


def statuses(listed: str) -> list[FileStatus]:
    """The files of a listing by ``FsBridge.listDataFiles``."""
    if not listed:
        return []
    fields = listed.split(_NUL)
    return [
        FileStatus(path, int(size), int(modified))
        for path, size, modified in zip(fields[0::3], fields[1::3], fields[2::3], strict=True)
    ]


def parquet_row_counts(spark: SparkSession, directory: str) -> dict[str, int]:
    """The row count of each parquet data file under ``directory`` (by path, as
    ``data_files`` lists it), read from the files' footers in the JVM through Hadoop's
    ``FileSystem`` (``FsBridge.parquetRowCounts``, one round trip): no Spark job, and the
    same path on every file system."""
    hadoop = _hadoop(spark)
    joined = str(hadoop.bridge.parquetRowCounts(hadoop.configuration, directory))
    if not joined:
        return {}
    fields = joined.split(_NUL)
    return {path: int(rows) for path, rows in zip(fields[0::2], fields[1::2], strict=True)}


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
    local = os_path(spark, directory)
    if local is not None:
        return any(files for _, _, files in os.walk(local))
    fs, root = filesystem(spark, directory)
    return bool(fs.exists(root) and fs.listFiles(root, True).hasNext())


def make_dirs(spark: SparkSession, path: str) -> None:
    fs, hadoop_path = filesystem(spark, path)
    fs.mkdirs(hadoop_path)


def move(spark: SparkSession, source: str, target: str) -> None:
    """Rename ``source`` to ``target`` (copying when they are on different file systems).

    Not atomic on an object store (a copy, then a delete): callers move files only into
    directories that nothing committed names yet, so a crash halfway leaves an orphan copy,
    never a half-visible change (``docs/cluster.md``)."""
    fs, source_path = filesystem(spark, source)
    target_fs, target_path = filesystem(spark, target)
    target_fs.mkdirs(target_path.getParent())
    if fs.getUri().equals(target_fs.getUri()) and fs.rename(source_path, target_path):
        return
    _copy(spark, source, target, delete_source=True)


def link(spark: SparkSession, source: str, target: str) -> None:
    """Make ``target`` a second name of ``source``'s bytes: a hard link on a local file
    system (no copy: copy-on-write and preserved files cost a directory entry), else a copy
    (an object store has no links). Either way ``source`` can be deleted afterwards without
    affecting ``target``."""
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


def os_path(spark: SparkSession, path: str) -> str | None:
    """The operating-system path of a ``file:`` path the driver can use itself, None for
    other file systems and for paths with escaped characters (which Hadoop decodes)."""
    return _local_path(spark, path) if path.startswith("file:") and "%" not in path else None


def _is_checksum(name: str) -> bool:
    """Hadoop's local file system keeps a checksum file ``.name.crc`` beside each file."""
    return name.startswith(".") and name.endswith(".crc")


def _local_path(spark: SparkSession, path: str) -> str | None:
    """The operating-system path of a ``file:`` URI (a file the driver can write itself),
    None for other file systems."""
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


_log = logging.getLogger(__name__)
_background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sparkmv-remove")
_pending: list[Future[None]] = []  # not yet seen done
_pending_lock = threading.Lock()


def remove_in_background(task: Callable[[], None]) -> None:
    """Run ``task`` (removals of local files no reader needs any more) on a thread of its
    own, after the ones before it: unlinking large files takes milliseconds each, which the
    statement that retired them need not wait for. A task that fails is logged: what it
    left behind is found again by whatever retires it next. ``wait_for_removals`` waits."""
    with _pending_lock:
        _pending[:] = [*(f for f in _pending if not f.done()), _background.submit(_logged(task))]


def wait_for_removals() -> None:
    """Wait for every task of ``remove_in_background`` submitted so far (from any thread)."""
    with _pending_lock:
        submitted = list(_pending)
    futures.wait(submitted)


def _logged(task: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        try:
            task()
        except Exception:
            _log.warning("sparkmv: a removal in the background failed", exc_info=True)

    return run


atexit.register(wait_for_removals)
