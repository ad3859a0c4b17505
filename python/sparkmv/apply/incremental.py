"""Apply a view's change ΔV to its bucketed storage, touching only the buckets it hits.

Order, each step safe to crash after (as for a full refresh, ``materialize.py``):
1. compute ΔV once (persisted) and the buckets its rows fall into;
2. find the stored rows ΔV merges into: in each touched bucket, the rows equal to a row of
   ΔV on ``Merge.key_columns`` (a row's value, a group's keys), read without the rows the
   snapshot's mask already hides;
3. write, into the new snapshot, the merge of those rows with ΔV (``Merge.rewrite``): for
   rows (``row_merge``) the stored rows (as a Z-set: weight 1 per copy, or the stored
   counter) plus ΔV's, consolidated, a row whose multiplicity reaches zero dropped; for an
   aggregate view's groups, their state plus the change's (``apply/aggregate.py``);
4. hard-link the files of every bucket into the new snapshot, and write its mask: the old
   mask plus the positions of the rows merged in step 3 (they were replaced);
5. the caller commits the catalog view to the new snapshot (one metastore call).

So a refresh writes about |ΔV| rows, not the touched buckets (merge-on-read). A touched bucket
is *compacted* instead — rewritten whole from its live rows merged with ΔV, its mask dropped —
when its mask would exceed ``STORAGE_MAX_MASKED_SHARE_CONF`` of its stored rows or it holds
``MAX_FILES_PER_BUCKET`` files; and every touched bucket is rewritten whole while they hold
fewer than ``STORAGE_PATCH_MIN_ROWS_CONF`` rows (a small view is cheaper rewritten than
patched: patching costs a few more Spark jobs).

Readers keep reading the previous snapshot until the commit; its files are never changed.
A multiplicity that would go negative means ΔV does not fit the stored view (a bug, or a
change the log did not see): nothing is committed and the caller refreshes fully.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkmv import fs
from sparkmv.apply.snapshot import (
    BUCKET_COLUMN,
    MASK_SCHEMA,
    bucket_of,
    keep_schema_readable,
    live_rows,
    mask_path,
    new_snapshot_path,
    observed_counts,
    read_mask,
    remove_path,
    storage_columns,
)
from sparkmv.catalog.metadata import MvMetadata, StorageLayout
from sparkmv.config import STORAGE_MAX_MASKED_SHARE_CONF, STORAGE_PATCH_MIN_ROWS_CONF
from sparkmv.zset import COUNT_COLUMN, WEIGHT, as_bag

DEFAULT_MAX_MASKED_SHARE = 0.25
"""A touched bucket whose mask would hide more than this share of its stored rows is
compacted: readers then skip at most about a quarter of what they read."""
DEFAULT_PATCH_MIN_ROWS = 50_000
"""Touched buckets holding fewer rows than this (estimated) are rewritten whole: patching
them would cost more Spark jobs than writing them."""
MAX_FILES_PER_BUCKET = 16
"""A touched bucket with this many files is compacted (each patch adds one file)."""


@dataclass(frozen=True)
class AppliedChange:
    snapshot: str  # the new snapshot (the old one when ΔV was empty)
    masked_rows: int  # the size of its mask
    rows_inserted: int  # visible rows
    rows_deleted: int
    buckets_patched: int
    buckets_rewritten: int
    rows_written: int


class ChangeDoesNotFitError(Exception):
    """ΔV would make some row's multiplicity negative: the stored view and ΔV disagree."""


@dataclass(frozen=True)
class Merge:
    """How a layout merges a change into the stored rows it hits.

    ``key_columns``: the columns that identify a stored row (a row's value, a group's
    keys): a change row merges into the stored rows equal to it on them (NULL equal to
    NULL), and their hash is the row's bucket (as when the snapshot was written);
    ``schema``: a stored file's columns; ``rewrite(stored, change, path)`` writes the merge
    of ``stored`` (every stored row with the keys of some change row, and maybe others)
    with ``change`` into ``path`` (partitioned by bucket) and returns the metrics
    ``inserted``, ``deleted``, ``rewritten`` (rows written), ``negative``.
    """

    key_columns: list[str]
    schema: T.StructType
    rewrite: Callable[[DataFrame, DataFrame, str], dict[str, int]]


METRICS = ("inserted", "deleted", "rewritten", "negative")


def apply_change(
    spark: SparkSession, root: str, view: MvMetadata, change: DataFrame, merge: Merge
) -> AppliedChange:
    """Apply ``change`` to the snapshot of ``view`` by ``merge``; the new snapshot is
    written under ``root``."""
    layout = view.layout
    change = change.withColumn(BUCKET_COLUMN, bucket_of(change, merge.key_columns, layout.buckets))
    change = change.persist(StorageLevel.MEMORY_AND_DISK)  # computed once, read thrice
    path = new_snapshot_path(root)
    hit: DataFrame | None = None
    try:
        changed = {int(b): int(n) for b, n in change.groupBy(BUCKET_COLUMN).count().collect()}
        touched = frozenset(changed)
        if not touched:  # ΔV is empty: the view stays as it is
            return AppliedChange(view.snapshot, view.masked_rows, 0, 0, 0, 0, 0)
        files = _bucket_files(spark, view.snapshot)
        stored = live_rows(spark, view.snapshot, merge.schema, view.masked_rows)
        stored = stored.where(F.col(BUCKET_COLUMN).isin(sorted(touched)))  # partition pruning
        whole = touched
        if _patching(spark, view, len(touched)):
            whole = _to_compact(spark, view, changed, files)
            patched = stored.where(~F.col(BUCKET_COLUMN).isin(sorted(whole)))
            hit = _rows_hit(patched, change, merge.key_columns)
            hit = hit.persist(StorageLevel.MEMORY_AND_DISK)  # merged, then masked
        whole_column = F.col(BUCKET_COLUMN).isin(sorted(whole))
        merged = stored.where(whole_column)
        if hit is not None:
            merged = hit.unionByName(merged)
        observed = merge.rewrite(
            merged.select(*merge.schema.fieldNames(), BUCKET_COLUMN), change, path
        )
        if observed["negative"]:
            raise ChangeDoesNotFitError(
                f"{observed['negative']} rows of the view would occur a negative number of times"
            )
        _link_buckets(spark, view.snapshot, path, files, except_buckets=whole)
        masked = _write_mask(spark, view, hit, whole, path)
        keep_schema_readable(spark.createDataFrame([], merge.schema), path)
        return AppliedChange(
            path,
            masked,
            observed["inserted"],
            observed["deleted"],
            len(touched - whole),
            len(whole),
            observed["rewritten"],
        )
    except BaseException:
        remove_path(spark, path)
        raise
    finally:
        change.unpersist()
        if hit is not None:
            hit.unpersist()


def _patching(spark: SparkSession, view: MvMetadata, touched: int) -> bool:
    """Whether the touched buckets are big enough to patch: about ``touched / buckets`` of
    the view's rows live in them."""
    return view.row_count * touched >= _patch_min_rows(spark) * view.layout.buckets


def _patch_min_rows(spark: SparkSession) -> int:
    return int(spark.conf.get(STORAGE_PATCH_MIN_ROWS_CONF, "") or DEFAULT_PATCH_MIN_ROWS)


def _max_masked_share(spark: SparkSession) -> float:
    return float(spark.conf.get(STORAGE_MAX_MASKED_SHARE_CONF, "") or DEFAULT_MAX_MASKED_SHARE)


def describe_storage_plan(spark: SparkSession, view: MvMetadata) -> str:
    """How ``apply_change`` will write the touched buckets of ``view`` (for EXPLAIN): what
    it decides from ΔV's buckets is stated as the rule, the rest as decided."""
    minimum = _patch_min_rows(spark)
    if view.row_count < minimum:  # even touching every bucket, fewer than ``minimum`` rows
        return (
            f"Rewrite the touched buckets whole (the view holds {view.row_count}"
            f" row{'' if view.row_count == 1 else 's'}, fewer"
            f" than {STORAGE_PATCH_MIN_ROWS_CONF} = {minimum})."
        )
    share = _max_masked_share(spark)
    return (
        f"Patch the touched buckets when they hold about {minimum} rows or more (the view"
        f" holds {view.row_count} in {view.layout.buckets}), else rewrite them whole: append"
        f" each one's merged rows as a file and mask the rows they replace ({view.masked_rows}"
        f" masked now); compact a bucket instead when its mask would pass {share:.0%} of its"
        f" rows or it holds {MAX_FILES_PER_BUCKET} files."
    )


def _rows_hit(stored: DataFrame, change: DataFrame, keys: list[str]) -> DataFrame:
    """The rows of ``stored`` equal to some row of ``change`` on ``keys`` (NULL-safe), in
    the same bucket: the stored rows the change merges into."""
    probes = change.select(
        F.col(BUCKET_COLUMN).alias("__probe_bucket"),
        *(F.col(key).alias(f"__probe_{i}") for i, key in enumerate(keys)),
    ).distinct()
    same = [F.col(BUCKET_COLUMN) == F.col("__probe_bucket")] + [
        F.col(key).eqNullSafe(F.col(f"__probe_{i}")) for i, key in enumerate(keys)
    ]
    return stored.join(probes, reduce(lambda a, b: a & b, same), "left_semi")


def _to_compact(
    spark: SparkSession,
    view: MvMetadata,
    changed: dict[int, int],
    files: dict[int, list[str]],
) -> frozenset[int]:
    """The touched buckets to rewrite whole: those with ``MAX_FILES_PER_BUCKET`` files, and
    those whose mask (what it hides now, plus about one row per change row there) would
    pass ``STORAGE_MAX_MASKED_SHARE_CONF`` of their stored rows. A bucket's stored rows are
    estimated as an even share of the view's: no job reads the data for this, one reads
    the (small) mask when there is one."""
    share = _max_masked_share(spark)
    per_bucket = (view.row_count + view.masked_rows) / view.layout.buckets
    masked: dict[int, int] = {}
    if view.masked_rows:
        mask = read_mask(spark, view.snapshot).where(F.col(BUCKET_COLUMN).isin(sorted(changed)))
        masked = {int(b): int(n) for b, n in mask.groupBy(BUCKET_COLUMN).count().collect()}
    return frozenset(
        bucket
        for bucket, rows in changed.items()
        if len(files.get(bucket, ())) >= MAX_FILES_PER_BUCKET
        or masked.get(bucket, 0) + rows > share * per_bucket
    )


def _write_mask(
    spark: SparkSession,
    view: MvMetadata,
    hit: DataFrame | None,
    whole: frozenset[int],
    path: str,
) -> int:
    """Write the new snapshot's mask: the old one's outside the buckets rewritten ``whole``,
    and the positions of the rows ``hit`` (they were replaced); return its size."""
    parts = []
    if view.masked_rows:
        parts.append(
            read_mask(spark, view.snapshot).where(~F.col(BUCKET_COLUMN).isin(sorted(whole)))
        )
    if hit is not None:
        parts.append(hit.select(*MASK_SCHEMA.fieldNames()))
    if not parts:
        return 0
    mask = reduce(DataFrame.unionByName, parts)
    rows = Observation("sparkmv_mask")
    mask = mask.observe(rows, F.count(F.lit(1)).alias("rows"))
    mask.coalesce(1).write.mode("errorifexists").parquet(mask_path(path))
    return observed_counts(rows, ("rows",))["rows"]


def write_merged(
    merged: DataFrame,
    metrics: list[Column],
    stored: Callable[[DataFrame], DataFrame],
    path: str,
    by_bucket: bool = False,
) -> dict[str, int]:
    """Write ``stored(merged)`` (the rows to keep, with the bucket column) as bucket
    directories under ``path``; return ``metrics`` (named ``METRICS``) over ``merged``
    (``by_bucket``: ``merged`` is the output of a shuffle by bucket already).

    The metrics are observed after the shuffle by bucket, in the writing stage: observed
    before it, they would be lost whenever no row is kept (adaptive execution replaces an
    empty stage's plan, observation included).
    """
    observation = Observation("sparkmv_apply")
    named = [F.coalesce(m, F.lit(0)).alias(n) for m, n in zip(metrics, METRICS, strict=True)]
    if not by_bucket:
        merged = merged.repartition(BUCKET_COLUMN)
    observed = merged.observe(observation, *named)
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
        # Shuffled by bucket once: the grouping by every key then needs no shuffle of its own.
        rows = rows.repartition(BUCKET_COLUMN)
        merged = rows.groupBy(*keys).agg(F.sum("old").alias("old"), F.sum("delta").alias("delta"))
        merged = merged.withColumn("new", F.col("old") + F.col("delta"))
        return write_merged(merged, _metrics(layout), kept_rows, path, by_bucket=True)

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


def _bucket_files(spark: SparkSession, snapshot: str) -> dict[int, list[str]]:
    """The data files of each bucket of ``snapshot`` (one listing, by Spark), by name: Spark
    lists them as URIs, and only these last two segments of the path are Spark's own."""
    bucket_only = T.StructType(MASK_SCHEMA.fields[:1])
    files: dict[int, list[str]] = {}
    for uri in spark.read.schema(bucket_only).parquet(snapshot).inputFiles():
        directory, _, name = uri.rpartition("/")
        bucket = int(directory.rpartition(f"/{BUCKET_COLUMN}=")[2])
        files.setdefault(bucket, []).append(name)
    return files


def _link_buckets(
    spark: SparkSession,
    snapshot: str,
    path: str,
    files: dict[int, list[str]],
    except_buckets: frozenset[int],
) -> None:
    """Hard-link the data ``files`` of every bucket of ``snapshot`` but ``except_buckets``
    into ``path``."""
    for bucket, names in files.items():
        if bucket in except_buckets:
            continue
        directory = f"{BUCKET_COLUMN}={bucket}"
        for name in names:
            fs.link(spark, f"{snapshot}/{directory}/{name}", f"{path}/{directory}/{name}")
