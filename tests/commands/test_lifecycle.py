"""The full-refresh lifecycle through spark.sql, each step checked against the oracle."""

from __future__ import annotations

from pathlib import Path

from conftest import assert_view_matches_query, multiset, table_properties
from pyspark.sql import SparkSession
from sparkmv.catalog import properties as keys
from sparkmv.identifiers import TableName
from sparkmv.storage.snapshot import storage_root


def describe(spark: SparkSession, view: str) -> dict[str, str]:
    rows = spark.sql(f"DESCRIBE MATERIALIZED VIEW EXTENDED {view}").collect()
    return {row.col_name: row.data_type for row in rows}


def make_sales(spark: SparkSession) -> None:
    spark.sql("CREATE TABLE sales (id INT, region STRING, amount DECIMAL(10,2)) USING parquet")
    spark.sql(
        "INSERT INTO sales VALUES (1, 'eu', 10.00), (2, 'us', 5.50), (3, 'eu', 1.00), "
        "(4, NULL, 2.00), (4, NULL, 2.00)"
    )


def test_create_refresh_select_describe_drop(spark: SparkSession, db: str) -> None:
    make_sales(spark)
    spark.sql(
        "CREATE MATERIALIZED VIEW by_region COMMENT 'per region' "
        "AS SELECT region, SUM(amount) AS total, COUNT(*) AS n FROM sales GROUP BY region"
    )
    assert_view_matches_query(spark, "by_region")
    assert spark.table("by_region").columns == ["region", "total", "n"]

    spark.sql("INSERT INTO sales VALUES (5, 'asia', 7.00), (6, 'us', 1.25)")
    stale = multiset(spark.table("by_region"))
    assert ("asia", 7, 1) not in {(r, float(t), n) for r, t, n in stale}

    result = spark.sql("REFRESH MATERIALIZED VIEW by_region").collect()
    assert len(result) == 1
    row = result[0]
    assert row.mode == "INCREMENTAL"  # AUTO weighed both modes: a tiny change
    assert row.reason.startswith("incremental: estimated "), row.reason
    assert (row.rows_inserted, row.rows_deleted) == (2, 1)  # asia is new, us changes
    assert row.duration_ms >= 0
    assert_view_matches_query(spark, "by_region")

    info = describe(spark, "by_region")
    assert info["Refresh Count"] == "2"
    assert info["Last Refresh Mode"] == "INCREMENTAL"
    assert info["Base Tables"] == f"{db}.sales"
    assert info["Refresh Policy"] == "AUTO"
    assert info["Refresh Trigger"] == "ON DEMAND"
    assert info["Last Refreshed"].endswith("UTC")
    assert info["Next Refresh Mode"] == "INCREMENTAL"
    assert info["Next Refresh Reason"] == "no base table changed since the last refresh"

    full = spark.sql("REFRESH MATERIALIZED VIEW by_region FULL").collect()[0]
    assert (full.mode, full.reason) == ("FULL", "full refresh requested")
    assert describe(spark, "by_region")["Refresh Count"] == "3"

    spark.sql("DROP MATERIALIZED VIEW by_region")
    assert spark.sql("SHOW MATERIALIZED VIEWS").collect() == []
    assert "by_region" not in {t.name for t in spark.catalog.listTables(db)}


def test_view_lists_once_and_hides_storage(spark: SparkSession, db: str) -> None:
    make_sales(spark)
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT DISTINCT region FROM sales")
    tables = [row.tableName for row in spark.sql("SHOW TABLES").collect()]
    assert sorted(tables) == ["sales", "v"]
    assert spark.sql("SELECT * FROM v").columns == ["region"]
    shown = spark.sql("SHOW MATERIALIZED VIEWS").collect()
    assert [(r.namespace, r.viewName, r.refresh_policy, r.refresh_trigger) for r in shown] == [
        (db, "v", "AUTO", "ON DEMAND")
    ]
    assert shown[0].last_refreshed is not None


def test_column_list_comments_properties_and_policy(spark: SparkSession, db: str) -> None:
    make_sales(spark)
    spark.sql(
        "CREATE MATERIALIZED VIEW v (r COMMENT 'the region', total) "
        "TBLPROPERTIES ('owner' = 'team-a') REFRESH FULL ON DEMAND "
        "AS SELECT region, SUM(amount) FROM sales GROUP BY region"
    )
    rows = spark.sql("DESCRIBE MATERIALIZED VIEW v").collect()
    assert [(r.col_name, r.comment) for r in rows] == [("r", "the region"), ("total", None)]
    info = describe(spark, "v")
    assert info["Refresh Policy"] == "FULL"
    assert info["Table Properties"] == "[owner=team-a]"
    result = spark.sql("REFRESH MATERIALIZED VIEW v").collect()[0]
    assert (result.mode, result.reason) == ("FULL", "refresh policy is FULL")
    assert_view_matches_query(spark, "v")


def test_column_list_names_repeated_query_columns(spark: SparkSession, db: str) -> None:
    """A column list renames by position, so the query's own names may repeat (``a.i, b.i``)
    under every policy: the stored rows are written by position too."""
    spark.sql("CREATE TABLE a (i INT) USING parquet")
    spark.sql("CREATE TABLE b (i INT) USING parquet")
    spark.sql("INSERT INTO a VALUES (1), (2)")
    spark.sql("INSERT INTO b VALUES (1), (3)")
    for policy in ("FULL", "AUTO", "INCREMENTAL"):
        spark.sql(
            f"CREATE MATERIALIZED VIEW v_{policy} (x, y) REFRESH {policy} "
            "AS SELECT a.i, b.i FROM a JOIN b ON a.i = b.i"
        )
    spark.sql("INSERT INTO a VALUES (3)")
    for policy in ("FULL", "AUTO", "INCREMENTAL"):
        spark.sql(f"REFRESH MATERIALIZED VIEW v_{policy}")
        assert multiset(spark.table(f"v_{policy}")) == {(1, 1): 1, (3, 3): 1}
        assert_view_matches_query(spark, f"v_{policy}")


def test_if_not_exists_and_or_replace(spark: SparkSession, db: str) -> None:
    make_sales(spark)
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT id FROM sales")
    spark.sql("CREATE MATERIALIZED VIEW IF NOT EXISTS v AS SELECT region FROM sales")
    assert spark.table("v").columns == ["id"]
    spark.sql("CREATE OR REPLACE MATERIALIZED VIEW v AS SELECT region, amount FROM sales")
    assert spark.table("v").columns == ["region", "amount"]
    assert_view_matches_query(spark, "v")
    assert describe(spark, "v")["Refresh Count"] == "1"


def test_alter_set_refresh_and_as_query(spark: SparkSession, db: str) -> None:
    make_sales(spark)
    spark.sql(
        "CREATE MATERIALIZED VIEW v (id COMMENT 'key', amount) COMMENT 'c' "
        "TBLPROPERTIES ('k' = 'v') AS SELECT id, amount FROM sales"
    )
    spark.sql("ALTER MATERIALIZED VIEW v SET REFRESH FULL")
    assert describe(spark, "v")["Refresh Policy"] == "FULL"
    assert_view_matches_query(spark, "v")

    spark.sql("ALTER MATERIALIZED VIEW v AS SELECT id, region FROM sales WHERE id > 1")
    assert spark.table("v").columns == ["id", "region"]
    assert_view_matches_query(spark, "v")
    info = describe(spark, "v")
    assert info["Refresh Policy"] == "FULL"
    assert info["Table Properties"] == "[k=v]"
    assert info["Comment"] == "c"
    comments = {r.col_name: r.comment for r in spark.sql("DESCRIBE MATERIALIZED VIEW v").collect()}
    assert comments == {"id": "key", "region": None}


def test_query_resolves_in_its_creation_database(spark: SparkSession, db: str) -> None:
    make_sales(spark)
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT id FROM sales")
    spark.sql("USE default")
    try:
        spark.sql(f"INSERT INTO {db}.sales VALUES (9, 'x', 1.00)")
        spark.sql(f"REFRESH MATERIALIZED VIEW {db}.v")
        assert (9,) in multiset(spark.table(f"{db}.v"))
        assert spark.catalog.currentDatabase() == "default"
    finally:
        spark.sql(f"USE {db}")
    assert_view_matches_query(spark, "v")


def test_views_of_other_databases_and_quoted_names(spark: SparkSession, db: str) -> None:
    make_sales(spark)
    spark.sql(f"CREATE MATERIALIZED VIEW `{db}`.`Odd_Name` AS SELECT * FROM {db}.sales")
    spark.sql("USE default")
    try:
        names = [r.viewName for r in spark.sql(f"SHOW MATERIALIZED VIEWS IN {db}").collect()]
        assert names == ["odd_name"]
        assert spark.sql(f"SHOW MATERIALIZED VIEWS IN {db} LIKE 'ODD*'").count() == 1
        assert spark.sql(f"SHOW MATERIALIZED VIEWS IN {db} LIKE 'x*|odd_%'").count() == 1
        assert spark.sql(f"SHOW MATERIALIZED VIEWS IN {db} LIKE 'nope'").count() == 0
    finally:
        spark.sql(f"USE {db}")
    assert_view_matches_query(spark, "odd_name")


def test_empty_results_nulls_and_duplicates(spark: SparkSession, db: str) -> None:
    make_sales(spark)
    spark.sql("CREATE MATERIALIZED VIEW empty AS SELECT * FROM sales WHERE id < 0")
    assert spark.table("empty").count() == 0
    assert_view_matches_query(spark, "empty")
    spark.sql("CREATE MATERIALIZED VIEW dups AS SELECT id, region FROM sales")
    assert multiset(spark.table("dups"))[(4, None)] == 2
    spark.sql("INSERT INTO sales VALUES (-1, 'neg', 0.00)")
    spark.sql("REFRESH MATERIALIZED VIEW empty")
    assert_view_matches_query(spark, "empty")
    assert spark.table("empty").count() == 1


def test_sql_script_create_is_rerouted(spark: SparkSession, db: str) -> None:
    """Inside a SQL script Spark's own parser builds CreateMaterializedViewAsSelect."""
    make_sales(spark)
    spark.sql("BEGIN\n  CREATE MATERIALIZED VIEW s AS SELECT id FROM sales;\nEND")
    assert_view_matches_query(spark, "s")
    assert describe(spark, "s")["Refresh Policy"] == "AUTO"


def test_explain(spark: SparkSession, db: str) -> None:
    make_sales(spark)
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT region, COUNT(*) AS n FROM sales GROUP BY 1")
    plan = spark.sql("EXPLAIN REFRESH MATERIALIZED VIEW v FULL").collect()[0].plan
    assert "== Refresh Plan ==" in plan
    assert "Mode: FULL" in plan
    assert "== Physical Plan ==" in plan
    spark.sql("INSERT INTO sales VALUES (7, 'eu', 1.00)")
    plan = spark.sql("EXPLAIN REFRESH MATERIALIZED VIEW v").collect()[0].plan
    assert "Mode: INCREMENTAL" in plan
    assert "Δstate = γ[count(*)](Δsales)" in plan
    created = (
        spark.sql("EXPLAIN CREATE MATERIALIZED VIEW w AS SELECT id FROM sales").collect()[0].plan
    )
    assert "== Create Plan ==" in created
    assert spark.sql("SHOW MATERIALIZED VIEWS LIKE 'w'").count() == 0


def test_drop_database_cascade_drops_its_materialized_views_whole(
    spark: SparkSession, db: str
) -> None:
    """``DROP DATABASE d CASCADE`` drops d's materialized views as DROP MATERIALIZED VIEW
    ... CASCADE would: their stored rows and their reading of base tables go too (a base
    table elsewhere stops being tracked), and so do views elsewhere that read them."""
    make_sales(spark)
    other = f"{db}_other"
    spark.sql(f"CREATE DATABASE {other}")
    try:
        spark.sql(f"CREATE TABLE {other}.t (k INT) USING parquet")
        spark.sql(f"INSERT INTO {other}.t VALUES (1), (2)")
        spark.sql(f"CREATE MATERIALIZED VIEW {other}.by_region AS SELECT region FROM {db}.sales")
        spark.sql(f"CREATE MATERIALIZED VIEW {other}.ks AS SELECT k FROM {other}.t")
        spark.sql(
            f"CREATE MATERIALIZED VIEW {other}.regions AS"
            f" SELECT DISTINCT region FROM {other}.by_region"
        )
        spark.sql(f"CREATE MATERIALIZED VIEW reader AS SELECT count(*) AS n FROM {other}.ks")
        roots = [
            Path(storage_root(spark, TableName(name, other)).removeprefix("file:"))
            for name in ("by_region", "ks", "regions")
        ]
        assert all(root.is_dir() for root in roots)
        assert keys.TRACKING_LOG in table_properties(spark, "sales")

        spark.sql(f"DROP DATABASE {other} CASCADE")

        assert not spark.catalog.databaseExists(other)
        assert not any(root.exists() for root in roots)
        assert keys.TRACKING_LOG not in table_properties(spark, "sales")  # no view reads it
        assert spark.sql("SHOW MATERIALIZED VIEWS").collect() == []  # reader went too
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {other} CASCADE")
