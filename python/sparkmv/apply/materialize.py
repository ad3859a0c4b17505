"""Materialize a view's query into a new snapshot and commit it (full refresh).

Order of a full refresh, each step safe to crash after:
1. write the query result into a new snapshot directory (invisible to readers);
2. commit: point the catalog view at it and store the new metadata (one metastore call);
3. remove snapshots older than the previous one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from sparkmv.apply import snapshot
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.catalog.views import ViewCatalog
from sparkmv.faults import checkpoint
from sparkmv.parse.statements import ColumnSpec, quote_identifier, sql_string


def now_ms() -> int:
    return int(time.time() * 1000)


def write_new_snapshot(spark: SparkSession, root: str, data: DataFrame) -> tuple[str, int]:
    """Write ``data`` into a fresh snapshot under ``root``; return its path and row count."""
    path = snapshot.new_snapshot_path(root)
    try:
        rows = snapshot.write_snapshot(data, path)
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
        f"{comment} TBLPROPERTIES ({listed}) AS "
        + snapshot.view_text(metadata.columns, metadata.snapshot)
    )


def full_refresh(
    spark: SparkSession,
    catalog: ViewCatalog,
    view: MvMetadata,
    data: DataFrame,
    reason: str,
    started_ms: int,
) -> MvMetadata:
    """Replace the contents of ``view`` with ``data`` atomically; return the new metadata."""
    root = snapshot.storage_root(spark, view.name)
    path, rows = write_new_snapshot(spark, root, data)
    checkpoint("refresh.before_commit")
    finished = now_ms()
    updated = view.with_changes(
        snapshot=path,
        row_count=rows,
        stats=view.stats.after_full_refresh(rows, view.row_count, reason, started_ms, finished),
    )
    try:
        catalog.commit(updated, snapshot.view_text(updated.columns, path))
    except BaseException:
        snapshot.remove_path(spark, path)
        raise
    checkpoint("refresh.after_commit")
    # Unreferenced snapshots (a crash before an earlier commit) go; the previous one stays
    # for readers that resolved the view just before this commit.
    snapshot.remove_snapshots(spark, root, keep=[view.snapshot, path])
    return updated
