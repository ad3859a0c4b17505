"""Tracking: a base table is tracked while a materialized view reads it; refreshes record the
change-log version they consumed, and DESCRIBE EXTENDED shows what is pending since."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import assert_view_matches_query, local_path, table_properties
from pyspark.sql import SparkSession
from sparkmv.catalog import properties as keys


def dependents(spark: SparkSession, table: str) -> list[str]:
    """The views the table's change log lists as reading it."""
    log_root = local_path(spark, table_properties(spark, table)[keys.TRACKING_LOG])
    listed = (log_root / "dependents").iterdir()
    return sorted(path.name for path in listed if not path.name.startswith((".", "_")))


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
    assert dependents(spark, "t") == [f"{db}.v1", f"{db}.v2"]
    assert keys.TRACKING_DEPENDENTS not in properties  # listed in the log, not the metastore
    log_root = Path(properties[keys.TRACKING_LOG].removeprefix("file:"))
    assert change_log_rows(spark, "v1") == {
        f"Change Log {db}.t": "consumed version 1, current version 1, 0 pending rows logged, "
        "0 irrelevant rows skipped"
    }

    spark.sql("DROP MATERIALIZED VIEW v1")
    assert dependents(spark, "t") == [f"{db}.v2"]
    spark.sql("DROP MATERIALIZED VIEW v2")
    assert keys.TRACKING_LOG not in table_properties(spark, "t")
    assert not log_root.exists()
    assert spark.table("t").count() == 2


def test_dependents_listed_in_the_table_properties_still_count(
    spark: SparkSession, db: str
) -> None:
    """Logs started before the dependents moved into them list them in a table property:
    those views keep the log alive until they are dropped too."""
    spark.sql("CREATE TABLE t (a INT) USING parquet")
    spark.sql("CREATE MATERIALIZED VIEW v1 AS SELECT a FROM t")
    spark.sql("CREATE MATERIALIZED VIEW v2 AS SELECT a + 1 AS b FROM t")
    spark.sql("CREATE MATERIALIZED VIEW v3 AS SELECT a + 2 AS c FROM t")
    log_root = local_path(spark, table_properties(spark, "t")[keys.TRACKING_LOG])
    for view in ("v2", "v3"):  # as an older sparkmv recorded them
        (log_root / "dependents" / f"{db}.{view}").unlink()
    listed = json.dumps([f"{db}.v2", f"{db}.v3"])
    spark.sql(f"ALTER TABLE t SET TBLPROPERTIES ('{keys.TRACKING_DEPENDENTS}' = '{listed}')")

    spark.sql("DROP MATERIALIZED VIEW v1")
    spark.sql("DROP MATERIALIZED VIEW v2")
    assert json.loads(table_properties(spark, "t")[keys.TRACKING_DEPENDENTS]) == [f"{db}.v3"]
    spark.sql("INSERT INTO t VALUES (1)")
    spark.sql("REFRESH MATERIALIZED VIEW v3")
    assert_view_matches_query(spark, "v3")
    spark.sql("DROP MATERIALIZED VIEW v3")
    properties = table_properties(spark, "t")
    assert keys.TRACKING_LOG not in properties and keys.TRACKING_DEPENDENTS not in properties
    assert not log_root.exists()


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
        f"Change Log {db}.j": "not tracked: json tables are not tracked (parquet tables are), "
        "and catalog spark_catalog gives it no version (Table.version()), so no changelog",
        f"Change Log {db}.plain": "not tracked: it is a view, not a table",
    }
    assert_view_matches_query(spark, "v")


def test_replacing_the_query_moves_the_tracking(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE t (a INT) USING parquet")
    spark.sql("CREATE TABLE u (a INT) USING parquet")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT a FROM t")
    spark.sql("ALTER MATERIALIZED VIEW v AS SELECT a FROM u")
    assert keys.TRACKING_LOG not in table_properties(spark, "t")
    assert dependents(spark, "u") == [f"{db}.v"]


def size_statistics(spark: SparkSession, db: str, table: str) -> tuple[int | None, int | None]:
    """The (size in bytes, row count) Spark reads for ``table`` from the metastore."""
    catalog = spark._jsparkSession.sharedState().externalCatalog()  # type: ignore[attr-defined]
    stats = catalog.getTable(db, table).stats()
    if not stats.isDefined():
        return None, None
    found = stats.get()
    rows = found.rowCount()
    return int(str(found.sizeInBytes())), int(str(rows.get())) if rows.isDefined() else None


def test_writes_to_a_tracked_table_leave_its_statistics_unset(spark: SparkSession, db: str) -> None:
    """Hive recomputes a table's size on every alter of it, and Spark drops the size after
    every write with another alter: a table once altered (as tracking alters it) paid a
    metastore write per write. Tracking's alters tell Hive to leave sizes alone and drop the
    sizes Hive had computed (``CatalogBridge.withoutSizeStatistics``); row counts from
    ANALYZE TABLE stay until the next write, as Spark keeps them."""
    for table in ("fresh", "altered", "analyzed"):
        spark.sql(f"CREATE TABLE {table} (a INT) USING parquet")
        spark.sql(f"INSERT INTO {table} VALUES (1), (2)")
    spark.sql("ALTER TABLE altered SET TBLPROPERTIES ('team' = 'sales')")
    spark.sql("ANALYZE TABLE analyzed COMPUTE STATISTICS")
    assert size_statistics(spark, db, "fresh") == (None, None)
    assert size_statistics(spark, db, "altered")[0] is not None  # Hive computed its size
    assert size_statistics(spark, db, "analyzed")[1] == 2

    spark.sql("CREATE TABLE parted (a INT, p INT) USING parquet PARTITIONED BY (p)")
    spark.sql("INSERT INTO parted VALUES (1, 1), (2, 2)")
    spark.sql(
        "CREATE MATERIALIZED VIEW v AS SELECT a FROM fresh UNION ALL SELECT a FROM altered"
        " UNION ALL SELECT a FROM analyzed UNION ALL SELECT a FROM parted"
    )
    for table in ("fresh", "altered", "analyzed", "parted"):  # Hive took its marker away
        assert "DO_NOT_UPDATE_STATS" not in table_properties(spark, table), table
    assert size_statistics(spark, db, "fresh") == (None, None)
    assert size_statistics(spark, db, "altered") == (None, None)
    assert size_statistics(spark, db, "analyzed")[1] == 2
    spark.sql("INSERT INTO parted VALUES (3, 1)")
    for table in ("fresh", "altered", "analyzed"):
        spark.sql(f"INSERT INTO {table} VALUES (3)")
        spark.sql(f"DELETE FROM {table} WHERE a = 1")  # a copy-on-write: a new location
        assert size_statistics(spark, db, table) == (None, None), table
    assert spark.sql("REFRESH MATERIALIZED VIEW v").collect()[0].mode == "INCREMENTAL"
    assert_view_matches_query(spark, "v")
