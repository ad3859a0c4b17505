"""Captured writes: what a Spark write to a tracked table changed, into its change log.

The shim wraps every write Spark runs on a tracked table (``CapturedWriteCommand`` for file
writes, ``CapturedReplaceCommand`` for TRUNCATE, DROP PARTITION and ``saveAsTable``
overwrite) and calls ``before`` and, once the write succeeded, ``after``; ``abort`` if it
failed. The table's files before and after tell what happened:

- files added (``INSERT INTO``, ``insertInto``, ``saveAsTable`` append): the commit
  references the new files as inserted, so the rows are never written twice;
- files removed (``INSERT OVERWRITE`` of the table or of partitions, TRUNCATE, DROP
  PARTITION, ``saveAsTable`` overwrite): an overwrite links every file of the table into the
  log before it runs (a hard link costs a directory entry, not a copy), so the rows it
  removes stay readable as the commit's deleted files until compaction.

``before`` first reconciles the log with the table, so a change that bypassed capture is
never attributed to this write.

A file write (``CapturedWriteCommand``: INSERT, INSERT OVERWRITE, ``insertInto``,
``saveAsTable`` append) carries what its capture needs in the details the shim passes
(``Capture.aroundFileWrite``): the table's catalog entry as its plan holds it, and the
table's files, listed in the JVM before and after the write. Capturing it then costs no
metastore lookup and no listing over py4j, only the log's own reads and its commit. The
other writes (TRUNCATE, DROP PARTITION, ``saveAsTable`` overwrite, DROP TABLE) pass their
kind alone, and the table is looked up and listed from here.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from sparkmv import fs
from sparkmv.capture import table_locks
from sparkmv.capture.change_log import ChangeLog, FileRef
from sparkmv.capture.files import TableFiles, table_files_from_listing, unit_base
from sparkmv.capture.tracking import Tracking, immediate_views
from sparkmv.catalog import properties as keys
from sparkmv.catalog.views import CatalogEntry, entry_from_description
from sparkmv.identifiers import TableName

OVERWRITE_MODE = "Overwrite"
"""The ``SaveMode`` name the shim passes for writes that may remove data."""
DROP = "Drop"
"""What the shim passes for DROP TABLE (see ``Capture`` in the shim)."""
REPLACE_TABLE = "ReplaceTable"
"""What the shim passes for ``saveAsTable`` overwrite, which drops and re-creates the table."""


@dataclass(frozen=True)
class _WriteInFlight:
    """A write between ``before`` and ``after``: the log reconciled with the table's files
    ``before`` it, so that ``after`` attributes to it exactly what changed since.

    ``file_write``: the shim carries the files after the write in ``after``'s details, and the
    write cannot have changed ``entry`` (a file write changes files and partitions only).
    """

    table: TableName
    log: ChangeLog
    before: TableFiles
    preserved: dict[str, str]  # table file → its link in the log
    entry: CatalogEntry  # the table's catalog entry before the write
    file_write: bool
    release: Callable[[], None]  # the table's lock, held until the log's commit


def _carried(detail: str) -> dict[str, Any] | None:
    """The facts a file write carries (a JSON object, see ``Capture.aroundFileWrite``); None
    for a bare mode or token (neither starts with a brace)."""
    return json.loads(detail) if detail.startswith("{") else None


class WriteCapture:
    """Holds the state taken before each write in flight, by token."""

    def __init__(self, spark: SparkSession, tracking: Tracking) -> None:
        self.spark = spark
        self.tracking = tracking
        self._in_flight: dict[str, _WriteInFlight] = {}
        self._dropping: dict[str, list[str]] = {}

    def before(self, table: TableName, detail: str) -> str:
        """Take the state of ``table`` before a write; returns the write's token.

        ``detail`` is what the write does (a ``SaveMode`` name, ``DROP`` or
        ``REPLACE_TABLE``), or a file write's carried facts (``_carried``)."""
        token = uuid.uuid4().hex
        facts = _carried(detail)
        files: TableFiles | None = None
        if facts is not None:
            mode = str(facts["mode"])
            entry: CatalogEntry | None = entry_from_description(facts["table"])
            files = table_files_from_listing(facts["files"])
        else:
            mode = detail
            entry = self.tracking.catalog.entry(table)
        if mode == DROP:
            self._dropping[token] = self._kept_beside(entry)
            return token
        state = self.tracking.state_of(table, entry)
        if state.log is not None and entry is not None:
            release = table_locks.acquire(table)
            try:
                if files is None or state.log.verify(files):
                    # (again) under the lock: another write may have committed since the
                    # shim listed them
                    files = self.tracking.files(table, entry)
                state.log.reconcile(files, writer=True)
                replaces = mode in (OVERWRITE_MODE, REPLACE_TABLE)
                preserved = self._preserve(state.log, files) if replaces else {}
            except BaseException:
                release()
                raise
            self._in_flight[token] = _WriteInFlight(
                table, state.log, files, preserved, entry, facts is not None, release
            )
        if mode == REPLACE_TABLE and entry is not None:
            self._clear_beside_location(entry)
        return token

    def _clear_beside_location(self, entry: CatalogEntry) -> None:
        """Before a managed table is dropped and created again at its original location,
        empty that location but for the current version directory (Spark refuses to create a
        managed table over a non-empty directory). What the log may read was preserved."""
        location = (entry.location or "").rstrip("/")
        base = unit_base(location)
        if entry.table_type != "MANAGED" or base == location:
            return
        for name in fs.list_names(self.spark, base):
            if f"{base}/{name}" != location:
                fs.remove(self.spark, f"{base}/{name}")

    def _preserve(self, log: ChangeLog, files: TableFiles) -> dict[str, str]:
        """Link into the log every file the write may delete that the log may still read:
        the table's files, and files copy-on-write retired but compaction has not deleted
        yet (Spark's overwrites delete partition directories recursively)."""
        directory = log.preserved_dir()
        retired = [
            path
            for path in log.retired_files()
            if not path.startswith(log.root) and fs.exists(self.spark, path)
        ]
        links = {
            path: f"{directory}/{number:06d}-{path.rsplit('/', 1)[-1]}"
            for number, path in enumerate([file.path for file in files.files] + retired)
        }
        fs.link_all(self.spark, links.items())
        return links

    def _kept_beside(self, entry: CatalogEntry | None) -> list[str]:
        """What sparkmv keeps beside a table's data that DROP TABLE would leave behind: a
        managed table's original directory, once copy-on-write moved its data into a version
        directory below it (Spark deletes only the current location), and a change log."""
        if entry is None or entry.table_type == "VIEW":
            return []
        kept = []
        location = entry.location or ""
        if entry.table_type == "MANAGED" and unit_base(location) != location.rstrip("/"):
            kept.append(unit_base(location))
        if keys.TRACKING_LOG in entry.properties:
            kept.append(entry.properties[keys.TRACKING_LOG])
        return kept

    def after(self, table: TableName, detail: str) -> list[TableName]:
        """Log the write of ``detail`` (its token, or a file write's token and files after
        it) as one commit, if it changed the table's files; return the views to refresh ON
        COMMIT after it (the log's ``immediate_dependents``; none if nothing changed)."""
        facts = _carried(detail)
        token = str(facts["token"]) if facts is not None else detail
        if token in self._dropping:
            kept = self._dropping.pop(token)
            if self.tracking.catalog.entry(table) is None:
                for path in kept:
                    fs.remove(self.spark, path)
            return []
        write = self._in_flight.pop(token, None)
        if write is None:
            return []
        try:
            committed = self._commit(table, write, facts)
        finally:
            write.release()
        return immediate_views(write.log) if committed else []

    def _commit(
        self, table: TableName, write: _WriteInFlight, facts: dict[str, Any] | None
    ) -> bool:
        """Log ``write`` as one commit; False if it changed nothing."""
        entry: CatalogEntry | None
        if facts is not None and write.file_write:
            # A file write changes no catalog entry: its location, schema and properties
            # are the ones its plan was analysed with; only its files (and partitions) change.
            entry = write.entry
            after = table_files_from_listing(facts["files"])
        else:
            entry = self.tracking.catalog.entry(table)
            if entry is not None and not self.tracking.state_of(table, entry).log:
                # saveAsTable overwrite dropped and re-created the table, properties and all.
                self.tracking.restore(table, write.entry.properties)
            after = self.tracking.files(table, entry)
        before_paths, after_paths = write.before.by_path(), after.by_path()
        added = [FileRef.of(after_paths[p]) for p in sorted(after_paths.keys() - before_paths)]
        removed = sorted(before_paths.keys() - after_paths)
        vanished = [  # retired files the write deleted: the log reads their links instead
            path
            for path in write.preserved.keys() - before_paths.keys()
            if not fs.exists(self.spark, path)
        ]
        moved = {path: write.preserved[path] for path in [*removed, *vanished]}
        kept_links = list(moved.values())
        for path, link in write.preserved.items():
            if path not in moved:
                fs.remove(self.spark, link)
        problem = ""
        if entry is None or entry.schema != write.log.schema:
            problem = "the write changed the table's schema"
        elif len(kept_links) < len(removed):
            problem = "the write removed files that were not preserved"
        if problem:
            write.log.commit(
                "REPLACE",
                after,
                retired_files=kept_links,
                preserved={
                    path: write.preserved[path] for path in removed if path in write.preserved
                },
                complete=False,
                reason=problem,
            )
            return True
        if not added and not removed and not vanished:
            return False
        write.log.commit(
            "OVERWRITE" if removed else "INSERT",
            after,
            inserted_files=added,
            deleted_files=[FileRef(write.preserved[p], before_paths[p].partition) for p in removed],
            retired_files=kept_links,
            preserved=moved,
        )
        return True

    def abort(self, token: str) -> None:
        """The write failed: nothing to log."""
        self._dropping.pop(token, None)
        write = self._in_flight.pop(token, None)
        if write is not None:
            write.release()
            for link in write.preserved.values():
                fs.remove(self.spark, link)
