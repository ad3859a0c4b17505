"""``ChangeLog``: a differential file per base table (Hanson §2.2), one commit per write.

Layout under the log's root directory::

    commits/00000000000000000007.json   one manifest per committed write, published atomically
    commits/_compacted_through.7        versions up to 7 have been compacted away
    rows/00000000000000000007-<id>/{inserted,deleted}/   explicit change rows (parquet)

A commit records the rows a write inserted and deleted. Inserted rows are either references
to the data files an append added to the table (so an INSERT is not written twice) or
explicit change rows; deleted rows are always explicit. Reading a version range ``(a, b]``
is one Spark job over the referenced files: inserted rows weigh +1, deleted rows −1, and
consolidation leaves the net changes ``A-net = A − D``, ``D-net = D − A`` (Hanson §2.2;
Blakeley §3: the net effect of a transaction has disjoint inserted and deleted parts).

The manifest is the commit point: change rows are written first, into a directory of this
attempt that no manifest names yet, and the manifest is published with an atomic rename. A
crash before the rename, or losing the version to a concurrent writer, leaves unreferenced
files that readers never see and compaction removes.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from sparkmv import fs
from sparkmv.capture.source import ChangeRangeError
from sparkmv.zset import WEIGHT, consolidate, weighted

_MANIFEST = re.compile(r"^(\d{20})\.json$")
_COMPACTED = re.compile(r"^_compacted_through\.(\d+)$")


@dataclass(frozen=True)
class LogCommit:
    """One committed write: what it inserted and deleted."""

    version: int
    operation: str  # INSERT, DELETE, UPDATE, MERGE, OVERWRITE, TRUNCATE, ...
    timestamp_ms: int
    inserted_files: tuple[str, ...] = ()  # table data files the write added
    inserted_rows: str | None = None  # directory of explicit inserted rows
    deleted_rows: str | None = None  # directory of explicit deleted rows
    complete: bool = True  # False: the write's row changes are not known (e.g. an overwrite)
    metrics: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> LogCommit:
        values = json.loads(text)
        values["inserted_files"] = tuple(values.get("inserted_files", ()))
        return cls(**values)


class ChangeLog:
    """The change log of one table; implements ``capture.source.ChangeSource``.

    ``schema`` is the table's schema (data and partition columns, in table order) and
    ``table_root`` its location, against which referenced data files are read so that
    partition values encoded in their paths come back as columns.
    """

    def __init__(self, spark: SparkSession, root: str, schema: StructType, table_root: str):
        self.spark = spark
        self.root = root.rstrip("/")
        self.schema = schema
        self.table_root = table_root

    # -- writing -------------------------------------------------------------------------

    def commit(
        self,
        operation: str,
        inserted_files: Sequence[str] = (),
        inserted_rows: DataFrame | None = None,
        deleted_rows: DataFrame | None = None,
        complete: bool = True,
    ) -> LogCommit:
        """Record one write as the next version; returns the published commit.

        ``complete=False`` records that the table changed in a way the log cannot describe;
        no range that includes this version can be read.

        Raises ``ConcurrentCommitError`` if another writer published that version first.
        """
        version = self.current_version() + 1
        rows_dir = f"{self.root}/rows/{version:020d}-{uuid.uuid4().hex[:8]}"
        commit = LogCommit(
            version=version,
            operation=operation,
            timestamp_ms=int(time.time() * 1000),
            inserted_files=tuple(inserted_files),
            inserted_rows=self._write_rows(inserted_rows, f"{rows_dir}/inserted"),
            deleted_rows=self._write_rows(deleted_rows, f"{rows_dir}/deleted"),
            complete=complete,
        )
        if not fs.publish_text(self.spark, self._manifest(version), commit.to_json()):
            fs.remove(self.spark, rows_dir)
            raise ConcurrentCommitError(f"version {version} of {self.root} was committed meanwhile")
        return commit

    def _write_rows(self, rows: DataFrame | None, path: str) -> str | None:
        if rows is None:
            return None
        rows.select(*self.schema.fieldNames()).write.mode("errorifexists").parquet(path)
        return path

    def compact(self, through: int) -> None:
        """Forget versions ``<= through``: every reader has consumed them."""
        previous = self.earliest_readable()
        if through <= previous:
            return
        # The new marker goes first, so a crash mid-way never exposes a gap as readable.
        fs.publish_text(self.spark, f"{self.root}/commits/_compacted_through.{through}", "")
        for version in self._versions():
            if version <= through:
                fs.remove(self.spark, self._manifest(version))
        for name in fs.list_names(self.spark, f"{self.root}/rows"):
            if int(name.split("-", 1)[0]) <= through:
                fs.remove(self.spark, f"{self.root}/rows/{name}")
        fs.remove(self.spark, f"{self.root}/commits/_compacted_through.{previous}")

    # -- reading -------------------------------------------------------------------------

    def current_version(self) -> int:
        versions = self._versions()
        return versions[-1] if versions else self.earliest_readable()

    def earliest_readable(self) -> int:
        names = fs.list_names(self.spark, f"{self.root}/commits")
        return max((int(m.group(1)) for name in names if (m := _COMPACTED.match(name))), default=0)

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
        return [
            LogCommit.from_json(fs.read_text(self.spark, self._manifest(version)))
            for version in versions
        ]

    def net_changes(self, start: int, end: int) -> DataFrame:
        """Net changes of versions ``(start, end]`` as a consolidated Z-set (one Spark job)."""
        commits = self.commits(start, end)
        for commit in commits:
            if not commit.complete:
                raise ChangeRangeError(
                    f"version {commit.version} ({commit.operation}) of {self.root} was not "
                    "logged row by row"
                )
        parts: list[DataFrame] = []
        files = [path for commit in commits for path in commit.inserted_files]
        if files:
            parts.append(weighted(self._read_table_files(files), +1))
        inserted = [c.inserted_rows for c in commits if c.inserted_rows is not None]
        if inserted:
            parts.append(weighted(self._read_rows(inserted), +1))
        deleted = [c.deleted_rows for c in commits if c.deleted_rows is not None]
        if deleted:
            parts.append(weighted(self._read_rows(deleted), -1))
        if not parts:
            return self._empty()
        return consolidate(reduce(DataFrame.unionByName, parts))

    def _read_table_files(self, files: list[str]) -> DataFrame:
        reader = self.spark.read.schema(self.schema).option("basePath", self.table_root)
        return reader.parquet(*files).select(*self.schema.fieldNames())

    def _read_rows(self, directories: list[str]) -> DataFrame:
        return self.spark.read.schema(self.schema).parquet(*directories)

    def _empty(self) -> DataFrame:
        empty = self.spark.createDataFrame([], self.schema)
        return weighted(empty, 0).limit(0)

    def _versions(self) -> list[int]:
        names = fs.list_names(self.spark, f"{self.root}/commits")
        return sorted(int(match.group(1)) for name in names if (match := _MANIFEST.match(name)))

    def _manifest(self, version: int) -> str:
        return f"{self.root}/commits/{version:020d}.json"


class ConcurrentCommitError(Exception):
    """Another writer published the version this commit wanted."""


__all__ = ["WEIGHT", "ChangeLog", "ConcurrentCommitError", "LogCommit"]
