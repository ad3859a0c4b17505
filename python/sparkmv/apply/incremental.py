"""Apply a view's change ΔV to its bucketed storage, touching only the buckets it hits.

Every row is computed and written by Spark; the driver reads only listings and parquet
footers. Order, each step safe to crash after (as for a full refresh, ``materialize.py``):
1. compute ΔV once, with each row's bucket, written into the new snapshot (``CHANGE_DIR``,
   by bucket): the directories it wrote are the buckets it touches, its files' footers count
   its rows per bucket;
2. find the stored rows ΔV merges into: in each patched bucket, the rows equal to a row of
   ΔV on ``Merge.key_columns`` (a row's value, a group's keys), read without the rows the
   snapshot's mask already hides, and write them, with their positions, as the new
   snapshot's mask (by bucket): they are about to be replaced;
3. write, into the new snapshot, the merge of those rows (and of the buckets rewritten
   whole) with ΔV (``Merge.merged``, planned in ``plan/merge.py`` for rows and in
   ``plan/aggregate_view.py`` for an aggregate view's groups): the stored rows (as a Z-set:
   weight 1 per copy, or the stored counter; a group's state) plus ΔV's, a row whose
   multiplicity reaches zero dropped;
4. link the files of every bucket not rewritten whole into the new snapshot (``fs.link``:
   a hard link where the file system has them, else a copy), and the old mask's files of
   those buckets into its mask;
5. the caller commits the catalog view to the new snapshot (one metastore call).

A small view (fewer stored rows than ``STORAGE_PATCH_MIN_ROWS``, whose every touched
bucket would be rewritten whole anyway) skips the staging: one Spark job computes ΔV, merges
it with every live stored row (``new = old ⊎ ΔV``; the buckets ΔV misses come out as they
were) and writes the whole new snapshot. Staging would cost a second job, and the planning
of a second statement, to write fewer rows.

The stored rows are read by bucket directory and explicit schema: no listing of the other
buckets, no schema inference, no job to count anything.

So a refresh writes about |ΔV| rows, not the touched buckets (merge-on-read). A touched bucket
is *compacted* instead — rewritten whole from its live rows merged with ΔV, its mask dropped —
when its mask would exceed ``STORAGE_MAX_MASKED_SHARE`` of its stored rows or it holds
``STORAGE_MAX_FILES_PER_BUCKET`` files; and every touched bucket is rewritten whole while they hold
fewer than ``STORAGE_PATCH_MIN_ROWS`` rows (a small view is cheaper rewritten than
patched: patching costs a few more Spark jobs).

Readers keep reading the previous snapshot until the commit; its files are never changed.
A multiplicity that would go negative means ΔV does not fit the stored view (a bug, or a
change the log did not see): nothing is committed and the caller refreshes fully.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkmv import frames, fs
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.config import (
    STORAGE_MAX_FILES_PER_BUCKET,
    STORAGE_MAX_MASKED_SHARE,
    STORAGE_PATCH_MIN_ROWS,
)
from sparkmv.delta.relation import TempViews
from sparkmv.identifiers import quote_identifier
from sparkmv.jobs import buckets, job_step
from sparkmv.observations import observe
from sparkmv.plan.merge import METRICS, Merge
from sparkmv.storage.buckets import bucket_sql
from sparkmv.storage.snapshot import (
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
from sparkmv.storage.stored_columns import BUCKET_COLUMN
from sparkmv.zset import WEIGHT

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
    spark: SparkSession, root: str, view: MvMetadata, change: DataFrame, merge: Merge
) -> AppliedChange:
    """Apply ``change`` to the snapshot of ``view`` by ``merge``; the new snapshot is
    written under ``root``.

    Spark jobs: a small view's, one (``_rewrite_in_one_pass``). Else one computes and
    stages ΔV; a patch costs one that finds (and masks) the stored rows ΔV replaces; one
    merges ΔV and writes the merged rows. In a bag of rows, a ΔV that only inserts costs one
    more job, which appends its copies. Each job is described by the view and its step
    (``jobs.job_step``). Which buckets ΔV touches, how many rows it has in each and how many
    rows each bucket's mask holds come from the files those jobs wrote (listings and parquet
    footers), not from jobs of their own.
    """
    path = new_snapshot_path(root)
    try:
        files = _bucket_files(spark, view.snapshot)
        step = f"REFRESH {view.name}:"
        if _rewritten_in_one_pass(spark, view):
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
        if staged.inserts_only or _patching(spark, view, len(touched)):
            whole = _to_compact(spark, view, staged.rows, mask, files)
        hits = _Hits(mask_path(path), _bucketed(merge.schema), {})
        if staged.inserts_only and not whole:
            with job_step(spark, f"{step} append to {buckets(len(touched))}"):
                observed = _append(spark, staged, merge, path)
        else:
            probed = touched - whole
            if probed:
                with job_step(spark, f"{step} find the rows ΔV replaces in {buckets(len(probed))}"):
                    hits = _mask_hits(spark, view, merge, staged, probed, mask, files, path)
            merged = _live_rows(spark, view, merge.schema, mask, whole, files)
            with job_step(spark, f"{step} write {buckets(len(touched))}"):
                merged = hits.frame(spark).unionByName(merged)
                observed = write_merged(merge, merged, staged.frame, path)
        if observed["negative"]:
            raise ChangeDoesNotFitError(
                f"{observed['negative']} rows of the view would occur a negative number of times"
            )
        _link_buckets(spark, view.snapshot, path, files, except_buckets=whole)
        masked = hits.count + mask.carry(spark, mask_path(path), except_buckets=whole)
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


def _rewritten_in_one_pass(spark: SparkSession, view: MvMetadata) -> bool:
    """Whether the whole view is rewritten from one job that computes ΔV and merges it:
    when every bucket ΔV could touch would be rewritten whole anyway (fewer stored rows
    than ``STORAGE_PATCH_MIN_ROWS``). Finding the touched buckets first would cost a
    second job, and the planning of a second statement, for fewer rows written."""
    return view.row_count + view.masked_rows < STORAGE_PATCH_MIN_ROWS.count(spark)


def _rewrite_in_one_pass(
    spark: SparkSession,
    view: MvMetadata,
    change: DataFrame,
    merge: Merge,
    files: BucketFiles,
    path: str,
) -> AppliedChange:
    """Write the new snapshot as ``merge`` of every live stored row with ``change``, in one
    Spark job that computes ΔV, merges it and writes the merged rows by bucket.
    ``new = old ⊎ ΔV`` over every bucket: the buckets ΔV misses come out as they were, so
    no bucket is linked and no mask carried."""
    bucket = f"{bucket_sql(change.schema, merge.key_columns, view.layout.buckets)}"
    bucketed = frames.select(change, ["*", f"{bucket} AS {BUCKET_COLUMN}"])
    mask = _stored_mask(spark, view)
    stored = _live_rows(spark, view, merge.schema, mask, frozenset(files), files)
    observed = write_merged(merge, stored, bucketed, path)
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
    """ΔV computed once, with each row's bucket, as written into the new snapshot's
    ``CHANGE_DIR``: read by the jobs that merge it. ``rows``: its rows per bucket;
    ``frame``: ΔV with its bucket, read back from its files; ``inserts_only``: in a bag of
    rows, no row of ΔV deletes (counted as it was written), so nothing stored is replaced."""

    frame: DataFrame
    rows: dict[int, int]
    inserts_only: bool = False


def _stage_change(
    spark: SparkSession, change: DataFrame, merge: Merge, buckets: int, path: str
) -> StagedChange:
    """ΔV (``change``) with its bucket, computed by one Spark job (which also fills any
    observation on the change's inputs), written into ``path``'s ``CHANGE_DIR`` by bucket
    and read back from there; its rows per bucket are counted from the files' footers, and
    in a bag of rows its deletions are observed while it is written."""
    staged_path = f"{path}/{CHANGE_DIR}"
    bucket = f"{bucket_sql(change.schema, merge.key_columns, buckets)} AS {BUCKET_COLUMN}"
    schema = _bucketed(change.schema)
    bucketed = frames.select(change, ["*", bucket])
    deleting = f"coalesce(sum(CASE WHEN {quote_identifier(WEIGHT)} < 0 THEN 1 ELSE 0 END), 0)"
    observed, metrics = observe(
        bucketed, "sparkmv_staged", {"deleting": deleting if merge.bag else "0"}
    )
    frames.write_parquet(observed, staged_path, partition_by=[BUCKET_COLUMN])
    rows = _rows_per_bucket(fs.parquet_row_counts(spark, staged_path))
    touched = {bucket: n for bucket, n in rows.items() if n}
    if not touched:
        return StagedChange(change, touched)
    inserts_only = merge.bag and not metrics.counts()["deleting"]
    staged = _read_buckets(spark, staged_path, schema, sorted(touched))
    return StagedChange(staged, touched, inserts_only)


def _append(spark: SparkSession, staged: StagedChange, merge: Merge, path: str) -> dict[str, int]:
    """Append the copies of ΔV's rows (a bag's insertions only: ``StagedChange``), each
    ``weight`` times, to their buckets of the new snapshot ``path``; return the merge's
    metrics: each copy is a visible row inserted and written. One Spark job."""
    columns = ", ".join(quote_identifier(c) for c in _bucketed(merge.schema).fieldNames())
    repeated = f"inline(array_repeat(struct({columns}), CAST({quote_identifier(WEIGHT)} AS INT)))"
    copies = frames.select(staged.frame, [repeated])
    written = sum(_write_by_bucket(copies, path).values())
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
            frames.write_parquet(old, target, "append", [BUCKET_COLUMN])
            return sum(fs.parquet_row_counts(spark, target).values()) - before
        kept = {b: names for b, names in self.files.items() if b not in except_buckets}
        fs.link_all(
            spark,
            [
                (f"{mask_path(self.snapshot)}/{directory}/{name}", f"{target}/{directory}/{name}")
                for bucket, names in kept.items()
                for directory in [f"{BUCKET_COLUMN}={bucket}"]
                for name in names
            ],
        )
        return sum(self.rows.get(bucket, 0) for bucket in kept)

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
    same = " AND ".join(
        f"s.{quote_identifier(c)} = m.{quote_identifier(c)}" for c in MASK_SCHEMA.fieldNames()
    )
    kept = ", ".join(f"s.{quote_identifier(c)}" for c in columns)
    views = TempViews(spark)
    try:
        return frames.sql(
            spark,
            # shuffled, not broadcast: a broadcast is a Spark job of its own
            f"SELECT /*+ SHUFFLE_HASH(m) */ {kept} FROM {views.name_of(stored)} s LEFT ANTI JOIN"
            f" (SELECT * FROM {views.name_of(read_mask(spark, view.snapshot))}"
            f" WHERE {BUCKET_COLUMN} IN ({listed})) m ON {same}",
        )
    finally:
        views.drop()


def _bucketed(schema: T.StructType) -> T.StructType:
    return T.StructType([*schema.fields, T.StructField(BUCKET_COLUMN, T.IntegerType())])


@dataclass(frozen=True)
class _Hits:
    """The stored rows ΔV merges into, as written into the new snapshot's mask (``path``):
    their number per bucket."""

    path: str
    schema: T.StructType  # a stored file's columns and the bucket
    written: dict[int, int]

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
    path: str,
) -> _Hits:
    """Write, into the mask of the new snapshot ``path``, the live stored rows of the
    patched ``buckets`` that ΔV merges into (equal on ``Merge.key_columns``, NULL-safe, same
    bucket), whole and with their positions: the mask reads the positions, the merge the
    rows (so they are found once). One Spark job."""
    target = mask_path(path)
    stored = _live_rows(spark, view, merge.schema, mask, buckets, files, positions=True)
    hit = _rows_hit(stored, staged, merge)
    written = {bucket: rows for bucket, rows in _write_by_bucket(hit, target).items() if rows}
    return _Hits(target, _bucketed(merge.schema), written)


def _patching(spark: SparkSession, view: MvMetadata, touched: int) -> bool:
    """Whether the touched buckets are big enough to patch: about ``touched / buckets`` of
    the view's rows live in them."""
    return view.row_count * touched >= STORAGE_PATCH_MIN_ROWS.count(spark) * view.layout.buckets


def describe_storage_plan(spark: SparkSession, view: MvMetadata) -> str:
    """How ``apply_change`` will write the touched buckets of ``view`` (for EXPLAIN): what
    it decides from ΔV's buckets is stated as the rule, the rest as decided."""
    minimum = STORAGE_PATCH_MIN_ROWS.count(spark)
    if view.row_count < minimum:  # even touching every bucket, fewer than ``minimum`` rows
        return (
            f"Rewrite the touched buckets whole (the view holds {view.row_count}"
            f" row{'' if view.row_count == 1 else 's'}, fewer"
            f" than {STORAGE_PATCH_MIN_ROWS.key} = {minimum})."
        )
    share = STORAGE_MAX_MASKED_SHARE.value(spark)
    return (
        f"Patch the touched buckets when they hold about {minimum} rows or more (the view"
        f" holds {view.row_count} in {view.layout.buckets}), else rewrite them whole: append"
        f" each one's merged rows as a file and mask the rows they replace ({view.masked_rows}"
        f" masked now); compact a bucket instead when its mask would pass {share:.0%} of its"
        f" rows or it holds {STORAGE_MAX_FILES_PER_BUCKET.count(spark)} files."
    )


def _rows_hit(stored: DataFrame, staged: StagedChange, merge: Merge) -> DataFrame:
    """The rows of ``stored`` equal on ``Merge.key_columns`` (NULL-safe, same bucket) to a
    row of ΔV that needs them (every row; in a bag only deletions: an inserted copy is
    appended and replaces nothing): the stored rows ΔV merges into, by a semi-join with
    ΔV's keys, read from its staged files."""
    keys = [quote_identifier(key) for key in merge.key_columns]
    bucket = quote_identifier(BUCKET_COLUMN)
    same = " AND ".join([f"s.{bucket} = c.{bucket}", *(f"s.{key} <=> c.{key}" for key in keys)])
    deletions = f" WHERE {quote_identifier(WEIGHT)} < 0" if merge.bag else ""
    views = TempViews(stored.sparkSession)
    try:
        # Shuffled, not broadcast: a broadcast is a Spark job of its own, before the one
        # that writes the mask.
        return frames.sql(
            stored.sparkSession,
            f"SELECT /*+ SHUFFLE_HASH(c) */ s.* FROM {views.name_of(stored)} s LEFT SEMI JOIN"
            f" (SELECT DISTINCT {', '.join([bucket, *keys])} FROM {views.name_of(staged.frame)}"
            f"{deletions}) c ON {same}",
        )
    finally:
        views.drop()


def _to_compact(
    spark: SparkSession,
    view: MvMetadata,
    changed: dict[int, int],
    mask: StoredMask,
    files: BucketFiles,
) -> frozenset[int]:
    """The touched buckets to rewrite whole: those with ``STORAGE_MAX_FILES_PER_BUCKET`` files, and
    those whose mask (what it hides now, plus about one row per change row there) would
    pass ``STORAGE_MAX_MASKED_SHARE`` of their stored rows. A bucket's stored rows are
    estimated as an even share of the view's; its mask's rows are counted (``StoredMask``)."""
    share = STORAGE_MAX_MASKED_SHARE.value(spark)
    max_files = STORAGE_MAX_FILES_PER_BUCKET.count(spark)
    per_bucket = (view.row_count + view.masked_rows) / view.layout.buckets
    return frozenset(
        bucket
        for bucket, rows in changed.items()
        if len(files.get(bucket, ())) >= max_files
        or mask.rows.get(bucket, 0) + rows > share * per_bucket
    )


def _write_by_bucket(rows: DataFrame, directory: str) -> dict[int, int]:
    """Append ``rows`` (with the bucket column) under ``directory`` partitioned by bucket
    (``mv_bucket=k/``); return the rows written per bucket, from the files' footers."""
    frames.write_parquet(rows, directory, "append", [BUCKET_COLUMN])
    return _rows_per_bucket(fs.parquet_row_counts(rows.sparkSession, directory))


def write_merged(merge: Merge, stored: DataFrame, change: DataFrame, path: str) -> dict[str, int]:
    """Write the rows ``merge`` keeps of ``stored`` (the stored rows ΔV hits, with the
    bucket column) merged with ``change`` as bucket directories under ``path``; return its
    ``metrics`` (named ``METRICS``), observed while writing.

    Spark writes one file per bucket, after a shuffle by bucket; the metrics are observed
    after it, in the writing stage: observed before it, they would be lost whenever no row
    is kept (adaptive execution replaces an empty stage's plan, observation included).
    """
    named = {n: f"coalesce({m}, 0)" for m, n in zip(merge.metrics, METRICS, strict=True)}
    merged = merge.merged(stored, change)
    if not merge.by_bucket:
        merged = frames.repartition(merged, [BUCKET_COLUMN])
    observed, metrics = observe(merged, "sparkmv_apply", named)
    _write_by_bucket(merge.kept(observed), path)
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
    """Link (``fs.link_all``) the data ``files`` of every bucket of ``snapshot`` but
    ``except_buckets`` into ``path``."""
    fs.link_all(
        spark,
        [
            (f"{snapshot}/{directory}/{name}", f"{path}/{directory}/{name}")
            for bucket, names in files.items()
            if bucket not in except_buckets
            for directory in [f"{BUCKET_COLUMN}={bucket}"]
            for name in names
        ],
    )
