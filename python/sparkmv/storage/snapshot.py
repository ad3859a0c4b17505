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

A view maintained incrementally is stored in hash buckets (``StorageLayout``): directories
``mv_bucket=k``, each row in the bucket of its value's hash. A refresh hard-links the files of
the buckets its change does not touch into the new snapshot, and either rewrites a touched
bucket whole or *patches* it (merge-on-read, as Iceberg's position deletes): the bucket keeps
its files (hard links), the rows the change replaces are listed in the snapshot's *mask*
(``_sparkmv_mask/``: bucket, file name, row index within the file) and the merged rows are
appended as a new file (``apply/incremental.py``). Readers skip masked rows with an anti join
on ``_metadata.file_name`` / ``_metadata.row_index``, so a small change does not rewrite a
large view even when it touches every bucket; a bucket whose mask grows too large is
rewritten whole (compacted) by a later refresh.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkmv import frames, fs
from sparkmv.catalog.metadata import PLAIN, MvMetadata, StorageLayout
from sparkmv.config import STORAGE_DIR_NAME
from sparkmv.fs import list_names, qualified, remove, remove_all, warehouse_path
from sparkmv.identifiers import TableName, quote_identifier
from sparkmv.observations import observe
from sparkmv.storage.buckets import bucket_sql
from sparkmv.storage.stored_columns import (
    BUCKET_COLUMN,
    COUNT_COLUMN,
    GROUP_KEY_PREFIX,
    VISIBLE_COLUMN,
    storage_columns,
)

SNAPSHOT_PREFIX = "snapshot-"
MASK_DIR = "_sparkmv_mask"
"""In a snapshot: the positions of its stored rows that are no longer part of the view (by
bucket; each masked row is kept whole beside its position). Its name starts with ``_``, so
Spark's listing of the snapshot's data skips it."""
CHANGE_DIR = "_sparkmv_change"
"""In a snapshot written by an incremental refresh that patches buckets: ΔV (stored
columns, weight and bucket, by bucket), as staged by the refresh's first job. Hidden from
the snapshot's data by its name."""
FILE_COLUMN = "mv_file"
"""In the mask: the name of the data file (within its bucket) that holds a masked row."""
ROW_COLUMN = "mv_row"
"""In the mask: the masked row's index within that file (``_metadata.row_index``)."""


def storage_root(spark: SparkSession, name: TableName) -> str:
    """The directory that holds all snapshots of view ``name`` (resolved)."""
    return warehouse_path(spark, STORAGE_DIR_NAME, name.database or "", name.name)


def new_snapshot_path(root: str) -> str:
    return f"{root}/{SNAPSHOT_PREFIX}{int(time.time() * 1000)}-{uuid.uuid4().hex[:8]}"


def bucket_of(frame: DataFrame, columns: Sequence[str], buckets: int) -> Column:
    """The bucket of each row of ``frame`` (``bucket_sql``)."""
    return F.expr(bucket_sql(frame.schema, columns, buckets))


def write_snapshot(data: DataFrame, path: str, layout: StorageLayout = PLAIN) -> int:
    """Write ``data`` as a new snapshot in ``layout``; return its number of stored rows.

    ``data`` holds the view's visible columns, in order, followed in a counted layout by
    the multiplicity. The count is observed while writing, so it costs no second job.
    Column metadata is dropped: Spark would otherwise persist markers such as an
    auto-generated alias into the files and then refuse a view over them.
    """
    visible = len(data.columns) - (1 if layout.counted else 0)
    names = storage_columns(visible) + ([COUNT_COLUMN] if layout.counted else [])
    hashed = storage_columns(visible)
    if layout.grouped:  # already in storage columns; the groups are bucketed by their keys
        names = data.columns
        hashed = [name for name in names if name.startswith(GROUP_KEY_PREFIX)]
    # Renamed by position first: the query's own names may repeat (``SELECT a.i, b.i``).
    positional = data.toDF(*names)
    stored = positional.select(*(positional[n].alias(n, metadata={}) for n in names))
    visible_rows = f"sum(CAST({quote_identifier(VISIBLE_COLUMN)} AS BIGINT))"
    shown = visible_rows if layout.grouped else "count(1)"
    frame, rows = observe(stored, "sparkmv_snapshot", {"rows": f"coalesce({shown}, 0)"})
    if layout.buckets:
        bucket = bucket_of(frame, hashed, layout.buckets)
        frame = frame.withColumn(BUCKET_COLUMN, bucket).repartition(BUCKET_COLUMN)
        frames.write_parquet(frame, path, partition_by=[BUCKET_COLUMN])
    else:
        frames.write_parquet(frame, path)
    written = rows.counts()["rows"]
    if layout.buckets:
        keep_schema_readable(data.sparkSession, stored.schema, path)
    return written


def keep_schema_readable(spark: SparkSession, schema: T.StructType, path: str) -> None:
    """A bucketed snapshot without rows has no files, and Spark cannot read a view over it:
    give it one empty file (with ``schema``) in bucket 0."""
    if not fs.data_files(spark, path):
        empty = frames.empty(spark, schema)
        frames.write_parquet(empty, f"{path}/{BUCKET_COLUMN}=0")


_MASK_MATCH = {
    f"s.{BUCKET_COLUMN}": BUCKET_COLUMN,
    "s._metadata.file_name": FILE_COLUMN,
    "s._metadata.row_index": ROW_COLUMN,
}
"""A stored row (``s``) is masked when the mask has its bucket, file name and row index."""


def view_text(view: MvMetadata, buckets: Iterable[int] | None = None) -> str:
    """The catalog view's SQL: the snapshot's positional columns renamed to the view's (and
    only the visible groups of an aggregate view), its masked rows left out. ``buckets``:
    only the rows of those buckets of a bucketed snapshot (None: all)."""
    columns = view.columns
    select = ", ".join(
        f"s.{quote_identifier(stored)} AS {quote_identifier(column)}"
        for stored, column in zip(storage_columns(len(columns)), columns, strict=True)
    )
    source = live_rows_source(view)
    conditions = [f"s.{VISIBLE_COLUMN}"] if view.layout.grouped else []
    if buckets is not None and view.layout.buckets:
        listed = ", ".join(str(bucket) for bucket in sorted(buckets)) or "NULL"
        conditions.append(f"s.{BUCKET_COLUMN} IN ({listed})")
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    return f"SELECT {select} FROM {source}{where}"


def live_rows_source(view: MvMetadata) -> str:
    """A FROM item (Spark SQL) of the stored rows of ``view``'s snapshot that its mask does
    not hide, every stored column (and the bucket column of a bucketed one) as ``s``."""
    source = f"parquet.{quote_identifier(view.snapshot)} s"
    if view.masked_rows:
        mask = f"parquet.{quote_identifier(mask_path(view.snapshot))} m"
        on = " AND ".join(f"{stored} = m.{masked}" for stored, masked in _MASK_MATCH.items())
        source += f" LEFT ANTI JOIN {mask} ON {on}"
    return source


def mask_path(snapshot: str) -> str:
    return f"{snapshot}/{MASK_DIR}"


def read_mask(spark: SparkSession, snapshot: str) -> DataFrame:
    """The mask of ``snapshot``: one row (bucket, file name, row index) per masked row."""
    return frames.read_parquet(spark, MASK_SCHEMA, [mask_path(snapshot)])


MASK_SCHEMA = T.StructType(
    [
        T.StructField(BUCKET_COLUMN, T.IntegerType()),
        T.StructField(FILE_COLUMN, T.StringType()),
        T.StructField(ROW_COLUMN, T.LongType()),
    ]
)


def list_snapshots(spark: SparkSession, root: str) -> list[str]:
    """Qualified paths of the snapshot directories under ``root``."""
    base = qualified(spark, root).rstrip("/")
    return [
        f"{base}/{name}" for name in list_names(spark, root) if name.startswith(SNAPSHOT_PREFIX)
    ]


def _created(path: str) -> int:
    """When the snapshot ``path`` was created (its name starts with the time)."""
    return int(path.rpartition("/")[2][len(SNAPSHOT_PREFIX) :].split("-")[0])


def remove_snapshots(
    spark: SparkSession, root: str, keep: Iterable[str], keep_previous_of: str | None = None
) -> None:
    """Delete the snapshot directories under ``root`` that are not in ``keep`` (compared by
    name: a snapshot's name is unique under its root), nor, given ``keep_previous_of``, the
    last one written before that snapshot. One listing, one removal round trip."""
    listed = list_snapshots(spark, root)
    kept = {path.rstrip("/").rpartition("/")[2] for path in keep}
    if keep_previous_of is not None:
        before = [p for p in listed if _created(p) < _created(keep_previous_of)]
        kept.update(p.rpartition("/")[2] for p in sorted(before, key=_created)[-1:])
    remove_all(spark, [path for path in listed if path.rpartition("/")[2] not in kept])


def remove_path(spark: SparkSession, path: str) -> None:
    """Delete ``path`` (a snapshot or a view's whole storage root) recursively, if present."""
    remove(spark, path)
