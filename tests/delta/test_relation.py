"""The delta rules as Spark SQL: any column name survives the text, and a command leaves no
temporary view behind (``delta/relation.py``)."""

from __future__ import annotations

from conftest import assert_view_matches_query
from pyspark.sql import SparkSession
from sparkmv.identifiers import quote_identifier


def sparkmv_temp_views(spark: SparkSession) -> list[str]:
    return [t.name for t in spark.catalog.listTables() if t.name.startswith("__sparkmv_")]


def test_columns_that_need_quoting(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE odd (`a b` INT, `select` STRING, `c``d` INT) USING parquet")
    spark.sql("CREATE TABLE other (`a b` INT, `from` STRING) USING parquet")
    spark.sql("INSERT INTO odd VALUES (1, 'x', 10), (2, 'y', 20), (2, 'y', 20)")
    spark.sql("INSERT INTO other VALUES (1, 'p'), (2, 'q')")
    spark.sql(
        "CREATE MATERIALIZED VIEW j AS SELECT o.`a b`, o.`select`, o.`c``d` + 1 AS `e f`,"
        " t.`from` FROM odd o JOIN other t ON o.`a b` = t.`a b` WHERE o.`c``d` > 5"
    )
    spark.sql("CREATE MATERIALIZED VIEW d AS SELECT DISTINCT `select`, `c``d` FROM odd")
    spark.sql("INSERT INTO odd VALUES (1, 'z', 30)")
    spark.sql("DELETE FROM odd WHERE `select` = 'y'")
    spark.sql("INSERT INTO other VALUES (2, 'r')")
    for view in ("j", "d"):
        result = spark.sql(f"REFRESH MATERIALIZED VIEW {view}").collect()[0]
        assert result["mode"] == "INCREMENTAL", result["reason"]
        assert_view_matches_query(spark, view)


def test_commands_leave_no_temporary_views(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE r (a INT, b INT) USING parquet")
    spark.sql("CREATE TABLE s (b INT, c INT) USING parquet")
    spark.sql("INSERT INTO r VALUES (1, 1), (2, 2)")
    spark.sql("INSERT INTO s VALUES (1, 5), (2, 6)")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT DISTINCT r.a, s.c FROM r JOIN s ON r.b = s.b")
    spark.sql("INSERT INTO r VALUES (3, 1)")
    spark.sql("EXPLAIN EXTENDED REFRESH MATERIALIZED VIEW v").collect()
    spark.sql("REFRESH MATERIALIZED VIEW v")
    spark.sql("REFRESH MATERIALIZED VIEW v FULL")
    assert sparkmv_temp_views(spark) == []
    assert_view_matches_query(spark, "v")


def test_names_are_quoted_for_spark() -> None:
    assert quote_identifier("a b") == "`a b`"
    assert quote_identifier("c`d") == "`c``d`"
