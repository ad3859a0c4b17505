"""A table's data files as the catalog defines them: the state the change log vouches for.

A file-source table's contents are the data files under its location (unpartitioned) or
under each partition's location. Every change-log commit records a digest of that file set
after the write, so a refresh can tell whether anything changed the table behind the log's
back (another application, files added or removed by hand, ``ALTER TABLE SET LOCATION``):
the digest of the current files then differs from the one the log expects.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from pyspark.sql import SparkSession

from sparkmv import fs
from sparkmv.catalog.views import CatalogEntry, ViewCatalog
from sparkmv.identifiers import TableName

PartitionSpec = tuple[tuple[str, str | None], ...]
"""Partition column values as strings, in the table's partition column order; () if none."""

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"
"""How Hive-style paths and the metastore spell a NULL partition value."""

VERSION_DIR_PREFIX = "_sparkmv_"
"""Copy-on-write writes each statement's data units into ``<table root>/_sparkmv_<id>``
(hidden from Spark's listings of the root, so old and new versions can sit side by side)."""

VERSION_DIR_NAME = re.compile(re.escape(VERSION_DIR_PREFIX) + "[0-9a-f]+")
"""A version directory's whole name: the prefix and its statement's id (hex). Other names
with the prefix are not version directories: a statement's staging and empty directories,
its record of retired files, and the warehouse's directories of change logs and refresh
histories (``_sparkmv_logs``, ``_sparkmv_history``)."""


def partition_spec(values: Mapping[str, str | None] | None) -> PartitionSpec:
    if not values:
        return ()
    return tuple(
        (column, None if value in (None, DEFAULT_PARTITION_NAME) else value)
        for column, value in values.items()
    )


def spec_from_path(relative_dir: str) -> PartitionSpec:
    """``p=1/q=a%20b`` → ``(("p", "1"), ("q", "a b"))``: Hive-style directory names."""
    spec = []
    for part in relative_dir.strip("/").split("/"):
        column, _, value = part.partition("=")
        text = unquote(value)
        spec.append((unquote(column), None if text == DEFAULT_PARTITION_NAME else text))
    return tuple(spec)


def spec_path(spec: PartitionSpec) -> str:
    """The Hive-style directory of a partition, as Spark names it."""
    return "/".join(f"{column}={_escape(value)}" for column, value in spec)


def _escape(value: str | None) -> str:
    if value is None:
        return DEFAULT_PARTITION_NAME
    special = set("\"#%'*/:=?\\\x7f{[]^")
    return "".join(f"%{ord(c):02X}" if c in special or ord(c) < 0x20 else c for c in value)


def unit_base(location: str) -> str:
    """An unpartitioned table's root: its location before any copy-on-write."""
    parent, _, name = location.rstrip("/").rpartition("/")
    return parent if VERSION_DIR_NAME.fullmatch(name) else location.rstrip("/")


def version_dir_of(path: str) -> str | None:
    """The version directory that data file ``path`` is in, directly or below its partition
    directories (``column=value``); None for a file outside one (of a table never written
    copy-on-write, or a link a change log keeps)."""
    directory = path.rpartition("/")[0]
    while directory:
        parent, _, name = directory.rpartition("/")
        if VERSION_DIR_NAME.fullmatch(name):
            return directory
        if "=" not in name:
            return None
        directory = parent
    return None


@dataclass(frozen=True)
class DataFile:
    path: str
    size: int
    modified_ms: int
    partition: PartitionSpec


@dataclass(frozen=True)
class DataUnit:
    """The table (unpartitioned) or one partition: a location and the files under it."""

    partition: PartitionSpec
    location: str
    files: tuple[DataFile, ...]


@dataclass(frozen=True)
class TableFiles:
    units: tuple[DataUnit, ...]

    @property
    def files(self) -> list[DataFile]:
        return [file for unit in self.units for file in unit.files]

    def by_path(self) -> dict[str, DataFile]:
        return {file.path: file for file in self.files}

    def unit(self, partition: PartitionSpec) -> DataUnit | None:
        return next((unit for unit in self.units if unit.partition == partition), None)

    @property
    def digest(self) -> str:
        return files_digest(self.files)


def files_digest(files: Iterable[DataFile]) -> str:
    """Identifies a file set: paths, sizes and modification times, order-free."""
    sha = hashlib.sha256()
    for line in sorted(f"{f.path}\t{f.size}\t{f.modified_ms}" for f in files):
        sha.update(line.encode())
        sha.update(b"\n")
    return sha.hexdigest()


def list_table_files(
    spark: SparkSession,
    catalog: ViewCatalog,
    table: TableName,
    entry: CatalogEntry | None = None,
    listed: Mapping[str, list[fs.FileStatus]] | None = None,
) -> TableFiles:
    """The table's current data files, listed afresh (never from Spark's file cache).
    ``entry``, the table's catalog entry if the caller just read it, holds the location of
    an unpartitioned table (the partitions of a partitioned one are looked up); ``listed``,
    the data files the caller listed with it, by location."""
    locations: list[tuple[dict[str, str | None] | None, str]]
    if entry is not None and entry.location is not None and not entry.partition_columns:
        locations = [(None, entry.location)]
    else:
        locations = catalog.data_locations(table)
    units = []
    for values, location in locations:
        spec = partition_spec(values)
        found = listed.get(location) if listed is not None else None
        files = tuple(
            DataFile(status.path, status.size, status.modified_ms, spec)
            for status in (fs.data_files(spark, location) if found is None else found)
        )
        units.append(DataUnit(spec, fs.qualified(spark, location), files))
    return TableFiles(tuple(units))


def table_files_from_listing(units: list[list[Any]]) -> TableFiles:
    """The table's files as the shim lists them around a captured file write
    (``WriteFacts.files``): ``[[spec or null, qualified location, [[path, size, modified
    ms], ...]], ...]``, the same units, specs, locations and files ``list_table_files`` would
    find, listed in the JVM so that the write's capture makes no py4j call for them."""
    return TableFiles(
        tuple(
            DataUnit(
                spec := partition_spec(values),
                location,
                tuple(
                    DataFile(path, int(size), int(modified), spec) for path, size, modified in files
                ),
            )
            for values, location, files in units
        )
    )


def delete_retired(spark: SparkSession, paths: Iterable[str]) -> None:
    """Delete data files no version of the table uses any more, and the copy-on-write
    version directories they leave without files (``version_dir_of``: never a directory
    above them that other writers share, such as the warehouse's directory of change logs,
    which another log may be created in between the look and the removal)."""
    paths = list(paths)
    fs.remove_all(spark, paths)
    version_dirs = {directory for directory in map(version_dir_of, paths) if directory}
    for directory in version_dirs:
        if not fs.has_files(spark, directory):
            fs.remove(spark, directory)
