"""Hot inputs: unchanged base tables that incremental refreshes read again and again, kept in
Spark's own cache.

The term of a join view's change ``ΔR ⋈ S`` reads all of an unchanged input ``S`` (a
dimension) at every refresh. Such an input is kept as a cached DataFrame (executor memory,
spilling to disk: ``MEMORY_AND_DISK``), projected to the columns the view reads (the others
NULL, so the cache holds only what is read), for as long as the table stays at the version
its change log is at: the key is the table, its log's identity and version, and the columns
kept. When the table changes, its entries are dropped (unpersisted) the next time a refresh
reads it; at most ``HOT_INPUT_MAX_TABLES`` are kept, the least recently read going first, and
only tables of at most ``HOT_INPUT_MAX_BYTES`` of files. A long-running driver (``sparkmv
server``, a notebook) then scans such a table once; a ``spark-submit`` once per run.

The rows are the table's own at that version: a cached entry is only ever read for the
version it was made from, and nothing is computed in Python. The cache belongs to the Spark
context whose executors hold the blocks. Derived inputs (a fact table's partial aggregates
per join key) can be kept the same way, under a key that names what they are derived from.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from sparkmv import frames
from sparkmv.capture.tracking import BaseTable
from sparkmv.config import HOT_INPUT_MAX_TABLES
from sparkmv.identifiers import quote_identifier


@dataclass(frozen=True)
class HotInputKey:
    """What a cached input holds: ``table``'s rows at ``version`` of the change log
    ``log``, with the columns ``read`` (the others NULL)."""

    table: str
    log: str
    version: int
    read: tuple[str, ...]

    def outdates(self, other: HotInputKey) -> bool:
        """Whether ``other`` holds this table at another version (or of another log): it
        changed since, and ``other`` is read no more."""
        return other.table == self.table and (other.log, other.version) != (self.log, self.version)


class HotInputs:
    """The cached inputs of one Spark context, least recently read first. Refreshes of
    several views may run at once (``sparkmv server``): the entries change under a lock."""

    def __init__(self, context: Any) -> None:
        self.context = context  # the JavaSparkContext whose executors hold the blocks
        self._frames: OrderedDict[HotInputKey, DataFrame] = OrderedDict()
        self._lock = threading.RLock()

    def rows(
        self,
        spark: SparkSession,
        base: BaseTable,
        read: set[str],
        scanned: Callable[[], DataFrame],
    ) -> DataFrame:
        """``base``'s rows at its version with only the columns ``read`` (the others NULL),
        cached; ``scanned`` reads them when no entry holds them."""
        source = base.source
        assert source is not None, "only a tracked table has a version to key its rows by"
        names = source.schema.fieldNames()
        wanted = {name.lower() for name in read}
        kept = tuple(sorted(name for name in names if name.lower() in wanted))
        key = HotInputKey(base.name, source.identity, base.version, kept)
        with self._lock:
            found = self._frames.get(key)
            if found is not None:
                self._frames.move_to_end(key)
                return found
            self._drop(key.outdates)
        items = [
            quote_identifier(name)
            if name.lower() in wanted
            else f"if(FALSE, {quote_identifier(name)}, NULL) AS {quote_identifier(name)}"
            for name in names
        ]
        frame = frames.select(scanned(), items).persist(StorageLevel.MEMORY_AND_DISK)
        limit = max(HOT_INPUT_MAX_TABLES.count(spark), 0)
        with self._lock:
            previous = self._frames.pop(key, None)  # another thread's, made meanwhile
            if previous is not None:
                previous.unpersist()
            self._frames[key] = frame
            while len(self._frames) > limit:
                _, oldest = self._frames.popitem(last=False)
                oldest.unpersist()
        return frame

    def changed(self, base: BaseTable) -> None:
        """Drop the entries of ``base`` made at other versions than its current one: it
        changed since, and they are read no more."""
        source = base.source
        if source is not None and self._frames:
            current = HotInputKey(base.name, source.identity, base.version, ())
            self._drop(current.outdates)

    def cached(self, tables: set[str]) -> list[tuple[HotInputKey, int]]:
        """The entries of ``tables`` with the bytes their cached batches take so far."""
        with self._lock:
            entries = [(key, frame) for key, frame in self._frames.items() if key.table in tables]
        return [(key, frames.cached_bytes(frame)) for key, frame in entries]

    def clear(self) -> None:
        self._drop(lambda _: True)

    def _drop(self, stale: Callable[[HotInputKey], bool]) -> None:
        with self._lock:
            for key in [key for key in self._frames if stale(key)]:
                self._frames.pop(key).unpersist()


_by_context: list[HotInputs] = []  # at most one: the current Spark context's


def hot_inputs(spark: SparkSession) -> HotInputs:
    """The cached inputs of ``spark``'s Spark context (a new context starts with none)."""
    context: Any = spark._jsc
    if not _by_context or _by_context[0].context is not context:
        _by_context[:] = [HotInputs(context)]
    return _by_context[0]


def keeps(base: BaseTable, size: int, max_bytes: int) -> bool:
    """Whether ``base``, unchanged, is read through the cache: tracked by a change log (its
    rows have a version) and of at most ``max_bytes`` of files (``HOT_INPUT_MAX_BYTES``)."""
    return base.log is not None and base.files is not None and 0 < size <= max_bytes
