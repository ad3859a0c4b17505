"""One statement at a time changes a materialized view, per driver process.

Two REFRESHes of one view that ran at once would both read the change since the view's
consumed versions and both apply it, and each one's clean-up could remove the other's new
snapshot. JDBC and Spark Connect clients run statements on threads of one driver, as do ON
COMMIT refreshes of writes from several threads; so every statement that writes a view's
storage or catalog entry (CREATE [OR REPLACE], REFRESH, ALTER, DROP, and the ON COMMIT
refreshes of a write) holds its view's lock from its first catalog read to its last commit.
The one that waits then reads the view as the other committed it: a refresh finds nothing
pending, or only what came after. A thread holds one view's lock at a time while it
refreshes (REFRESH ... CASCADE and the ON COMMIT views a refresh changes each take and release
their own), so two threads never wait for each other's locks.

The lock is keyed by the view's bare name, lower-cased: knowing the database of an
unqualified name would cost a JVM call, and a coarser lock only serializes a little more.
On a metastore that several processes share (PostgreSQL), the lock also takes the view's
cross-process lock (``catalog/metastore.py``), after the process's own: a thread that waits
for another process holds no connection meanwhile. See ``docs/concurrency.md``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sparkmv.catalog import metastore
from sparkmv.identifiers import TableName

_locks: dict[str, threading.RLock] = {}
_locks_guard = threading.Lock()
_held = threading.local()  # .keys: the views whose cross-process lock this thread holds


@contextmanager
def view_lock(view: TableName) -> Iterator[None]:
    """Hold the lock of ``view`` for the block (re-entrant within one thread)."""
    key = view.name.lower()
    with _locks_guard:
        lock = _locks.setdefault(key, threading.RLock())
    with lock:
        held = getattr(_held, "keys", None)
        if held is None:
            held = _held.keys = set()
        if key in held:  # re-entered: the cross-process lock is this thread's already
            yield
            return
        held.add(key)
        try:
            with metastore.view_lock(view):
                yield
        finally:
            held.discard(key)
