"""One write of a tracked base table at a time, and no refresh reading its files meanwhile.

A captured write lists the table's files before it writes and logs its change as the next
version of the table's change log after; Spark's files of an INSERT are in the table's
directory before that commit. A refresh that listed the table in between would find files
its log has no record of, and resynchronise the log over them (a RESYNC commit), after which
the write's own commit logs the same files again: their rows counted twice (measured with a
REFRESH in one process while another inserted). So a write holds its table's lock from its
first listing to its log's commit, and a refresh holds its base tables' locks while it lists
them and reconciles their logs; it then reads those files, pinned, at the versions it records.

In-process the lock is a condition per table (released by whichever thread ends the write:
``before`` and ``after`` are callbacks of one statement); on a shared metastore it also takes
the table's PostgreSQL advisory lock (``catalog/metastore.py``). A thread that holds a table's
lock takes it again without waiting (a write whose statement reads a view over the table).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from sparkmv.catalog import metastore
from sparkmv.identifiers import TableName


@dataclass
class _TableLock:
    owner: int | None = None
    count: int = 0
    release_shared: Callable[[], None] | None = None
    changed: threading.Condition = field(default_factory=threading.Condition)


_locks: dict[str, _TableLock] = {}
_locks_guard = threading.Lock()


def _lock(table: TableName) -> _TableLock:
    key = f"{table.database}.{table.name}".lower()
    with _locks_guard:
        return _locks.setdefault(key, _TableLock())


def acquire(table: TableName) -> Callable[[], None]:
    """Take ``table``'s lock (resolved); returns the function that releases it, once."""
    lock = _lock(table)
    me = threading.get_ident()
    with lock.changed:
        while lock.count and lock.owner != me:
            lock.changed.wait()
        lock.owner = me
        lock.count += 1
        first = lock.count == 1
    if first:
        try:
            lock.release_shared = metastore.hold_table_lock(table)
        except BaseException:
            _release(lock)
            raise
    released = threading.Event()

    def release() -> None:
        if not released.is_set():
            released.set()
            _release(lock)

    return release


def _release(lock: _TableLock) -> None:
    with lock.changed:
        lock.count -= 1
        last = lock.count == 0
        shared, lock.release_shared = (lock.release_shared, None) if last else (None, None)
        if last:
            lock.owner = None
    if shared is not None:
        shared()
    if last:
        with lock.changed:
            lock.changed.notify_all()


@contextmanager
def holding(tables: Sequence[TableName]) -> Iterator[None]:
    """Hold the locks of ``tables`` (resolved) for the block, taken in one order (by name),
    so two commands that take several never wait for each other."""
    releases: list[Callable[[], None]] = []
    try:
        for table in sorted(set(tables), key=lambda t: (t.database or "", t.name)):
            releases.append(acquire(table))
        yield
    finally:
        for release in reversed(releases):
            release()
