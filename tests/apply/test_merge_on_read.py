"""Patched buckets (merge-on-read): a refresh appends the merged rows and masks the rows they
replace; readers skip masked rows; a bucket whose mask grows too large is compacted."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import assert_view_matches_query, session_confs
from pyspark.sql import SparkSession
from sparkmv.config import (
    STORAGE_BUCKETS_CONF,
    STORAGE_MAX_MASKED_SHARE,
    STORAGE_PATCH_MIN_ROWS,
)
from sparkmv.storage.snapshot import MASK_DIR, MASK_SCHEMA
from sparkmv.storage.stored_columns import BUCKET_COLUMN


@pytest.fixture
def patching(spark: SparkSession) -> Iterator[None]:
    """Every touched bucket patched (none too small, no mask too large), 4 buckets."""
    confs = {
        STORAGE_PATCH_MIN_ROWS.key: "0",
        STORAGE_MAX_MASKED_SHARE.key: "1",
        STORAGE_BUCKETS_CONF: "4",
    }
    with session_confs(spark, confs):
        yield


def describe(spark: SparkSession, view: str) -> dict[str, str]:
    rows = spark.sql(f"DESCRIBE MATERIALIZED VIEW EXTENDED {view}").collect()
    return {row.col_name: row.data_type for row in rows}


def storage_files(spark: SparkSession, view: str) -> dict[str, set[tuple[int, int]]]:
    """Per bucket directory of the view's snapshot: its data files as (inode, size)."""
    snapshot = Path(describe(spark, view)["Storage"].removeprefix("file:"))
    return {
        bucket.name: {(f.stat().st_ino, f.stat().st_size) for f in bucket.glob("*.parquet")}
        for bucket in snapshot.iterdir()
        if bucket.name.startswith(BUCKET_COLUMN)
    }


def refresh(spark: SparkSession, view: str) -> str:
    return str(spark.sql(f"REFRESH MATERIALIZED VIEW {view}").collect()[0].mode)


def test_a_patch_keeps_every_stored_file_and_masks_the_replaced_rows(
    spark: SparkSession, db: str, patching: None
) -> None:
    spark.sql("CREATE TABLE t (a INT, b STRING) USING parquet")
    spark.sql("INSERT INTO t SELECT id, CAST(id % 7 AS STRING) FROM range(400)")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT a, b FROM t WHERE a % 2 = 0")
    before = storage_files(spark, "v")
    assert len(before) == 4

    spark.sql("DELETE FROM t WHERE a % 10 = 0")  # a few rows of every bucket
    spark.sql("INSERT INTO t VALUES (1000, 'x'), (1002, NULL)")
    plan = spark.sql("EXPLAIN REFRESH MATERIALIZED VIEW v").collect()[0][0]
    assert "Patch the touched buckets when they hold about 0 rows or more" in plan
    assert refresh(spark, "v") == "INCREMENTAL"
    assert_view_matches_query(spark, "v")
    after = storage_files(spark, "v")
    for bucket, files in before.items():  # the old files are hard links, untouched
        assert files <= after[bucket]
    assert sum(map(len, after.values())) > sum(map(len, before.values()))  # the merged rows
    info = describe(spark, "v")
    assert info["Masked Rows"] == "40"
    assert info["Row Count"] == "162"

    spark.sql("UPDATE t SET b = 'changed' WHERE a < 50")  # masks the updated rows' old images
    assert refresh(spark, "v") == "INCREMENTAL"
    assert_view_matches_query(spark, "v")
    assert describe(spark, "v")["Masked Rows"] == str(40 + 20)

    assert refresh(spark, "v FULL") == "FULL"  # a full refresh writes no mask
    assert describe(spark, "v")["Masked Rows"] == "0"
    assert_view_matches_query(spark, "v")


def test_copies_counters_and_groups_are_patched(
    spark: SparkSession, db: str, patching: None
) -> None:
    spark.sql("CREATE TABLE t (k INT, x INT) USING parquet")
    spark.sql("INSERT INTO t SELECT id % 10, id % 3 FROM range(100)")
    spark.sql("INSERT INTO t SELECT id % 10, id % 3 FROM range(100)")  # every row twice
    views = {
        "bag": "SELECT k, x FROM t",
        "counted": "SELECT DISTINCT k, x FROM t",
        "grouped": "SELECT k, count(*) AS n, sum(x) AS s, max(x) AS m FROM t GROUP BY k",
        "distinct_aggregate": "SELECT k, count(DISTINCT x) AS d FROM t GROUP BY k",
        "global": "SELECT count(*) AS n, min(x) AS m FROM t",
    }
    for name, query in views.items():
        spark.sql(f"CREATE MATERIALIZED VIEW {name} AS {query}")
    writes = [
        "DELETE FROM t WHERE k = 3 AND x = 0",
        "INSERT INTO t VALUES (3, 0), (11, NULL), (NULL, 2)",
        "UPDATE t SET x = x + 10 WHERE k IN (1, 2)",
        "DELETE FROM t WHERE x = 12 OR k IS NULL",
    ]
    for write in writes:
        spark.sql(write)
        for name in views:
            assert refresh(spark, name) == "INCREMENTAL"
            assert_view_matches_query(spark, name)
    assert int(describe(spark, "bag")["Masked Rows"]) > 0


def test_a_bucket_whose_mask_grows_too_large_is_compacted(
    spark: SparkSession, db: str, patching: None
) -> None:
    spark.sql("CREATE TABLE t (a INT) USING parquet")
    spark.sql("INSERT INTO t SELECT id FROM range(200)")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT a FROM t")
    spark.conf.set(STORAGE_MAX_MASKED_SHARE.key, "0.25")
    spark.sql("DELETE FROM t WHERE a < 20")  # 10%: patched
    refresh(spark, "v")
    assert describe(spark, "v")["Masked Rows"] == "20"
    spark.sql("DELETE FROM t WHERE a < 100")  # half masked in all: every bucket compacted
    refresh(spark, "v")
    assert describe(spark, "v")["Masked Rows"] == "0"
    assert_view_matches_query(spark, "v")
    assert all(len(files) == 1 for files in storage_files(spark, "v").values())


def test_plain_spark_reads_a_patched_view(
    spark: SparkSession, db: str, patching: None, tmp_path: Path
) -> None:
    """The catalog view's text is plain SQL: the mask is applied by a join Spark runs."""
    spark.sql("CREATE TABLE t (a INT) USING parquet")
    spark.sql("INSERT INTO t SELECT id FROM range(100)")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT a FROM t")
    spark.sql("DELETE FROM t WHERE a % 4 = 0")
    refresh(spark, "v")
    text = spark.sql("SHOW CREATE TABLE v").collect()[0][0]
    assert MASK_DIR in text
    snapshot = describe(spark, "v")["Storage"]
    plain = spark.read.parquet(snapshot)  # what a reader of the files alone would see
    assert plain.count() == 100
    assert spark.table("v").count() == 75


def test_a_mask_written_in_one_file_is_carried_over(
    spark: SparkSession, db: str, patching: None
) -> None:
    """Earlier versions wrote a snapshot's mask as one file with the bucket as a column; a
    refresh of such a snapshot carries it into its own mask, written by bucket."""
    spark.sql("CREATE TABLE t (a INT) USING parquet")
    spark.sql("INSERT INTO t SELECT id FROM range(200)")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT a FROM t")
    spark.sql("DELETE FROM t WHERE a < 10")
    refresh(spark, "v")
    mask = f"{describe(spark, 'v')['Storage']}/{MASK_DIR}"
    positions = spark.read.parquet(mask).select(BUCKET_COLUMN, "mv_file", "mv_row").collect()
    shutil.rmtree(mask.removeprefix("file:"))
    spark.createDataFrame(positions, MASK_SCHEMA).coalesce(1).write.parquet(mask)  # old layout
    assert describe(spark, "v")["Masked Rows"] == "10"
    assert_view_matches_query(spark, "v")

    spark.sql("DELETE FROM t WHERE a >= 190")
    assert refresh(spark, "v") == "INCREMENTAL"
    assert describe(spark, "v")["Masked Rows"] == "20"
    assert_view_matches_query(spark, "v")
