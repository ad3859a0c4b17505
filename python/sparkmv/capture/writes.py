"""Captured writes: what a Spark file write to a tracked table changed, into its change log.

The shim wraps every file write to a tracked table (``CapturedWriteCommand``) and calls
``before`` and, once the write succeeded, ``after``. The difference of the table's file
listings tells what happened:

- files only added (``INSERT INTO``, ``insertInto``, ``saveAsTable`` append): an INSERT
  commit that references the new files, so the rows are never written twice;
- files removed (``INSERT OVERWRITE``, whole table or partitions): the replaced rows are gone
  before they could be logged, so the commit is marked *incomplete*: the log then cannot
  answer for any range that includes it, and dependent views refresh fully.
"""

from __future__ import annotations

import uuid

from pyspark.sql import SparkSession

from sparkmv import fs
from sparkmv.capture.tracking import Tracking
from sparkmv.parse.statements import TableName


class WriteCapture:
    """Holds the file listing taken before each write in flight, by token."""

    def __init__(self, spark: SparkSession, tracking: Tracking) -> None:
        self.spark = spark
        self.tracking = tracking
        self._before: dict[str, frozenset[str]] = {}

    def before(self, table: TableName) -> str:
        token = uuid.uuid4().hex
        self._before[token] = self.data_files(table)
        return token

    def after(self, table: TableName, token: str) -> None:
        before = self._before.pop(token)
        state = self.tracking.state(table)
        if state.log is None:
            return
        after = self.data_files(table)
        added, removed = sorted(after - before), sorted(before - after)
        if removed:
            state.log.commit("OVERWRITE", complete=False)
        elif added:
            state.log.commit("INSERT", inserted_files=added)

    def abort(self, token: str) -> None:
        """The write failed: nothing to log."""
        self._before.pop(token, None)

    def data_files(self, table: TableName) -> frozenset[str]:
        """The table's data files (hidden and ``_``-prefixed entries excluded)."""
        entry = self.tracking.catalog.entry(table)
        if entry is None or not entry.location:
            return frozenset()
        filesystem, root = fs.filesystem(self.spark, entry.location)
        if not filesystem.exists(root):
            return frozenset()
        files = filesystem.listFiles(root, True)
        found = set()
        while files.hasNext():
            path = files.next().getPath()
            relative = str(path.toUri().getPath())[len(str(root.toUri().getPath())) :]
            if not any(part.startswith(("_", ".")) for part in relative.split("/") if part):
                found.add(str(path.toString()))
        return frozenset(found)
