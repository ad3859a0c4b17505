"""fs.py's listings agree with the operating system's (it joins names in the JVM to save
round trips, so the joining must not lose or split any name)."""

from __future__ import annotations

import os
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


def test_list_names_of_lists_each_directory_in_order(spark: SparkSession, tmp_path: Path) -> None:
    full, empty = tmp_path / "full", tmp_path / "empty"
    full.mkdir()
    empty.mkdir()
    for name in NAMES:
        (full / name).write_text("x")
    directories = [empty.as_uri(), full.as_uri(), (tmp_path / "missing").as_uri(), full.as_uri()]
    assert fs.list_names_of(spark, directories) == [[], sorted(NAMES), [], sorted(NAMES)]
    assert fs.list_names_of(spark, []) == []


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


def test_integer_ranges_come_from_the_footers(spark: SparkSession, tmp_path: Path) -> None:
    """Over files and directories, NULLs aside; a type the footers do not order as Spark does,
    a column a file lacks, or a path gone is unknown (None), never a smaller range."""
    first, second, nulls = (f"{tmp_path.as_uri()}/{name}" for name in ("a", "b", "nulls"))
    spark.sql(
        "SELECT id AS k, CAST(id AS INT) AS i, DATE'2000-01-01' + CAST(id AS INT) AS d,"
        " CAST(id AS STRING) AS s, CAST(id AS DECIMAL(10, 2)) AS m FROM range(3, 9)"
    ).write.parquet(first)
    spark.sql("SELECT CAST(NULL AS BIGINT) AS k, -5 AS i FROM range(2)").write.parquet(second)
    spark.sql("SELECT CAST(NULL AS BIGINT) AS k FROM range(2)").write.parquet(nulls)
    (one,) = [f for f in fs.data_files(spark, first) if f.path.endswith(".parquet")][:1]
    columns = ["k", "i", "d", "s", "m"]
    assert fs.integer_ranges(spark, [first], columns) == [
        fs.IntegerRange(3, 8),
        fs.IntegerRange(3, 8),
        fs.IntegerRange(10957 + 3, 10957 + 8),  # days since 1970-01-01
        None,
        None,
    ]
    assert fs.integer_ranges(spark, [first, second], ["k", "i", "d"]) == [
        fs.IntegerRange(3, 8),
        fs.IntegerRange(-5, 8),
        None,  # the second files have no d
    ]
    assert fs.integer_ranges(spark, [nulls], ["k"]) == [fs.EMPTY_RANGE]
    assert fs.integer_ranges(spark, [], ["k"]) == [fs.EMPTY_RANGE]
    assert fs.integer_ranges(spark, [one.path, f"{first}/gone.parquet"], ["k"]) == [None]
    assert fs.IntegerRange(1, 2).disjoint(fs.IntegerRange(3, 4))
    assert not fs.IntegerRange(1, 3).disjoint(fs.IntegerRange(3, 4))
    assert fs.EMPTY_RANGE.disjoint(fs.IntegerRange(3, 4))


def test_a_file_replaced_at_its_path_has_its_footer_read_again(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The footer ranges the JVM keeps (``KEY_PROOFS_CACHED_FOOTER_RANGES``) are a file's
    own: a file of the same name and length holding other rows, written later, is read anew."""
    low, high = tmp_path / "low", tmp_path / "high"
    spark.sql("SELECT id AS k FROM range(3, 9)").coalesce(1).write.parquet(str(low))
    spark.sql("SELECT id + 10 AS k FROM range(3, 9)").coalesce(1).write.parquet(str(high))
    (kept,) = sorted(low.glob("*.parquet"))
    (other,) = sorted(high.glob("*.parquet"))
    assert fs.integer_ranges(spark, [kept.as_uri()], ["k"]) == [fs.IntegerRange(3, 8)]
    assert fs.integer_ranges(spark, [kept.as_uri()], ["k"]) == [fs.IntegerRange(3, 8)]
    assert kept.stat().st_size == other.stat().st_size
    modified = kept.stat().st_mtime_ns
    kept.write_bytes(other.read_bytes())
    # Hadoop's local file system checks a file against its ``.crc`` sidecar: it moves along.
    (low / f".{kept.name}.crc").write_bytes((high / f".{other.name}.crc").read_bytes())
    os.utime(kept, ns=(modified + 5_000_000_000, modified + 5_000_000_000))
    assert fs.integer_ranges(spark, [low.as_uri()], ["k"]) == [fs.IntegerRange(13, 18)]
