"""File-system calls through Hadoop's FileSystem on the JVM, so any warehouse URI works."""

from __future__ import annotations

import uuid
from typing import Any

from pyspark.sql import SparkSession


def filesystem(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """The Hadoop FileSystem serving ``path``, and ``path`` as a Hadoop Path."""
    jvm: Any = spark._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path.getFileSystem(spark._jsc.hadoopConfiguration()), hadoop_path


def qualified(spark: SparkSession, path: str) -> str:
    """``path`` with its file-system scheme, as Hadoop lists it."""
    fs, hadoop_path = filesystem(spark, path)
    return str(fs.makeQualified(hadoop_path).toString())


def warehouse_path(spark: SparkSession, *parts: str) -> str:
    """A qualified path under the session's warehouse directory."""
    warehouse = qualified(spark, spark.conf.get("spark.sql.warehouse.dir") or "")
    return "/".join([warehouse.rstrip("/"), *parts])


def exists(spark: SparkSession, path: str) -> bool:
    fs, hadoop_path = filesystem(spark, path)
    return bool(fs.exists(hadoop_path))


def list_names(spark: SparkSession, directory: str) -> list[str]:
    """Names of the entries of ``directory`` (none if it does not exist)."""
    fs, hadoop_path = filesystem(spark, directory)
    if not fs.exists(hadoop_path):
        return []
    return sorted(str(status.getPath().getName()) for status in fs.listStatus(hadoop_path))


def remove(spark: SparkSession, path: str) -> None:
    """Delete ``path`` recursively, if present."""
    fs, hadoop_path = filesystem(spark, path)
    fs.delete(hadoop_path, True)


def read_text(spark: SparkSession, path: str) -> str:
    fs, hadoop_path = filesystem(spark, path)
    jvm: Any = spark._jvm
    stream = fs.open(hadoop_path)
    try:
        return str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
    finally:
        stream.close()


def publish_text(spark: SparkSession, path: str, text: str) -> bool:
    """Create ``path`` holding ``text`` atomically; False if ``path`` already exists.

    The text goes to a hidden temporary file first and is renamed into place, so a reader
    sees the whole file or none, and a crash leaves at most a stray temporary file.
    """
    fs, target = filesystem(spark, path)
    jvm: Any = spark._jvm
    temporary = jvm.org.apache.hadoop.fs.Path(target.getParent(), f".{uuid.uuid4().hex}.tmp")
    stream = fs.create(temporary, False)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()
    if fs.exists(target) or not fs.rename(temporary, target):
        fs.delete(temporary, False)
        return False
    return True
