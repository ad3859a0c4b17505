"""Write a view's new snapshot and commit it: full refresh, incremental refresh, or a
refresh with nothing to change.

Order of a refresh, each step safe to crash after:
1. write the new snapshot directory (invisible to readers): the query result (full) or the
   touched buckets plus links to the others (incremental, ``apply/incremental.py``);
2. commit: point the catalog view at it and store the new metadata (one metastore call);
3. remove snapshots older than the previous one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from pyspark.sql import DataFrame, SparkSession

from sparkmv.apply.incremental import AppliedChange, apply_change, relinked_snapshot
from sparkmv.catalog.metadata import PLAIN, MvMetadata, StorageLayout
from sparkmv.catalog.views import ViewCatalog
from sparkmv.faults import checkpoint
from sparkmv.identifiers import quote_identifier, sql_string
from sparkmv.parse.statements import ColumnSpec
from sparkmv.plan.merge import Merge
from sparkmv.storage import snapshot

log = logging.getLogger(__name__)


class ChangeRecorder(Protocol):
    """Records the change a commit applies to a view, for the views that read it
    (``capture/view_log.ViewChangeLog``)."""

    def prepare(self, view: MvMetadata, updated: MvMetadata) -> Callable[[], object]:
        """Before the commit from ``view`` to ``updated``: make the change durable but
        unpublished; returns what publishes it, called right after the commit."""
        ...


def now_ms() -> int:
    return int(time.time() * 1000)


def write_new_snapshot(
    spark: SparkSession,
    root: str,
    data: DataFrame,
    layout: StorageLayout = PLAIN,
) -> tuple[str, int]:
    """Write ``data`` into a fresh snapshot under ``root``; return its path and row count."""
    path = snapshot.new_snapshot_path(root)
    try:
        rows = snapshot.write_snapshot(data, path, layout)
    except BaseException:
        snapshot.remove_path(spark, path)
        raise
    return path, rows


@dataclass(frozen=True)
class ViewDefinition:
    """What ``CREATE VIEW`` needs besides the metadata: column comments, comment, properties."""

    columns: tuple[ColumnSpec, ...]
    comment: str | None
    user_properties: dict[str, str]


def create_catalog_view(
    spark: SparkSession, metadata: MvMetadata, definition: ViewDefinition, replace: bool
) -> None:
    """Create (or replace) the catalog view of ``metadata`` over its snapshot."""
    columns = ", ".join(
        quote_identifier(column.name)
        + (f" COMMENT {sql_string(column.comment)}" if column.comment is not None else "")
        for column in definition.columns
    )
    properties = {**definition.user_properties, **metadata.to_properties()}
    listed = ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in properties.items())
    comment = f" COMMENT {sql_string(definition.comment)}" if definition.comment else ""
    spark.sql(
        f"CREATE {'OR REPLACE ' if replace else ''}VIEW {metadata.name.quoted} ({columns})"
        f"{comment} TBLPROPERTIES ({listed}) AS " + snapshot.view_text(metadata)
    )


def full_refresh(
    spark: SparkSession,
    catalog: ViewCatalog,
    view: MvMetadata,
    data: DataFrame,
    layout: StorageLayout,
    reason: str,
    started_ms: int,
    recorder: ChangeRecorder | None = None,
    state: Callable[[str], None] | None = None,
) -> MvMetadata:
    """Replace the contents of ``view`` with ``data`` (stored rows in ``layout``)
    atomically; return the new metadata (``recorder``: logs the change, if any view reads
    this one; ``state``: writes other state of the view into the new snapshot before the
    commit, e.g. recursive CTEs' fixpoints)."""
    root = snapshot.storage_root(spark, view.name)
    path, rows = write_new_snapshot(spark, root, data, layout)
    if state is not None:
        try:
            state(path)
        except BaseException:
            snapshot.remove_path(spark, path)
            raise
    checkpoint("refresh.before_commit")
    finished = now_ms()
    updated = view.with_changes(
        snapshot=path,
        masked_rows=0,
        row_count=rows,
        layout=layout,
        stats=view.stats.after_full_refresh(rows, view.row_count, reason, started_ms, finished),
    )
    commit_snapshot(spark, catalog, view, updated, recorder)
    return updated


def incremental_refresh(
    spark: SparkSession,
    catalog: ViewCatalog,
    view: MvMetadata,
    change: DataFrame,
    merge: Merge,
    reason: str,
    started_ms: int,
    irrelevant: Callable[[], Mapping[str, int]] | None = None,
    recorder: ChangeRecorder | None = None,
    state: Callable[[str], None] | None = None,
) -> MvMetadata:
    """Apply ``change`` (ΔV in storage columns, or an aggregate view's state change) to
    ``view`` by ``merge`` atomically; the new metadata (``irrelevant``: the changed base rows
    the irrelevance filters dropped per table, for the counters, once ΔV is computed;
    ``state``: as in ``full_refresh``, into a new snapshot even when ΔV is empty).

    Raises ``ChangeDoesNotFitError`` (nothing committed) when ΔV does not fit the stored rows.
    """
    root = snapshot.storage_root(spark, view.name)
    applied = apply_change(spark, root, view, change, merge)
    if state is not None:
        if applied.snapshot == view.snapshot:
            applied = relinked_snapshot(spark, root, view, merge)
        try:
            state(applied.snapshot)
        except BaseException:
            snapshot.remove_path(spark, applied.snapshot)
            raise
    return commit_change(spark, catalog, view, applied, reason, started_ms, irrelevant, recorder)


def commit_change(
    spark: SparkSession,
    catalog: ViewCatalog,
    view: MvMetadata,
    applied: AppliedChange,
    reason: str,
    started_ms: int,
    irrelevant: Callable[[], Mapping[str, int]] | None = None,
    recorder: ChangeRecorder | None = None,
) -> MvMetadata:
    """Commit the snapshot an incremental refresh of ``view`` wrote (``applied``), with its
    counters; the new metadata (arguments as in ``incremental_refresh``)."""
    log.info(
        "incremental refresh of %s: of %d buckets %d patched, %d rewritten (%d rows written,"
        " %d masked), +%d -%d rows",
        view.name,
        view.layout.buckets,
        applied.buckets_patched,
        applied.buckets_rewritten,
        applied.rows_written,
        applied.masked_rows,
        applied.rows_inserted,
        applied.rows_deleted,
    )
    checkpoint("refresh.before_commit")
    finished = now_ms()
    updated = view.with_changes(
        snapshot=applied.snapshot,
        masked_rows=applied.masked_rows,
        row_count=view.row_count + applied.rows_inserted - applied.rows_deleted,
        stats=view.stats.after_incremental_refresh(
            applied.rows_inserted,
            applied.rows_deleted,
            reason,
            started_ms,
            finished,
            irrelevant() if irrelevant is not None else None,
        ),
    )
    commit_snapshot(spark, catalog, view, updated, recorder)
    return updated


def remove_unreferenced(spark: SparkSession, view: MvMetadata) -> None:
    """Remove the snapshots of ``view`` but its current one and the one before it (kept for
    readers that resolved the view just before the commit that replaced it)."""
    root = snapshot.storage_root(spark, view.name)
    snapshot.remove_snapshots(spark, root, keep=[view.snapshot], keep_previous_of=view.snapshot)


def commit_snapshot(
    spark: SparkSession,
    catalog: ViewCatalog,
    view: MvMetadata,
    updated: MvMetadata,
    recorder: ChangeRecorder | None = None,
) -> None:
    """Point the catalog view at ``updated``'s snapshot with ``updated``'s metadata.

    ``recorder`` (a view that others read) prepares the log commit of the change before the
    catalog commit and publishes it after: a crash between the two leaves a prepared commit
    that the log's next reader publishes (``capture/view_log.py``)."""
    new_snapshot = updated.snapshot != view.snapshot
    try:
        publish = recorder.prepare(view, updated) if recorder is not None else None
        catalog.commit(updated, snapshot.view_text(updated))
    except BaseException:
        if new_snapshot:
            snapshot.remove_path(spark, updated.snapshot)
        raise
    checkpoint("refresh.after_commit")
    if publish is not None:
        publish()
    # Unreferenced snapshots (a crash before an earlier commit) go; the previous one stays
    # for readers that resolved the view just before the commit that replaced it.
    if not new_snapshot:
        remove_unreferenced(spark, updated)
        return
    root = snapshot.storage_root(spark, view.name)
    snapshot.remove_snapshots(spark, root, keep=[updated.snapshot, view.snapshot])
