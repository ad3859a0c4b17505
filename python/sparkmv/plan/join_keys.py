"""Join inputs a change's keys reach only through the change itself: proven by the driver.

A term of an inner join's change joins ``ΔR_i`` with another input ``R_j``, as of OLD or
NEW, under conjuncts ``R_j.a = R_i.b`` (``delta/join.py``). Only rows of ``R_j`` whose ``a`` is
a key of the change, ``K = π_b(ΔR_i)``, reach the term's result. Write ``ΔR_j = ΔR_j⁺ − ΔR_j⁻``
for ``R_j``'s net change (the rows it inserted and those it deleted) and ``n_new(k)``,
``n_old(k)`` for the rows of ``R_j`` at ``k`` now and before. Where ``n_old(k) = 0``, every
row there now is new: ``R_j,new[k] = ΔR_j⁺[k]`` and ``R_j,old[k] = ∅ = ΔR_j⁻[k]``. Where
``n_new(k) = 0``, every row there before was deleted: ``R_j,old[k] = ΔR_j⁻[k]`` and
``R_j,new[k] = ∅ = ΔR_j⁺[k]``. So when every ``k ∈ K`` has ``n_old(k) = 0`` or
``n_new(k) = 0``, the term may read ``ΔR_j⁺`` (NEW) or ``ΔR_j⁻`` (OLD) in place of ``R_j``,
and ``R_j`` is not scanned. TPC-H's refresh functions are the case: RF1 inserts orders under
new keys together with their lineitems, RF2 deletes orders together with all of theirs, so
``L_old ⋈ ΔO = ΔL⁻ ⋈ ΔO`` and ``O_new ⋈ ΔL = ΔO⁺ ⋈ ΔL``. Neither a declared key nor a foreign
key is assumed: the counts are the proof, taken afresh by every refresh.

The driver takes them (``JoinKeyProofs.only_changed``), all linear in the logged rows, so no
netting is needed: ``K`` is the keys of ``R_i``'s logged rows (a superset of the net
change's, read for the columns the refresh reads, so that the updates the refresh skips are
skipped here too); ``n_new(k)`` counts the key columns of ``R_j``'s files as the refresh
reads them (each file decoded once, ``decoded_files``; a single integer column's counts are
kept and moved forward along the log, ``key_counts``); ``n_old(k) = n_new(k) − Σ w`` over
``R_j``'s logged rows at ``k`` (an update that assigns no key column changes no count, and is
skipped). Only local files, small changes (``MAX_CHANGE_BYTES``), tables of at most
``MAX_TABLE_BYTES`` and key columns compared exactly (``zset.EXACT_TYPES``, the same type on
both sides, no CHAR or VARCHAR padding, the binary collation) are considered; otherwise the
proof fails, and the term reads ``R_j``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession
from pyspark.sql.types import StructField, StructType

from sparkmv.capture.tracking import BaseTable
from sparkmv.decoded_files import arrow_schema, decoded, local_paths, read_in_parallel
from sparkmv.delta.engine import KeyedColumns
from sparkmv.plan.key_counts import KeyCounts, integral, keep_counts, kept_counts
from sparkmv.zset import EXACT_TYPES, WEIGHT

MAX_CHANGE_BYTES = 8 * 1024 * 1024
"""The most bytes of logged files (per table) the driver reads for a proof."""
MAX_TABLE_BYTES = 1024 * 1024 * 1024
"""The most bytes of a table's files whose key columns the driver reads for a proof."""
Keys = tuple[object, ...]


class JoinKeyProofs:
    """The proofs of one refresh, over its base tables (``bases``), the versions of their
    changes it consumes (``consumed``: the changed tables' last consumed versions) and the
    columns it reads of each changed table (``reads``), each proof taken once."""

    def __init__(
        self,
        spark: SparkSession,
        bases: Sequence[BaseTable],
        consumed: Mapping[str, int],
        reads: Mapping[str, set[str] | None],
    ) -> None:
        self.spark = spark
        self.bases = {base.name: base for base in bases}
        self.consumed = consumed
        self.reads = reads  # per changed table, the columns the refresh reads (None: all)
        self._proven: dict[tuple[KeyedColumns, KeyedColumns], bool] = {}

    def only_changed(self, rows: KeyedColumns, keys: KeyedColumns) -> bool:
        """Whether, at every key of ``keys``' table's change (on its ``keys`` columns), the
        rows of ``rows``' table (equal on ``rows``' columns) are none before the change or
        none after it: ``n_old(k) = 0`` or ``n_new(k) = 0`` (module docstring)."""
        known = self._proven.get((rows, keys))
        if known is None:
            known = self._proved(rows, keys)
            self._proven[(rows, keys)] = known
        return known

    def _proved(self, rows: KeyedColumns, keys: KeyedColumns) -> bool:
        table, columns = rows
        if not self._comparable(rows, keys) or not {table, keys[0]} <= self.consumed.keys():
            return False
        changed = self._logged_rows(keys[0], keys[1], self.reads.get(keys[0]))
        logged = self._logged_rows(table, columns, set(columns))
        if changed is None or logged is None:
            return False
        wanted = {key for key in _tuples(changed, keys[1]) if None not in key}  # = never holds
        if not wanted:
            return True
        now = self._counts_now(table, columns, wanted)
        if now is None:
            return False
        added: Counter[Keys] = Counter()
        for key, weight in zip(_tuples(logged, columns), logged[WEIGHT].to_pylist(), strict=True):
            added[key] += weight
        return all(now[key] == 0 or now[key] == added[key] for key in wanted)

    def _comparable(self, rows: KeyedColumns, keys: KeyedColumns) -> bool:
        """Both tables tracked by sparkmv's log, read from their files (not a materialized
        view, whose snapshot may mask rows), the key columns of exact, equal types."""
        fields = []
        for table, columns in (rows, keys):
            base = self.bases.get(table)
            if base is None or base.log is None or base.files is None:
                return False
            if base.materialized_view is not None:
                return False
            fields.append([_field(base.log.schema, column) for column in columns])
        return all(
            a is not None and b is not None and _exact(a) and a.dataType == b.dataType
            for a, b in zip(*fields, strict=True)
        )

    def _logged_rows(
        self, table: str, columns: tuple[str, ...], read: set[str] | None
    ) -> pa.Table | None:
        """``columns`` and the weight of ``table``'s logged rows, skipping the updates a
        reader of ``read`` (None: every column) skips; None when the driver does not read
        them."""
        base = self.bases[table]
        assert base.log is not None
        schema = base.log.schema
        names = [field.name for field in schema.fields if read is None or _among(field, read)]
        keys = [_named(schema, column).name for column in columns]
        names += [name for name in keys if name not in names]
        start = self.consumed[table]
        logged = base.log.local_row_changes(start, base.version, names, MAX_CHANGE_BYTES)
        if logged is None:
            return None
        selected = [logged.column(name) for name in keys]
        return pa.table([*selected, logged.column(WEIGHT)], names=[*columns, WEIGHT])

    def _counts_now(
        self, table: str, columns: tuple[str, ...], wanted: set[Keys]
    ) -> Counter[Keys] | None:
        """The rows of ``table`` now (its files as the refresh reads them) per key of
        ``wanted``, None when the driver does not read them."""
        base = self.bases[table]
        assert base.log is not None and base.files is not None
        partitioned = {name.lower() for file in base.files.files for name, _ in file.partition}
        if partitioned & {column.lower() for column in columns}:
            return None
        if sum(file.size for file in base.files.files) > MAX_TABLE_BYTES:
            return None
        local = local_paths(self.spark, (file.path for file in base.files.files))
        if local is None:
            return None
        schema = arrow_schema([_named(base.log.schema, column) for column in columns])
        indexed = len(columns) == 1 and pa.types.is_integer(schema.field(0).type)
        if indexed:
            counts = kept_counts(base.log, base.version, base.files.digest, schema.names[0])
            if counts is not None:
                return _counted_at(counts, wanted)
        stored = _read(local, lambda path: decoded(path, schema))
        if stored is None:
            return None
        if indexed:
            values = pa.chunked_array(
                [c for t in stored for c in t.column(0).chunks], schema[0].type
            )
            name = schema.names[0]
            keep_counts(base.log, base.version, base.files.digest, name, lambda: integral(values))
        return _counted_in(stored, columns, wanted)


def _counted_at(counts: KeyCounts, wanted: set[Keys]) -> Counter[Keys]:
    """``counts`` (of one integer column) at each key of ``wanted``."""
    keys = list(wanted)
    found = counts.at(np.array([key[0] for key in keys], np.int64))
    return Counter(dict(zip(keys, found.tolist(), strict=True)))


def _counted_in(
    stored: list[pa.Table], columns: tuple[str, ...], wanted: set[Keys]
) -> Counter[Keys]:
    """The rows of ``stored`` (a table's key ``columns``, file by file) at each key of
    ``wanted``."""
    counted: Counter[Keys] = Counter()
    if not stored:
        return counted
    probe = pa.array([key[0] for key in wanted], stored[0].schema.field(0).type)
    for table in stored:
        hits = table.filter(pc.is_in(table.column(0), value_set=probe))
        for key in _tuples(hits.rename_columns(list(columns)), columns):
            if key in wanted:
                counted[key] += 1
    return counted


def _read(local: list[str], read: Callable[[str], pa.Table]) -> list[pa.Table] | None:
    """``read`` of each local file, None when one is not as Spark reads it."""
    try:
        return read_in_parallel(local, read)
    except (pa.ArrowException, OSError, KeyError):  # not as Spark reads it: not proven
        return None


def _field(schema: StructType, column: str) -> StructField | None:
    """``column`` of ``schema``, its name compared as Spark does (case-insensitively)."""
    return next((f for f in schema.fields if f.name.lower() == column.lower()), None)


def _among(field: StructField, names: Iterable[str]) -> bool:
    return field.name.lower() in {name.lower() for name in names}


def _named(schema: StructType, column: str) -> StructField:
    found = _field(schema, column)
    assert found is not None, f"{column} is not a column of the table"
    return found


def _exact(field: StructField) -> bool:
    """Values that compare equal exactly when their stored representations do: no
    floating point, no CHAR/VARCHAR (Spark pads CHAR values as it reads them), no string
    collation but the binary one."""
    padded = "__CHAR_VARCHAR_TYPE_STRING" in (field.metadata or {})
    collation = getattr(field.dataType, "collation", "UTF8_BINARY")
    return isinstance(field.dataType, EXACT_TYPES) and not padded and collation == "UTF8_BINARY"


def _tuples(rows: pa.Table, columns: tuple[str, ...]) -> list[Keys]:
    """The keys of ``rows``, whose first columns are ``columns``: taken by position, as a
    key may name a column twice (``r1.a = r.b AND r1.b = r.b`` keys ``r`` on ``(b, b)``)."""
    return list(zip(*(rows.column(i).to_pylist() for i in range(len(columns))), strict=True))
