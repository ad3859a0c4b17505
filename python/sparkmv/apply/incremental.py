"""Apply a view's change ΔV to its bucketed storage, touching only the buckets it hits.

Order, each step safe to crash after (as for a full refresh, ``materialize.py``):
1. compute ΔV once (persisted) and the buckets its rows fall into; write each touched
   bucket anew, merged by the layout's ``Merge``: for rows (``row_merge``) its stored rows
   (as a Z-set: weight 1 per copy, or the stored counter) plus ΔV's rows for it,
   consolidated, a row whose multiplicity reaches zero dropped; for an aggregate view's
   groups, their state plus the change's (``apply/aggregate.py``);
2. hard-link every untouched bucket's files into the new snapshot (no bytes copied);
3. the caller commits the catalog view to the new snapshot (one metastore call).

Readers keep reading the previous snapshot until the commit; its files are never changed.
A multiplicity that would go negative means ΔV does not fit the stored view (a bug, or a
change the log did not see): nothing is committed and the caller refreshes fully.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkmv import fs
from sparkmv.apply.snapshot import (
    BUCKET_COLUMN,
    bucket_of,
    keep_schema_readable,
    new_snapshot_path,
    observed_counts,
    remove_path,
    storage_columns,
)
from sparkmv.catalog.metadata import StorageLayout
from sparkmv.zset import COUNT_COLUMN, WEIGHT, as_bag


@dataclass(frozen=True)
class AppliedChange:
    snapshot: str  # the new snapshot (the old one when ΔV was empty)
    rows_inserted: int  # visible rows
    rows_deleted: int
    buckets_rewritten: int
    rows_rewritten: int


class ChangeDoesNotFitError(Exception):
    """ΔV would make some row's multiplicity negative: the stored view and ΔV disagree."""


@dataclass(frozen=True)
class Merge:
    """How a layout merges a change into the stored rows of the buckets the change touches.

    ``bucket_columns``: the change's columns whose hash is a row's bucket (as when the
    snapshot was written); ``schema``: a stored file's columns; ``rewrite(stored, change,
    path)`` writes the merged rows of the touched buckets into ``path`` (partitioned by
    bucket) and returns the metrics ``inserted``, ``deleted``, ``rewritten``, ``negative``.
    """

    bucket_columns: list[str]
    schema: T.StructType
    rewrite: Callable[[DataFrame, DataFrame, str], dict[str, int]]


METRICS = ("inserted", "deleted", "rewritten", "negative")


def apply_change(
    spark: SparkSession,
    root: str,
    snapshot: str,
    layout: StorageLayout,
    change: DataFrame,
    merge: Merge,
) -> AppliedChange:
    """Apply ``change`` to the snapshot at ``snapshot`` by ``merge``; the new snapshot is
    written under ``root``. Two Spark jobs: the change's buckets, then the rewrite."""
    change = change.withColumn(
        BUCKET_COLUMN, bucket_of(change, merge.bucket_columns, layout.buckets)
    )
    change = change.persist(StorageLevel.MEMORY_AND_DISK)  # computed once, read twice
    path = new_snapshot_path(root)
    try:
        touched = frozenset(
            int(row[0]) for row in change.select(BUCKET_COLUMN).distinct().collect()
        )
        if not touched:  # ΔV is empty: the view stays as it is
            return AppliedChange(snapshot, 0, 0, 0, 0)
        schema = T.StructType([*merge.schema.fields, T.StructField(BUCKET_COLUMN, T.IntegerType())])
        stored = spark.read.schema(schema).parquet(snapshot)
        stored = stored.where(F.col(BUCKET_COLUMN).isin(sorted(touched)))  # partition pruning
        observed = merge.rewrite(stored, change, path)
        if observed["negative"]:
            raise ChangeDoesNotFitError(
                f"{observed['negative']} rows of the view would occur a negative number of times"
            )
        _link_untouched(spark, snapshot, path, touched)
        keep_schema_readable(spark.createDataFrame([], merge.schema), path)
        return AppliedChange(
            path, observed["inserted"], observed["deleted"], len(touched), observed["rewritten"]
        )
    except BaseException:
        remove_path(spark, path)
        raise
    finally:
        change.unpersist()


def write_merged(
    merged: DataFrame,
    metrics: list[Column],
    stored: Callable[[DataFrame], DataFrame],
    path: str,
) -> dict[str, int]:
    """Write ``stored(merged)`` (the rows to keep, with the bucket column) as bucket
    directories under ``path``; return ``metrics`` (named ``METRICS``) over ``merged``.

    The metrics are observed after the shuffle by bucket, in the writing stage: observed
    before it, they would be lost whenever no row is kept (adaptive execution replaces an
    empty stage's plan, observation included).
    """
    observation = Observation("sparkmv_apply")
    named = [F.coalesce(m, F.lit(0)).alias(n) for m, n in zip(metrics, METRICS, strict=True)]
    observed = merged.repartition(BUCKET_COLUMN).observe(observation, *named)
    stored(observed).write.mode("errorifexists").partitionBy(BUCKET_COLUMN).parquet(path)
    return observed_counts(observation, METRICS)


def row_merge(layout: StorageLayout, change: DataFrame) -> Merge:
    """The merge of a row layout (a bag of rows, or rows with a counter): ΔV's columns
    ``c0 …`` and the weight."""
    visible = storage_columns(len(change.columns) - 1)
    types = {field.name: field.dataType for field in change.schema.fields}
    fields = [T.StructField(c, types[c]) for c in visible]
    if layout.counted:
        fields.append(T.StructField(COUNT_COLUMN, T.LongType()))

    def rewrite(stored: DataFrame, change: DataFrame, path: str) -> dict[str, int]:
        """The touched buckets: stored rows plus change, merged."""
        old_weight = F.col(COUNT_COLUMN) if layout.counted else F.lit(1)
        keys = [F.col(c) for c in visible] + [F.col(BUCKET_COLUMN)]
        rows = stored.select(*keys, old_weight.cast("long").alias("old"), F.lit(0).alias("delta"))
        rows = rows.unionByName(
            change.select(*keys, F.lit(0).cast("long").alias("old"), F.col(WEIGHT).alias("delta"))
        )
        merged = rows.groupBy(*keys).agg(F.sum("old").alias("old"), F.sum("delta").alias("delta"))
        merged = merged.withColumn("new", F.col("old") + F.col("delta"))
        return write_merged(merged, _metrics(layout), kept_rows, path)

    def kept_rows(merged: DataFrame) -> DataFrame:
        kept = merged.where(F.col("new") > 0)
        if layout.counted:
            return kept.select(*visible, F.col("new").alias(COUNT_COLUMN), BUCKET_COLUMN)
        return as_bag(kept.select(*visible, BUCKET_COLUMN, "new"), weight="new")

    return Merge(visible, T.StructType(fields), rewrite)


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
    return [inserted, deleted, rewritten, negative]


def _link_untouched(spark: SparkSession, snapshot: str, path: str, touched: frozenset[int]) -> None:
    prefix = f"{BUCKET_COLUMN}="
    for name in fs.list_names(spark, snapshot):
        if not name.startswith(prefix) or int(name[len(prefix) :]) in touched:
            continue
        for file in fs.data_files(spark, f"{snapshot}/{name}"):
            fs.link(spark, file.path, f"{path}/{name}/{file.path.rpartition('/')[2]}")
