"""``DELETE``, ``UPDATE`` and ``MERGE`` on parquet tables, by copy-on-write.

The shim hands over the statement as a DataFrame of row changes (``RowLevelChanges.scala``:
the table's columns as the statement leaves each row, then the pre-image of an updated or
deleted row, the row's file, its position in the file, its action — keep, update, delete or
insert — and whether a MERGE matched it). Only the *data units* (the table, or the
partitions) holding affected files change:

1. find the affected files ``F`` (files with an updated or deleted row);
2. in one Spark job over the rows of ``F`` and the inserted rows, write to a staging
   directory, partitioned like the table and by what each row is: *kept* (a row of ``F``
   the statement leaves alone), *new* (an updated row's post-image, an inserted row) and,
   for a tracked table, *old* (an updated or deleted row's pre-image);
3. give each touched unit a new directory — ``<table>/_sparkmv_<id>`` for an unpartitioned
   table, ``<table>/_sparkmv_<id>/<partition path>`` for partitions — holding its kept and
   new files plus hard links to its files outside ``F`` (no copy); move the old files into
   the change log;
4. point the units at their new directories in **one metastore call** — the commit point: a
   reader (plain Spark included) sees every old location or every new one;
5. log the write as its changed rows only: the new files as inserted, the old files as
   deleted (so reading the log costs in proportion to the change, not to ``F``); the kept
   files are not logged; the old units' files are retired (compaction deletes them).

Recovery: the log commit is *prepared* before the swap (``ChangeLog.prepare``). A process
killed after the swap leaves the table in the prepared state, and ``reconcile`` publishes the
commit; killed before it, the table is untouched and the prepared files are removed.
Untracked tables take the same path without a log; their old files are deleted by the next
copy-on-write (so queries already reading them can finish).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sparkmv import fs
from sparkmv.capture import table_locks
from sparkmv.capture.change_log import ChangeLog, ClearedKeys, FileRef
from sparkmv.capture.files import (
    DEFAULT_PARTITION_NAME,
    VERSION_DIR_PREFIX,
    DataFile,
    DataUnit,
    PartitionSpec,
    TableFiles,
    delete_retired,
    spec_from_path,
    spec_path,
    unit_base,
)
from sparkmv.capture.tracking import Tracking, immediate_views
from sparkmv.catalog.views import CatalogEntry
from sparkmv.config import CAPTURE_CLEARED_KEYS_MAX_VALUES
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.faults import checkpoint
from sparkmv.identifiers import TableName
from sparkmv.zset import column

MERGE = "MERGE"
UPDATE_STATEMENT = "UPDATE"
KEEP, UPDATE, DELETE, INSERT = "keep", "update", "delete", "insert"
KEPT, NEW, OLD = "kept", "new", "old"  # what a staged file holds (step 2)


@dataclass(frozen=True)
class RowChanges:
    """The shim's DataFrame of row changes; its last five columns describe each row."""

    frame: DataFrame

    @property
    def table_columns(self) -> list[str]:
        return self.frame.columns[:-5]

    @property
    def before(self) -> Any:
        """The row's values before the statement (a struct); null unless updated or deleted."""
        return self._column(-5)

    def _column(self, position: int) -> Any:
        return column(self.frame.columns[position])

    @property
    def file(self) -> Any:
        return self._column(-4)

    @property
    def row(self) -> Any:
        return self._column(-3)

    @property
    def action(self) -> Any:
        return self._column(-2)

    @property
    def matched(self) -> Any:
        return self._column(-1)

    @property
    def identity(self) -> list[str]:
        """Names of the columns that identify a target row: its file and position."""
        return self.frame.columns[-4:-2]


@dataclass(frozen=True)
class StagedFile:
    """A file the staging job wrote: what it holds (``KEPT``, ``NEW`` or ``OLD``)."""

    holds: str
    file: DataFile


@dataclass(frozen=True)
class RowLevelSummary:
    affected_files: tuple[str, ...]  # as ``_metadata.file_path`` spells them
    counts: Counter[str]

    @property
    def result(self) -> tuple[int, ...]:
        changed = self.counts[UPDATE] + self.counts[DELETE] + self.counts[INSERT]
        return (changed, self.counts[UPDATE], self.counts[DELETE], self.counts[INSERT])


@dataclass(frozen=True)
class RowLevelResult:
    """A row-level write's result row (``num_affected_rows`` and, for MERGE, the updated,
    deleted and inserted counts), and the views to refresh ON COMMIT after it."""

    row: tuple[int, ...]
    immediate: list[TableName]


def run_row_level_write(
    tracking: Tracking,
    kind: str,
    table: TableName,
    frame: Any,
    unsupported: str,
    assigned: tuple[str, ...] = (),
    cleared_keys: ClearedKeys | None = None,
) -> RowLevelResult:
    """Runs the statement; its ``RowLevelResult``. ``assigned``: the columns an UPDATE
    assigns; ``cleared_keys``: what a DELETE's condition proves (logged with the commit)."""
    if unsupported:
        raise SparkMvError(
            ErrorClass.ROW_LEVEL_WRITE_NOT_SUPPORTED,
            statement=kind,
            table=table,
            reason=unsupported,
        )
    with table_locks.holding([table]):
        return _run_locked(tracking, kind, table, frame, assigned, cleared_keys)


def cleared_keys_of(spark: SparkSession, text: str) -> ClearedKeys | None:
    """The shim's ``ClearedKeys`` JSON ("" for none) as logged: None beyond
    ``CAPTURE_CLEARED_KEYS_MAX_VALUES`` values, which a manifest would carry to every reader."""
    if not text:
        return None
    keys = ClearedKeys.from_json(json.loads(text))
    return keys if len(keys.values) <= CAPTURE_CLEARED_KEYS_MAX_VALUES.count(spark) else None


def _run_locked(
    tracking: Tracking,
    kind: str,
    table: TableName,
    frame: Any,
    assigned: tuple[str, ...],
    cleared_keys: ClearedKeys | None,
) -> RowLevelResult:
    """``run_row_level_write`` under the table's lock (``capture/table_locks.py``)."""
    changes = RowChanges(DataFrame(frame, tracking.spark))
    entry = tracking.catalog.entry(table)
    assert entry is not None and entry.location is not None  # the statement just resolved it
    log = tracking.state_of(table, entry).log
    before = tracking.files(table, entry)
    if log is not None:
        log.reconcile(before, writer=True)
    if kind == MERGE:
        check_merge_cardinality(changes, table)
    summary = summarize(changes)
    immediate: list[TableName] = []
    if summary.affected_files or summary.counts[INSERT]:
        write = CopyOnWrite(tracking, kind, table, entry, log, before, changes, summary)
        write.assigned = assigned if kind == UPDATE_STATEMENT else None
        write.cleared_keys = cleared_keys
        write.run()
        immediate = immediate_views(log) if log is not None else []
    return RowLevelResult(summary.result if kind == MERGE else summary.result[:1], immediate)


def check_merge_cardinality(changes: RowChanges, table: TableName) -> None:
    """SQL's rule: a target row may match at most one source row."""
    repeated = (
        changes.frame.where(changes.matched)
        .groupBy(changes.file, changes.row)
        .count()
        .where(F.col("count") > 1)
        .limit(1)
        .collect()
    )
    if repeated:
        raise SparkMvError(ErrorClass.MERGE_CARDINALITY_VIOLATION, table=table)


def summarize(changes: RowChanges) -> RowLevelSummary:
    """One job: rows per action and affected file (the result is small: files, not rows)."""
    counts: Counter[str] = Counter()
    affected = set()
    grouped = changes.frame.where(changes.action != KEEP).groupBy(changes.action, changes.file)
    for action, file, count in grouped.count().collect():
        counts[action] += count
        if action in (UPDATE, DELETE):
            affected.add(file)
    return RowLevelSummary(tuple(sorted(affected)), counts)


class CopyOnWrite:
    """Steps 2–5 of the module docstring for one statement."""

    def __init__(
        self,
        tracking: Tracking,
        kind: str,
        table: TableName,
        entry: CatalogEntry,
        log: ChangeLog | None,
        before: TableFiles,
        changes: RowChanges,
        summary: RowLevelSummary,
    ) -> None:
        self.catalog = tracking.catalog
        self.spark = tracking.spark
        self.kind = kind
        self.table = table
        self.log = log
        self.before = before
        self.changes = changes
        self.summary = summary
        self.assigned: tuple[str, ...] | None = None  # an UPDATE's assigned columns
        self.cleared_keys: ClearedKeys | None = None  # what a DELETE's condition proves
        assert entry.location is not None
        # An unpartitioned table's location may be a version directory: work beside it.
        self.root = unit_base(fs.qualified(self.spark, entry.location))
        self.partition_columns = entry.partition_columns
        write_id = uuid.uuid4().hex[:12]
        # One directory per statement, beside (never inside) Spark's partition directories,
        # which Spark's own overwrites delete recursively.
        self.version_dir = f"{self.root}/{VERSION_DIR_PREFIX}{write_id}"
        self.staging = f"{self.root}/{VERSION_DIR_PREFIX}staging-{write_id}"
        # Where the pre-images of updated and deleted rows go in the log.
        self.old_rows = log.change_rows_dir() if log is not None else ""
        jvm: Any = self.spark._jvm
        self.affected = {
            str(jvm.org.apache.hadoop.fs.Path(jvm.java.net.URI(path)).toString())
            for path in summary.affected_files
        }

    def run(self) -> None:
        pending_id = self.log.intend([self.staging, self.old_rows]) if self.log is not None else ""
        written = self.write_staging()
        checkpoint("row_level.after_write")
        new_units, inserted = self.build_units([s for s in written if s.holds != OLD])
        deleted = self.move_old_rows([s.file for s in written if s.holds == OLD])
        replaced = [unit for unit in self.before.units if unit.partition in new_units]
        after = TableFiles(
            tuple(u for u in self.before.units if u.partition not in new_units)
            + tuple(new_units.values())
        )
        commit = ChangeLog.new_commit(
            self.kind,
            after,
            inserted_files=tuple(inserted),
            deleted_files=tuple(deleted),
            retired_files=tuple(
                path
                for unit in replaced
                for path in [f.path for f in unit.files]
                + fs.hidden_files(self.spark, unit.location)
            ),
            metrics=dict(self.summary.counts),
            assigned_columns=self.assigned,
            cleared_keys=self.cleared_keys,
        )
        empty = f"{self.root}/{VERSION_DIR_PREFIX}empty-{uuid.uuid4().hex}"
        abandoned = [self.version_dir, self.staging, empty, self.old_rows]
        prepared = (
            self.log.prepare(pending_id, self.before, commit, abandoned)
            if self.log is not None
            else None
        )
        checkpoint("row_level.before_swap")
        fs.make_dirs(self.spark, empty)
        self.catalog.swap_locations(
            self.table,
            [(self._catalog_spec(spec), unit.location) for spec, unit in new_units.items()],
            empty,
        )
        checkpoint("row_level.after_swap")
        fs.remove(self.spark, empty)
        fs.remove(self.spark, self.staging)
        if self.log is not None and prepared is not None:
            self.log.commit_prepared(prepared)
            checkpoint("row_level.after_commit")
        else:
            self.retire_untracked(commit.retired_files)

    def retire_untracked(self, retired: tuple[str, ...]) -> None:
        """No log reads an untracked table's old files, but queries that started before the
        swap may: keep one previous version (as materialized views keep their previous
        snapshot) and delete the one before it."""
        record = f"{self.root}/{VERSION_DIR_PREFIX}retired.json"
        if fs.exists(self.spark, record):
            delete_retired(self.spark, json.loads(fs.read_text(self.spark, record)))
            fs.remove(self.spark, record)
        fs.publish_text(self.spark, record, json.dumps(list(retired)))

    def write_staging(self) -> list[StagedFile]:
        """Step 2: one job writes the kept, new and (if tracked) old rows to the hidden
        staging directory, into ``<staging>/sparkmv_staged=<holds>/<partition path>/`` (not
        a hidden name: ``fs.data_files`` skips those)."""
        c = self.changes
        tag = next(
            name
            for name in (f"sparkmv_staged{'_' * n}" for n in range(len(c.table_columns) + 1))
            if name not in c.table_columns
        )
        rows = c.frame.where(c.file.isin(list(self.summary.affected_files)))
        if self.kind == MERGE:  # a row two source rows matched without a WHEN MATCHED clause
            rows = rows.dropDuplicates(c.identity).unionByName(c.frame.where(c.action == INSERT))
        after = F.when(c.action == KEEP, KEPT).when(c.action.isin(UPDATE, INSERT), NEW)
        old = (
            F.when(c.action.isin(UPDATE, DELETE), OLD)
            if self.log is not None
            else F.lit(None).cast("string")
        )
        current = [column(n).alias(n) for n in c.table_columns]
        images = F.array(  # a row's image after the statement, and its pre-image
            F.struct(after.alias(tag), *current),
            F.struct(old.alias(tag), *[c.before.getField(n).alias(n) for n in c.table_columns]),
        )
        staged = rows.select(F.explode(images).alias("image")).select("image.*")
        staged = staged.where(F.col(tag).isNotNull())
        staged.write.partitionBy(tag, *self.partition_columns).parquet(self.staging)
        files = []
        for status in fs.data_files(self.spark, self.staging):
            holds_dir, _, partition_dir = status.path[len(self.staging) + 1 :].partition("/")
            partition_dir = partition_dir.rpartition("/")[0]
            spec = spec_from_path(partition_dir) if self.partition_columns else ()
            data_file = DataFile(status.path, status.size, status.modified_ms, spec)
            files.append(StagedFile(holds_dir.partition("=")[2], data_file))
        return files

    def move_old_rows(self, old: list[DataFile]) -> list[FileRef]:
        """Move the pre-images into the log: the commit's deleted files."""
        deleted = []
        for file in old:
            directory = (
                f"{self.old_rows}/{spec_path(file.partition)}" if file.partition else self.old_rows
            )
            target = f"{directory}/{file.path.rsplit('/', 1)[-1]}"
            fs.move(self.spark, file.path, target)
            deleted.append(FileRef(target, file.partition))
        return deleted

    def build_units(
        self, staged: list[StagedFile]
    ) -> tuple[dict[PartitionSpec, DataUnit], list[FileRef]]:
        """A new directory per touched unit: its kept and new files moved in, its unaffected
        files linked in. Returns the new units and the inserted (new) file references."""
        written = [s.file for s in staged]
        holds = {s.file.path: s.holds for s in staged}
        touched = {f.partition for f in self.before.files if f.path in self.affected}
        touched |= {f.partition for f in written}
        units: dict[PartitionSpec, DataUnit] = {}
        inserted = []
        for spec in sorted(touched, key=repr):
            current = self.before.unit(spec)
            directory = f"{self.version_dir}/{spec_path(spec)}" if spec else self.version_dir
            fs.make_dirs(self.spark, directory)
            for file in (f for f in written if f.partition == spec):
                # A task names its kept and new files alike: tell them apart.
                name = f"{holds[file.path]}-{file.path.rsplit('/', 1)[-1]}"
                fs.move(self.spark, file.path, f"{directory}/{name}")
                if holds[file.path] == NEW:
                    inserted.append(FileRef(f"{directory}/{name}", spec))
            fs.link_all(
                self.spark,
                [
                    (file.path, f"{directory}/{file.path.rsplit('/', 1)[-1]}")
                    for file in (current.files if current else ())
                    if file.path not in self.affected
                ],
            )
            listed = tuple(
                DataFile(s.path, s.size, s.modified_ms, spec)
                for s in fs.data_files(self.spark, directory)
            )
            units[spec] = DataUnit(spec, directory, listed)
        return units, inserted

    def _catalog_spec(self, spec: PartitionSpec) -> dict[str, str] | None:
        if not self.partition_columns:
            return None
        return {column: DEFAULT_PARTITION_NAME if v is None else v for column, v in spec}
