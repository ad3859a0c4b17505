"""Parquet files decoded by the driver, kept for the next refresh that reads them.

Files a refresh reads at the driver are never changed once written: a snapshot's files, a
base table's files (a write replaces a file, it does not change it), the change log's. A
later snapshot hard-links the files it keeps (the same name and inode), so a file is known by
its name, device, inode, size and modification time, and one decoded for a refresh serves the
next ones without being read again.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructField, StructType

from sparkmv import fs

File = TypeVar("File")


class StoredFiles:
    """Files decoded by the driver, by name, device, inode, size and modification time (the
    module docstring). At most ``max_bytes`` of Arrow buffers are kept, the least recently
    used dropped first."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._tables: OrderedDict[tuple[object, ...], pa.Table] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def read(self, path: str, schema: pa.Schema) -> pa.Table:
        """The file at ``path``, its columns named and typed as ``schema``."""
        status = os.stat(path)
        name = os.path.basename(path)
        key = (name, status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, schema)
        with self._lock:
            table = self._tables.get(key)
            if table is not None:
                self._tables.move_to_end(key)
                return table
        read = pq.read_table(path, columns=schema.names, coerce_int96_timestamp_unit="us")
        columns = [read[n].cast(schema.field(n).type) for n in schema.names]
        table = pa.table(columns, schema=schema) if columns else read  # keeps its row count
        with self._lock:
            if key not in self._tables and table.nbytes <= self.max_bytes:
                self._tables[key] = table
                self._bytes += table.nbytes
                while self._bytes > self.max_bytes:
                    _, dropped = self._tables.popitem(last=False)
                    self._bytes -= dropped.nbytes
        return table


STORED_FILES_MAX_BYTES = 256 * 1024 * 1024
"""Arrow bytes of decoded files the driver keeps between refreshes (``StoredFiles``)."""
_STORED_FILES = StoredFiles(STORED_FILES_MAX_BYTES)


def decoded(path: str, schema: pa.Schema) -> pa.Table:
    """The parquet file at the local ``path``, its columns named and typed as ``schema``:
    decoded by this process once (``StoredFiles``)."""
    return _STORED_FILES.read(path, schema)


READERS = 4
"""Files read at once (pyarrow decodes without holding Python's lock)."""


def read_in_parallel(files: Iterable[File], read: Callable[[File], pa.Table]) -> list[pa.Table]:
    """``read`` of each of ``files``, ``READERS`` at a time, in the order of ``files``."""
    with ThreadPoolExecutor(max_workers=READERS) as pool:
        return list(pool.map(read, files))


def arrow_schema(fields: Sequence[StructField]) -> pa.Schema:
    """The Arrow schema the driver decodes the Spark columns ``fields`` of a file as: their
    Arrow types, every column nullable (as Spark reads a parquet file's columns)."""
    return pa.schema([f.with_nullable(True) for f in to_arrow_schema(StructType(list(fields)))])


def local_paths(spark: SparkSession, paths: Iterable[str]) -> list[str] | None:
    """``paths`` as paths of the local file system the driver reads (``fs.os_path``), None
    when one of them is not there."""
    local = []
    for path in paths:
        found = fs.os_path(spark, path)
        if found is None:
            return None
        local.append(found)
    return local
