"""Immediate maintenance (``REFRESH ... ON COMMIT``, ``commands/on_commit.py``): every kind of
captured write to a base table refreshes the table's ON COMMIT views before its statement
returns — incrementally — while ON DEMAND views wait for REFRESH."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import assert_view_matches_query, change_log_of, multiset, view_description
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from sparkmv.commands import refresh

QUERY = (
    "SELECT d.name, count(*) AS n, sum(t.v) AS total FROM t JOIN d ON t.k = d.k"
    " WHERE t.v > 0 GROUP BY d.name"
)


def current(spark: SparkSession, view: str) -> bool:
    """Whether ``view`` shows its query's result now."""
    query = view_description(spark, view)["Query"]
    return multiset(spark.table(view)) == multiset(spark.sql(query))


@pytest.fixture
def tables(spark: SparkSession, db: str) -> str:
    spark.sql("CREATE TABLE t (k INT, v INT) USING parquet")
    spark.sql("CREATE TABLE d (k INT, name STRING) USING parquet")
    spark.sql("INSERT INTO t VALUES (1, 10), (2, 20), (2, 5), (3, -1)")
    spark.sql("INSERT INTO d VALUES (1, 'one'), (2, 'two'), (3, 'three')")
    spark.sql(f"CREATE MATERIALIZED VIEW now REFRESH ON COMMIT AS {QUERY}")
    spark.sql(f"CREATE MATERIALIZED VIEW later AS {QUERY}")
    return db


WRITES = [
    "INSERT INTO t VALUES (1, 7), (4, 1)",
    "DELETE FROM t WHERE v = 5",
    "UPDATE t SET v = v + 100 WHERE k = 1",
    "MERGE INTO t USING (SELECT 2 AS k, 3 AS v) s ON t.k = s.k AND t.v = 20"
    " WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
    "INSERT INTO d VALUES (4, 'four')",
    "INSERT OVERWRITE d VALUES (1, 'ONE'), (2, 'TWO'), (4, 'FOUR')",
    "TRUNCATE TABLE t",
]


def test_every_captured_write_refreshes_on_commit_views(spark: SparkSession, tables: str) -> None:
    described = view_description(spark, "now")
    assert described["Refresh Trigger"] == "ON COMMIT"
    for write in WRITES:
        spark.sql(write)
        assert_view_matches_query(spark, "now")
        assert view_description(spark, "now")["Last Refresh Mode"] == "INCREMENTAL", write
    assert not current(spark, "later")  # ON DEMAND: until REFRESH
    spark.createDataFrame([(2, 8)], "k INT, v INT").write.insertInto("t")  # DataFrame writes too
    assert_view_matches_query(spark, "now")
    spark.sql("REFRESH MATERIALIZED VIEW later")
    assert multiset(spark.table("later")) == multiset(spark.table("now"))


def test_alter_turns_immediate_maintenance_off_and_on(spark: SparkSession, tables: str) -> None:
    spark.sql("ALTER MATERIALIZED VIEW now SET REFRESH ON DEMAND")
    spark.sql("INSERT INTO t VALUES (1, 1)")
    assert not current(spark, "now")
    spark.sql("ALTER MATERIALIZED VIEW later SET REFRESH ON COMMIT")
    spark.sql("INSERT INTO t VALUES (2, 2)")
    assert_view_matches_query(spark, "later")
    assert view_description(spark, "later")["Refresh Trigger"] == "ON COMMIT"
    assert not current(spark, "now")
    spark.sql("DROP MATERIALIZED VIEW later")  # a dropped view is refreshed by no write
    spark.sql("INSERT INTO t VALUES (3, 3)")
    spark.sql("REFRESH MATERIALIZED VIEW now")
    assert_view_matches_query(spark, "now")


def test_a_view_the_log_lists_is_refreshed_only_while_the_catalog_says_on_commit(
    spark: SparkSession, tables: str
) -> None:
    """The log's list of ON COMMIT dependents may be stale (a crash between the catalog's
    change and the log's): a listed view that is ON DEMAND, dropped, or whose name a
    table has now is left alone, and the write succeeds."""
    log = change_log_of(spark, "t")
    spark.sql("CREATE TABLE gone_then_table (x INT) USING parquet")
    for name in ("later", "never_created", "gone_then_table"):
        log.set_immediate(f"{tables}.{name}", True)
    spark.sql("INSERT INTO t VALUES (1, 1)")
    assert_view_matches_query(spark, "now")
    assert view_description(spark, "now")["Last Refresh Mode"] == "INCREMENTAL"
    assert not current(spark, "later")  # ON DEMAND in the catalog: not refreshed


def test_a_failed_on_commit_refresh_keeps_the_write_and_says_so(
    spark: SparkSession, tables: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = multiset(spark.table("now"))

    def failing(*_: Any) -> Any:
        raise RuntimeError("disk full")

    monkeypatch.setattr(refresh, "refresh_if_immediate", failing)
    with pytest.raises(PySparkException) as raised:
        spark.sql("INSERT INTO t VALUES (1, 1000)")
    message = str(raised.value)
    assert "MATERIALIZED_VIEW_ON_COMMIT_REFRESH_FAILED" in message
    assert "disk full" in message and "is committed" in message
    monkeypatch.undo()
    assert spark.sql("SELECT count(*) FROM t WHERE v = 1000").first()[0] == 1  # committed
    assert multiset(spark.table("now")) == before  # as of its last refresh
    row = spark.sql("REFRESH MATERIALIZED VIEW now").first()
    assert row["mode"] == "INCREMENTAL"
    assert_view_matches_query(spark, "now")
