"""Tracking: a base table is tracked while a materialized view reads it; refreshes record the
change-log version they consumed, and DESCRIBE EXTENDED shows what is pending since."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import assert_view_matches_query
from pyspark.sql import SparkSession
from sparkmv.catalog import properties as keys


def table_properties(spark: SparkSession, table: str) -> dict[str, str]:
    return {row.key: row.value for row in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}


def change_log_rows(spark: SparkSession, view: str) -> dict[str, str]:
    rows = spark.sql(f"DESCRIBE MATERIALIZED VIEW EXTENDED {view}").collect()
    return {r.col_name: r.data_type for r in rows if r.col_name.startswith("Change Log")}


def test_tracking_follows_the_dependent_views(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE t (a INT, b STRING) USING parquet")
    spark.sql("INSERT INTO t VALUES (1, 'x'), (2, 'y')")
    assert keys.TRACKING_LOG not in table_properties(spark, "t")

    spark.sql("CREATE MATERIALIZED VIEW v1 AS SELECT a FROM t")
    spark.sql("CREATE MATERIALIZED VIEW v2 AS SELECT b FROM t WHERE a > 1")
    properties = table_properties(spark, "t")
    assert json.loads(properties[keys.TRACKING_DEPENDENTS]) == [f"{db}.v1", f"{db}.v2"]
    log_root = Path(properties[keys.TRACKING_LOG].removeprefix("file:"))
    assert change_log_rows(spark, "v1") == {
        f"Change Log {db}.t": "consumed version 1, current version 1, 0 pending rows logged, "
        "0 irrelevant rows skipped"
    }

    spark.sql("DROP MATERIALIZED VIEW v1")
    properties = table_properties(spark, "t")
    assert json.loads(properties[keys.TRACKING_DEPENDENTS]) == [f"{db}.v2"]
    spark.sql("DROP MATERIALIZED VIEW v2")
    assert keys.TRACKING_LOG not in table_properties(spark, "t")
    assert not log_root.exists()
    assert spark.table("t").count() == 2


def test_refresh_records_the_consumed_version(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE t (a INT, b STRING) USING parquet")
    spark.sql("INSERT INTO t VALUES (1, 'x')")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT a, b FROM t")
    spark.sql("INSERT INTO t VALUES (2, 'y'), (3, 'z')")  # two rows in, one out
    spark.sql("DELETE FROM t WHERE a = 1")
    assert change_log_rows(spark, "v") == {
        f"Change Log {db}.t": "consumed version 1, current version 3, 3 pending rows logged, "
        "0 irrelevant rows skipped"
    }
    spark.sql("REFRESH MATERIALIZED VIEW v")
    assert change_log_rows(spark, "v") == {
        f"Change Log {db}.t": "consumed version 3, current version 3, 0 pending rows logged, "
        "0 irrelevant rows skipped"
    }
    assert_view_matches_query(spark, "v")


def test_untracked_base_tables_say_why(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE j (a INT) USING json")
    spark.sql("CREATE TABLE p (a INT) USING parquet")
    spark.sql("CREATE VIEW plain AS SELECT a FROM p")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT a FROM j UNION ALL SELECT a FROM plain")
    assert change_log_rows(spark, "v") == {
        f"Change Log {db}.j": "not tracked: json tables are not tracked (parquet tables are)",
        f"Change Log {db}.plain": "not tracked: it is a view, not a table",
    }
    assert_view_matches_query(spark, "v")


def test_replacing_the_query_moves_the_tracking(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE t (a INT) USING parquet")
    spark.sql("CREATE TABLE u (a INT) USING parquet")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT a FROM t")
    spark.sql("ALTER MATERIALIZED VIEW v AS SELECT a FROM u")
    assert keys.TRACKING_LOG not in table_properties(spark, "t")
    assert json.loads(table_properties(spark, "u")[keys.TRACKING_DEPENDENTS]) == [f"{db}.v"]
