"""The change log of a materialized view that other materialized views read (views over views).

A view ``U`` that some view ``V`` reads has a ``ChangeLog`` like a base table's (its root in
``U``'s ``sparkmv.tracking.log`` property, its readers under ``dependents/``): ``V`` consumes
it by version, and

    Δ(V over U) = V's delta rules applied to ΔU read from U's log

exactly as for a base table's ``ΔR`` (``capture/source.ChangeSource``). ``U``'s state at a
version is its snapshot (``tracking.snapshot_files``: the digest of the snapshot's files,
which a refresh never changes once committed).

Each refresh of ``U`` that changes it (a new snapshot) logs ``ΔU = U_new − U_old``, the exact
difference of its visible rows as a consolidated Z-set, whether the refresh was incremental
or full: ``V`` stays incremental either way. It is computed by one Spark job over the buckets
whose files (or mask) the refresh changed — an incremental refresh hard-links the others
into its new snapshot, so they hold the same rows — and written as the commit's explicit
change rows (one copy per unit of weight).

Atomicity (the pattern of a copy-on-write, ``capture/row_level.py``): before ``U``'s catalog
commit, the log commit is announced (``ChangeLog.intend``), its rows written, and the commit
*prepared* (``ChangeLog.prepare``: ``U``'s files before and after); the catalog commit is the
commit point; the manifest is published after it. A crash before the catalog commit leaves
``U`` as it was and the prepared commit unpublished: the next refresh of ``U`` removes it
(``reconcile(writer=True)``). A crash after it leaves ``U`` in the prepared state: the next
reader's ``reconcile`` (a refresh of ``V``, or of ``U``) publishes it. So a reader sees the
change logged exactly when ``U`` shows it: never missed, never applied twice. A change of
``U`` without a log commit (``CREATE OR REPLACE``/``ALTER ... AS`` of ``U``, a writer that
does not log) is detected like a write that bypassed a base table's capture: a RESYNC
commit, and ``V`` refreshes fully, saying why.

A view without dependents has no log, and its refreshes pay nothing for this.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import SparkSession

from sparkmv import frames, fs
from sparkmv.capture.change_log import ChangeLog, LogCommit, PreparedCommit
from sparkmv.capture.files import TableFiles
from sparkmv.capture.tracking import snapshot_files
from sparkmv.catalog import properties as keys
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.catalog.views import CatalogEntry
from sparkmv.faults import checkpoint
from sparkmv.identifiers import quote_identifier
from sparkmv.jobs import job_step
from sparkmv.storage.snapshot import mask_path, view_text
from sparkmv.storage.stored_columns import BUCKET_COLUMN

REFRESH_OPERATION = "REFRESH"
INSERTED, DELETED = "inserted", "deleted"
NOT_GROUPABLE = "map<"  # a MAP column cannot be grouped, so ΔU cannot be consolidated


class ViewChangeLog:
    """The change log of one materialized view with dependents, as its refresh writes it
    (``apply/materialize.ChangeRecorder``)."""

    def __init__(self, spark: SparkSession, log: ChangeLog) -> None:
        self.spark = spark
        self.log = log

    @classmethod
    def of(cls, spark: SparkSession, entry: CatalogEntry) -> ViewChangeLog | None:
        """The log of the materialized view of catalog entry ``entry``; None when no view
        reads it (then its refreshes log nothing)."""
        root = entry.properties.get(keys.TRACKING_LOG)
        return None if root is None else cls(spark, ChangeLog(spark, root, entry.schema))

    def prepare(self, view: MvMetadata, updated: MvMetadata) -> Callable[[], object]:
        """Before the catalog commit that takes the view from ``view`` to ``updated``: make
        ``ΔU`` durable but unpublished; returns what publishes it, to call after the commit
        (nothing to publish when the snapshot stays: the view did not change)."""
        if updated.snapshot == view.snapshot:
            return lambda: None
        before = snapshot_files(self.spark, view)
        # The log must vouch for the state being replaced: a crashed refresh's prepared commit
        # is published (or removed), and an unlogged change is marked unreadable.
        self.log.reconcile(before, writer=True)
        after = snapshot_files(self.spark, updated)
        rows_dir = self.log.change_rows_dir()
        pending_id = self.log.intend([rows_dir])
        commit = self._change_commit(view, updated, before, after, rows_dir)
        prepared = self.log.prepare(pending_id, before, commit, [rows_dir])
        checkpoint("view_log.after_prepare")
        return lambda: self._publish(prepared)

    def _publish(self, prepared: PreparedCommit) -> None:
        self.log.commit_prepared(prepared)
        checkpoint("view_log.after_publish")

    def _change_commit(
        self,
        view: MvMetadata,
        updated: MvMetadata,
        before: TableFiles,
        after: TableFiles,
        rows_dir: str,
    ) -> LogCommit:
        """The log commit of the refresh, its change rows written under ``rows_dir``."""
        unloggable = [
            f.name for f in self.log.schema.fields if NOT_GROUPABLE in f.dataType.simpleString()
        ]
        if unloggable or view.columns != updated.columns:
            reason = (
                f"column {unloggable[0]} holds a MAP, whose changes cannot be consolidated"
                if unloggable
                else "its columns changed"
            )
            return ChangeLog.new_commit(
                REFRESH_OPERATION, after, complete=False, reason=f"{view.name}: {reason}"
            )
        buckets = changed_buckets(self.spark, view, updated, before, after)
        written = self._write_change(view, updated, buckets, rows_dir)
        return ChangeLog.new_commit(
            REFRESH_OPERATION,
            after,
            inserted_rows=written.get(INSERTED),
            deleted_rows=written.get(DELETED),
        )

    def _write_change(
        self, view: MvMetadata, updated: MvMetadata, buckets: set[int] | None, rows_dir: str
    ) -> dict[str, str]:
        """Write ``ΔU = U_new − U_old`` over ``buckets`` (None: all) under ``rows_dir``, one
        directory per sign holding a row per unit of weight (one Spark job); the directories
        written, by sign."""
        names = list(self.log.schema.fieldNames())
        columns = ", ".join(quote_identifier(name) for name in names)
        weight = _fresh_name("sparkmv_weight", names)
        sign = _fresh_name("sparkmv_change", names)
        difference = (
            f"SELECT {columns}, SUM({weight}) AS {weight} FROM ("
            f"SELECT {columns}, CAST(1 AS BIGINT) AS {weight} FROM ({view_text(updated, buckets)})"
            f" UNION ALL SELECT {columns}, CAST(-1 AS BIGINT) FROM ({view_text(view, buckets)}))"
            f" GROUP BY {columns} HAVING SUM({weight}) <> 0"
        )
        copies = (
            f"SELECT inline(array_repeat(struct({columns}), CAST(abs({weight}) AS INT))),"
            f" IF({weight} > 0, '{INSERTED}', '{DELETED}') AS {sign} FROM ({difference})"
        )
        with job_step(self.spark, f"REFRESH {view.name}: log its change for the views over it"):
            frames.sql(self.spark, copies).write.partitionBy(sign).parquet(rows_dir)
        return {
            kind: f"{rows_dir}/{sign}={kind}"
            for kind in (INSERTED, DELETED)
            if fs.exists(self.spark, f"{rows_dir}/{sign}={kind}")
        }


def changed_buckets(
    spark: SparkSession,
    view: MvMetadata,
    updated: MvMetadata,
    before: TableFiles,
    after: TableFiles,
) -> set[int] | None:
    """The buckets whose rows may differ between the two snapshots (None: all of them): those
    whose data files or mask files differ by name and size. An incremental refresh links the
    buckets it does not touch (same names) and their mask files into its new snapshot."""
    if not view.layout.buckets or view.layout != updated.layout:
        return None
    old = _bucket_files(before) | _bucket_files(_mask_files(spark, view), "mask")
    new = _bucket_files(after) | _bucket_files(_mask_files(spark, updated), "mask")
    return {bucket for bucket, _, _, _ in old ^ new}


def _mask_files(spark: SparkSession, view: MvMetadata) -> TableFiles:
    """The files of the snapshot's mask (none without masked rows)."""
    if not view.masked_rows:
        return TableFiles(())
    return snapshot_files(spark, view.with_changes(snapshot=mask_path(view.snapshot)))


def _bucket_files(files: TableFiles, kind: str = "data") -> set[tuple[int, str, str, int]]:
    """(bucket, kind, name, size) of each file under a bucket directory (``mv_bucket=k``)."""
    found = set()
    prefix = f"{BUCKET_COLUMN}="
    for file in files.files:
        directory, _, name = file.path.rpartition("/")
        bucket = directory.rpartition("/")[2]
        if bucket.startswith(prefix):
            found.add((int(bucket[len(prefix) :]), kind, name, file.size))
    return found


def _fresh_name(stem: str, taken: list[str]) -> str:
    """``stem``, with underscores prepended until no column of ``taken`` has the name."""
    lowered = {name.lower() for name in taken}
    name = stem
    while name.lower() in lowered:
        name = f"_{name}"
    return name
