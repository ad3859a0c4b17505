"""Apply a view's change ΔV to its bucketed storage, touching only the buckets it hits.

Order, each step safe to crash after (as for a full refresh, ``materialize.py``):
1. compute ΔV once, with each row's bucket: brought to the driver when small (its buckets
   and key hashes counted there) and merged as a local relation, else written into the new
   snapshot (``CHANGE_DIR``, by bucket: the directories it wrote are the buckets it
   touches, its files' footers count its rows per bucket);
2. find the stored rows ΔV merges into: in each patched bucket, the rows equal to a row of
   ΔV on ``Merge.key_columns`` (a row's value, a group's keys; in a bag of rows only the
   deleted values: an inserted copy is appended and replaces nothing), read without the
   rows the snapshot's mask already hides, and write them, with their positions, as the new
   snapshot's mask (by bucket): they are about to be replaced;
3. write, into the new snapshot, the merge of those rows (and of the buckets rewritten
   whole) with ΔV (``Merge.merged``, planned in ``plan/merge.py`` for rows and in
   ``plan/aggregate_view.py`` for an aggregate view's groups): the stored rows (as a Z-set:
   weight 1 per copy, or the stored counter; a group's state) plus ΔV's, a row whose
   multiplicity reaches zero dropped;
4. hard-link the files of every bucket not rewritten whole into the new snapshot, and the
   old mask's files of those buckets into its mask;
5. the caller commits the catalog view to the new snapshot (one metastore call).

Steps 2 and 3 write few rows when ΔV is small; those rows are then collected and written
by the driver (``BucketWriter``, ``apply/driver_files.py``) instead of by a Spark write,
whose job and commit protocol cost most of a small refresh. There, step 2 drops the rows the
old mask hides after collecting (the mask read from its files, not broadcast by a job), and
step 3 runs at the driver too when the layout's merge can (``Merge.at_driver``: rows whose
columns compare exactly), since both of its inputs are already there. Step 2 itself runs at
the driver when the patched buckets are local and small (``DRIVER_SCAN_MAX_BYTES``): it
reads their files with pyarrow, or finds them decoded by an earlier refresh
(``apply/driver_scan.py``), instead of a Spark job.

A small view (fewer stored rows than ``STORAGE_PATCH_MIN_ROWS_CONF``, whose every touched
bucket would be rewritten whole anyway) skips the staging: one Spark job computes ΔV, merges
it with every live stored row (``new = old ⊎ ΔV``; the buckets ΔV misses come out as they
were) and brings the merged rows to the driver, which writes the whole new snapshot. Staging
would cost a second job, and the planning of a second statement, to write fewer rows.

A small view whose change the driver can merge by itself (``apply_at_driver``: a plain
aggregate's groups, ``plan/driver_aggregate.py``) is rewritten the same way without Spark:
its stored rows read, merged and written by the driver, no job.

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

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, partial, reduce

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_type

from sparkmv import frames, fs
from sparkmv.apply import driver_scan
from sparkmv.apply.driver_files import (
    carried_by_driver,
    writable_directory,
    write_by_bucket,
    write_empty_bucket,
)
from sparkmv.apply.snapshot import (
    CHANGE_DIR,
    FILE_COLUMN,
    MASK_SCHEMA,
    ROW_COLUMN,
    keep_schema_readable,
    mask_path,
    new_snapshot_path,
    read_mask,
    remove_path,
)
from sparkmv.buckets import bucket_sql, hashed_columns, key_hash_sql, row_hashes
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.config import STORAGE_MAX_MASKED_SHARE_CONF, STORAGE_PATCH_MIN_ROWS_CONF
from sparkmv.decoded_files import decoded
from sparkmv.jobs import buckets, job_step
from sparkmv.observations import observe
from sparkmv.parse.statements import quote_identifier
from sparkmv.plan.merge import METRICS, Merge
from sparkmv.stored_columns import BUCKET_COLUMN, COUNT_COLUMN
from sparkmv.zset import EXACT_TYPES, WEIGHT, repeated_rows

DEFAULT_MAX_MASKED_SHARE = 0.25
"""A touched bucket whose mask would hide more than this share of its stored rows is
compacted: readers then skip at most about a quarter of what they read."""
DEFAULT_PATCH_MIN_ROWS = 50_000
"""Touched buckets holding fewer rows than this (estimated) are rewritten whole: patching
them would cost more Spark jobs than writing them."""
MAX_FILES_PER_BUCKET = 16
"""A touched bucket with this many files is compacted (each patch adds one file)."""


BucketFiles = dict[int, dict[str, int]]
"""A snapshot's data files: per bucket, each file's name and size in bytes."""


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


def apply_change(
    spark: SparkSession, root: str, view: MvMetadata, change: DataFrame | pa.Table, merge: Merge
) -> AppliedChange:
    """Apply ``change`` to the snapshot of ``view`` by ``merge``; the new snapshot is
    written under ``root``. ``change`` is a DataFrame, or ΔV computed by the driver (an
    Arrow table of a row layout, for a view whose storage ``fits_driver_change``), which
    is bucketed there and never computed by Spark: a small view is then rewritten whole by
    the driver (``apply_at_driver``), a larger one staged from it.

    Spark jobs: a small view's, one (``_rewrite_in_one_pass``). Else one computes ΔV; one
    merges it (and writes the merged rows), none when ΔV and the rows it hits are merged at
    the driver; a patch costs one more that finds (and masks) the stored rows ΔV replaces.
    In a bag of rows, a small ΔV that only inserts costs just the first: its copies are
    appended from the driver. A small ΔV's merge and hits are collected and written by the
    driver (``BucketWriter``), a large one's by Spark (and a join with ΔV's keys then costs
    a broadcast). Each job is described by the view and its step (``jobs.job_step``). Which
    buckets ΔV touches, how many rows it has in each and how many rows each bucket's mask
    holds come from ΔV at the driver or from the files those jobs wrote (listings and
    parquet footers), not from jobs of their own.
    """
    path = new_snapshot_path(root)
    try:
        files = _bucket_files(spark, view.snapshot)
        step = f"REFRESH {view.name}:"
        if isinstance(change, pa.Table):
            local = _rewritable_at_driver(spark, view)
            if local is not None:
                rewrite = _rows_merged(change, merge)
                rewritten = _rewritten_at_driver(spark, view, local, files, path, rewrite)
                if rewritten is not None:
                    return rewritten
        elif _rewritten_in_one_pass(spark, view, merge, files, path):
            with job_step(spark, f"{step} ΔV, merged into all {buckets(view.layout.buckets)}"):
                return _rewrite_in_one_pass(spark, view, change, merge, files, path)
        with job_step(spark, f"{step} ΔV"):
            staged = _stage_change(spark, change, merge, view.layout.buckets, path)
        if not staged.rows:  # ΔV is empty: the view stays as it is
            remove_path(spark, path)
            return AppliedChange(view.snapshot, view.masked_rows, 0, 0, 0, 0, 0)
        touched = frozenset(staged.rows)
        mask = _stored_mask(spark, view)
        whole = touched
        if staged.appended is not None or _patching(spark, view, len(touched)):
            whole = _to_compact(spark, view, staged.rows, mask, files)
        hit_count = 0
        if staged.appended is not None and not whole:
            observed = _append(spark, staged.appended, path)
        else:
            writer = _writer(merge, staged, whole, files, path)
            probed = (touched - whole) & staged.probed_buckets
            hits = _Hits(mask_path(path), _bucketed(merge.schema), {})
            if probed:
                with job_step(spark, f"{step} find the rows ΔV replaces in {buckets(len(probed))}"):
                    hits = _mask_hits(spark, view, merge, staged, probed, mask, files, writer)
            merged_at_driver = _merged_at_driver(spark, merge, staged, hits, whole, path)
            if merged_at_driver is not None:
                observed = merged_at_driver
            else:
                merged = _live_rows(spark, view, merge.schema, mask, whole, files)
                with job_step(spark, f"{step} write {buckets(len(touched))}"):
                    merged = hits.frame(spark).unionByName(merged)
                    observed = write_merged(merge, merged, staged.frame, path, writer)
            hit_count = hits.count
        if observed["negative"]:
            raise ChangeDoesNotFitError(
                f"{observed['negative']} rows of the view would occur a negative number of times"
            )
        _link_buckets(spark, view.snapshot, path, files, except_buckets=whole)
        masked = hit_count + mask.carry(spark, mask_path(path), except_buckets=whole)
        linked = any(names for bucket, names in files.items() if bucket not in whole)
        if not linked and not observed["rewritten"]:  # else it holds a data file
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


RewriteAtDriver = Callable[[pa.Table, int], tuple[pa.Table, dict[str, int]]]
"""A merge of a view's change into every stored row, at the driver: (the stored rows with
their bucket, the view's bucket count) → (the rows to store, with their bucket; the
``METRICS``)."""


def apply_at_driver(
    spark: SparkSession, root: str, view: MvMetadata, merged: RewriteAtDriver
) -> AppliedChange | None:
    """A new snapshot of ``view``, under ``root``, holding ``merged`` of its stored rows,
    all read, merged and written by the driver (no Spark job): when the snapshot is local,
    unmasked, below ``STORAGE_PATCH_MIN_ROWS_CONF`` rows and ``DRIVER_WRITE_MAX_BYTES``.
    None when it is not (nothing written). ``new = old ⊎ ΔV`` over every bucket, as in
    ``_rewrite_in_one_pass``: no bucket is linked, no mask carried."""
    local = _rewritable_at_driver(spark, view)
    if local is None:
        return None
    files = _bucket_files(spark, view.snapshot)
    return _rewritten_at_driver(spark, view, local, files, new_snapshot_path(root), merged)


def _rewritable_at_driver(spark: SparkSession, view: MvMetadata) -> str | None:
    """The local path of ``view``'s snapshot when the driver may rewrite it whole: unmasked
    and below ``STORAGE_PATCH_MIN_ROWS_CONF`` rows; else None."""
    if view.masked_rows or view.row_count >= _patch_min_rows(spark):
        return None
    return fs.os_path(spark, view.snapshot)


def _rewritten_at_driver(
    spark: SparkSession,
    view: MvMetadata,
    local: str,
    files: BucketFiles,
    path: str,
    merged: RewriteAtDriver,
) -> AppliedChange | None:
    """``apply_at_driver`` into ``path``, of a view ``_rewritable_at_driver`` (its snapshot
    at ``local``, its ``files`` listed); None (nothing written) when its files are too large
    or not read as one table."""
    size = sum(size for names in files.values() for size in names.values())
    if not files or size > DRIVER_WRITE_MAX_BYTES:
        return None
    target = writable_directory(spark, path)
    if target is None:
        return None
    try:
        stored = _stored_at_driver(local, files)
    except (pa.ArrowException, OSError):  # files pyarrow cannot read as one table
        return None
    rows, observed = merged(stored, view.layout.buckets)
    if observed["negative"]:
        raise ChangeDoesNotFitError(
            f"{observed['negative']} rows of the view would occur a negative number of times"
        )
    try:
        if not write_by_bucket(rows, target):  # as ``keep_schema_readable``
            write_empty_bucket(rows, target)
    except BaseException:
        remove_path(spark, path)
        raise
    return AppliedChange(
        path, 0, observed["inserted"], observed["deleted"], 0, len(files), observed["rewritten"]
    )


def _rows_merged(change: pa.Table, merge: Merge) -> RewriteAtDriver:
    """The rewrite of every stored row merged with ``change`` (ΔV at the driver, of a row
    layout): ΔV bucketed by the driver, then ``Merge.at_driver``."""
    at_driver = merge.at_driver
    assert at_driver is not None, "a change computed by the driver compares exactly"

    def merged(stored: pa.Table, buckets: int) -> tuple[pa.Table, dict[str, int]]:
        return at_driver(stored, _keyed(change, merge, buckets).drop_columns([KEY_HASH]))

    return merged


def fits_driver_change(spark: SparkSession, view: MvMetadata, merge: Merge) -> bool:
    """Whether ΔV computed by the driver (in ``merge``'s schema) can be applied to
    ``view`` by ``apply_change``: its snapshot is local, and its stored files hold
    ``merge.schema``'s columns with the Arrow types the driver's ΔV has (so the files the
    driver writes from it read as the stored ones; a snapshot always has a file,
    ``keep_schema_readable``)."""
    local = fs.os_path(spark, view.snapshot)
    if local is None or not carried_by_driver(merge.schema):
        return False
    first = _first_data_file(local)
    if first is None:
        return False
    try:
        stored = pq.read_schema(first)
    except (pa.ArrowException, OSError):
        return False
    for field in merge.schema.fields:
        expected = to_arrow_type(field.dataType, timezone="UTC")
        if field.name not in stored.names or stored.field(field.name).type != expected:
            return False
    return True


def _first_data_file(snapshot: str) -> str | None:
    """A data file of the local ``snapshot`` (in a bucket directory, not its mask's or
    staged change's), if any."""
    for bucket in sorted(os.scandir(snapshot), key=lambda entry: entry.name):
        if bucket.is_dir() and bucket.name.startswith(f"{BUCKET_COLUMN}="):
            names = sorted(n for n in os.listdir(bucket.path) if n.endswith(".parquet"))
            if names:
                return os.path.join(bucket.path, names[0])
    return None


def _stored_at_driver(snapshot: str, files: BucketFiles) -> pa.Table:
    """Every row of the local ``snapshot`` (its ``files``), with its bucket."""
    tables = []
    for bucket, names in sorted(files.items()):
        for name in sorted(names):
            table = pq.read_table(os.path.join(snapshot, f"{BUCKET_COLUMN}={bucket}", name))
            number = pa.repeat(pa.scalar(bucket, pa.int32()), table.num_rows)
            tables.append(table.append_column(BUCKET_COLUMN, number))
    return pa.concat_tables(tables, promote_options="permissive")


def relinked_snapshot(
    spark: SparkSession, root: str, view: MvMetadata, merge: Merge
) -> AppliedChange:
    """A new snapshot of ``view`` holding the same rows (its buckets' files and mask
    linked): for a refresh whose ΔV is empty but that stores other state with the view's
    rows (a recursive CTE's fixpoint, ``apply/fixpoints.py``), so that the state is
    committed atomically, never written into a published snapshot."""
    path = new_snapshot_path(root)
    try:
        files = _bucket_files(spark, view.snapshot)
        _link_buckets(spark, view.snapshot, path, files, except_buckets=frozenset())
        mask = _stored_mask(spark, view)
        masked = mask.carry(spark, mask_path(path), except_buckets=frozenset())
        if not any(files.values()):
            keep_schema_readable(spark, merge.schema, path)
        return AppliedChange(path, masked, 0, 0, 0, 0, 0)
    except BaseException:
        remove_path(spark, path)
        raise


def _rewritten_in_one_pass(
    spark: SparkSession, view: MvMetadata, merge: Merge, files: BucketFiles, path: str
) -> bool:
    """Whether the whole view is rewritten from one job that computes ΔV and merges it:
    when every bucket ΔV could touch would be rewritten whole anyway (fewer stored rows
    than ``STORAGE_PATCH_MIN_ROWS_CONF``), small enough to pass through the driver, and
    its rows travel as Arrow unchanged. Finding the touched buckets first would cost a
    second job, and the planning of a second statement, for fewer rows written."""
    stored_bytes = sum(size for names in files.values() for size in names.values())
    return (
        view.row_count + view.masked_rows < _patch_min_rows(spark)
        and stored_bytes <= DRIVER_WRITE_MAX_BYTES
        and carried_by_driver(merge.schema)
        and writable_directory(spark, path) is not None
    )


def _rewrite_in_one_pass(
    spark: SparkSession,
    view: MvMetadata,
    change: DataFrame,
    merge: Merge,
    files: BucketFiles,
    path: str,
) -> AppliedChange:
    """Write the new snapshot as ``merge`` of every live stored row with ``change``, in one
    Spark job that computes ΔV, merges it and collects the merged rows for the driver to
    write (``BucketWriter``). ``new = old ⊎ ΔV`` over every bucket: the buckets ΔV misses
    come out as they were, so no bucket is linked and no mask carried."""
    bucket = f"{bucket_sql(change.schema, merge.key_columns, view.layout.buckets)}"
    bucketed = frames.select(change, ["*", f"{bucket} AS {BUCKET_COLUMN}"])
    mask = _stored_mask(spark, view)
    stored = _live_rows(spark, view, merge.schema, mask, frozenset(files), files)
    observed = write_merged(merge, stored, bucketed, path, BucketWriter(path, at_driver=True))
    if observed["negative"]:
        raise ChangeDoesNotFitError(
            f"{observed['negative']} rows of the view would occur a negative number of times"
        )
    if not observed["rewritten"]:
        keep_schema_readable(spark, merge.schema, path)
    return AppliedChange(
        path, 0, observed["inserted"], observed["deleted"], 0, len(files), observed["rewritten"]
    )


@dataclass(frozen=True)
class StagedChange:
    """ΔV computed once, with each row's bucket: read by the jobs that merge it.

    ``rows``: its rows per bucket. ``at_driver``: it was collected and written by the
    driver. ``probes``: the key hashes (``key_hash_sql``) of its rows that need the stored
    rows equal to them (all rows; a bag's deletions only), when at the driver and not too
    many to list in a query. ``probed_buckets``: the buckets of those rows. ``appended``:
    in a bag of rows, when ΔV only inserts and is at the driver, its rows each ``weight``
    times, with their bucket: all the refresh has to store. ``table``: ΔV itself at the
    driver (with its bucket), when it is merged through the driver. ``read``: ΔV as a
    DataFrame (``frame``)."""

    read: Callable[[], DataFrame]
    rows: dict[int, int]
    at_driver: bool = False
    probes: list[int] | None = None
    probed_buckets: frozenset[int] = frozenset()
    appended: pa.Table | None = None
    table: pa.Table | None = None

    @cached_property
    def frame(self) -> DataFrame:
        """ΔV with its bucket as a DataFrame, made when first asked for (reading the files
        it was staged in is a py4j call that lists them): a merge through the driver, with
        its probes listed, never asks."""
        return self.read()


LOCAL_CHANGE_MAX_ROWS = 100_000
"""A ΔV of at most this many rows is merged through the driver (its hits and merged rows
collected and written there, ``BucketWriter``); a larger one is merged by Spark. Either way
the merge reads ΔV back from the new snapshot (``CHANGE_DIR``)."""
MAX_LISTED_PROBES = 20_000
"""Up to this many key hashes of ΔV find the stored rows they hit by a filter listing
them (``IN``: no join, so no broadcast job); more are joined with."""
DRIVER_SCAN_MAX_BYTES = 64 * 1024 * 1024
"""Patched buckets of up to this many parquet bytes, local, are searched for the rows ΔV
hits by the driver (``_hits_at_driver``) rather than by a Spark job: pyarrow reads them
faster than the job's scan, and nothing is planned or scheduled."""
DRIVER_WRITE_MAX_BYTES = 32 * 1024 * 1024
"""Stored buckets of up to this many parquet bytes, rewritten whole, are merged through the
driver when ΔV is there (``BucketWriter``); larger ones are written by Spark."""
KEY_HASH = "__sparkmv_key_hash"


def _stage_change(
    spark: SparkSession, change: DataFrame | pa.Table, merge: Merge, buckets: int, path: str
) -> StagedChange:
    """ΔV (``change``) with its bucket, computed by one Spark job (which also fills any
    observation on the change's inputs), written into ``path``'s ``CHANGE_DIR`` by bucket
    and read back from there; and its rows per bucket.

    ΔV comes to the driver as Arrow, where its buckets and key hashes are counted and its
    files written (``BucketWriter``): a collect costs about a quarter of a partitioned
    Spark write and its commit. Only a small one is merged through the driver as well
    (``LOCAL_CHANGE_MAX_ROWS``); a larger one, once collected, is still written here rather
    than computed again. Otherwise (of a type Arrow does not carry back unchanged, or on a
    file system the driver cannot write) Spark writes it, and its rows are counted from
    the files' footers. ΔV computed by the driver (an Arrow ``change``) is bucketed and
    hashed there (``buckets.row_hashes``, Spark's ``xxhash64``): no job at all."""
    staged_path = f"{path}/{CHANGE_DIR}"
    local = writable_directory(spark, staged_path)
    if isinstance(change, pa.Table):
        if local is None:
            raise ValueError("a change computed by the driver is staged on a local file system")
        schema = _bucketed(_change_schema(merge))
        table = _keyed(change, merge, buckets)
        hashable = bool(hashed_columns(schema, merge.key_columns))
        return _staged(spark, table, merge, hashable, staged_path, local, schema)
    bucket = f"{bucket_sql(change.schema, merge.key_columns, buckets)} AS {BUCKET_COLUMN}"
    schema = _bucketed(change.schema)
    if local is not None and carried_by_driver(schema):
        hashed = key_hash_sql(schema, merge.key_columns)
        key_hash = f"{hashed or 'CAST(0 AS BIGINT)'} AS {KEY_HASH}"
        collected = frames.select(change, ["*", bucket, key_hash])
        table = frames.collect_arrow(collected, "sparkmv: compute the view's change")
        return _staged(spark, table, merge, hashed is not None, staged_path, local, schema)
    bucketed = frames.select(change, ["*", bucket])
    bucketed.write.mode("errorifexists").partitionBy(BUCKET_COLUMN).parquet(staged_path)
    rows = _rows_per_bucket(fs.parquet_row_counts(spark, staged_path))
    written = frames.read_parquet(spark, schema, [staged_path]) if rows else change
    touched = {bucket: n for bucket, n in rows.items() if n}
    return StagedChange(lambda: written, touched, probed_buckets=frozenset(touched))


def _staged(
    spark: SparkSession,
    table: pa.Table,
    merge: Merge,
    hashable: bool,
    staged_path: str,
    local: str,
    schema: T.StructType,
) -> StagedChange:
    """ΔV at the driver (``table``: with its bucket and key hash, ``schema`` without the
    latter) written by bucket into the local ``staged_path``, as ``_stage_change`` stages
    it."""
    rows, probes, probed = _staged_at_driver(table, merge, hashable, local)
    if rows:
        frame = partial(_read_buckets, spark, staged_path, schema, sorted(rows))
    else:
        frame = partial(frames.empty, spark, schema)
    if table.num_rows > LOCAL_CHANGE_MAX_ROWS:  # written here, but merged by Spark
        return StagedChange(frame, rows, probed_buckets=probed)
    appended = _copies(table) if merge.bag and not probed else None
    at_driver = table.drop_columns([KEY_HASH])
    return StagedChange(frame, rows, True, probes, probed, appended, at_driver)


def _change_schema(merge: Merge) -> T.StructType:
    """The schema of a row layout's ΔV: its stored columns and the weight."""
    fields = {field.name: field for field in merge.schema.fields}
    return T.StructType(
        [*(fields[c] for c in merge.key_columns), T.StructField(WEIGHT, T.LongType())]
    )


def _keyed(change: pa.Table, merge: Merge, buckets: int) -> pa.Table:
    """ΔV at the driver (a row layout's: its stored columns and the weight) with each
    row's bucket and key hash, as ``bucket_sql`` and ``key_hash_sql`` compute them."""
    types = {field.name: field.dataType for field in merge.schema.fields}
    hashed = hashed_columns(merge.schema, merge.key_columns)
    hashes = [0] * change.num_rows  # no hashable key: all in bucket 0, as ``bucket_sql``
    if hashed:
        hashes = row_hashes(change.select(hashed), [types[c] for c in hashed])
    bucket = [h % buckets for h in hashes]  # Python's % of a positive modulus is Spark's pmod
    return change.append_column(BUCKET_COLUMN, pa.array(bucket, pa.int32())).append_column(
        KEY_HASH, pa.array(hashes, pa.int64())
    )


def _staged_at_driver(
    table: pa.Table, merge: Merge, hashable: bool, directory: str
) -> tuple[dict[int, int], list[int] | None, frozenset[int]]:
    """Write ΔV, collected as ``table`` (with its key hashes), by bucket under the local
    ``directory``; return its rows per bucket, and the probes that look up the stored rows
    it hits (``StagedChange``: a bag's insertions need none) and their buckets."""
    probing = _probing_rows(table, merge)
    probed = frozenset(int(b) for b in pc.unique(probing.column(BUCKET_COLUMN)).to_pylist())
    probes = None
    if hashable:
        hashes = pc.unique(probing.column(KEY_HASH)).to_pylist()
        probes = [int(h) for h in hashes] if len(hashes) <= MAX_LISTED_PROBES else None
    rows = write_by_bucket(table.drop_columns([KEY_HASH]), directory)
    return rows, probes, probed


def _probing_rows(change: pa.Table, merge: Merge) -> pa.Table:
    """The rows of ΔV at the driver that need the stored rows equal to them: all of them,
    in a bag of rows only the deletions (an inserted copy is appended)."""
    return change.filter(pc.less(change.column(WEIGHT), 0)) if merge.bag else change


def _copies(table: pa.Table) -> pa.Table:
    """The rows of a Z-set of positive weights (with its bucket), each ``weight`` times,
    without the weight and the key hash: a bag's stored rows."""
    return repeated_rows(table.drop_columns([WEIGHT, KEY_HASH]), table[WEIGHT].to_pylist())


def _append(spark: SparkSession, rows: pa.Table, path: str) -> dict[str, int]:
    """Write ``rows`` (``_copies``) into the snapshot ``path`` from the driver; return the
    merge's metrics: each row is a visible row inserted and written."""
    directory = writable_directory(spark, path)
    assert directory is not None  # ΔV was written from the driver into this snapshot
    written = sum(write_by_bucket(rows, directory).values())
    return {"inserted": written, "deleted": 0, "rewritten": written, "negative": 0}


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

    def positions(self, spark: SparkSession, buckets: frozenset[int]) -> pa.Table | None:
        """The positions (``MASK_SCHEMA``) this mask hides in ``buckets``, read by the
        driver from its files; None when it cannot read them there."""
        directory = fs.os_path(spark, mask_path(self.snapshot)) if self.files else ""
        if self.legacy or directory is None:
            return None
        parts = [
            _positions(f"{directory}/{BUCKET_COLUMN}={bucket}/{name}", bucket)
            for bucket in sorted(buckets & frozenset(self.files))
            for name in self.files[bucket]
        ]
        return pa.concat_tables(parts) if parts else MASK_SCHEMA_ARROW.empty_table()


MASK_SCHEMA_ARROW = pa.schema(
    [(BUCKET_COLUMN, pa.int32()), (FILE_COLUMN, pa.string()), (ROW_COLUMN, pa.int64())]
)
"""``MASK_SCHEMA`` as Spark's Arrow conversion types it."""


def _positions(file: str, bucket: int) -> pa.Table:
    """The masked positions listed in one mask file of ``bucket`` (decoded once: a mask's
    files are carried into the next snapshot's by hard links, ``decoded_files.decoded``)."""
    listed = decoded(file, _LISTED_POSITIONS)
    positions = listed.add_column(0, BUCKET_COLUMN, pa.repeat(bucket, listed.num_rows))
    return positions.cast(MASK_SCHEMA_ARROW)


_LISTED_POSITIONS = pa.schema(list(MASK_SCHEMA_ARROW)[1:])


_NO_MASK = StoredMask("", {}, {}, legacy=False)
"""A snapshot's mask when its masked rows are dropped elsewhere (``_mask_hits``)."""


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
    return frames.read_parquet(spark, schema, [f"{directory}/{BUCKET_COLUMN}={pattern}"], directory)


def _live_rows(
    spark: SparkSession,
    view: MvMetadata,
    schema: T.StructType,
    mask: StoredMask,
    buckets: frozenset[int],
    files: BucketFiles,
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
        return frames.empty(spark, empty)
    stored = _read_buckets(spark, view.snapshot, bucketed, present)
    masked = mask.buckets() & frozenset(present)
    if not positions and not masked:
        return stored
    stored = frames.select(
        stored,
        [
            *(quote_identifier(name) for name in bucketed.fieldNames()),
            f"_metadata.file_name AS {FILE_COLUMN}",
            f"_metadata.row_index AS {ROW_COLUMN}",
        ],
    )
    if not masked:
        return stored
    listed = ", ".join(str(bucket) for bucket in sorted(masked))
    hidden = frames.select(
        read_mask(spark, view.snapshot), ["*"], where=f"{BUCKET_COLUMN} IN ({listed})"
    )
    unmasked = stored.join(hidden, list(MASK_SCHEMA.fieldNames()), "left_anti")
    return frames.select(unmasked, [quote_identifier(name) for name in columns])


def _bucketed(schema: T.StructType) -> T.StructType:
    return T.StructType([*schema.fields, T.StructField(BUCKET_COLUMN, T.IntegerType())])


@dataclass(frozen=True)
class _Hits:
    """The stored rows ΔV merges into, as written into the new snapshot's mask (``path``):
    their number per bucket, and ``table``, the same rows at the driver (with their
    positions) when they were brought there."""

    path: str
    schema: T.StructType  # a stored file's columns and the bucket
    written: dict[int, int]
    table: pa.Table | None = None

    @property
    def count(self) -> int:
        return sum(self.written.values())

    def frame(self, spark: SparkSession) -> DataFrame:
        """The rows, read back from the mask."""
        if not self.written:
            return frames.empty(spark, self.schema)
        return _read_buckets(spark, self.path, self.schema, sorted(self.written))


def _mask_hits(
    spark: SparkSession,
    view: MvMetadata,
    merge: Merge,
    staged: StagedChange,
    buckets: frozenset[int],
    mask: StoredMask,
    files: BucketFiles,
    writer: BucketWriter,
) -> _Hits:
    """Write, into the new snapshot's mask, the live stored rows of the patched ``buckets``
    that ΔV merges into (equal on ``Merge.key_columns``, NULL-safe, same bucket), whole and
    with their positions: the mask reads the positions, the merge the rows (so they are
    found once). One Spark job.

    Through the driver, the rows are collected with the masked ones among them and those
    are dropped there (the stored mask is read from its files): an anti join in the job
    would broadcast the mask, a second job. There, small local buckets are searched by the
    driver itself (``_hits_at_driver``): no job at all."""
    schema = _bucketed(merge.schema)
    target = mask_path(writer.path)
    local = writable_directory(spark, target) if writer.at_driver else None
    masked = mask.positions(spark, buckets) if local is not None else None
    if local is None or masked is None:
        stored = _live_rows(spark, view, merge.schema, mask, buckets, files, positions=True)
        hit = _rows_hit(stored, staged, merge)
        written = {bucket: rows for bucket, rows in writer.write(hit, target).items() if rows}
        table = None
    else:
        table = _hits_at_driver(spark, view, merge, staged, buckets, files)
        if table is None:
            stored = _live_rows(spark, view, merge.schema, _NO_MASK, buckets, files, True)
            hit = _rows_hit(stored, staged, merge)
            table = frames.collect_arrow(hit, "sparkmv: rows of the view's new snapshot")
        if masked.num_rows:
            keys = masked.column_names
            masked = masked.cast(pa.schema([table.schema.field(key) for key in keys]))
            table = table.join(masked, keys=keys, join_type="left anti")
        written = {bucket: rows for bucket, rows in write_by_bucket(table, local).items() if rows}
    return _Hits(target, schema, written, table)


def _hits_at_driver(
    spark: SparkSession,
    view: MvMetadata,
    merge: Merge,
    staged: StagedChange,
    buckets: frozenset[int],
    files: BucketFiles,
) -> pa.Table | None:
    """The stored rows of ``buckets`` that ΔV merges into, masked ones included, with their
    positions, as ``_rows_hit``'s job would collect them (the same columns and Arrow
    types; no superfluous row where every key compares exactly): found by the driver in
    the snapshot's files (``driver_scan.rows_hit``), probed with ΔV's rows that need them,
    when ΔV is at the driver, the snapshot on a file system the driver reads, and those
    buckets hold at most ``DRIVER_SCAN_MAX_BYTES``. None otherwise, or when pyarrow
    cannot read the files as Spark wrote them."""
    directory = fs.os_path(spark, view.snapshot)
    scanned = {bucket: sorted(files.get(bucket, {})) for bucket in buckets}
    size = sum(size for bucket in buckets for size in files.get(bucket, {}).values())
    types = {field.name: field.dataType for field in merge.schema.fields}
    exact = [key for key in merge.key_columns if isinstance(types[key], EXACT_TYPES)]
    change = staged.table
    if change is None or directory is None or size > DRIVER_SCAN_MAX_BYTES or not exact:
        return None
    if not set(exact) <= set(change.schema.names):
        return None
    schema = _hits_schema(merge.schema, change.schema)
    change = _probing_rows(change, merge)
    try:
        probes = pa.table([change[key].cast(schema.field(key).type) for key in exact], exact)
        probes = probes.group_by(exact, use_threads=False).aggregate([])
        return driver_scan.rows_hit(directory, scanned, probes, schema)
    except (pa.ArrowException, OSError):
        return None


def _hits_schema(stored: T.StructType, change: pa.Schema) -> pa.Schema:
    """The Arrow schema of the stored rows ΔV hits, as Spark collects them: ``stored``'s
    columns (typed as in ΔV collected, ``change``, where it has them), then the bucket, the
    file name and the row's index in its file (``MASK_SCHEMA_ARROW``)."""
    columns = [
        pa.field(
            field.name,
            change.field(field.name).type
            if field.name in change.names
            else to_arrow_type(field.dataType, timezone="UTC"),
        )
        for field in stored.fields
    ]
    return pa.schema([*columns, *MASK_SCHEMA_ARROW])


def _merged_at_driver(
    spark: SparkSession,
    merge: Merge,
    staged: StagedChange,
    hits: _Hits,
    whole: frozenset[int],
    path: str,
) -> dict[str, int] | None:
    """Merge ΔV with the stored rows it hits at the driver and write the rows to store
    there (``Merge.at_driver``), when both are at the driver and no bucket is rewritten
    whole; return the merge's metrics, or None when Spark must merge. Saves the merge's
    job and the planning of its statement."""
    if merge.at_driver is None or staged.table is None or whole:
        return None
    if hits.table is None and staged.probed_buckets:
        return None
    directory = writable_directory(spark, path)
    if directory is None:
        return None
    columns = _bucketed(merge.schema).fieldNames()
    if hits.table is not None:
        stored = hits.table.select(columns)
    else:  # ΔV only adds rows: no stored row merges with it
        types = {field.name: field.type for field in staged.table.schema}
        types[COUNT_COLUMN] = pa.int64()
        stored = pa.table({name: pa.array([], types[name]) for name in columns})
    kept, metrics = merge.at_driver(stored, staged.table)
    if not metrics["negative"]:
        write_by_bucket(kept, directory)
    return metrics


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


def _rows_hit(stored: DataFrame, staged: StagedChange, merge: Merge) -> DataFrame:
    """The rows of ``stored`` equal on ``Merge.key_columns`` (NULL-safe, same bucket) to a
    row of ΔV that needs them (every row; in a bag only deletions): the stored rows ΔV
    merges into. With ΔV's key hashes at hand, the rows whose key hash is one of them (a
    superset: ``Merge.merged`` leaves a row no change row matches as it was); else a
    semi-join with ΔV's keys."""
    hashed = key_hash_sql(merge.schema, merge.key_columns)  # a stored file's columns
    if staged.probes is not None and hashed is not None:
        return frames.where_in(stored, hashed, staged.probes)
    keys = merge.key_columns
    change = staged.frame.where(F.col(WEIGHT) < 0) if merge.bag else staged.frame
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
    files: BucketFiles,
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


@dataclass(frozen=True)
class BucketWriter:
    """Writes rows partitioned by bucket (``mv_bucket=k/``) into the new snapshot (``path``:
    its data, or its mask): by a Spark job and its commit, or — ``at_driver``, for few
    rows on a file system the driver can write — collected as Arrow and written there
    (``apply/driver_files.py``): the same files, without a job's commit protocol."""

    path: str
    at_driver: bool

    def write(self, rows: DataFrame, directory: str) -> dict[int, int]:
        """Write ``rows`` under ``directory``; return the rows written per bucket."""
        local = writable_directory(rows.sparkSession, directory) if self.at_driver else None
        if local is not None:
            table = frames.collect_arrow(rows, "sparkmv: rows of the view's new snapshot")
            return write_by_bucket(table, local)
        rows.write.mode("append").partitionBy(BUCKET_COLUMN).parquet(directory)
        return _rows_per_bucket(fs.parquet_row_counts(rows.sparkSession, directory))


def _writer(
    merge: Merge,
    staged: StagedChange,
    whole: frozenset[int],
    files: BucketFiles,
    path: str,
) -> BucketWriter:
    """Write through the driver when ΔV is there, the stored rows survive the trip
    unchanged, and the buckets rewritten whole are small (``DRIVER_WRITE_MAX_BYTES``);
    the rows a patch writes are about as many as ΔV's."""
    rewritten = sum(size for bucket in whole for size in files.get(bucket, {}).values())
    at_driver = (
        staged.at_driver and carried_by_driver(merge.schema) and rewritten <= DRIVER_WRITE_MAX_BYTES
    )
    return BucketWriter(path, at_driver)


def write_merged(
    merge: Merge, stored: DataFrame, change: DataFrame, path: str, writer: BucketWriter
) -> dict[str, int]:
    """Write the rows ``merge`` keeps of ``stored`` (the stored rows ΔV hits, with the
    bucket column) merged with ``change`` as bucket directories under ``path``; return its
    ``metrics`` (named ``METRICS``), observed while writing.

    Spark writes one file per bucket, after a shuffle by bucket; the metrics are observed
    after it, in the writing stage: observed before it, they would be lost whenever no row
    is kept (adaptive execution replaces an empty stage's plan, observation included).
    """
    named = {n: f"coalesce({m}, 0)" for m, n in zip(merge.metrics, METRICS, strict=True)}
    merged = merge.merged(stored, change)
    if not merge.by_bucket and not writer.at_driver:
        merged = merged.repartition(BUCKET_COLUMN)
    observed, metrics = observe(merged, "sparkmv_apply", named)
    writer.write(merge.kept(observed), path)
    return metrics.counts()


def _bucket_files(spark: SparkSession, snapshot: str) -> BucketFiles:
    """The data files of each bucket of ``snapshot`` (one listing)."""
    files: BucketFiles = {}
    for status in fs.data_files(spark, snapshot):
        name = status.path.rpartition("/")[2]
        files.setdefault(_bucket_in_path(status.path), {})[name] = status.size
    return files


def _link_buckets(
    spark: SparkSession,
    snapshot: str,
    path: str,
    files: BucketFiles,
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
