"""Statements from threads of one driver (what JDBC and Spark Connect clients produce) on one
materialized view: a change is applied exactly once, and every write lands (issue: concurrency).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from conftest import assert_view_matches_query, view_description
from pyspark.sql import SparkSession


def run_at_once(*work: Callable[[], object]) -> list[object]:
    """Run each of ``work`` in a thread of its own, started together; their results, in order.
    A failure in any thread fails the caller."""
    results: list[object] = [None] * len(work)
    errors: list[BaseException] = []
    start = threading.Barrier(len(work))

    def body(index: int) -> None:
        try:
            start.wait()
            results[index] = work[index]()
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(len(work))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not errors, errors
    assert not any(thread.is_alive() for thread in threads), "a statement never returned"
    return results


def test_two_refreshes_of_one_view_apply_its_change_once(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE t (k INT, v BIGINT) USING parquet")
    spark.sql("INSERT INTO t VALUES (1, 10), (2, 20)")
    spark.sql(
        "CREATE MATERIALIZED VIEW totals REFRESH INCREMENTAL AS "
        "SELECT k, count(*) AS n, sum(v) AS total FROM t GROUP BY k"
    )
    refreshes = int(view_description(spark, "totals")["Refresh Count"])
    for round_ in range(3):
        spark.sql(f"INSERT INTO t VALUES (1, {round_}), (3, 7)")
        spark.sql(f"DELETE FROM t WHERE k = 2 AND v = {20 if round_ == 0 else -1}")

        def refresh() -> tuple[str, int, int]:
            row = spark.sql("REFRESH MATERIALIZED VIEW totals").collect()[0]
            return row.mode, row.rows_inserted, row.rows_deleted

        results = run_at_once(refresh, refresh)
        assert_view_matches_query(spark, "totals")
        applied = [result for result in results if result != ("INCREMENTAL", 0, 0)]
        assert len(applied) == 1, f"round {round_}: the change was applied by {results}"
    # one refresh per round applied the change; the other found nothing to do, uncounted
    assert int(view_description(spark, "totals")["Refresh Count"]) == refreshes + 3


def test_refreshes_while_base_tables_are_written(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE t (k INT, v BIGINT) USING parquet")
    spark.sql("INSERT INTO t VALUES (1, 1)")
    spark.sql(
        "CREATE MATERIALIZED VIEW totals REFRESH INCREMENTAL AS "
        "SELECT k, sum(v) AS total FROM t WHERE v > 0 GROUP BY k"
    )

    def write() -> None:
        for i in range(4):
            spark.sql(f"INSERT INTO t VALUES ({i % 2}, {i + 1})")
            spark.sql(f"UPDATE t SET v = v + 1 WHERE k = {i % 2}")

    def refresh() -> None:
        for _ in range(4):
            spark.sql("REFRESH MATERIALIZED VIEW totals").collect()

    run_at_once(write, refresh)
    spark.sql("REFRESH MATERIALIZED VIEW totals").collect()
    assert_view_matches_query(spark, "totals")
    assert view_description(spark, "totals")["Last Refresh Mode"] == "INCREMENTAL"


def test_on_commit_writers_to_two_tables_of_one_view_both_land(
    spark: SparkSession, db: str
) -> None:
    spark.sql("CREATE TABLE a (k INT) USING parquet")
    spark.sql("CREATE TABLE b (k INT) USING parquet")
    spark.sql(
        "CREATE MATERIALIZED VIEW both_sides REFRESH INCREMENTAL ON COMMIT AS "
        "SELECT k, 'a' AS side FROM a UNION ALL SELECT k, 'b' AS side FROM b"
    )

    def writer(table: str) -> Callable[[], None]:
        def write() -> None:
            for i in range(3):
                spark.sql(f"INSERT INTO {table} VALUES ({i})")

        return write

    run_at_once(writer("a"), writer("b"))
    assert spark.table("both_sides").count() == 6  # current without a REFRESH
    assert_view_matches_query(spark, "both_sides")
