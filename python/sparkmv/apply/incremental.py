"""Apply a view's change ΔV to its bucketed storage, touching only the buckets it hits.

Order, each step safe to crash after (as for a full refresh, ``materialize.py``):
1. compute ΔV once, with each row's bucket: brought to the driver when small (its buckets
   counted there) and merged as a local relation, else written into the new snapshot
   (``CHANGE_DIR``, by bucket: the directories it wrote are the buckets it touches, its
   files' footers count its rows per bucket);
2. find the stored rows ΔV merges into: in each patched bucket, the rows equal to a row of
   ΔV on ``Merge.key_columns`` (a row's value, a group's keys), read without the rows the
   snapshot's mask already hides, and write them, with their positions, as the new
   snapshot's mask (by bucket): they are about to be replaced;
3. write, into the new snapshot, the merge of those rows (and of the buckets rewritten
   whole) with ΔV (``Merge.rewrite``): for rows (``row_merge``) the stored rows (as a
   Z-set: weight 1 per copy, or the stored counter) plus ΔV's, consolidated, a row whose
   multiplicity reaches zero dropped; for an aggregate view's groups, their state plus the
   change's (``apply/aggregate.py``);
4. hard-link the files of every bucket not rewritten whole into the new snapshot, and the
   old mask's files of those buckets into its mask;
5. the caller commits the catalog view to the new snapshot (one metastore call).

The stored rows are read by bucket directory and explicit schema: no listing of the other
buckets, no schema inference, no job to count anything.

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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce

import pyarrow.compute as pc
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkmv import fs
from sparkmv.apply.snapshot import (
    BUCKET_COLUMN,
    CHANGE_DIR,
    FILE_COLUMN,
    MASK_SCHEMA,
    ROW_COLUMN,
    bucket_of,
    keep_schema_readable,
    mask_path,
    new_snapshot_path,
    observed_counts,
    read_mask,
    remove_path,
    storage_columns,
)
from sparkmv.catalog.metadata import MvMetadata, StorageLayout
from sparkmv.config import STORAGE_MAX_MASKED_SHARE_CONF, STORAGE_PATCH_MIN_ROWS_CONF
from sparkmv.delta.relation import WEIGHT_SQL, TempViews
from sparkmv.parse.statements import quote_identifier
from sparkmv.zset import COUNT_COLUMN

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
    written under ``root``.

    Spark jobs: one stages ΔV, one writes the merged rows, and a patch costs one more that
    finds (and masks) the stored rows ΔV replaces, plus the broadcast of ΔV's keys it joins
    them with. Which buckets ΔV touches, how many rows
    it has in each and how many rows each bucket's mask holds are read from the files those
    jobs wrote (listings and parquet footers), not by jobs of their own.
    """
    path = new_snapshot_path(root)
    try:
        staged = _stage_change(spark, change, merge, view.layout.buckets, path)
        if not staged.rows:  # ΔV is empty: the view stays as it is
            remove_path(spark, path)
            return AppliedChange(view.snapshot, view.masked_rows, 0, 0, 0, 0, 0)
        touched = frozenset(staged.rows)
        files = _bucket_files(spark, view.snapshot)
        mask = _stored_mask(spark, view)
        whole = touched
        if _patching(spark, view, len(touched)):
            whole = _to_compact(spark, view, staged.rows, mask, files)
        merged = _live_rows(spark, view, merge.schema, mask, whole, files)
        hit_count = 0
        if touched - whole:
            hits, hit_count = _mask_hits(
                spark, view, merge, staged.frame, touched - whole, mask, files, path
            )
            merged = hits.unionByName(merged)
        observed = merge.rewrite(merged, staged.frame, path)  # stored columns, bucket
        if observed["negative"]:
            raise ChangeDoesNotFitError(
                f"{observed['negative']} rows of the view would occur a negative number of times"
            )
        _link_buckets(spark, view.snapshot, path, files, except_buckets=whole)
        masked = hit_count + mask.carry(spark, mask_path(path), except_buckets=whole)
        keep_schema_readable(spark, merge.schema, path)
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


@dataclass(frozen=True)
class StagedChange:
    """ΔV computed once, with each row's bucket: read by the jobs that merge it;
    ``rows``: its rows per bucket."""

    frame: DataFrame
    rows: dict[int, int]


LOCAL_CHANGE_MAX_ROWS = 100_000
"""A ΔV of at most this many rows is brought to the driver and merged as a local relation;
a larger one is written into the new snapshot (``CHANGE_DIR``) and read back."""

LOCAL_CHANGE_TYPES = (
    T.BooleanType,
    T.ByteType,
    T.ShortType,
    T.IntegerType,
    T.LongType,
    T.FloatType,
    T.DoubleType,
    T.DecimalType,
    T.StringType,
    T.BinaryType,
    T.DateType,
    T.TimestampType,
    T.TimestampNTZType,
)
"""Column types that travel to the driver as Arrow and back unchanged."""


def _stage_change(
    spark: SparkSession, change: DataFrame, merge: Merge, buckets: int, path: str
) -> StagedChange:
    """ΔV (``change``) with its bucket, computed by one Spark job (which also fills any
    observation on the change's inputs), and its rows per bucket.

    A small ΔV comes to the driver as Arrow (its buckets counted there) and goes back as a
    local relation: a collect costs about a quarter of a partitioned write and its commit.
    Otherwise (larger, or of a type Arrow does not carry back unchanged) ΔV is written into
    ``path``'s ``CHANGE_DIR`` by bucket and read back, its rows counted from the files'
    footers."""
    bucketed = change.withColumn(BUCKET_COLUMN, bucket_of(change, merge.key_columns, buckets))
    schema = _bucketed(change.schema)
    if all(isinstance(field.dataType, LOCAL_CHANGE_TYPES) for field in schema.fields):
        table = bucketed.toArrow()
        if table.num_rows <= LOCAL_CHANGE_MAX_ROWS:
            counted = pc.value_counts(table.column(BUCKET_COLUMN)).to_pylist()
            rows = {int(item["values"]): int(item["counts"]) for item in counted}
            frame = spark.createDataFrame(table, schema=schema) if rows else change
            return StagedChange(frame, rows)
    staged_path = f"{path}/{CHANGE_DIR}"
    bucketed.write.mode("errorifexists").partitionBy(BUCKET_COLUMN).parquet(staged_path)
    rows = _rows_per_bucket(fs.parquet_row_counts(spark, staged_path))
    frame = spark.read.schema(schema).parquet(staged_path) if rows else change
    return StagedChange(frame, {bucket: n for bucket, n in rows.items() if n})


def _rows_per_bucket(counts: dict[str, int]) -> dict[int, int]:
    """Rows per bucket of files listed by path (``…/mv_bucket=k/part-…``); files outside a
    bucket directory (a mask written before masks were bucketed) count for bucket -1."""
    rows: dict[int, int] = {}
    for file, count in counts.items():
        bucket = _bucket_in_path(file)
        rows[bucket] = rows.get(bucket, 0) + count
    return rows


def _bucket_in_path(file: str) -> int:
    directory = file.rpartition("/")[0].rpartition("/")[2]
    prefix = f"{BUCKET_COLUMN}="
    return int(directory[len(prefix) :]) if directory.startswith(prefix) else -1


@dataclass(frozen=True)
class StoredMask:
    """The mask of a snapshot: its files by bucket (written by bucket, ``_mask_hits``) and
    its rows per bucket. A mask of one unbucketed file (written by an earlier version) has
    ``legacy`` set and is carried over by a Spark job."""

    snapshot: str
    files: dict[int, list[str]]
    rows: dict[int, int]
    legacy: bool

    def carry(self, spark: SparkSession, target: str, except_buckets: frozenset[int]) -> int:
        """Link this mask's files of every bucket but ``except_buckets`` (rewritten whole:
        their rows are all new) under ``target``; return how many rows they mask."""
        if self.legacy:
            old = read_mask(spark, self.snapshot).where(
                ~F.col(BUCKET_COLUMN).isin(sorted(except_buckets))
            )
            before = sum(fs.parquet_row_counts(spark, target).values())  # the new hits
            old.write.mode("append").partitionBy(BUCKET_COLUMN).parquet(target)
            return sum(fs.parquet_row_counts(spark, target).values()) - before
        carried = 0
        for bucket, names in self.files.items():
            if bucket in except_buckets:
                continue
            directory = f"{BUCKET_COLUMN}={bucket}"
            for name in names:
                fs.link(
                    spark,
                    f"{mask_path(self.snapshot)}/{directory}/{name}",
                    f"{target}/{directory}/{name}",
                )
            carried += self.rows.get(bucket, 0)
        return carried

    def buckets(self) -> frozenset[int]:
        return frozenset(bucket for bucket, rows in self.rows.items() if rows)


def _stored_mask(spark: SparkSession, view: MvMetadata) -> StoredMask:
    if not view.masked_rows:
        return StoredMask(view.snapshot, {}, {}, legacy=False)
    counts = fs.parquet_row_counts(spark, mask_path(view.snapshot))
    files: dict[int, list[str]] = {}
    for file in counts:
        files.setdefault(_bucket_in_path(file), []).append(file.rpartition("/")[2])
    if -1 in files:  # one unbucketed file: count its rows per bucket with a job
        mask = read_mask(spark, view.snapshot)
        rows = {int(b): int(n) for b, n in mask.groupBy(BUCKET_COLUMN).count().collect()}
        return StoredMask(view.snapshot, {}, rows, legacy=True)
    return StoredMask(view.snapshot, files, _rows_per_bucket(counts), legacy=False)


def _read_buckets(
    spark: SparkSession, directory: str, schema: T.StructType, buckets: list[int]
) -> DataFrame:
    """The rows of ``buckets`` (non-empty) of the bucketed ``directory``, with ``schema``
    (its bucket column included): one path, a glob over the bucket directories, so that
    Spark lists just those and infers nothing."""
    names = ",".join(str(bucket) for bucket in buckets)
    pattern = names if len(buckets) == 1 else f"{{{names}}}"
    reader = spark.read.schema(schema).option("basePath", directory)
    return reader.parquet(f"{directory}/{BUCKET_COLUMN}={pattern}")


def _live_rows(
    spark: SparkSession,
    view: MvMetadata,
    schema: T.StructType,
    mask: StoredMask,
    buckets: frozenset[int],
    files: dict[int, list[str]],
    positions: bool = False,
) -> DataFrame:
    """The stored rows of ``buckets`` that are part of the view (``schema``: a stored
    file's columns), with their bucket (and with ``positions`` each row's ``FILE_COLUMN``
    and ``ROW_COLUMN``); read by path and schema, so Spark neither lists the other buckets
    nor infers anything. ``files``: the snapshot's data files by bucket."""
    bucketed = _bucketed(schema)
    columns = [*bucketed.fieldNames(), *([FILE_COLUMN, ROW_COLUMN] if positions else [])]
    present = [b for b in sorted(buckets) if files.get(b)]
    if not present:
        empty = (
            bucketed if not positions else T.StructType([*bucketed.fields, *MASK_SCHEMA.fields[1:]])
        )
        return spark.createDataFrame([], empty)
    stored = _read_buckets(spark, view.snapshot, bucketed, present)
    masked = mask.buckets() & frozenset(present)
    if not positions and not masked:
        return stored
    stored = stored.select(
        *bucketed.fieldNames(),
        F.col("_metadata.file_name").alias(FILE_COLUMN),
        F.col("_metadata.row_index").alias(ROW_COLUMN),
    )
    if masked:
        hidden = read_mask(spark, view.snapshot).where(F.col(BUCKET_COLUMN).isin(sorted(masked)))
        stored = stored.join(hidden, list(MASK_SCHEMA.fieldNames()), "left_anti")
    return stored.select(*columns)


def _bucketed(schema: T.StructType) -> T.StructType:
    return T.StructType([*schema.fields, T.StructField(BUCKET_COLUMN, T.IntegerType())])


def _mask_hits(
    spark: SparkSession,
    view: MvMetadata,
    merge: Merge,
    change: DataFrame,
    buckets: frozenset[int],
    mask: StoredMask,
    files: dict[int, list[str]],
    path: str,
) -> tuple[DataFrame, int]:
    """Write, into the new snapshot's mask, the live stored rows of the patched ``buckets``
    that ``change`` merges into (equal on ``Merge.key_columns``, NULL-safe, same bucket),
    whole and with their positions: the mask reads the positions, the merge the rows (so
    they are found once). One Spark job; return those rows as written, and their number."""
    stored = _live_rows(spark, view, merge.schema, mask, buckets, files, positions=True)
    hit = _rows_hit(stored, change, merge.key_columns)
    target = mask_path(path)
    hit.write.mode("errorifexists").partitionBy(BUCKET_COLUMN).parquet(target)
    hits = _rows_per_bucket(fs.parquet_row_counts(spark, target))
    written = sorted(bucket for bucket, rows in hits.items() if rows)
    if not written:
        return spark.createDataFrame([], _bucketed(merge.schema)), 0
    return _read_buckets(spark, target, _bucketed(merge.schema), written), sum(hits.values())


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
    mask: StoredMask,
    files: dict[int, list[str]],
) -> frozenset[int]:
    """The touched buckets to rewrite whole: those with ``MAX_FILES_PER_BUCKET`` files, and
    those whose mask (what it hides now, plus about one row per change row there) would
    pass ``STORAGE_MAX_MASKED_SHARE_CONF`` of their stored rows. A bucket's stored rows are
    estimated as an even share of the view's; its mask's rows are counted (``StoredMask``)."""
    share = _max_masked_share(spark)
    per_bucket = (view.row_count + view.masked_rows) / view.layout.buckets
    return frozenset(
        bucket
        for bucket, rows in changed.items()
        if len(files.get(bucket, ())) >= MAX_FILES_PER_BUCKET
        or mask.rows.get(bucket, 0) + rows > share * per_bucket
    )


def write_merged(
    merged: DataFrame,
    metrics: Sequence[str],
    stored: Callable[[DataFrame], DataFrame],
    path: str,
    by_bucket: bool = False,
) -> dict[str, int]:
    """Write ``stored(merged)`` (the rows to keep, with the bucket column) as bucket
    directories under ``path``; return ``metrics`` (SQL aggregates over ``merged``, named
    ``METRICS``) (``by_bucket``: ``merged`` is the output of a shuffle by bucket already).

    The metrics are observed after the shuffle by bucket, in the writing stage: observed
    before it, they would be lost whenever no row is kept (adaptive execution replaces an
    empty stage's plan, observation included).
    """
    observation = Observation("sparkmv_apply")
    named = [F.expr(f"coalesce({m}, 0) AS {n}") for m, n in zip(metrics, METRICS, strict=True)]
    if not by_bucket:
        merged = merged.repartition(BUCKET_COLUMN)
    observed = merged.observe(observation, *named)
    # "append": the snapshot's directory already holds its staged change (and mask), under
    # hidden names; the bucket directories are new.
    stored(observed).write.mode("append").partitionBy(BUCKET_COLUMN).parquet(path)
    return observed_counts(observation, METRICS)


def row_merge(layout: StorageLayout, change: DataFrame) -> Merge:
    """The merge of a row layout (a bag of rows, or rows with a counter): ΔV's columns
    ``c0 …`` and the weight.

    Per stored row value ``r`` of the touched buckets: ``old(r)`` copies (or its counter),
    ``delta(r) = ΔV(r)``, ``new(r) = old(r) + delta(r)``; ``r`` stays stored with ``new(r)``
    copies (counter) while that is positive. Built as one SQL statement (the DataFrame API
    would cost a py4j round trip per column and operator)."""
    visible = storage_columns(len(change.columns) - 1)
    types = {field.name: field.dataType for field in change.schema.fields}
    fields = [T.StructField(c, types[c]) for c in visible]
    if layout.counted:
        fields.append(T.StructField(COUNT_COLUMN, T.LongType()))
    keys = ", ".join(quote_identifier(c) for c in [*visible, BUCKET_COLUMN])
    old = quote_identifier(COUNT_COLUMN) if layout.counted else "1"

    def rewrite(stored: DataFrame, change: DataFrame, path: str) -> dict[str, int]:
        """The touched buckets: stored rows plus change, merged."""
        views = TempViews(stored.sparkSession)
        try:
            # Shuffled by bucket once: the grouping by every key then needs no shuffle of
            # its own.
            merged = stored.sparkSession.sql(
                f"SELECT {keys}, SUM(old) AS old, SUM(delta) AS delta,"
                " SUM(old) + SUM(delta) AS new FROM (SELECT * FROM ("
                f"SELECT {keys}, CAST({old} AS BIGINT) AS old, CAST(0 AS BIGINT) AS delta"
                f" FROM {views.name_of(stored)} UNION ALL"
                f" SELECT {keys}, CAST(0 AS BIGINT), CAST({WEIGHT_SQL} AS BIGINT)"
                f" FROM {views.name_of(change)}) DISTRIBUTE BY {BUCKET_COLUMN})"
                f" GROUP BY {keys}"
            )
        finally:
            views.drop()
        return write_merged(merged, _metrics(layout), kept_rows, path, by_bucket=True)

    def kept_rows(merged: DataFrame) -> DataFrame:
        kept = merged.where("new > 0")
        if layout.counted:
            return kept.withColumnRenamed("new", COUNT_COLUMN).drop("old", "delta")
        copies = F.expr("explode(array_repeat(TRUE, CAST(new AS INT)))")
        return kept.withColumn("__copy", copies).drop("old", "delta", "new", "__copy")

    return Merge(visible, T.StructType(fields), rewrite)


def _metrics(layout: StorageLayout) -> list[str]:
    """Visible rows inserted and deleted, rows rewritten, rows gone negative: per group."""
    if layout.counted:  # a DISTINCT view shows a row while its counter is positive
        inserted = "SUM(CASE WHEN old <= 0 AND new > 0 THEN 1 ELSE 0 END)"
        deleted = "SUM(CASE WHEN old > 0 AND new <= 0 THEN 1 ELSE 0 END)"
        rewritten = "SUM(CASE WHEN new > 0 THEN 1 ELSE 0 END)"
    else:
        inserted = "SUM(greatest(delta, 0))"
        deleted = "SUM(greatest(-delta, 0))"
        rewritten = "SUM(greatest(new, 0))"
    return [inserted, deleted, rewritten, "SUM(CASE WHEN new < 0 THEN 1 ELSE 0 END)"]


def _bucket_files(spark: SparkSession, snapshot: str) -> dict[int, list[str]]:
    """The data files of each bucket of ``snapshot`` (one listing), by name."""
    files: dict[int, list[str]] = {}
    for status in fs.data_files(spark, snapshot):
        files.setdefault(_bucket_in_path(status.path), []).append(status.path.rpartition("/")[2])
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
