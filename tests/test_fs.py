"""fs.py's listings agree with the operating system's (it joins names in the JVM to save
round trips, so the joining must not lose or split any name)."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from sparkmv import fs
from sparkmv.config import LOCAL_FILE_SYSTEM_CLASS

NAMES = ["00000000000000000001.json", "a b.parquet", "ünïcode,=;#.txt", "_compacted_through.3"]


def test_list_names_returns_every_entry_once_sorted(spark: SparkSession, tmp_path: Path) -> None:
    for name in NAMES:
        (tmp_path / name).write_text("x")
    (tmp_path / "sub dir").mkdir()
    assert fs.list_names(spark, tmp_path.as_uri()) == sorted([*NAMES, "sub dir"])


def test_list_names_of_an_empty_or_missing_directory_is_empty(
    spark: SparkSession, tmp_path: Path
) -> None:
    assert fs.list_names(spark, tmp_path.as_uri()) == []
    assert fs.list_names(spark, (tmp_path / "missing").as_uri()) == []


def test_published_text_reads_back_and_is_listed(spark: SparkSession, tmp_path: Path) -> None:
    target = f"{tmp_path.as_uri()}/00000000000000000002.json"
    assert fs.publish_text(spark, target, '{"version": 2}')
    assert not fs.publish_text(spark, target, "again")  # the first one wins
    assert fs.read_text(spark, target) == '{"version": 2}'
    assert fs.list_names(spark, tmp_path.as_uri()) == ["00000000000000000002.json"]


def test_local_files_spark_writes_get_hadoop_s_permissions(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The session's local file system sets permissions through java.nio (no ``chmod``
    process per file), to what Hadoop's would: 0666 less the umask 022."""
    hadoop: Any = spark.sparkContext._jsc.hadoopConfiguration()
    assert hadoop.get("fs.file.impl") == LOCAL_FILE_SYSTEM_CLASS
    spark.range(3).write.parquet(str(tmp_path / "t"))
    written = [*(tmp_path / "t").glob("*.parquet"), *(tmp_path / "t").glob(".*.crc")]
    assert written
    assert {stat.S_IMODE(path.stat().st_mode) for path in written} == {0o644}


def test_a_second_publish_of_a_local_file_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    target = f"{tmp_path.as_uri()}/manifest.json"
    assert fs.publish_text(spark, target, "first")
    assert not fs.publish_text(spark, target, "second")
    assert fs.read_text(spark, target) == "first"
    assert [path.name for path in tmp_path.iterdir()] == ["manifest.json"]  # no temporary left
