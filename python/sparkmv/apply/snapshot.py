"""Snapshots: immutable directories of a view's data, switched atomically.

A refresh writes the new contents into a fresh snapshot directory, then commits by pointing
the catalog view at it (``ViewCatalog.commit``, one metastore call). A reader resolves the
view either before the commit (old snapshot) or after (new one); it never sees a partial
write, and a failure before the commit leaves only an unreferenced directory behind, which
the next refresh removes. The previous snapshot is kept one refresh longer so that queries
that resolved the view just before a commit can still read it.

Storage columns are positional (``c0``, ``c1``, ...): the view text renames them to the
view's column names, so any column name Spark allows works and hidden maintenance columns
can sit beside them without ever showing in ``SELECT *``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql.functions import count, lit

from sparkmv.config import STORAGE_DIR_NAME
from sparkmv.fs import list_names, qualified, remove, warehouse_path
from sparkmv.parse.statements import TableName, quote_identifier

SNAPSHOT_PREFIX = "snapshot-"


def storage_root(spark: SparkSession, name: TableName) -> str:
    """The directory that holds all snapshots of view ``name`` (resolved)."""
    return warehouse_path(spark, STORAGE_DIR_NAME, name.database or "", name.name)


def new_snapshot_path(root: str) -> str:
    return f"{root}/{SNAPSHOT_PREFIX}{int(time.time() * 1000)}-{uuid.uuid4().hex[:8]}"


def storage_columns(count: int) -> list[str]:
    return [f"c{i}" for i in range(count)]


def write_snapshot(data: DataFrame, path: str) -> int:
    """Write ``data`` (the view's visible columns, in order) as a new snapshot; its row count.

    The count is observed while writing, so it costs no second job. Column metadata is
    dropped: Spark would otherwise persist markers such as an auto-generated alias into the
    files and then refuse a view over them.
    """
    columns = [
        data[index].alias(stored, metadata={})
        for index, stored in enumerate(storage_columns(len(data.columns)))
    ]
    rows = Observation("sparkmv_snapshot")
    data.select(*columns).observe(rows, count(lit(1)).alias("rows")).write.mode(
        "errorifexists"
    ).parquet(path)
    return int(rows.get["rows"])


def view_text(columns: Sequence[str], snapshot: str) -> str:
    """The catalog view's SQL: the snapshot's positional columns renamed to ``columns``."""
    select = ", ".join(
        f"{quote_identifier(stored)} AS {quote_identifier(column)}"
        for stored, column in zip(storage_columns(len(columns)), columns, strict=True)
    )
    return f"SELECT {select} FROM parquet.{quote_identifier(snapshot)}"


def list_snapshots(spark: SparkSession, root: str) -> list[str]:
    """Qualified paths of the snapshot directories under ``root``."""
    base = qualified(spark, root).rstrip("/")
    return [
        f"{base}/{name}" for name in list_names(spark, root) if name.startswith(SNAPSHOT_PREFIX)
    ]


def remove_snapshots(spark: SparkSession, root: str, keep: Iterable[str]) -> None:
    """Delete the snapshot directories under ``root`` that are not in ``keep``."""
    kept = {qualified(spark, path) for path in keep}
    for path in list_snapshots(spark, root):
        if path not in kept:
            remove_path(spark, path)


def remove_path(spark: SparkSession, path: str) -> None:
    """Delete ``path`` (a snapshot or a view's whole storage root) recursively, if present."""
    remove(spark, path)
