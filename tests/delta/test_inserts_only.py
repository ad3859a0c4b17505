"""A change that only inserts is not consolidated (``relation.net_change``): no two of its
rows can cancel, and the delta rules are exact over any representation of a Z-set. Equal
rows inserted by one write or by several stay separate rows of ΔR, so every rule that
counts copies (DISTINCT, COUNT, MIN/MAX, a bag of rows, an outer join, a join with both
sides changed) must add them up itself. A change that also deletes is consolidated as
before."""

from __future__ import annotations

import pytest
from conftest import assert_view_matches_query, change_log_of
from differential import refresh
from pyspark.sql import SparkSession

QUERIES = {
    "bag": "SELECT k, v FROM t WHERE v > 0",
    "distinct": "SELECT DISTINCT k, v FROM t",
    "aggregate": "SELECT k, count(*) AS n, sum(v) AS s, min(v) AS lo, max(v) AS hi"
    " FROM t GROUP BY k",
    "count-distinct": "SELECT k, count(DISTINCT v) AS d FROM t GROUP BY k",
    "global": "SELECT count(*) AS n, sum(v) AS s FROM t",
    "outer-join": "SELECT t.k, t.v, d.name FROM t LEFT JOIN d ON t.k = d.k",
    "self-join": "SELECT a.k, a.v, b.v AS w FROM t a JOIN t b ON a.k = b.k",
}


@pytest.fixture
def tables(spark: SparkSession, db: str) -> str:
    spark.sql("CREATE TABLE t (id INT, k INT, v INT) USING parquet")
    spark.sql("CREATE TABLE d (k INT, name STRING) USING parquet")
    spark.sql("INSERT INTO t VALUES (1, 1, 10), (2, 1, 10), (3, 2, 5), (4, 3, -1)")
    spark.sql("INSERT INTO d VALUES (1, 'one'), (2, 'two')")
    return db


@pytest.mark.parametrize("query", QUERIES.values(), ids=QUERIES.keys())
def test_equal_inserted_rows_are_counted_by_the_rules(
    spark: SparkSession, tables: str, query: str
) -> None:
    """``id`` is not read by most of the views: the copies are equal on what they read."""
    spark.sql(f"CREATE MATERIALIZED VIEW v REFRESH INCREMENTAL AS {query}")
    spark.sql("INSERT INTO t VALUES (5, 1, 10), (6, 1, 10), (7, 4, 7)")
    spark.sql("INSERT INTO t VALUES (8, 1, 10), (9, 4, 7), (10, 2, 1)")
    spark.sql("INSERT INTO d VALUES (4, 'four'), (4, 'four')")
    assert change_log_of(spark, "t").inserts_only(1, 3)
    assert refresh(spark, "v")[0] == "INCREMENTAL"
    assert_view_matches_query(spark, "v")
    # a change that also deletes (an insert and its deletion in one range) is consolidated
    spark.sql("INSERT INTO t VALUES (11, 1, 10), (12, 5, 3)")
    spark.sql("DELETE FROM t WHERE id IN (1, 12)")
    assert not change_log_of(spark, "t").inserts_only(3, 5)
    assert refresh(spark, "v")[0] == "INCREMENTAL"
    assert_view_matches_query(spark, "v")


def test_a_log_knows_which_ranges_only_insert(spark: SparkSession, tables: str) -> None:
    """From its manifests: an UPDATE that assigns no column the reader reads is skipped,
    as ``row_changes`` skips it."""
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT k, count(*) AS n FROM t GROUP BY k")
    log = change_log_of(spark, "t")
    start = log.current_version()
    spark.sql("INSERT INTO t VALUES (5, 1, 10)")
    spark.sql("UPDATE t SET v = v + 1 WHERE k = 1")
    end = log.current_version()
    assert log.inserts_only(start, start + 1)
    assert not log.inserts_only(start, end)
    assert log.inserts_only(start, end, read={"id", "k"})  # the UPDATE assigns only v
    assert not log.inserts_only(start, end, read={"k", "v"})
    spark.sql("REFRESH MATERIALIZED VIEW v")
    assert_view_matches_query(spark, "v")
