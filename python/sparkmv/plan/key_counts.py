"""Rows per key of a tracked table's integer column, kept by the driver between refreshes.

Write ``n_v(k)`` for the rows of table ``R`` whose column ``a`` holds ``k`` as of version
``v`` of ``R``'s change log. The log records every row each later commit inserted (+1) or
deleted (−1), so for a later version ``u``

    n_u(k) = n_v(k) + Σ w(k)  over the rows logged in versions (v, u]

(an UPDATE that assigns no value to ``a`` changes no count, and is skipped). A version of a
log names one state of its table (the commit's files digest), and a log's root is new for
every table created, so ``(log root, version, column)`` names one ``n``. The driver keeps
the latest ``n`` it has per log and column (``kept_counts``), and moves it forward along the
log: a refresh after a copy-on-write that rewrote every file of ``R`` then reads the logged
rows (the change) instead of decoding ``R``'s files again. A refresh that decodes the files
(the first one in a process, or when the log no longer covers the versions in between:
compacted, or a write it could not log row by row) leaves their counting to the background
(``keep_counts``), as sorting them costs about as much as decoding them.

NULL keys are not counted: they join nothing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkmv.capture.change_log import ChangeLog
from sparkmv.capture.source import ChangeRangeError
from sparkmv.zset import WEIGHT

MAX_LOGGED_BYTES = 8 * 1024 * 1024
"""The most bytes of logged files the driver reads to move counts forward along the log."""
MAX_KEPT_BYTES = 256 * 1024 * 1024
"""The most bytes of counts the driver keeps between refreshes, the least recently used
dropped first."""
MAX_KEPT_COLUMNS = 64
"""The most columns whose counts the driver keeps."""


@dataclass(frozen=True)
class KeyCounts:
    """``n(k)``: the distinct non-NULL ``keys`` in ascending order and their row ``counts``
    (each > 0)."""

    keys: np.ndarray
    counts: np.ndarray

    @classmethod
    def of(cls, values: np.ndarray) -> KeyCounts:
        """The counts of ``values`` (int64, no NULL)."""
        ordered = values
        if len(values) and not (values[1:] >= values[:-1]).all():
            ordered = np.sort(values, kind="stable")  # runs already sorted (files) cost little
        starts = np.empty(len(ordered), np.bool_)
        starts[:1] = True
        np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
        first = np.flatnonzero(starts)
        return cls(ordered[first], np.diff(first, append=len(ordered)).astype(np.int64))

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.counts.nbytes)

    def at(self, wanted: np.ndarray) -> np.ndarray:
        """``n(k)`` for each ``k`` of ``wanted`` (int64), 0 where none."""
        return self._counted(*self._find(wanted))

    def plus(self, keys: np.ndarray, weights: np.ndarray) -> KeyCounts | None:
        """``n + Σ w`` over rows of key ``keys`` and weight ``weights`` (int64, no NULL);
        None when a count would go below zero (the rows are not a change of these counts)."""
        changed, inverse = np.unique(keys, return_inverse=True)
        summed = np.zeros(len(changed), np.int64)
        np.add.at(summed, inverse, weights)
        positions, present = self._find(changed)
        now = self._counted(positions, present) + summed
        if (now < 0).any():
            return None
        counts = self.counts.copy()
        counts[positions[present]] = now[present]
        added = ~present & (now > 0)
        at = np.searchsorted(self.keys, changed[added])
        keys_now = np.insert(self.keys, at, changed[added])
        counts = np.insert(counts, at, now[added])
        kept = counts > 0
        if kept.all():
            return KeyCounts(keys_now, counts)
        return KeyCounts(keys_now[kept], counts[kept])

    def _counted(self, positions: np.ndarray, present: np.ndarray) -> np.ndarray:
        if not len(self.keys):
            return np.zeros(len(positions), np.int64)
        return np.where(present, self.counts[positions], 0)

    def _find(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each ``k`` of ``wanted``'s position among ``keys`` (clipped), and whether it is
        there."""
        if not len(self.keys):
            return np.zeros(len(wanted), np.intp), np.zeros(len(wanted), np.bool_)
        positions = np.minimum(np.searchsorted(self.keys, wanted), len(self.keys) - 1)
        return positions, self.keys[positions] == wanted


def integral(values: pa.ChunkedArray) -> np.ndarray:
    """The non-NULL values of an integer column as int64."""
    if values.null_count:
        values = pc.drop_null(values)
    chunks = [chunk.cast(pa.int64()).to_numpy() for chunk in values.chunks]
    return np.concatenate(chunks) if chunks else np.zeros(0, np.int64)


@dataclass(frozen=True)
class _Kept:
    version: int
    digest: str
    counts: Future[KeyCounts]  # done, or being counted

    @property
    def nbytes(self) -> int:
        counted = self.counts.done() and self.counts.exception() is None
        return self.counts.result().nbytes if counted else 0


class _KeptCounts:
    """The latest counts per (log root, column): of at most ``MAX_KEPT_COLUMNS`` columns and
    ``MAX_KEPT_BYTES`` in all, the least recently used dropped first."""

    def __init__(self, max_bytes: int, max_columns: int) -> None:
        self.max_bytes = max_bytes
        self.max_columns = max_columns
        self._kept: OrderedDict[tuple[str, str], _Kept] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> _Kept | None:
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
            return kept

    def put(self, key: tuple[str, str], kept: _Kept) -> None:
        with self._lock:
            current = self._kept.pop(key, None)
            if current is not None and current.version > kept.version:
                kept = current  # a later refresh moved them further
            self._kept[key] = kept
            while len(self._kept) > self.max_columns or (
                len(self._kept) > 1 and sum(k.nbytes for k in self._kept.values()) > self.max_bytes
            ):
                self._kept.popitem(last=False)


_KEPT = _KeptCounts(MAX_KEPT_BYTES, MAX_KEPT_COLUMNS)
_COUNTING = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sparkmv-key-counts")


def kept_counts(log: ChangeLog, version: int, digest: str, column: str) -> KeyCounts | None:
    """``n_version`` of the integer ``column`` of ``log``'s table, whose files at
    ``version`` have ``digest``: the counts kept of it (awaited while being counted), or
    moved forward to it along the log (module docstring); None when none are kept, or the
    driver does not read the rows logged since."""
    key = (log.identity, column.lower())
    kept = _KEPT.get(key)
    if kept is None or kept.version > version:
        return None
    try:
        counts = kept.counts.result()
    except (pa.ArrowException, MemoryError):  # not counted: count again
        return None
    if kept.version == version:
        return counts if kept.digest == digest else None
    moved = _moved(counts, log, kept.version, version, column)
    if moved is not None:
        done: Future[KeyCounts] = Future()
        done.set_result(moved)
        _KEPT.put(key, _Kept(version, digest, done))
    return moved


def keep_counts(
    log: ChangeLog, version: int, digest: str, column: str, values: Callable[[], np.ndarray]
) -> None:
    """Keep the counts of ``values()`` (int64, no NULL: the non-NULL values of ``column`` in
    the table's files at ``version``, of ``digest``) as ``n_version``. They are counted in
    the background (sorting takes about as long as decoding), so the refresh that decoded
    the files does not wait for them; the next one that needs them does."""
    counting = _COUNTING.submit(lambda: KeyCounts.of(values()))
    _KEPT.put((log.identity, column.lower()), _Kept(version, digest, counting))


def _moved(
    counts: KeyCounts, log: ChangeLog, start: int, end: int, column: str
) -> KeyCounts | None:
    """``counts`` of version ``start`` as of version ``end``; None when the driver does not
    read the rows logged in between."""
    try:
        logged = log.local_row_changes(start, end, [column], MAX_LOGGED_BYTES)
    except ChangeRangeError:  # compacted, or a write not logged row by row
        return None
    if logged is None:
        return None
    present = logged.filter(pc.is_valid(logged.column(0)))
    return counts.plus(integral(present.column(0)), present.column(WEIGHT).to_numpy())
