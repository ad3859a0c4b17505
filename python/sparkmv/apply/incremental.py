"""Apply a view's change ΔV to its bucketed storage, touching only the buckets it hits.

Order, each step safe to crash after (as for a full refresh, ``materialize.py``):
1. compute ΔV once (persisted) and the buckets its rows fall into; write each touched
   bucket anew: its stored rows (as a Z-set: weight 1 per copy, or the stored counter)
   plus ΔV's rows for it, consolidated; a row whose multiplicity reaches zero is dropped;
2. hard-link every untouched bucket's files into the new snapshot (no bytes copied);
3. the caller commits the catalog view to the new snapshot (one metastore call).

Readers keep reading the previous snapshot until the commit; its files are never changed.
A multiplicity that would go negative means ΔV does not fit the stored view (a bug, or a
change the log did not see): nothing is committed and the caller refreshes fully.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkmv import fs
from sparkmv.apply.snapshot import (
    BUCKET_COLUMN,
    COUNT_COLUMN,
    bucket_of,
    keep_schema_readable,
    new_snapshot_path,
    observed_counts,
    remove_path,
    storage_columns,
)
from sparkmv.catalog.metadata import StorageLayout
from sparkmv.zset import WEIGHT


@dataclass(frozen=True)
class AppliedChange:
    snapshot: str  # the new snapshot (the old one when ΔV was empty)
    rows_inserted: int  # visible rows
    rows_deleted: int
    buckets_rewritten: int
    rows_rewritten: int


class ChangeDoesNotFitError(Exception):
    """ΔV would make some row's multiplicity negative: the stored view and ΔV disagree."""


def apply_change(
    spark: SparkSession, root: str, snapshot: str, layout: StorageLayout, change: DataFrame
) -> AppliedChange:
    """Apply ``change`` (ΔV: storage columns ``c0..`` and the weight, consolidated) to the
    snapshot at ``snapshot``; the new snapshot is written under ``root``. Two Spark jobs:
    ΔV's buckets, then the rewrite."""
    visible = storage_columns(len(change.columns) - 1)
    change = change.withColumn(BUCKET_COLUMN, bucket_of(change, visible, layout.buckets))
    change = change.persist(StorageLevel.MEMORY_AND_DISK)  # computed once, read twice
    path = new_snapshot_path(root)
    try:
        touched = frozenset(
            int(row[0]) for row in change.select(BUCKET_COLUMN).distinct().collect()
        )
        if not touched:  # ΔV is empty: the view stays as it is
            return AppliedChange(snapshot, 0, 0, 0, 0)
        applied = _rewrite_buckets(spark, snapshot, layout, change, visible, touched, path)
        _link_untouched(spark, snapshot, path, touched)
        empty = spark.createDataFrame([], _storage_schema(layout, change, visible))
        keep_schema_readable(empty, path)
        return applied
    except BaseException:
        remove_path(spark, path)
        raise
    finally:
        change.unpersist()


def _stored(
    spark: SparkSession,
    snapshot: str,
    layout: StorageLayout,
    change: DataFrame,
    visible: list[str],
) -> DataFrame:
    """The snapshot's stored rows, read with the storage schema (so an empty one reads)."""
    schema = _storage_schema(layout, change, visible)
    schema = schema.add(T.StructField(BUCKET_COLUMN, T.IntegerType()))
    return spark.read.schema(schema).parquet(snapshot)


def _storage_schema(layout: StorageLayout, change: DataFrame, visible: list[str]) -> T.StructType:
    """The columns of a stored file: the visible ones, then the counter if counted."""
    types = {field.name: field.dataType for field in change.schema.fields}
    fields = [T.StructField(c, types[c]) for c in visible]
    if layout.counted:
        fields.append(T.StructField(COUNT_COLUMN, T.LongType()))
    return T.StructType(fields)


def _rewrite_buckets(
    spark: SparkSession,
    snapshot: str,
    layout: StorageLayout,
    change: DataFrame,
    visible: list[str],
    touched: frozenset[int],
    path: str,
) -> AppliedChange:
    """Write the ``touched`` buckets into ``path``: stored rows plus change, merged."""
    stored = _stored(spark, snapshot, layout, change, visible)
    stored = stored.where(F.col(BUCKET_COLUMN).isin(sorted(touched)))  # partition pruning
    old_weight = F.col(COUNT_COLUMN) if layout.counted else F.lit(1)
    keys = [F.col(c) for c in visible] + [F.col(BUCKET_COLUMN)]
    rows = stored.select(*keys, old_weight.cast("long").alias("old"), F.lit(0).alias("delta"))
    rows = rows.unionByName(
        change.select(*keys, F.lit(0).cast("long").alias("old"), F.col(WEIGHT).alias("delta"))
    )
    merged = rows.groupBy(*keys).agg(F.sum("old").alias("old"), F.sum("delta").alias("delta"))
    merged = merged.withColumn("new", F.col("old") + F.col("delta"))
    metrics = Observation("sparkmv_apply")
    merged = merged.observe(metrics, *_metrics(layout))
    kept = merged.where(F.col("new") > 0)
    if layout.counted:
        out = kept.select(*visible, F.col("new").alias(COUNT_COLUMN), BUCKET_COLUMN)
    else:
        copies = F.explode(F.array_repeat(F.lit(True), F.col("new").cast("int")))
        out = kept.select(*visible, BUCKET_COLUMN, copies.alias("copy")).drop("copy")
    out.repartition(BUCKET_COLUMN).write.mode("errorifexists").partitionBy(BUCKET_COLUMN).parquet(
        path
    )
    observed = observed_counts(metrics, ("inserted", "deleted", "rewritten", "negative"))
    if observed["negative"]:
        raise ChangeDoesNotFitError(
            f"{observed['negative']} rows of the view would occur a negative number of times"
        )
    return AppliedChange(
        path,
        observed["inserted"],
        observed["deleted"],
        len(touched),
        observed["rewritten"],
    )


def _metrics(layout: StorageLayout) -> list[Column]:
    """Visible rows inserted and deleted, rows rewritten, rows gone negative: per group."""
    old, new, delta = F.col("old"), F.col("new"), F.col("delta")
    if layout.counted:  # a DISTINCT view shows a row while its counter is positive
        inserted = F.sum(F.when((old <= 0) & (new > 0), 1).otherwise(0))
        deleted = F.sum(F.when((old > 0) & (new <= 0), 1).otherwise(0))
        rewritten = F.sum(F.when(new > 0, 1).otherwise(0))
    else:
        inserted = F.sum(F.greatest(delta, F.lit(0)))
        deleted = F.sum(F.greatest(-delta, F.lit(0)))
        rewritten = F.sum(F.greatest(new, F.lit(0)))
    negative = F.sum(F.when(new < 0, 1).otherwise(0))
    return [
        F.coalesce(inserted, F.lit(0)).alias("inserted"),
        F.coalesce(deleted, F.lit(0)).alias("deleted"),
        F.coalesce(rewritten, F.lit(0)).alias("rewritten"),
        F.coalesce(negative, F.lit(0)).alias("negative"),
    ]


def _link_untouched(spark: SparkSession, snapshot: str, path: str, touched: frozenset[int]) -> None:
    prefix = f"{BUCKET_COLUMN}="
    for name in fs.list_names(spark, snapshot):
        if not name.startswith(prefix) or int(name[len(prefix) :]) in touched:
            continue
        for file in fs.data_files(spark, f"{snapshot}/{name}"):
            fs.link(spark, file.path, f"{path}/{name}/{file.path.rpartition('/')[2]}")
