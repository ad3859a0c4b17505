"""Join-term proofs from parquet footer statistics: metadata, never decoded rows (issue 53).

The join rule reads an input ``R_j`` from its own change in the term of ``ΔR_i`` when, at
every key ``k`` of ``ΔR_i``, ``R_j,old[k] = ∅`` or ``R_j,new[k] = ∅`` (``delta/join.py``,
``delta.engine.KeyProof``): then ``R_j,new[k] = Δ⁺R_j[k]`` and ``R_j,old[k] = Δ⁻R_j[k]``, and
the term scans neither table. This module proves the first disjunct for every key at once:

    if, on one pair of equated columns (``a`` of ``R_j``, ``b`` of ``R_i``), the values of
    ``b`` in the rows ``R_i``'s change logged and the values of ``a`` in the rows ``R_j`` held
    before its change have disjoint ranges, no old row of ``R_j`` matches a key of ``ΔR_i``

(NULLs match nothing; one column of a composite key suffices). That is an append of rows
with new keys, such as new orders with their line items: ``Δ(O ⋈ L) = ΔO ⋈ ΔL`` with no scan
of either. The ranges come from the footers (``fs.integer_ranges``), through Hadoop's
``FileSystem`` on every file system:

- ``ΔR_i`` holds only rows its commits logged: the files they reference and their change-row
  directories (a net change is a part of those);
- ``R_j,old`` is a part of the rows of ``R_j``'s files now, less those its commits inserted
  (a copy-on-write's rewritten files hold old rows only), plus the files and rows its
  commits deleted.

Only signed integer and date columns of one type on both sides are compared; anything the
footers do not say proves nothing, and the term then reads the table.
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
from sparkmv.capture.tracking import BaseTable
from sparkmv.config import KEY_PROOFS_CONF, conf_flag
from sparkmv.delta.engine import KeyedColumns
from sparkmv.plan.refresh_plan import ChangedTable

_INTEGRAL = (ByteType, ShortType, IntegerType, LongType, DateType)
"""Spark types parquet stores as INT32 or INT64 and whose footer order is Spark's."""


@dataclass(frozen=True)
class _ChangedFiles:
    """The parquet paths of one changed base table, as its log and listing say."""

    change: tuple[str, ...]  # every row its commits logged: referenced files, row directories
    old: tuple[str, ...]  # a superset of its rows before the change
    columns: Mapping[str, tuple[str, DataType]]  # name as stored and type, by lower-cased name

    def stored(self, column: str) -> str:
        """``column`` as the table's schema (and so its files) spell it."""
        return self.columns[column.lower()][0]


@dataclass
class FooterKeyProof:
    """A ``KeyProof`` over the changed ``tables`` of one refresh (by name, with the version
    the view consumed), from footer statistics. Nothing is read until a join term asks (most
    refreshes never do); then each table's and side's ranges are read once, in one round
    trip for all the columns asked."""

    spark: SparkSession
    tables: Mapping[str, tuple[BaseTable, int]]
    _files: dict[str, _ChangedFiles | None] = field(default_factory=dict)
    _ranges: dict[tuple[str, str, tuple[str, ...]], list[fs.IntegerRange | None]] = field(
        default_factory=dict
    )
    _enabled: bool | None = None
    proven: list[str] = field(default_factory=list)  # what each proof found, for EXPLAIN

    def __call__(self, rows: KeyedColumns, keys: KeyedColumns) -> bool:
        """Whether ``rows``'s table held no row before its change at any key of ``keys``'s
        table's change (module docstring)."""
        (row_table, row_columns), (key_table, key_columns) = rows, keys
        held_files, key_files = self._changed(row_table), self._changed(key_table)
        if held_files is None or key_files is None or not self.enabled:
            return False
        pairs = [
            (a, b)
            for a, b in zip(row_columns, key_columns, strict=True)
            if _comparable(held_files, a, key_files, b)
        ]
        if not pairs:
            return False
        old = self._range(row_table, "old", tuple(held_files.stored(a) for a, _ in pairs))
        change = self._range(key_table, "change", tuple(key_files.stored(b) for _, b in pairs))
        for (a, b), held, logged in zip(pairs, old, change, strict=True):
            if held is not None and logged is not None and held.disjoint(logged):
                self._record(f"{row_table}.{a}", held, f"{key_table}.{b}", logged)
                return True
        return False

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

    def _record(self, rows: str, held: fs.IntegerRange, keys: str, logged: fs.IntegerRange) -> None:
        found = (
            f"Proof (footer statistics): {rows} held {_shown(held)} before its change, "
            f"the change of {keys} has {_shown(logged)}: no key of one matches a row of the other"
        )
        if found not in self.proven:
            self.proven.append(found)

    def _range(
        self, table: str, side: str, columns: tuple[str, ...]
    ) -> list[fs.IntegerRange | None]:
        key = (table, side, columns)
        if key not in self._ranges:
            files = self._files[table]
            assert files is not None  # asked only of tables with files
            paths = files.old if side == "old" else files.change
            self._ranges[key] = fs.integer_ranges(self.spark, paths, columns)
        return self._ranges[key]


def footer_key_proof(
    spark: SparkSession, bases: Sequence[BaseTable], changed: Sequence[ChangedTable]
) -> FooterKeyProof | None:
    """The proof over the ``changed`` tables of ``bases``; None when fewer than two changed
    (a term's other input must have changed too). Turned off by ``KEY_PROOFS_CONF``."""
    consumed = {table.name: table.consumed_version for table in changed}
    tables = {base.name: (base, consumed[base.name]) for base in bases if base.name in consumed}
    return FooterKeyProof(spark, tables) if len(tables) >= 2 else None


def _changed_files(base: BaseTable, consumed: int) -> _ChangedFiles | None:
    """``base``'s paths for versions ``(consumed, base.version]``; None without a log, a
    listing, or a complete record of every commit."""
    log = base.log
    if log is None or base.files is None or base.materialized_view is not None:
        return None  # a view's snapshot stores its columns under names of its own
    commits = log.commits(consumed, base.version)
    if not all(commit.complete for commit in commits):
        return None
    inserted = {ref.path for commit in commits for ref in commit.inserted_files}
    now = tuple(file.path for file in base.files.files if file.path not in inserted)
    return _ChangedFiles(
        change=tuple(path for commit in commits for path in _logged(commit, inserted=True))
        + tuple(path for commit in commits for path in _logged(commit, inserted=False)),
        old=now + tuple(path for commit in commits for path in _logged(commit, inserted=False)),
        columns=_columns(log),
    )


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


def _shown(values: fs.IntegerRange) -> str:
    return "no value" if values.empty else f"values in [{values.low}, {values.high}]"
