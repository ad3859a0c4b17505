"""File-system calls through Hadoop's FileSystem on the JVM, so any warehouse URI works.

One path on every file system: each call is one py4j round trip to ``FsBridge`` (a listing,
a read, a batch of links or removals), which does the file system's own thing there (a hard
link on a local disk, a copy on an object store; a conditional put as a commit point where
there is no atomic rename). The driver never opens a file itself, so what a refresh costs on
a local disk is what it costs on S3 or HDFS, less the store's latency.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from sparkmv.config import FS_BRIDGE_CLASS, KEY_PROOFS_CACHED_FOOTER_RANGES
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
    hadoop = _hadoop(spark)
    return bool(hadoop.bridge.exists(hadoop.configuration, path))


_NUL = "\u0000"
"""Separates the fields of ``FsBridge``'s answers: it is in no path."""


def list_names(spark: SparkSession, directory: str) -> list[str]:
    """Names of the entries of ``directory`` (none if it does not exist)."""
    hadoop = _hadoop(spark)
    joined = str(hadoop.bridge.listNames(hadoop.configuration, directory))
    return sorted(name for name in joined.split(_NUL) if name)


def list_names_of(spark: SparkSession, directories: Sequence[str]) -> list[list[str]]:
    """``list_names`` of each of ``directories``, in order: one round trip."""
    if not directories:
        return []
    hadoop = _hadoop(spark)
    fields = str(hadoop.bridge.listNamesOf(hadoop.configuration, _NUL.join(directories)))
    answers = iter(fields.split(_NUL) if fields else [])
    listed = []
    for count in answers:
        listed.append(sorted(next(answers) for _ in range(int(count))))
    assert len(listed) == len(directories), "FsBridge.listNamesOf answers each directory once"
    return listed


def remove(spark: SparkSession, path: str) -> None:
    """Delete ``path`` recursively, if present."""
    remove_all(spark, [path])


def remove_all(spark: SparkSession, paths: Iterable[str]) -> None:
    """Delete each of ``paths`` recursively, if present: one round trip."""
    joined = _NUL.join(paths)
    if joined:
        hadoop = _hadoop(spark)
        hadoop.bridge.removeAll(hadoop.configuration, joined)


def read_text(spark: SparkSession, path: str) -> str:
    hadoop = _hadoop(spark)
    return str(hadoop.bridge.readText(hadoop.configuration, path))


def read_texts(spark: SparkSession, paths: Iterable[str]) -> list[str | None]:
    """The texts of ``paths``, None for each that does not exist: one round trip."""
    listed = list(paths)
    if not listed:
        return []
    hadoop = _hadoop(spark)
    answers = str(hadoop.bridge.readTexts(hadoop.configuration, _NUL.join(listed))).split(_NUL)
    assert len(answers) == len(listed), "FsBridge.readTexts answers each path once"
    return [answer[1:] if answer.startswith("+") else None for answer in answers]


def publish_text(spark: SparkSession, path: str, text: str) -> bool:
    """Create ``path`` holding ``text`` atomically; False if ``path`` already exists.

    The commit point of a change log (``docs/cluster.md``): of two writers exactly one
    publishes, and a reader sees the whole file or none. ``FsBridge.publishText`` does it the
    file system's way: a hard link of a hidden temporary file on a local disk, a conditional
    put on an object store (which has no atomic rename), a rename that refuses to replace on
    HDFS. A file system with none of these is refused (FILE_SYSTEM_CANNOT_COMMIT) before
    anything is written.
    """
    hadoop = _hadoop(spark)
    published = str(hadoop.bridge.publishText(hadoop.configuration, path, text))
    if published == "unsupported":
        raise SparkMvError(ErrorClass.FILE_SYSTEM_CANNOT_COMMIT, path=path)
    return published == "published"


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


@dataclass(frozen=True)
class IntegerRange:
    """The smallest and largest non-null value of an integral column over some rows; none
    (``EMPTY_RANGE``: no row, or only NULLs) when ``low > high``."""

    low: int
    high: int

    def disjoint(self, other: IntegerRange) -> bool:
        """Whether no value lies in both ranges (an empty one shares none)."""
        return self.high < other.low or other.high < self.low or self.empty or other.empty

    @property
    def empty(self) -> bool:
        return self.low > self.high


EMPTY_RANGE = IntegerRange(1, 0)


def integer_ranges(
    spark: SparkSession, paths: Iterable[str], columns: Sequence[str]
) -> list[IntegerRange | None]:
    """The range of each of ``columns`` over every row of the parquet files ``paths`` (a
    directory stands for its data files), from their footers' statistics in the JVM
    (``FsBridge.integerRanges``, one round trip, no Spark job); None where the footers do not
    say (a type other than a signed integer or a date, a file without statistics, a path
    gone). Each file's range is read once while it stays unchanged
    (``KEY_PROOFS_CACHED_FOOTER_RANGES``)."""
    hadoop = _hadoop(spark)
    cached = KEY_PROOFS_CACHED_FOOTER_RANGES.count(spark)
    joined = str(
        hadoop.bridge.integerRanges(
            hadoop.configuration, _NUL.join(paths), _NUL.join(columns), cached
        )
    )
    return [_integer_range(field) for field in joined.split(_NUL)][: len(columns)]


def _integer_range(field: str) -> IntegerRange | None:
    if field == "?":
        return None
    if not field:
        return EMPTY_RANGE
    low, high = field.split(",")
    return IntegerRange(int(low), int(high))


def hidden_files(spark: SparkSession, directory: str) -> list[str]:
    """Hidden files directly in ``directory`` (``_SUCCESS``, checksums): not data, but they
    keep a directory from being empty."""
    hadoop = _hadoop(spark)
    joined = str(hadoop.bridge.hiddenFiles(hadoop.configuration, directory))
    return [path for path in joined.split(_NUL) if path]


def has_files(spark: SparkSession, directory: str) -> bool:
    """Whether ``directory`` holds any file (hidden ones included), at any depth."""
    hadoop = _hadoop(spark)
    return bool(hadoop.bridge.hasFiles(hadoop.configuration, directory))


def make_dirs(spark: SparkSession, path: str) -> None:
    hadoop = _hadoop(spark)
    hadoop.bridge.makeDirs(hadoop.configuration, path)


def move(spark: SparkSession, source: str, target: str) -> None:
    """Rename ``source`` to ``target`` (copying when they are on different file systems).

    Not atomic on an object store (a copy, then a delete): callers move files only into
    directories that nothing committed names yet, so a crash halfway leaves an orphan copy,
    never a half-visible change (``docs/cluster.md``)."""
    hadoop = _hadoop(spark)
    hadoop.bridge.move(hadoop.configuration, source, target)


def link(spark: SparkSession, source: str, target: str) -> None:
    """``link_all`` of one file."""
    link_all(spark, [(source, target)])


def link_all(spark: SparkSession, pairs: Iterable[tuple[str, str]]) -> None:
    """Make each target a second name of its source's bytes, in one round trip: a hard link
    on a local file system (no copy: copy-on-write and preserved files cost a directory
    entry), else a copy (an object store has no links). Either way a source can be deleted
    afterwards without affecting its target."""
    joined = _NUL.join(path for pair in pairs for path in pair)
    if joined:
        hadoop = _hadoop(spark)
        hadoop.bridge.linkAll(hadoop.configuration, joined)


_log = logging.getLogger(__name__)
_background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sparkmv-remove")
_pending: list[Future[None]] = []  # not yet seen done
_pending_lock = threading.Lock()


def remove_in_background(task: Callable[[], None]) -> None:
    """Run ``task`` (removals of files no reader needs any more) on a thread of its own,
    after the ones before it: a removal takes milliseconds per file (a request each on an
    object store), which the statement that retired them need not wait for. A task that
    fails is logged: what it left behind is found again by whatever retires it next.
    ``wait_for_removals`` waits."""
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
