"""``ChangeLog``: a differential file per base table (Hanson §2.2), one commit per write.

Layout under the log's root directory::

    commits/00000000000000000007.json   one manifest per committed write, published atomically
    commits/_compacted_through.7        versions up to 7 were compacted away (holds v7's state)
    rows/00000000000000000007-<id>/{inserted,deleted}/   explicit change rows (parquet)
    rows/<id>/<partition path>/         pre-images a copy-on-write deleted, referenced as files
    preserved/<id>/                     links to data files a replacing write removed
    pending/<id>.intent, <id>.json       a copy-on-write in progress, until its commit
    dependents/<db.view>                the materialized views that read the table
    immediate/<db.view>                 those refreshed ON COMMIT (each captured write does it)

A commit records the rows a write inserted and deleted: as references to data files (the
files an append added; the files an overwrite replaced, which stay readable until
compaction; a copy-on-write's files of new rows, and the files of its deleted rows'
pre-images, which the log owns) or as explicit change rows. Reading a version range
``(a, b]`` is one Spark job over the referenced files: inserted rows weigh +1, deleted rows
−1, and consolidation leaves the net changes ``A-net = A − D``, ``D-net = D − A`` (Hanson
§2.2; Blakeley §3: the net effect of a transaction has disjoint inserted and deleted parts).
A copy-on-write logs only the rows it changed, never the rows it copied, so reading it costs
in proportion to the change.

Each commit also records the digest of the table's file set after the write
(``capture.files``). ``reconcile`` compares it with the table's current files before the log
is trusted: a mismatch means the table changed behind the log's back, and a RESYNC commit
(incomplete) makes every range across it unreadable, so dependent views refresh fully.

The manifest is the commit point: change rows are written first, into a directory of this
attempt that no manifest names yet, and the manifest is published atomically, only if no
manifest of that version exists (``publish_text``).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from sparkmv import frames, fs
from sparkmv.capture.files import DataFile, PartitionSpec, TableFiles, delete_retired
from sparkmv.capture.source import ChangeRangeError
from sparkmv.frames import ParquetRead
from sparkmv.identifiers import quote_identifier, sql_string
from sparkmv.zset import WEIGHT, consolidate

_MANIFEST = re.compile(r"^(\d{20})\.json$")
_COMPACTED = re.compile(r"^_compacted_through\.(\d+)$")


@dataclass(frozen=True)
class FileRef:
    """A data file whose rows a commit inserted or deleted, with its partition values."""

    path: str
    partition: PartitionSpec = ()

    @classmethod
    def of(cls, file: DataFile) -> FileRef:
        return cls(file.path, file.partition)

    def to_json(self) -> list[object]:
        return [self.path, [list(pair) for pair in self.partition]]

    @classmethod
    def from_json(cls, value: list[object]) -> FileRef:
        path, partition = value
        assert isinstance(path, str) and isinstance(partition, list)
        return cls(path, tuple((str(column), value) for column, value in partition))


@dataclass(frozen=True)
class ClearedKeys:
    """What a ``DELETE``'s own condition (one column compared with constants) proves about its
    table (``ClearedKeys.scala``): after the commit no row holds one of ``values`` in
    ``column``, and every row the commit deleted held one. Metadata of the statement, kept
    with its commit for the join-term proofs (``plan/key_proofs.py``)."""

    column: str
    values: frozenset[int]  # a date as its day number

    def to_json(self) -> dict[str, object]:
        return {"column": self.column, "values": sorted(self.values)}

    @classmethod
    def from_json(cls, value: dict[str, object]) -> ClearedKeys:
        column, values = value["column"], value["values"]
        assert isinstance(column, str) and isinstance(values, list)
        return cls(column, frozenset(int(v) for v in values))


@dataclass(frozen=True)
class LogCommit:
    """One committed write: what it inserted and deleted, and the table's files after it."""

    version: int
    operation: str  # START, INSERT, DELETE, UPDATE, MERGE, OVERWRITE, RESYNC, ...
    timestamp_ms: int
    inserted_files: tuple[FileRef, ...] = ()
    deleted_files: tuple[FileRef, ...] = ()
    inserted_rows: str | None = None  # directory of explicit inserted rows
    deleted_rows: str | None = None  # directory of explicit deleted rows
    retired_files: tuple[str, ...] = ()  # deleted by compaction, once no reader needs them
    preserved: dict[str, str] = field(default_factory=dict)  # removed table file → its link
    complete: bool = True  # False: the write's row changes are not known
    reason: str = ""  # why an incomplete commit is incomplete
    files_digest: str = ""  # the table's file set after this write ("" if unknown)
    file_count: int = 0
    metrics: dict[str, int] = field(default_factory=dict)
    assigned_columns: tuple[str, ...] | None = None  # an UPDATE's assigned columns
    cleared_keys: ClearedKeys | None = None  # what a DELETE's condition proves

    def ignorable_by(self, read: set[str] | None) -> bool:
        """Whether a reader of only the columns ``read`` (None: all) can skip this write: an
        UPDATE assigning none of them (a readily ignorable update, Hanson §1)."""
        if read is None or self.assigned_columns is None:
            return False
        lowered = {name.lower() for name in read}  # Spark's column names ignore case
        return not any(name.lower() in lowered for name in self.assigned_columns)

    def to_json(self) -> str:
        values = asdict(self)
        values["inserted_files"] = [ref.to_json() for ref in self.inserted_files]
        values["deleted_files"] = [ref.to_json() for ref in self.deleted_files]
        if self.cleared_keys is not None:
            values["cleared_keys"] = self.cleared_keys.to_json()
        return json.dumps(values, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> LogCommit:
        values = json.loads(text)
        for key in ("inserted_files", "deleted_files"):
            values[key] = tuple(FileRef.from_json(ref) for ref in values.get(key, ()))
        values["retired_files"] = tuple(values.get("retired_files", ()))
        if values.get("assigned_columns") is not None:
            values["assigned_columns"] = tuple(values["assigned_columns"])
        if values.get("cleared_keys") is not None:
            values["cleared_keys"] = ClearedKeys.from_json(values["cleared_keys"])
        return cls(**values)


@dataclass(frozen=True)
class PreparedCommit:
    """A copy-on-write between writing its files and swapping them in (``pending/``).

    If the process dies after the swap but before the commit, ``reconcile`` finds the table
    in the ``commit``'s state and publishes it; if it died before the swap, the table is
    still in the ``before_digest`` state, and the prepared files are removed.
    """

    pending_id: str
    before_digest: str
    commit: LogCommit
    abandoned: tuple[str, ...]  # what to delete if the swap never happened

    def to_json(self) -> str:
        return json.dumps(
            {
                "before_digest": self.before_digest,
                "commit": self.commit.to_json(),
                "abandoned": list(self.abandoned),
            }
        )

    @classmethod
    def from_json(cls, pending_id: str, text: str) -> PreparedCommit:
        values = json.loads(text)
        return cls(
            pending_id,
            values["before_digest"],
            LogCommit.from_json(values["commit"]),
            tuple(values["abandoned"]),
        )


class ChangeLog:
    """The change log of one table; implements ``capture.source.ChangeSource``.

    ``schema`` is the table's schema (data and partition columns, in table order).

    An instance lists the log's ``commits/`` once and answers from that listing until this
    process publishes a version or a compaction marker to the log (``_written``): a refresh
    sees the log as of its first look, in one round trip instead of one per question, and
    ``list_together`` lists the logs of all a refresh's base tables (and their dependents) in
    one. A write is decided by its publish (create-if-absent), never by the listing: one that
    loses to another process lists again. (Instances live for a call; none is kept across
    statements.) A manifest or a compaction marker, once published, never changes: each is
    read once per instance.
    """

    def __init__(self, spark: SparkSession, root: str, schema: StructType):
        self.spark = spark
        self.root = root.rstrip("/")
        self.schema = schema
        # The listing of commits/, and the count of this process's writes to the log it is
        # as of; the names in dependents/ (None: not listed yet).
        self._commit_names: tuple[int, list[str]] | None = None
        self._dependent_names: set[str] | None = None
        self._published_texts: dict[str, str] = {}  # manifests and markers read, by path

    # -- writing -------------------------------------------------------------------------

    def commit(
        self,
        operation: str,
        state: TableFiles | None,
        inserted_files: Sequence[FileRef] = (),
        deleted_files: Sequence[FileRef] = (),
        inserted_rows: DataFrame | None = None,
        deleted_rows: DataFrame | None = None,
        retired_files: Sequence[str] = (),
        preserved: dict[str, str] | None = None,
        complete: bool = True,
        reason: str = "",
        metrics: dict[str, int] | None = None,
    ) -> LogCommit:
        """Record one write as the next version; ``state`` is the table's files after it.

        ``complete=False`` records that the table changed in a way the log cannot describe;
        no range that includes this version can be read.

        Raises ``ConcurrentCommitError`` if another writer published that version first.
        """
        version = self.current_version() + 1
        rows_dir = f"{self.root}/rows/{version:020d}-{uuid.uuid4().hex[:8]}"
        commit = self.new_commit(
            operation,
            state,
            inserted_files=tuple(inserted_files),
            deleted_files=tuple(deleted_files),
            inserted_rows=self._write_rows(inserted_rows, f"{rows_dir}/inserted"),
            deleted_rows=self._write_rows(deleted_rows, f"{rows_dir}/deleted"),
            retired_files=tuple(retired_files),
            preserved=preserved or {},
            complete=complete,
            reason=reason,
            metrics=metrics or {},
        )
        if not self._publish(replace(commit, version=version)):
            fs.remove(self.spark, rows_dir)
            raise ConcurrentCommitError(f"version {version} of {self.root} was committed meanwhile")
        return replace(commit, version=version)

    @staticmethod
    def new_commit(operation: str, state: TableFiles | None, **values: object) -> LogCommit:
        """A commit without its version (assigned when it is published)."""
        return LogCommit(
            version=0,
            operation=operation,
            timestamp_ms=int(time.time() * 1000),
            files_digest=state.digest if state is not None else "",
            file_count=len(state.files) if state is not None else 0,
            **values,  # type: ignore[arg-type]
        )

    def _publish(self, commit: LogCommit) -> bool:
        try:
            return fs.publish_text(self.spark, self._manifest(commit.version), commit.to_json())
        finally:
            _written(self.root)  # ours or another writer's: list again

    @staticmethod
    def list_together(logs: Sequence[ChangeLog]) -> None:
        """List the ``commits/`` and ``dependents/`` of each of ``logs`` now, in one round
        trip: what each then answers from (``_listed_commits``, ``dependents``)."""
        if not logs:
            return
        writes = [_log_writes[log.root] for log in logs]  # before the listing, as there
        directories = [f"{log.root}/{part}" for log in logs for part in ("commits", "dependents")]
        listed = iter(fs.list_names_of(logs[0].spark, directories))
        for log, written in zip(logs, writes, strict=True):
            log._commit_names = (written, next(listed))
            log._dependent_names = _dependent_names(next(listed))

    def _listed_commits(self) -> list[str]:
        """The names in ``commits/`` (manifests and compaction markers), as listed after this
        process's last write to the log."""
        writes = _log_writes[self.root]  # before the listing: a write during it lists again
        if self._commit_names is None or self._commit_names[0] != writes:
            names = fs.list_names(self.spark, f"{self.root}/commits")
            self._commit_names = (writes, names)
        return self._commit_names[1]

    def _published_text(self, path: str) -> str:
        """The text of the manifest or marker ``path`` (immutable once published)."""
        text = self._published_texts.get(path)
        if text is None:
            text = self._published_texts[path] = fs.read_text(self.spark, path)
        return text

    def _write_rows(self, rows: DataFrame | None, path: str) -> str | None:
        if rows is None:
            return None
        rows.select(*self.schema.fieldNames()).write.mode("errorifexists").parquet(path)
        return path

    def change_rows_dir(self) -> str:
        """A fresh directory for change-row files that commits reference like data files
        (a copy-on-write's pre-images); compaction removes it with the commit."""
        return f"{self.root}/rows/{uuid.uuid4().hex}"

    def preserved_dir(self) -> str:
        """A fresh directory for links to files a replacing write is about to remove."""
        return f"{self.root}/preserved/{uuid.uuid4().hex}"

    # -- copy-on-write: prepare, then commit after the swap ------------------------------

    def intend(self, abandoned: Sequence[str]) -> str:
        """Announce a copy-on-write before it writes anything: if it never commits, the
        next ``reconcile`` removes ``abandoned``. Returns the write's id."""
        pending_id = uuid.uuid4().hex
        fs.publish_text(self.spark, self._intent(pending_id), json.dumps(list(abandoned)))
        return pending_id

    def prepare(
        self, pending_id: str, before: TableFiles, commit: LogCommit, abandoned: Sequence[str]
    ) -> PreparedCommit:
        """Record the commit a copy-on-write will make, just before its swap."""
        prepared = PreparedCommit(pending_id, before.digest, commit, tuple(abandoned))
        fs.publish_text(self.spark, self._pending(prepared.pending_id), prepared.to_json())
        return prepared

    def commit_prepared(self, prepared: PreparedCommit) -> LogCommit:
        """Publish a prepared commit whose swap happened; raises on a concurrent commit."""
        version = self.current_version() + 1
        commit = replace(prepared.commit, version=version)
        if not self._publish(commit):
            latest = self.expected_state()
            if latest is not None and latest.files_digest == commit.files_digest:
                return latest  # a reader's reconcile rolled it forward first
            raise ConcurrentCommitError(f"version {version} of {self.root} was committed meanwhile")
        self._forget(prepared.pending_id)
        return commit

    def reconcile(self, current: TableFiles, writer: bool = False) -> str:
        """Make the log agree with the table's ``current`` files before anyone trusts it.

        Returns "" when it already did (or a prepared copy-on-write was rolled forward),
        otherwise why it did not; a RESYNC commit then marks the gap as unreadable. A
        ``writer`` (who holds the table, as Spark assumes of writers) also removes what
        copy-on-writes that died before their swap left behind; a reader must not, as such a
        write may still be running.
        """
        reason = ""
        expected = self.expected_state()
        if expected is None or expected.files_digest != current.digest:
            match = self._rolls_forward(expected, current)
            if match is not None:
                self.commit_prepared(match)
            else:
                reason = _bypass_reason(expected, current)
                self.commit("RESYNC", current, complete=False, reason=reason)
        if writer:
            self._abandon_pending()
        return reason

    def _abandon_pending(self) -> None:
        """Remove what copy-on-writes that never committed left behind."""
        directory = f"{self.root}/pending"
        names = [n for n in fs.list_names(self.spark, directory) if not fs.is_hidden(n)]
        for pending_id in {name.partition(".")[0] for name in names}:
            abandoned: list[str] = []
            if f"{pending_id}.intent" in names:
                abandoned += json.loads(fs.read_text(self.spark, self._intent(pending_id)))
            if f"{pending_id}.json" in names:
                text = fs.read_text(self.spark, self._pending(pending_id))
                abandoned += PreparedCommit.from_json(pending_id, text).abandoned
            for path in abandoned:
                fs.remove(self.spark, path)
            self._forget(pending_id)

    def _forget(self, pending_id: str) -> None:
        fs.remove(self.spark, self._pending(pending_id))
        fs.remove(self.spark, self._intent(pending_id))

    def verify(self, current: TableFiles) -> str:
        """What ``reconcile`` would report, without changing the log."""
        expected = self.expected_state()
        if expected is not None and expected.files_digest == current.digest:
            return ""
        if self._rolls_forward(expected, current) is not None:
            return ""
        return _bypass_reason(expected, current)

    def _rolls_forward(
        self, expected: LogCommit | None, current: TableFiles
    ) -> PreparedCommit | None:
        """The prepared commit that took the table from ``expected`` to ``current``."""
        if expected is None:
            return None
        return next(
            (
                p
                for p in self._pending_commits()
                if p.before_digest == expected.files_digest
                and p.commit.files_digest == current.digest
            ),
            None,
        )

    def retired_files(self) -> list[str]:
        """Files retired by commits that compaction has not processed yet."""
        commits = self._read_all(self._versions())
        return [path for commit in commits for path in commit.retired_files]

    def expected_state(self) -> LogCommit | None:
        """The latest commit (or the compaction marker's copy of it): the state the table
        should be in; None when the log has no record of it."""
        versions = self._versions()
        if versions:
            return self._read(versions[-1])
        through = self.earliest_readable()
        if through == 0:
            return None
        text = self._published_text(self._marker(through))
        return LogCommit.from_json(text) if text else None

    # -- retention ------------------------------------------------------------------------

    def compact(self, through: int) -> None:
        """Forget versions ``<= through``: every reader has consumed them.

        Deletes their change rows, preserved links and the data files copy-on-write retired
        (kept until now for the log's readers and for queries already reading them).
        Compaction decides on a listing made after an earlier compaction's removals ended (by
        another process, too, which may have removed manifests an older listing names): the
        caller lists the log (``list_together``) after ``fs.wait_for_removals``.
        """
        previous = self.earliest_readable()
        through = min(through, self.current_version())
        if through <= previous:
            return
        listed = self._manifests(self._listed_commits())
        # Versions up to ``previous`` whose manifests a crash left behind are forgotten again.
        commits = self._read_all([version for version in listed if version <= through])
        # The marker (with the latest state) goes first: a crash never exposes a gap.
        last = next((c for c in reversed(commits) if c.version == through), None)
        fs.publish_text(self.spark, self._marker(through), last.to_json() if last else "")
        _written(self.root)
        # No reader needs these files, and a crash before they are gone leaves their
        # manifests for the next compaction.
        fs.remove_in_background(partial(self._delete_compacted, commits, previous))

    def _delete_compacted(self, commits: list[LogCommit], previous: int) -> None:
        """Delete what the compacted ``commits`` kept (``compact``), then their manifests and
        the ``previous`` compaction marker."""
        preserved = f"{self.root}/preserved/"
        for commit in commits:
            delete_retired(self.spark, commit.retired_files)
            for parent in {path.rsplit("/", 1)[0] for path in commit.retired_files}:
                if parent.startswith(preserved) and not fs.list_names(self.spark, parent):
                    fs.remove(self.spark, parent)
            rows = [r.rsplit("/", 1)[0] for r in (commit.inserted_rows, commit.deleted_rows) if r]
            fs.remove_all(self.spark, [*rows, *self._owned_rows_dirs(commit)])
        manifests = [self._manifest(commit.version) for commit in commits]
        fs.remove_all(self.spark, [*manifests, self._marker(previous)])

    def _owned_rows_dirs(self, commit: LogCommit) -> set[str]:
        """The ``change_rows_dir``s of the log's own files that ``commit`` references."""
        prefix = f"{self.root}/rows/"
        return {
            prefix + ref.path[len(prefix) :].split("/", 1)[0]
            for ref in (*commit.inserted_files, *commit.deleted_files)
            if ref.path.startswith(prefix)
        }

    # -- dependents ----------------------------------------------------------------------

    def dependents(self) -> list[str]:
        """The materialized views (qualified names) that read the table, one marker file
        each under ``dependents/``: adding one is a file, not a metastore write."""
        if self._dependent_names is None:
            names = fs.list_names(self.spark, f"{self.root}/dependents")
            self._dependent_names = _dependent_names(names)
        return sorted(self._dependent_names)

    def add_dependent(self, view: str) -> None:
        """Make ``view`` a dependent; no write when the log's listing has it already (a
        refresh adds its view to each base table's log, which its CREATE did)."""
        if self._dependent_names is not None and view in self._dependent_names:
            return
        fs.publish_text(self.spark, self._dependent(view), "")  # False: already there
        if self._dependent_names is not None:
            self._dependent_names.add(view)

    def remove_dependent(self, view: str) -> None:
        fs.remove(self.spark, self._dependent(view))
        if self._dependent_names is not None:
            self._dependent_names.discard(view)

    def _dependent(self, view: str) -> str:
        return f"{self.root}/dependents/{view}"

    def immediate_dependents(self) -> list[str]:
        """The dependents refreshed ON COMMIT: an index of the catalog's triggers, one
        marker file each under ``immediate/``, so that a captured write finds them with a
        listing instead of a metastore lookup per dependent (the catalog decides: a marker
        of a view no longer ON COMMIT, left by a crash, is ignored and removed)."""
        names = fs.list_names(self.spark, f"{self.root}/immediate")
        return [name for name in names if not fs.is_hidden(name)]

    def set_immediate(self, view: str, immediate: bool) -> None:
        marker = f"{self.root}/immediate/{view}"
        if immediate:
            fs.publish_text(self.spark, marker, "")  # False: already there
        else:
            fs.remove(self.spark, marker)

    # -- reading -------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        """The log's root: a table re-created under its name gets a new log."""
        return self.root

    def current_version(self) -> int:
        versions = self._versions()
        return versions[-1] if versions else self.earliest_readable()

    def earliest_readable(self) -> int:
        return self._compacted_through(self._listed_commits())

    def commits(self, start: int, end: int) -> list[LogCommit]:
        """The commits of versions ``(start, end]``, oldest first."""
        if start < self.earliest_readable() or end > self.current_version() or start > end:
            raise ChangeRangeError(
                f"{self.root} covers versions ({self.earliest_readable()}, "
                f"{self.current_version()}], not ({start}, {end}]"
            )
        versions = [version for version in self._versions() if start < version <= end]
        if versions != list(range(start + 1, end + 1)):
            raise ChangeRangeError(f"{self.root} is missing versions of ({start}, {end}]")
        return self._read_all(versions)

    def unreadable_reason(self, start: int, end: int) -> str:
        """Why ``net_changes(start, end)`` cannot be answered; "" when it can."""
        try:
            return _incomplete_reason(self.commits(start, end))
        except ChangeRangeError as error:
            return str(error)

    def net_changes(self, start: int, end: int) -> DataFrame:
        """Net changes of versions ``(start, end]`` as a consolidated Z-set (one Spark job)."""
        return consolidate(self.row_changes(start, end))

    def row_changes(self, start: int, end: int, read: set[str] | None = None) -> DataFrame:
        """The logged rows of versions ``(start, end]``, inserted +1 and deleted −1, as
        logged (not consolidated: a row inserted then deleted appears twice). A reader of
        only the columns ``read`` skips the UPDATEs that assign none of them: their images
        agree on those columns, so they cancel once the others are set aside."""
        logged = self._logged(start, end, read)
        reads = [
            *self._file_reads(logged.inserted_files, +1),
            *self._file_reads(logged.deleted_files, -1),
        ]
        for weight, directories in ((+1, logged.inserted_rows), (-1, logged.deleted_rows)):
            if directories:
                reads.append(
                    ParquetRead(self.schema, tuple(directories), select=self._items({}, weight))
                )
        if not reads:
            return frames.select(frames.empty(self.spark, self.schema), self._items({}, 0))
        return frames.read_parquets(self.spark, reads)

    def _logged(self, start: int, end: int, read: set[str] | None) -> _Logged:
        """What ``row_changes`` reads: the files and row directories of the commits of
        ``(start, end]`` a reader of ``read`` cannot skip."""
        commits = self.commits(start, end)
        reason = _incomplete_reason(commits)
        if reason:
            raise ChangeRangeError(f"{self.root}: {reason}")
        commits = [commit for commit in commits if not commit.ignorable_by(read)]
        # A file inserted by reference may have been removed from the table by a later
        # overwrite, which kept a link to it (Spark deletes files at once; the log cannot).
        moved = {
            path: link
            for commit in commits + self.commits(end, self.current_version())
            for path, link in commit.preserved.items()
        }
        return _Logged(
            [
                FileRef(moved.get(ref.path, ref.path), ref.partition)
                for commit in commits
                for ref in commit.inserted_files
            ],
            [
                FileRef(moved.get(ref.path, ref.path), ref.partition)
                for commit in commits
                for ref in commit.deleted_files
            ],
            [c.inserted_rows for c in commits if c.inserted_rows is not None],
            [c.deleted_rows for c in commits if c.deleted_rows is not None],
        )

    def inserts_only(self, start: int, end: int, read: set[str] | None = None) -> bool:
        """Whether the commits ``row_changes(start, end, read)`` reads delete nothing (no
        deleted files, no explicit deleted rows): from their manifests, no data read."""
        commits = [commit for commit in self.commits(start, end) if not commit.ignorable_by(read)]
        return all(not commit.deleted_files and commit.deleted_rows is None for commit in commits)

    def read_files(self, refs: list[FileRef]) -> DataFrame:
        """Rows of data files (without weights); partition values come from the refs, not
        from paths."""
        if not refs:
            return frames.empty(self.spark, self.schema)
        return frames.read_parquets(self.spark, self._file_reads(refs, None))

    def _file_reads(self, refs: list[FileRef], weight: int | None) -> list[ParquetRead]:
        """The reads of the data files ``refs`` (one per partition, however many files:
        read and united by one py4j call), every row weighing ``weight`` (None: no weight
        column)."""
        by_partition: dict[PartitionSpec, list[str]] = defaultdict(list)
        for ref in refs:
            by_partition[ref.partition].append(ref.path)
        reads = []
        for partition, paths in by_partition.items():
            values = dict(partition)
            # The files hold every column but the partition's, in the schema's order.
            data_schema = StructType([f for f in self.schema.fields if f.name not in values])
            select = self._items(values, weight) if values or weight is not None else None
            reads.append(ParquetRead(data_schema, tuple(paths), select=select))
        return reads

    def _items(self, values: dict[str, str | None], weight: int | None) -> tuple[str, ...]:
        """A select list of the schema's columns, those of ``values`` (a partition's) set
        to its values, then the weight column (``weight``; None: none)."""
        items = [
            f"CAST({_literal(values[f.name])} AS {f.dataType.simpleString()}) AS "
            + quote_identifier(f.name)
            if f.name in values
            else quote_identifier(f.name)
            for f in self.schema.fields
        ]
        if weight is not None:
            items.append(f"CAST({weight} AS BIGINT) AS {quote_identifier(WEIGHT)}")
        return tuple(items)

    def _versions(self) -> list[int]:
        """The versions whose manifests the log holds, past its compaction marker: the
        manifests of compacted versions may linger while (or, after a crash, until)
        ``_delete_compacted`` removes them, and no reader may use them."""
        names = self._listed_commits()
        through = self._compacted_through(names)
        return [version for version in self._manifests(names) if version > through]

    @staticmethod
    def _manifests(names: list[str]) -> list[int]:
        return sorted(int(match.group(1)) for name in names if (match := _MANIFEST.match(name)))

    @staticmethod
    def _compacted_through(names: list[str]) -> int:
        return max((int(m.group(1)) for name in names if (m := _COMPACTED.match(name))), default=0)

    def _read(self, version: int) -> LogCommit:
        return LogCommit.from_json(self._published_text(self._manifest(version)))

    def _read_all(self, versions: Sequence[int]) -> list[LogCommit]:
        """``_read`` of each of ``versions``, those not read yet in one round trip."""
        paths = [self._manifest(version) for version in versions]
        unread = [path for path in paths if path not in self._published_texts]
        for path, text in zip(unread, fs.read_texts(self.spark, unread), strict=True):
            if text is None:
                raise ChangeRangeError(f"{self.root} lost the manifest {path} (compacted)")
            self._published_texts[path] = text
        return [self._read(version) for version in versions]

    def _pending_commits(self) -> list[PreparedCommit]:
        directory = f"{self.root}/pending"
        return [
            PreparedCommit.from_json(
                name[: -len(".json")], fs.read_text(self.spark, f"{directory}/{name}")
            )
            for name in fs.list_names(self.spark, directory)
            if name.endswith(".json") and not fs.is_hidden(name)
        ]

    def _manifest(self, version: int) -> str:
        return f"{self.root}/commits/{version:020d}.json"

    def _marker(self, through: int) -> str:
        return f"{self.root}/commits/_compacted_through.{through}"

    def _pending(self, pending_id: str) -> str:
        return f"{self.root}/pending/{pending_id}.json"

    def _intent(self, pending_id: str) -> str:
        return f"{self.root}/pending/{pending_id}.intent"


@dataclass(frozen=True)
class _Logged:
    """The changed rows of a version range, as logged: data files inserted (+1) and deleted
    (−1) by reference, and directories of explicit inserted and deleted rows."""

    inserted_files: list[FileRef]
    deleted_files: list[FileRef]
    inserted_rows: list[str]
    deleted_rows: list[str]

    def all_files(self) -> list[FileRef]:
        return [*self.inserted_files, *self.deleted_files]

    def files_by_weight(self) -> list[tuple[list[FileRef], int]]:
        return [(self.inserted_files, +1), (self.deleted_files, -1)]

    def rows_by_weight(self) -> list[tuple[list[str], int]]:
        return [(self.inserted_rows, +1), (self.deleted_rows, -1)]


_log_writes: Counter[str] = Counter()
"""How many times this process published a version or a compaction marker to each log (by
root): a listing of a log made before its last one is not used again
(``ChangeLog._listed_commits``)."""


def _written(root: str) -> None:
    _log_writes[root] += 1


def _dependent_names(listed: list[str]) -> set[str]:
    """The dependents of a listing of ``dependents/`` (no hidden file of a publish)."""
    return {name for name in listed if not fs.is_hidden(name)}


def _literal(value: str | None) -> str:
    """A partition value (as the metastore spells it) as a Spark SQL literal."""
    return "NULL" if value is None else sql_string(value)


def _incomplete_reason(commits: list[LogCommit]) -> str:
    """Why a range of commits cannot be read row by row; "" when it can."""
    for commit in commits:
        if not commit.complete:
            return f"version {commit.version} ({commit.operation}) was not logged row by row" + (
                f": {commit.reason}" if commit.reason else ""
            )
    return ""


def _bypass_reason(expected: LogCommit | None, current: TableFiles) -> str:
    if expected is None or not expected.files_digest:
        return "the change log has no record of the table's files"
    return (
        "the table's files changed outside sparkmv's change capture (the log expected "
        f"{expected.file_count} data files, the table has {len(current.files)}); its change "
        "log was resynchronised"
    )


class ConcurrentCommitError(Exception):
    """Another writer published the version this commit wanted."""


__all__ = ["WEIGHT", "ChangeLog", "ConcurrentCommitError", "FileRef", "LogCommit"]
