"""Which base tables are tracked, and where their change logs live (docs/architecture.md).

A table is tracked while at least one materialized view reads it: CREATE adds the view to
the dependents its change log lists (``ChangeLog.dependents``) before it reads the table (so
no later write can be missed), DROP removes it, and the last DROP stops tracking and deletes
the log. (Logs started before the dependents moved into them list them in the table's
``sparkmv.tracking.dependents`` property: a metastore write per base table per CREATE. That
list is still read, and shrunk as its views are dropped.) Tracking
works for parquet tables of the session catalog and for materialized views (views over views:
a view's log holds the changes its refreshes applied, ``capture/view_log.py``, and its state
is its snapshot's files); any other base table (a plain view, another format) is reported as
untracked with the reason, and views over it refresh fully — unless its catalog offers
Spark's changelog of it (``changelog_source``): then the view reads its changes from there,
and sparkmv tracks nothing of it.

The log's directory carries a random suffix recorded in the table's properties, so a table
dropped and created again under the same name never inherits an old log.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from sparkmv import fs
from sparkmv.capture.change_log import ChangeLog, FileRef
from sparkmv.capture.changelog_source import ChangelogSource
from sparkmv.capture.files import DataFile, DataUnit, TableFiles, list_table_files
from sparkmv.capture.source import VersionedChanges
from sparkmv.catalog import properties as keys
from sparkmv.catalog.metadata import LogPosition, MvMetadata
from sparkmv.catalog.views import CatalogEntry, ViewCatalog
from sparkmv.config import LOG_DIR_NAME, TABLE_SINGLE_TASK_BYTES
from sparkmv.fs import FileStatus
from sparkmv.identifiers import TableName
from sparkmv.storage.snapshot import view_text

TRACKABLE_PROVIDERS = frozenset({"parquet"})
TRACKING_KEYS = (keys.TRACKING_LOG, keys.TRACKING_DEPENDENTS)


@dataclass(frozen=True)
class TableTracking:
    """The tracking state of one base table: its log, or why it has none."""

    table: TableName
    log: ChangeLog | None
    untracked_reason: str = ""
    entry: CatalogEntry | None = None  # the catalog entry the state was read from


@dataclass(frozen=True)
class BaseTable:
    """A base table as a command that reads it sees it once tracking has started: its
    changes come from sparkmv's change ``log``, or from its catalog's ``changelog``, or it
    is untracked (neither; ``problem`` says why)."""

    name: str  # qualified
    log: ChangeLog | None  # None: not tracked by sparkmv
    version: int  # the version of its changes the command reads (0 when untracked)
    files: TableFiles | None  # the table's files at that version (tracked by sparkmv)
    problem: str = ""  # why it is untracked, or the changes its log missed
    entry: CatalogEntry | None = None  # the catalog entry tracking read it from
    changelog: ChangelogSource | None = None  # its catalog's changelog, read instead of a log

    @property
    def source(self) -> VersionedChanges | None:
        """Where its changes are read from; None: untracked."""
        return self.log if self.log is not None else self.changelog

    @property
    def position(self) -> LogPosition | None:
        source = self.source
        return LogPosition(source.identity, self.version) if source is not None else None

    @property
    def materialized_view(self) -> MvMetadata | None:
        """The base table's metadata when it is a materialized view (a view over views)."""
        return view_metadata(self.name, self.entry)

    def rows(self, spark: SparkSession) -> DataFrame:
        """The table's rows at ``version``: its files as listed (a changelog's table: as
        of that version), so a write that commits while the command runs is not half-read
        (that write belongs to a later version). A small table is read by one task
        (``TABLE_SINGLE_TASK_BYTES``: Spark gives each file a task of its own when they are
        this small, and a join of many small tables broadcasts each of them in a job of its
        own, whose tasks then cost more than the reading). A materialized view is read at
        the snapshot its log vouches for at ``version`` (snapshots are immutable, so a
        refresh of it committing meanwhile is not seen either)."""
        if self.changelog is not None:
            return self.changelog.rows()
        if self.log is None or self.files is None:
            return spark.table(self.name)
        upstream = self.materialized_view
        if upstream is not None:
            return spark.sql(view_text(upstream))
        files = self.files.files
        rows = self.log.read_files([FileRef.of(file) for file in files])
        if len(files) > 1 and sum(f.size for f in files) <= TABLE_SINGLE_TASK_BYTES.count(spark):
            rows = rows.coalesce(1)
        return rows


def positions(bases: list[BaseTable]) -> dict[str, LogPosition]:
    """The version of every base table's changes a refresh has consumed."""
    return {base.name: base.position for base in bases if base.position is not None}


def schemas(bases: list[BaseTable]) -> dict[str, StructType] | None:
    """Every base table's schema as tracking read it from the catalog; None when some base
    table is untracked (its schema was not read)."""
    sources = {base.name: base.source for base in bases}
    if any(source is None for source in sources.values()):
        return None
    return {name: source.schema for name, source in sources.items() if source is not None}


def view_metadata(qualified: str, entry: CatalogEntry | None) -> MvMetadata | None:
    """The metadata of the materialized view of catalog entry ``entry`` (None: not one)."""
    if entry is None or not entry.is_materialized_view:
        return None
    return MvMetadata.from_properties(TableName.parse_qualified(qualified), entry.properties)


def snapshot_files(spark: SparkSession, view: MvMetadata) -> TableFiles:
    """A materialized view's state as its change log records it: the data files of its
    snapshot (one listing). A snapshot is never changed once committed and every refresh
    that changes the view writes a new one, so the files' digest identifies the contents."""
    files = tuple(
        DataFile(status.path, status.size, status.modified_ms, ())
        for status in fs.data_files(spark, view.snapshot)
    )
    return TableFiles((DataUnit((), fs.qualified(spark, view.snapshot), files),))


def untracked_reason(entry: CatalogEntry | None) -> str:
    """Why a base table cannot be tracked; "" when it can."""
    if entry is None:
        return "it does not exist"
    if entry.is_materialized_view:
        return ""
    if entry.table_type == "VIEW":
        return "it is a view, not a table"
    if (entry.provider or "").lower() not in TRACKABLE_PROVIDERS or not entry.location:
        return f"{entry.provider or 'its'} tables are not tracked (parquet tables are)"
    return ""


class Tracking:
    """Starts and stops change capture for the base tables of materialized views."""

    def __init__(self, spark: SparkSession, catalog: ViewCatalog) -> None:
        self.spark = spark
        self.catalog = catalog

    def state(self, table: TableName) -> TableTracking:
        return self.state_of(table, self.catalog.entry(table))

    def state_of(self, table: TableName, entry: CatalogEntry | None) -> TableTracking:
        """``state`` for a catalog entry of ``table`` the caller already looked up."""
        reason = untracked_reason(entry)
        if reason or entry is None or keys.TRACKING_LOG not in entry.properties:
            return TableTracking(table, None, reason or "no materialized view tracks it", entry)
        return TableTracking(table, self._log(entry), entry=entry)

    def listed_logs(self, entries: Iterable[CatalogEntry | None]) -> dict[str, ChangeLog]:
        """The change logs of the tables of ``entries`` that have one, by root, listed
        together (``ChangeLog.list_together``: one round trip for all)."""
        logs: dict[str, ChangeLog] = {}
        for entry in entries:
            if entry is not None and keys.TRACKING_LOG in entry.properties:
                log = self._log(entry)
                logs.setdefault(log.root, log)
        ChangeLog.list_together(list(logs.values()))
        return logs

    def start(
        self,
        table: TableName,
        view: TableName,
        entry: CatalogEntry | None,
        listed: Mapping[str, ChangeLog] | None = None,
    ) -> TableTracking:
        """Make ``view`` a dependent of ``table``, whose catalog entry (just looked up) is
        ``entry``; begin capture if it is the first. ``listed``: logs listed already
        (``listed_logs``), by root: the table's is used if there."""
        reason = untracked_reason(entry)
        if reason or entry is None:
            return TableTracking(table, None, reason, entry)
        log_root = entry.properties.get(keys.TRACKING_LOG)
        if log_root is None:
            # The log starts with the table's current files: the state it vouches for.
            log = ChangeLog(self.spark, self._new_log_root(table), entry.schema)
            log.commit("START", self.files(table, entry))
            log.add_dependent(str(view))
            self._set(table, {keys.TRACKING_LOG: log.root})
        else:
            log = (listed or {}).get(_log_root(entry)) or self._log(entry)
            log.add_dependent(str(view))
        return TableTracking(table, log, entry=entry)

    def stop(self, table: TableName, view: TableName) -> None:
        """Remove ``view`` from ``table``'s dependents; the last one ends capture."""
        entry = self.catalog.entry(table)
        if entry is None or keys.TRACKING_LOG not in entry.properties:
            return
        log = self._log(entry)
        log.set_immediate(str(view), False)
        log.remove_dependent(str(view))
        listed = _listed_dependents(entry)
        remaining = (set(listed) - {str(view)}) | set(log.dependents())
        if not remaining:
            self.catalog.alter_properties(table, {}, unset=TRACKING_KEYS)
            fs.remove(self.spark, log.root)
        elif str(view) in listed:
            kept = sorted(set(listed) - {str(view)})
            if kept:
                self._set(table, {keys.TRACKING_DEPENDENTS: json.dumps(kept)})
            else:
                self.catalog.alter_properties(table, {}, unset=(keys.TRACKING_DEPENDENTS,))

    def files(
        self,
        table: TableName,
        entry: CatalogEntry | None = None,
        listed: Mapping[str, list[FileStatus]] | None = None,
    ) -> TableFiles:
        """``table``'s data files now; ``entry``: its catalog entry, if just read (and
        ``listed``: data files listed with it, by location). A materialized view's are its
        snapshot's (``snapshot_files``)."""
        entry = entry if entry is not None else self.catalog.entry(table)
        upstream = view_metadata(str(table), entry)
        if upstream is not None:
            return snapshot_files(self.spark, upstream)
        return list_table_files(self.spark, self.catalog, table, entry, listed)

    def dependents(
        self, entry: CatalogEntry | None, log: ChangeLog | None = None
    ) -> list[TableName]:
        """The views reading the table of catalog entry ``entry``; ``log``: its change log as
        already opened (and listed), if it is the entry's."""
        names = set(_listed_dependents(entry))
        if entry is not None and keys.TRACKING_LOG in entry.properties:
            if log is None or log.root != _log_root(entry):
                log = self._log(entry)
            names.update(log.dependents())
        return [TableName.parse_qualified(name) for name in sorted(names)]

    def restore(self, table: TableName, properties: dict[str, str]) -> None:
        """Put tracking properties back on a table that a write re-created without them."""
        self._set(table, {key: properties[key] for key in TRACKING_KEYS if key in properties})

    def _set(self, table: TableName, values: dict[str, str]) -> None:
        self.catalog.alter_properties(table, values)

    def _log(self, entry: CatalogEntry) -> ChangeLog:
        return ChangeLog(self.spark, _log_root(entry), entry.schema)

    def _new_log_root(self, table: TableName) -> str:
        suffix = uuid.uuid4().hex[:8]
        return fs.warehouse_path(
            self.spark, LOG_DIR_NAME, table.database or "", f"{table.name}-{suffix}"
        )


def _log_root(entry: CatalogEntry) -> str:
    """The root of the change log of the tracked table of ``entry``, as ``ChangeLog.root``
    spells it."""
    return entry.properties[keys.TRACKING_LOG].rstrip("/")


def _listed_dependents(entry: CatalogEntry | None) -> list[str]:
    """The dependents a table's ``sparkmv.tracking.dependents`` property lists (the place of
    record before they moved into the change log)."""
    properties = entry.properties if entry is not None else {}
    return list(json.loads(properties.get(keys.TRACKING_DEPENDENTS, "[]")))


def immediate_views(log: ChangeLog) -> list[TableName]:
    """The views ``log``'s table lists for refresh ON COMMIT
    (``ChangeLog.immediate_dependents``)."""
    return [TableName.parse_qualified(view) for view in log.immediate_dependents()]
