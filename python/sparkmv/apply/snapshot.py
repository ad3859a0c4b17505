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
``mv_bucket=k``, each row in the bucket of its value's hash. A refresh rewrites only the
buckets its change touches and hard-links the others into the new snapshot
(``apply/incremental.py``), so a small change does not rewrite a large view.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkmv import fs
from sparkmv.catalog.metadata import PLAIN, MvMetadata, StorageLayout
from sparkmv.config import STORAGE_DIR_NAME
from sparkmv.fs import list_names, qualified, remove, warehouse_path
from sparkmv.parse.statements import TableName, quote_identifier
from sparkmv.zset import COUNT_COLUMN, GROUP_KEY_PREFIX

SNAPSHOT_PREFIX = "snapshot-"
BUCKET_COLUMN = "mv_bucket"
"""Hidden: the partition column of a bucketed layout."""
VISIBLE_COLUMN = "mv_visible"
"""Hidden, in a grouped layout: whether a stored group is a row of the view."""

# Types whose equal values hash equally (floating point does not: 0.0 and -0.0 are equal).
HASHABLE_TYPES = (
    T.BooleanType,
    T.ByteType,
    T.ShortType,
    T.IntegerType,
    T.LongType,
    T.DecimalType,
    T.StringType,
    T.DateType,
    T.TimestampType,
    T.TimestampNTZType,
    T.BinaryType,
)


def storage_root(spark: SparkSession, name: TableName) -> str:
    """The directory that holds all snapshots of view ``name`` (resolved)."""
    return warehouse_path(spark, STORAGE_DIR_NAME, name.database or "", name.name)


def new_snapshot_path(root: str) -> str:
    return f"{root}/{SNAPSHOT_PREFIX}{int(time.time() * 1000)}-{uuid.uuid4().hex[:8]}"


def storage_columns(count: int) -> list[str]:
    return [f"c{i}" for i in range(count)]


def bucket_of(frame: DataFrame, columns: Sequence[str], buckets: int) -> Column:
    """The bucket of each row of ``frame``: a hash of its ``columns`` of hashable types."""
    types = {field.name: field.dataType for field in frame.schema.fields}
    hashed = [F.col(c) for c in columns if isinstance(types[c], HASHABLE_TYPES)]
    if not hashed:
        return F.lit(0)
    return F.pmod(F.xxhash64(*hashed), F.lit(buckets)).cast("int")


def write_snapshot(data: DataFrame, path: str, layout: StorageLayout = PLAIN) -> int:
    """Write ``data`` as a new snapshot in ``layout``; return its number of stored rows.

    ``data`` holds the view's visible columns, in order, followed in a counted layout by
    the multiplicity. The count is observed while writing, so it costs no second job.
    Column metadata is dropped: Spark would otherwise persist markers such as an
    auto-generated alias into the files and then refuse a view over them.
    """
    visible = len(data.columns) - (1 if layout.counted else 0)
    names = storage_columns(visible) + ([COUNT_COLUMN] if layout.counted else [])
    if layout.grouped:  # already in storage columns; the groups are bucketed by their keys
        names = data.columns
        visible = len(data.columns)
    stored = data.select(*(data[i].alias(n, metadata={}) for i, n in enumerate(names)))
    rows = Observation("sparkmv_snapshot")
    shown = F.sum(F.col(VISIBLE_COLUMN).cast("long")) if layout.grouped else F.count(F.lit(1))
    frame = stored.observe(rows, F.coalesce(shown, F.lit(0)).alias("rows"))
    if layout.buckets:
        hashed = storage_columns(visible)
        if layout.grouped:
            hashed = [name for name in names if name.startswith(GROUP_KEY_PREFIX)]
        bucket = bucket_of(frame, hashed, layout.buckets)
        frame = frame.withColumn(BUCKET_COLUMN, bucket).repartition(BUCKET_COLUMN)
        frame.write.mode("errorifexists").partitionBy(BUCKET_COLUMN).parquet(path)
    else:
        frame.write.mode("errorifexists").parquet(path)
    written = observed_counts(rows, ("rows",))["rows"]
    if layout.buckets:
        keep_schema_readable(stored, path)
    return written


def observed_counts(observation: Observation, names: Sequence[str]) -> dict[str, int]:
    """The integer metrics of ``observation`` after its action ran.

    Spark's optimizer replaces a plan it proves empty (e.g. over an empty table) by an empty
    relation, observation included; no metrics arrive then, and every count is zero.
    """
    jvm_row: Any = observation._jo.getRow() if observation._jo is not None else None
    if jvm_row is None or jvm_row.length() == 0:
        return dict.fromkeys(names, 0)
    metrics = observation.get
    return {name: int(metrics[name] or 0) for name in names}


def keep_schema_readable(frame: DataFrame, path: str) -> None:
    """A bucketed snapshot without rows has no files, and Spark cannot read a view over it:
    give it one empty file (with the schema) in bucket 0."""
    spark = frame.sparkSession
    if not any(True for _ in fs.data_files(spark, path)):
        frame.limit(0).write.mode("errorifexists").parquet(f"{path}/{BUCKET_COLUMN}=0")


def view_text(view: MvMetadata) -> str:
    """The catalog view's SQL: the snapshot's positional columns renamed to the view's (and
    only the visible groups of an aggregate view)."""
    columns = view.columns
    select = ", ".join(
        f"{quote_identifier(stored)} AS {quote_identifier(column)}"
        for stored, column in zip(storage_columns(len(columns)), columns, strict=True)
    )
    where = f" WHERE {VISIBLE_COLUMN}" if view.layout.grouped else ""
    return f"SELECT {select} FROM parquet.{quote_identifier(view.snapshot)}{where}"


def list_snapshots(spark: SparkSession, root: str) -> list[str]:
    """Qualified paths of the snapshot directories under ``root``."""
    base = qualified(spark, root).rstrip("/")
    return [
        f"{base}/{name}" for name in list_names(spark, root) if name.startswith(SNAPSHOT_PREFIX)
    ]


def older(spark: SparkSession, root: str, current: str) -> list[str]:
    """The snapshots under ``root`` written before ``current``, oldest first (a snapshot's
    name starts with the time it was created)."""

    def created(path: str) -> int:
        return int(path.rpartition("/")[2][len(SNAPSHOT_PREFIX) :].split("-")[0])

    return sorted(
        (path for path in list_snapshots(spark, root) if created(path) < created(current)),
        key=created,
    )


def remove_snapshots(spark: SparkSession, root: str, keep: Iterable[str]) -> None:
    """Delete the snapshot directories under ``root`` that are not in ``keep``."""
    kept = {qualified(spark, path) for path in keep}
    for path in list_snapshots(spark, root):
        if path not in kept:
            remove_path(spark, path)


def remove_path(spark: SparkSession, path: str) -> None:
    """Delete ``path`` (a snapshot or a view's whole storage root) recursively, if present."""
    remove(spark, path)
