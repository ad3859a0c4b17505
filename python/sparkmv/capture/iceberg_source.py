"""Apache Iceberg base tables as a change source, read from the table's own snapshots.

An Iceberg table is written by whatever engine, process or cluster commits to its catalog;
every commit is a snapshot in the table's metadata, and Iceberg reads the rows a range of
snapshots added and removed back as its ``changes`` metadata table (an incremental changelog
scan: ``SELECT * FROM t.changes WITH ('start-snapshot-id' = a, 'end-snapshot-id' = b)``, ``a``
exclusive, ``b`` inclusive). sparkmv captures nothing for it. The rows say ``INSERT`` or
``DELETE``; an update is a delete and an insert, and a copy-on-write rewrite of a data file
deletes every row of the old file and inserts the rows it keeps, so ``ChangelogSource``'s ±1
weights net the carried-over rows out. Compactions (``replace`` snapshots) give no rows.

Versions. Snapshot ids are random; a table's versions here are its snapshots' *sequence
numbers* (format version ≥ 2), which grow by one per commit, so the version of a table with
no snapshot is 0. The versions a refresh can read are those of the current snapshot's
lineage (its ancestors): a range ``(a, b]`` is read from the snapshot of sequence number
``a`` (exclusive) to that of ``b``. The view is refreshed fully, with the reason
(``Lineage.problem``), when the snapshot it last read is no longer an ancestor of the current
one (a rollback) or was expired; when a snapshot of the range, or its start, has delete files
(merge-on-read writes: Iceberg's changelog scan refuses a snapshot that has some, or that
removes rows of a file that has some); or when the range changed the schema. A table of
format-version 1 has no sequence numbers and is always refreshed fully.

The metadata is read through Iceberg's own objects at the driver (the table as its catalog
loads it, refreshed, and its metadata as JSON: no Spark job, no data file): whatever the
catalog (Hadoop, Hive, REST, Glue) and the file system. The table's rows are read ``VERSION
AS OF`` its current snapshot's id, so rows and changes agree while writers commit meanwhile.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from py4j.protocol import Py4JError
from pyspark.sql import SparkSession

from sparkmv import frames
from sparkmv.capture.changelog_source import ChangelogSource, ChangeQuery
from sparkmv.identifiers import TableName

CATALOG_CLASS = "org.apache.iceberg.spark.SparkCatalog"
"""The class of a Spark catalog of Iceberg tables (``spark.sql.catalog.<name>``)."""
COPY_ON_WRITE_PROPERTIES = ("write.delete.mode", "write.update.mode", "write.merge.mode")
NO_SNAPSHOT = -1  # Iceberg's current-snapshot-id of a table that has none


def is_iceberg(spark: SparkSession, table: TableName) -> bool:
    """Whether ``table`` is in a catalog of Iceberg tables."""
    if table.catalog is None:
        return False
    return (spark.conf.get(f"spark.sql.catalog.{table.catalog}", "") or "") == CATALOG_CLASS


@dataclass(frozen=True)
class Snapshot:
    """What a refresh needs of one snapshot of the table's metadata."""

    sequence_number: int
    snapshot_id: int
    schema_id: int | None
    operation: str
    delete_files: int
    """The delete files live in the table at this snapshot (merge-on-read writes)."""
    files_bytes: int | None = None
    """The bytes of the table's data files at this snapshot (None: its summary lacks them)."""
    changed_bytes: int = 0
    """The bytes of the data files it added and removed: what the changelog scan reads of it
    (a compaction's files give no rows, and are not read: 0)."""

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> Snapshot:
        summary = entry.get("summary") or {}
        return cls(
            int(entry.get("sequence-number", 0)),
            int(entry["snapshot-id"]),
            entry.get("schema-id"),
            str(summary.get("operation", "")),
            int(summary.get("total-delete-files", summary.get("added-delete-files", 0))),
            _bytes(summary.get("total-files-size")),
            _changed_bytes(summary),
        )


def _bytes(value: Any) -> int | None:
    return int(value) if value is not None else None


def _changed_bytes(summary: Mapping[str, Any]) -> int:
    """A snapshot's added and removed data files' bytes; its summary omits a size of 0."""
    if summary.get("operation") == "replace":
        return 0
    return sum(int(summary.get(key, 0)) for key in ("added-files-size", "removed-files-size"))


@dataclass(frozen=True)
class Lineage:
    """The current snapshot and its ancestors as far as the metadata keeps them, by sequence
    number; ``complete``: they reach the table's first snapshot (none was expired). Its
    summaries size the table and its changes (``changelog_source.ChangelogSizes``)."""

    snapshots: Mapping[int, Snapshot]
    complete: bool

    @classmethod
    def of(cls, metadata: Mapping[str, Any]) -> Lineage | str:
        """The lineage of the table metadata ``metadata`` (Iceberg's JSON), or why its
        snapshots cannot number versions."""
        if int(metadata.get("format-version", 1)) < 2:
            return (
                "it is an Iceberg table of format-version 1, whose snapshots carry no sequence"
                " numbers: ALTER TABLE ... SET TBLPROPERTIES ('format-version' = '2')"
            )
        by_id = {int(entry["snapshot-id"]): entry for entry in metadata.get("snapshots") or []}
        snapshots: dict[int, Snapshot] = {}
        current = int(metadata.get("current-snapshot-id", NO_SNAPSHOT) or NO_SNAPSHOT)
        while current in by_id:
            snapshot = Snapshot.of(by_id[current])
            snapshots[snapshot.sequence_number] = snapshot
            parent = by_id[current].get("parent-snapshot-id")
            if parent is None:
                return cls(snapshots, True)
            current = int(parent)
        return cls(snapshots, current == NO_SNAPSHOT)

    @property
    def version(self) -> int:
        """The current snapshot's sequence number; 0 when the table has none."""
        return max(self.snapshots, default=0)

    def table_bytes(self) -> int | None:
        """The bytes of the table's data files at its current snapshot (its summary's
        ``total-files-size``; None when it lacks it): ``ChangelogSizes``."""
        if not self.snapshots:
            return 0
        return self.snapshots[self.version].files_bytes

    def change_bytes(self, start: int, end: int) -> int:
        """The bytes the changelog scan reads for ``(start, end]``: the added and removed
        data files of the lineage's snapshots in it (copy-on-write rewrites read whole, as
        deletes and as inserts). Sequence numbers of abandoned snapshots (before a rollback)
        are not in the lineage, nor read."""
        return sum(
            snapshot.changed_bytes
            for number, snapshot in self.snapshots.items()
            if start < number <= end
        )

    def problem(self, start: int, end: int) -> str:
        """Why the changes of sequence numbers ``(start, end]`` (``start < end``) must not
        be read from Iceberg's changelog scan; "" when they may be."""
        if start and start not in self.snapshots:
            return (
                f"the Iceberg snapshot of sequence number {start}, which the view read last, is"
                " no longer an ancestor of the table's current snapshot (a rollback, or it was"
                " expired)"
            )
        if not start and not self.complete:
            return (
                "the Iceberg table's first snapshots were expired, so the changes since the"
                " view read it are gone"
            )
        if end not in self.snapshots:
            return f"sequence number {end} is not a snapshot of the Iceberg table's lineage"
        # the start snapshot too: a write after it may remove rows of files it has deletes of
        read = [self.snapshots[n] for n in sorted(self.snapshots) if start <= n <= end]
        for snapshot in read:
            if snapshot.delete_files:
                return (
                    "the Iceberg table has delete files (of merge-on-read writes) at snapshot"
                    f" {snapshot.snapshot_id} ({snapshot.operation}), which Iceberg's changelog"
                    " scan cannot read: set its properties "
                    + ", ".join(COPY_ON_WRITE_PROPERTIES)
                    + " to copy-on-write; the changes after a snapshot with none left (a"
                    " copy-on-write write or a compaction removes them) are read incrementally"
                )
        if len({snapshot.schema_id for snapshot in read}) > 1:
            return f"the Iceberg table's schema changed after sequence number {start}"
        return ""


@dataclass(frozen=True)
class SnapshotChanges(ChangeQuery):
    """Iceberg's ``changes`` metadata table between the snapshots of two sequence numbers
    of the table's lineage (``Lineage.problem`` vets a range before it is asked for)."""

    snapshot_ids: Mapping[int, int]

    def text(self, table: TableName, start: int, end: int) -> str:
        bounds = [f"'end-snapshot-id' = '{self.snapshot_ids[end]}'"]
        if start:
            bounds.insert(0, f"'start-snapshot-id' = '{self.snapshot_ids[start]}'")
        return f"SELECT * FROM {table.quoted}.changes WITH ({', '.join(bounds)})"

    def rows_text(self, table: TableName, version: int) -> str:
        if not version:  # no snapshot yet: no rows, whatever a writer commits meanwhile
            return f"SELECT * FROM {table.quoted} WHERE false"
        return f"SELECT * FROM {table.quoted} VERSION AS OF {self.snapshot_ids[version]}"


def describe(spark: SparkSession, table: TableName) -> ChangelogSource | str:
    """``table`` (an Iceberg table) as a change source at its current snapshot, or why its
    changes cannot be read. Its metadata comes from the catalog (``table_metadata``); its
    rows are analyzed by Spark, for the schema (no job), and kept for the command to read."""
    metadata = table_metadata(spark, table)
    if isinstance(metadata, str):
        return metadata
    lineage = Lineage.of(metadata)
    if isinstance(lineage, str):
        return lineage
    ids = {number: snapshot.snapshot_id for number, snapshot in lineage.snapshots.items()}
    # no template: the range's bounds are snapshot ids, which ``SnapshotChanges.text`` names
    query = SnapshotChanges(f"its Iceberg changelog scan ({table}.changes)", "", ids)
    version = lineage.version
    rows = frames.sql(spark, query.rows_text(table, version))
    uuid = str(metadata.get("table-uuid", ""))
    return ChangelogSource(
        spark, table, version, uuid, rows.schema, query, lineage.problem, lineage, rows
    )


def table_metadata(spark: SparkSession, table: TableName) -> dict[str, Any] | str:
    """The current metadata of ``table`` as Iceberg writes it (its JSON), or why it could not
    be read. The table is refreshed first: the catalog caches it, and a write by another
    process would otherwise be missed until the cache expires. Iceberg's internals are
    touched here only."""
    jvm: Any = spark._jvm
    try:
        loaded = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
            spark._jsparkSession, table.quoted
        )
        loaded.refresh()
        text = jvm.org.apache.iceberg.TableMetadataParser.toJson(loaded.operations().current())
    except Py4JError as error:  # an Iceberg release whose internals differ: read nothing wrong
        return f"its Iceberg metadata could not be read ({str(error).strip().splitlines()[0]})"
    found: dict[str, Any] = json.loads(str(text))
    return found
