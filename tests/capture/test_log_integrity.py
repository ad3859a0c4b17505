"""The log is trusted only while it agrees with the table; it keeps only what readers need.

- Writes that bypass capture (files removed by hand, a path write outside the catalog,
  ``ALTER TABLE SET LOCATION``) are detected: the refresh is full, says why, the view is
  exact, and the log is resynchronised.
- Retention: versions every dependent consumed are compacted away, and the files
  copy-on-write replaced are deleted then, not before.
- Schema changes: ADD COLUMNS keeps the log readable (old rows read the new column as NULL);
  the changes Spark refuses on parquet tables leave table and log untouched.
- DROP TABLE takes the table's change log and copy-on-write directories with it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import (
    assert_view_matches_query,
    change_log_of,
    local_path,
    table_location,
    zset_counter,
)
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from sparkmv import fs
from sparkmv.capture.files import VERSION_DIR_PREFIX


def refresh_reason(spark: SparkSession, view: str) -> str:
    row = spark.sql(f"REFRESH MATERIALIZED VIEW {view}").first()
    assert row is not None
    return str(row.reason)


def pending_text(spark: SparkSession, view: str, table: str) -> str:
    rows = spark.sql(f"DESCRIBE MATERIALIZED VIEW EXTENDED {view}").collect()
    return next(r.data_type for r in rows if r.col_name.endswith(f".{table}"))


def make_tracked(spark: SparkSession) -> None:
    spark.sql("CREATE TABLE t (k INT, v STRING) USING parquet")
    spark.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    spark.sql("INSERT INTO t VALUES (3, 'c')")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT k, v FROM t WHERE k > 1")


def assert_bypass_detected(spark: SparkSession) -> None:
    assert "next refresh is full" in pending_text(spark, "v", "t")
    assert "outside sparkmv's change capture" in refresh_reason(spark, "v")
    assert_view_matches_query(spark, "v")
    log = change_log_of(spark, "t")  # resynchronised: later writes are logged and readable
    start = log.current_version()
    spark.sql("INSERT INTO t VALUES (9, 'z')")
    assert zset_counter(log.net_changes(start, log.current_version())) == Counter({(9, "z"): 1})
    assert "outside" not in refresh_reason(spark, "v")
    assert_view_matches_query(spark, "v")


def test_a_file_removed_by_hand_is_detected(spark: SparkSession, db: str) -> None:
    make_tracked(spark)
    victim = next(table_location(spark, "t").glob("part-*.parquet"))
    victim.unlink()
    assert_bypass_detected(spark)


def test_a_path_write_outside_the_catalog_is_detected(spark: SparkSession, db: str) -> None:
    make_tracked(spark)
    frame = spark.createDataFrame([(5, "e")], "k INT, v STRING")
    frame.write.mode("append").parquet(str(table_location(spark, "t")))  # not a table write
    spark.catalog.refreshTable("t")
    assert_bypass_detected(spark)


def test_set_location_is_detected(spark: SparkSession, db: str, tmp_path: Path) -> None:
    make_tracked(spark)
    spark.createDataFrame([(7, "g")], "k INT, v STRING").write.parquet(str(tmp_path / "elsewhere"))
    spark.sql(f"ALTER TABLE t SET LOCATION '{tmp_path / 'elsewhere'}'")
    assert_bypass_detected(spark)


def test_retention_compacts_consumed_versions_and_then_deletes_replaced_files(
    spark: SparkSession, db: str
) -> None:
    make_tracked(spark)
    spark.sql("CREATE MATERIALIZED VIEW w AS SELECT count(*) AS n FROM t")
    original = sorted(table_location(spark, "t").glob("part-*.parquet"))
    spark.sql("DELETE FROM t WHERE k = 1")
    log = change_log_of(spark, "t")
    assert all(path.exists() for path in original)  # the log and readers may still need them
    refresh_reason(spark, "v")
    assert log.earliest_readable() == log.current_version() - 1  # w has not consumed the DELETE
    assert all(path.exists() for path in original)
    rows = local_path(spark, log.root) / "rows"
    assert list(rows.rglob("*.parquet"))  # the DELETE's deleted rows
    refresh_reason(spark, "w")
    assert log.earliest_readable() == log.current_version()
    fs.wait_for_removals()  # the files go in the background, after the refresh returned
    assert not any(path.exists() for path in original)
    assert not list(rows.rglob("*.parquet"))
    assert spark.table("t").count() == 2
    spark.sql("UPDATE t SET v = 'x' WHERE k = 2")
    assert "outside" not in refresh_reason(spark, "v")
    assert_view_matches_query(spark, "v")


def test_adding_a_column_keeps_the_log_readable(spark: SparkSession, db: str) -> None:
    make_tracked(spark)
    log = change_log_of(spark, "t")
    start = log.current_version()
    spark.sql("INSERT INTO t VALUES (4, 'd')")
    spark.sql("ALTER TABLE t ADD COLUMNS (w DOUBLE)")
    spark.sql("INSERT INTO t VALUES (5, 'e', 0.5)")
    spark.sql("DELETE FROM t WHERE k = 2")
    log = change_log_of(spark, "t")  # the table's schema now has w
    assert zset_counter(log.net_changes(start, log.current_version())) == Counter(
        {(4, "d", None): 1, (5, "e", 0.5): 1, (2, "b", None): -1}
    )
    assert "outside" not in refresh_reason(spark, "v")
    assert_view_matches_query(spark, "v")


@pytest.mark.parametrize(
    "statement", ["ALTER TABLE t DROP COLUMN v", "ALTER TABLE t RENAME COLUMN v TO u"]
)
def test_schema_changes_spark_refuses_leave_table_and_log_alone(
    spark: SparkSession, db: str, statement: str
) -> None:
    make_tracked(spark)
    log = change_log_of(spark, "t")
    version = log.current_version()
    with pytest.raises(PySparkException):
        spark.sql(statement)
    assert log.current_version() == version
    assert "outside" not in refresh_reason(spark, "v")
    assert_view_matches_query(spark, "v")


def test_drop_table_takes_its_log_and_version_directories(spark: SparkSession, db: str) -> None:
    make_tracked(spark)
    spark.sql("DELETE FROM t WHERE k = 3")
    table_dir = table_location(spark, "t")
    assert table_dir.name.startswith(VERSION_DIR_PREFIX)
    log_root = local_path(spark, change_log_of(spark, "t").root)
    spark.sql("DROP TABLE t")
    assert not table_dir.parent.exists() and not log_root.exists()
    spark.sql("CREATE TABLE t (k INT, v STRING) USING parquet")  # the name is free again
    assert spark.table("t").count() == 0
