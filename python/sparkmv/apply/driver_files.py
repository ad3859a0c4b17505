"""Bucketed parquet files written by the driver, for rows already collected there.

A Spark write of a few thousand rows costs a job, its tasks' output commit and the job
commit (renames, ``_SUCCESS``): most of an incremental refresh's time. When the rows are at
the driver anyway (a small change comes back as Arrow) and the snapshot is on a file system
the driver can write, they are written here with pyarrow instead: the same layout
(``mv_bucket=k/part-….parquet``), the same parquet types Spark reads back, no job.

Nothing here needs a commit protocol: the files go into a snapshot no reader sees until the
catalog points at it, and a crash leaves them in an unreferenced snapshot that the next
refresh removes (``apply/snapshot.py``).
"""

from __future__ import annotations

import os
import uuid

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from sparkmv import fs
from sparkmv.stored_columns import BUCKET_COLUMN

DRIVER_TYPES = (
    T.BooleanType,
    T.ByteType,
    T.ShortType,
    T.IntegerType,
    T.LongType,
    T.FloatType,
    T.DecimalType,
    T.DoubleType,
    T.StringType,
    T.BinaryType,
    T.DateType,
    T.TimestampType,
    T.TimestampNTZType,
)
"""Column types that travel to the driver as Arrow and back (as a local relation, or as
parquet written there) unchanged."""


def carried_by_driver(schema: T.StructType) -> bool:
    """Whether rows of ``schema`` can be collected as Arrow and written back unchanged."""
    return all(isinstance(field.dataType, DRIVER_TYPES) for field in schema.fields)


def writable_directory(spark: SparkSession, path: str) -> str | None:
    """The local path of ``path`` when the driver can write files there itself (a local
    file system, no escaped characters Hadoop would decode), else None."""
    return fs.os_path(spark, path)


def write_by_bucket(rows: pa.Table, directory: str) -> dict[int, int]:
    """Write ``rows`` (with the bucket column) as one parquet file per bucket under the
    local ``directory`` (``mv_bucket=k/``), without the bucket column; return the rows
    written per bucket."""
    written: dict[int, int] = {}
    if not rows.num_rows:
        return written
    buckets = rows.column(BUCKET_COLUMN)
    data = rows.drop_columns([BUCKET_COLUMN])
    for bucket in pc.unique(buckets).to_pylist():
        part = data.filter(pc.equal(buckets, bucket))
        write_file(part, os.path.join(directory, f"{BUCKET_COLUMN}={bucket}"))
        written[int(bucket)] = part.num_rows
    return written


def write_empty_bucket(rows: pa.Table, directory: str) -> None:
    """Write one parquet file without rows, of ``rows``' columns but the bucket column, as
    bucket 0 of the local ``directory``: a snapshot with no file could not be read
    (``snapshot.keep_schema_readable``)."""
    empty = rows.drop_columns([BUCKET_COLUMN]).slice(0, 0)
    write_file(empty, os.path.join(directory, f"{BUCKET_COLUMN}=0"))


def write_file(rows: pa.Table, directory: str) -> None:
    """Write ``rows`` as one new snappy parquet file in the local ``directory``."""
    os.makedirs(directory, exist_ok=True)
    name = f"part-{uuid.uuid4().hex}-driver.snappy.parquet"
    pq.write_table(rows, os.path.join(directory, name), compression="snappy")
