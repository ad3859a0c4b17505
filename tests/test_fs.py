"""fs.py's listings agree with the operating system's (it joins names in the JVM to save
round trips, so the joining must not lose or split any name)."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession
from sparkmv import fs

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
