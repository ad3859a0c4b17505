"""Join-term proofs from metadata, never decoded rows (issue 53): footer statistics and the
conditions of captured ``DELETE`` statements.

The join rule reads an input ``R_j`` from its own change in the term of ``ΔR_i`` when, at
every key ``k`` of ``ΔR_i``, ``R_j,old[k] = ∅`` or ``R_j,new[k] = ∅`` (``delta/join.py``,
``delta.engine.KeyProof``): then ``R_j,new[k] = Δ⁺R_j[k]`` and ``R_j,old[k] = Δ⁻R_j[k]``, and
the term scans neither table. This module proves it on one pair of equated columns (``a`` of
``R_j``, ``b`` of ``R_i``; NULLs match nothing, and one column of a composite key suffices),
splitting the rows ``R_i``'s commits logged in two parts, each proven by one disjunct:

- **cleared keys, ``R_j,new[k] = ∅``.** A ``DELETE FROM R_j WHERE a IN (S)`` leaves no row of
  ``R_j`` at a key of ``S`` (``ClearedKeys.scala``, logged with the commit as
  ``LogCommit.cleared_keys``); with no commit of ``R_j`` after it inserting a row, none is at
  ``S`` now. The rows deleted by a ``DELETE FROM R_i WHERE b IN (S_i)`` all have keys in
  ``S_i``; where ``S_i ⊆ S`` they are covered. TPC-H's RF2 deletes orders and their line items
  at one key list: ``Δ⁻O ⋈ L_old = Δ⁻O ⋈ Δ⁻L``.
- **footer ranges, ``R_j,old[k] = ∅``.** If the values of ``b`` in the rest of ``R_i``'s
  logged rows and the values of ``a`` in the rows ``R_j`` held before its change have
  disjoint ranges, no old row of ``R_j`` matches them. That is an append of rows with new
  keys, such as RF1's new orders with their line items: ``Δ(O ⋈ L) = ΔO ⋈ ΔL``. The ranges
  come from the footers (``fs.integer_ranges``), through Hadoop's ``FileSystem`` on every file
  system:

  - ``ΔR_i`` holds only rows its commits logged: the files they reference and their
    change-row directories (a net change is a part of those);
  - ``R_j,old`` is a part of the rows of ``R_j``'s files now, less the files its commits
    inserted (and their links into a later copy-on-write's directory, which share their
    names), plus the files and rows its commits deleted (a copy-on-write's rewritten files
    may hold rows inserted in the range too, which only widens the range).

Only signed integer and date columns of one type on both sides are compared; anything the
log and the footers do not say proves nothing, and the term then reads the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pyspark.sql import SparkSession
from pyspark.sql.types import (
    ByteType,
    DataType,
    DateType,
    IntegerType,
    LongType,
    ShortType,
)

from sparkmv import fs
from sparkmv.capture.change_log import ChangeLog, LogCommit
from sparkmv.capture.files import PartitionSpec
from sparkmv.capture.tracking import BaseTable
from sparkmv.config import KEY_PROOFS_CONF, conf_flag
from sparkmv.delta.engine import KeyedColumns

_INTEGRAL = (ByteType, ShortType, IntegerType, LongType, DateType)
"""Spark types parquet stores as INT32 or INT64 and whose footer order is Spark's."""


@dataclass(frozen=True)
class _ChangedFiles:
    """The parquet paths of one changed base table, as its log and listing say."""

    commits: tuple[LogCommit, ...]  # those the refresh consumes, oldest first
    old: tuple[str, ...]  # a superset of its rows before the change
    columns: Mapping[str, tuple[str, DataType]]  # name as stored and type, by lower-cased name

    def stored(self, column: str) -> str:
        """``column`` as the table's schema (and so its files) spell it."""
        return self.columns[column.lower()][0]

    def change(self, covered: frozenset[int] = frozenset()) -> tuple[str, ...]:
        """Every row its commits logged (referenced files, row directories) but the deleted
        rows of the ``covered`` versions."""
        inserted = [path for commit in self.commits for path in _logged(commit, inserted=True)]
        return tuple(inserted) + tuple(
            path
            for commit in self.commits
            if commit.version not in covered
            for path in _logged(commit, inserted=False)
        )

    def cleared(self, column: str) -> ClearedSince:
        """The keys of ``column`` no row holds now, by the DELETE conditions logged since its
        last commit that inserted rows (a later insert could bring a key back)."""
        keys: set[int] = set()
        versions: list[int] = []
        for commit in reversed(self.commits):
            if _logged(commit, inserted=True):
                break
            found = commit.cleared_keys
            if found is not None and found.column.lower() == column.lower():
                keys |= found.values
                versions.append(commit.version)
        return ClearedSince(frozenset(keys), tuple(sorted(versions)))

    def deleted_within(self, column: str, keys: frozenset[int]) -> tuple[int, ...]:
        """The versions whose deleted rows all hold keys of ``column`` in ``keys``, by their
        own DELETE conditions."""
        return tuple(
            commit.version
            for commit in self.commits
            if commit.cleared_keys is not None
            and commit.cleared_keys.column.lower() == column.lower()
            and commit.cleared_keys.values <= keys
            and _logged(commit, inserted=False)
        )


@dataclass(frozen=True)
class ClearedSince:
    """Keys a table holds no row at, and the versions whose DELETEs cleared them."""

    keys: frozenset[int]
    versions: tuple[int, ...]


@dataclass
class MetadataKeyProof:
    """A ``KeyProof`` over the changed ``tables`` of one refresh (by name, with the version
    the view consumed), from their logs' DELETE conditions and footer statistics. Nothing is
    read until a join term asks (most refreshes never do); then each range a proof needs is
    read once, in one round trip."""

    spark: SparkSession
    tables: Mapping[str, tuple[BaseTable, int]]
    _files: dict[str, _ChangedFiles | None] = field(default_factory=dict)
    _ranges: dict[tuple[str, tuple[str, ...], str], fs.IntegerRange | None] = field(
        default_factory=dict
    )
    _enabled: bool | None = None
    proven: list[str] = field(default_factory=list)  # what each proof found, for EXPLAIN

    def __call__(self, rows: KeyedColumns, keys: KeyedColumns) -> bool:
        """Whether, at every key of ``keys``'s table's change, ``rows``'s table held no row
        before its change or holds none after it (module docstring)."""
        (row_table, row_columns), (key_table, key_columns) = rows, keys
        held_files, key_files = self._changed(row_table), self._changed(key_table)
        if held_files is None or key_files is None or not self.enabled:
            return False
        pairs = [
            (a, b)
            for a, b in zip(row_columns, key_columns, strict=True)
            if _comparable(held_files, a, key_files, b)
        ]
        return any(
            self._proves(row_table, held_files, a, key_table, key_files, b) for a, b in pairs
        )

    def _proves(
        self,
        row_table: str,
        held_files: _ChangedFiles,
        a: str,
        key_table: str,
        key_files: _ChangedFiles,
        b: str,
    ) -> bool:
        """The proof on one pair of columns: the deleted rows of ``key_table`` its DELETEs
        keep within keys ``row_table`` cleared, the rest by footer ranges."""
        cleared = held_files.cleared(a)
        covered = key_files.deleted_within(b, cleared.keys) if cleared.keys else ()
        rest = key_files.change(frozenset(covered))
        shown = (
            [
                f"{row_table}.{a} holds no row at the {len(cleared.keys)} keys its DELETE at "
                f"version {_versions(cleared.versions)} cleared, which hold the keys of every row "
                f"of {key_table}.{b} deleted at version {_versions(covered)}"
            ]
            if covered
            else []
        )
        if rest:
            held = self._range(row_table, held_files.old, held_files.stored(a))
            logged = self._range(key_table, rest, key_files.stored(b))
            if held is None or logged is None or not held.disjoint(logged):
                return False
            rest_of = "the rest of the change" if covered else "the change"
            shown.append(
                f"{row_table}.{a} held {_shown(held)} before its change, {rest_of} of "
                f"{key_table}.{b} has {_shown(logged)}"
            )
        if shown:  # else the change logged no row: no key to match
            self._record(covered, shown)
        return True

    @property
    def enabled(self) -> bool:
        if self._enabled is None:
            self._enabled = conf_flag(self.spark, KEY_PROOFS_CONF)
        return self._enabled

    def _changed(self, table: str) -> _ChangedFiles | None:
        if table not in self._files:
            found = self.tables.get(table)
            self._files[table] = None if found is None else _changed_files(*found)
        return self._files[table]

    def _record(self, covered: tuple[int, ...], shown: list[str]) -> None:
        source = (
            "DELETE conditions and footer statistics"
            if len(shown) > 1
            else ("DELETE conditions" if covered else "footer statistics")
        )
        found = f"Proof ({source}): {'; '.join(shown)}: no key of one matches a row of the other"
        if found not in self.proven:
            self.proven.append(found)

    def _range(self, table: str, paths: tuple[str, ...], column: str) -> fs.IntegerRange | None:
        """``column``'s range over ``paths`` of ``table``, read once per refresh."""
        key = (table, paths, column)
        if key not in self._ranges:
            self._ranges[key] = fs.integer_ranges(self.spark, paths, [column])[0]
        return self._ranges[key]


def metadata_key_proof(
    spark: SparkSession, bases: Sequence[BaseTable], consumed: Mapping[str, int]
) -> MetadataKeyProof | None:
    """The proof over the changed tables of ``bases`` (``consumed``: the version the view
    consumed of each, by name); None when fewer than two changed (a term's other input must
    have changed too). Turned off by ``KEY_PROOFS_CONF``."""
    tables = {base.name: (base, consumed[base.name]) for base in bases if base.name in consumed}
    return MetadataKeyProof(spark, tables) if len(tables) >= 2 else None


def _changed_files(base: BaseTable, consumed: int) -> _ChangedFiles | None:
    """``base``'s paths for versions ``(consumed, base.version]``; None without a log, a
    listing, or a complete record of every commit."""
    log = base.log
    if log is None or base.files is None or base.materialized_view is not None:
        return None  # a view's snapshot stores its columns under names of its own
    commits = log.commits(consumed, base.version)
    if not all(commit.complete for commit in commits):
        return None
    # A later copy-on-write links (or copies) an inserted file into its own directory under
    # the same name: the link holds those inserted rows, not old ones.
    inserted = {_named(ref.path, ref.partition) for c in commits for ref in c.inserted_files}
    now = tuple(f.path for f in base.files.files if _named(f.path, f.partition) not in inserted)
    return _ChangedFiles(
        commits=tuple(commits),
        old=now + tuple(path for commit in commits for path in _logged(commit, inserted=False)),
        columns=_columns(log),
    )


def _named(path: str, partition: PartitionSpec) -> tuple[str, PartitionSpec]:
    """A data file by its name and partition: what its links and copies share."""
    return path.rsplit("/", 1)[-1], partition


def _logged(commit: LogCommit, inserted: bool) -> list[str]:
    """The paths of the rows ``commit`` logged as inserted (or deleted)."""
    refs = commit.inserted_files if inserted else commit.deleted_files
    rows = commit.inserted_rows if inserted else commit.deleted_rows
    return [ref.path for ref in refs] + ([rows] if rows else [])


def _columns(log: ChangeLog) -> dict[str, tuple[str, DataType]]:
    return {column.name.lower(): (column.name, column.dataType) for column in log.schema.fields}


def _comparable(rows: _ChangedFiles, a: str, keys: _ChangedFiles, b: str) -> bool:
    """Whether columns ``a`` and ``b`` are of one integral type, whose footer ranges
    compare as Spark's equality does."""
    row_column, key_column = rows.columns.get(a.lower()), keys.columns.get(b.lower())
    if row_column is None or key_column is None:
        return False
    return isinstance(row_column[1], _INTEGRAL) and row_column[1] == key_column[1]


def _versions(versions: Sequence[int]) -> str:
    return ", ".join(str(version) for version in versions)


def _shown(values: fs.IntegerRange) -> str:
    return "no value" if values.empty else f"values in [{values.low}, {values.high}]"
