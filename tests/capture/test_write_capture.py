"""Captured writes: appends to tracked tables are logged by reference, overwrites keep the rows
they replace, copy-on-writes log only the rows they changed, untracked tables are untouched;
the views stay exact either way. (Every write kind against the snapshot oracle:
``test_write_kinds.py``.)"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest
from conftest import assert_view_matches_query, change_log_of, table_properties, zset_counter
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from sparkmv import fs
from sparkmv.capture.change_log import ChangeLog
from sparkmv.catalog import properties as keys


def changes(log: ChangeLog, start: int, end: int) -> Counter[tuple[object, ...]]:
    return zset_counter(log.net_changes(start, end))


@pytest.mark.parametrize("partitioned", [False, True])
def test_appends_are_logged_by_reference(spark: SparkSession, db: str, partitioned: bool) -> None:
    clause = "PARTITIONED BY (k)" if partitioned else ""
    spark.sql(f"CREATE TABLE t (v STRING, k INT) USING parquet {clause}")
    spark.sql("INSERT INTO t VALUES ('a', 1)")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT k, COUNT(*) AS n FROM t GROUP BY k")
    log = change_log_of(spark, "t")
    assert log.current_version() == 1  # START: the files the log vouches for

    spark.sql("INSERT INTO t VALUES ('b', 1), ('b', 1), (NULL, 2)")
    spark.createDataFrame([("c", 3)], "v STRING, k INT").write.insertInto("t")
    appended = spark.createDataFrame([("d", 1)], "v STRING, k INT").write.mode("append")
    (appended.partitionBy("k") if partitioned else appended).saveAsTable("t")
    assert log.current_version() == 4
    assert changes(log, 1, 4) == Counter({("b", 1): 2, (None, 2): 1, ("c", 3): 1, ("d", 1): 1})
    assert changes(log, 2, 3) == Counter({("c", 3): 1})
    assert log.commits(1, 4)[0].inserted_files  # by reference: no rows were written twice

    spark.sql("REFRESH MATERIALIZED VIEW v")
    assert_view_matches_query(spark, "v")


def test_overwrites_log_the_rows_they_replace(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE t (v STRING, k INT) USING parquet")
    spark.sql("INSERT INTO t VALUES ('a', 1), ('b', 2)")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT v FROM t WHERE k > 1")
    spark.sql("INSERT OVERWRITE t VALUES ('c', 3), ('a', 1)")
    log = change_log_of(spark, "t")
    assert changes(log, 1, 2) == Counter({("b", 2): -1, ("c", 3): 1})
    spark.sql("TRUNCATE TABLE t")
    assert changes(log, 1, 3) == Counter({("b", 2): -1, ("a", 1): -1})
    spark.sql("REFRESH MATERIALIZED VIEW v")
    assert_view_matches_query(spark, "v")


@pytest.mark.parametrize("partitioned", [False, True])
def test_copy_on_write_logs_only_the_rows_it_changed(
    spark: SparkSession, db: str, partitioned: bool
) -> None:
    clause = "PARTITIONED BY (p)" if partitioned else ""
    spark.sql(f"CREATE TABLE t (k BIGINT, v STRING, p INT) USING parquet {clause}")
    spark.sql("INSERT INTO t SELECT id, 'x', CAST(id % 2 AS INT) FROM range(100)")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT p, count(*) AS n FROM t GROUP BY p")
    log = change_log_of(spark, "t")
    start = log.current_version()
    spark.sql("DELETE FROM t WHERE k = 3")
    spark.sql("UPDATE t SET v = 'y', p = 0 WHERE k = 5")
    spark.sql(
        "MERGE INTO t USING (SELECT 7L AS k, 'z' AS v, 1 AS p UNION ALL SELECT 200L, 'n', 1) "
        "AS s ON t.k = s.k WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    )
    commits = log.commits(start, log.current_version())
    logged = [
        (
            log.read_files(list(c.inserted_files)).count(),
            log.read_files(list(c.deleted_files)).count(),
        )
        for c in commits
    ]
    # The rows kept in rewritten files are not logged. (The commits' operations and reasons
    # say which commit is unexpected, should one be: a resynchronisation says why.)
    described = [(c.version, c.operation, c.reason) for c in commits]
    assert logged == [(0, 1), (1, 1), (2, 1)], (start, described)
    assert changes(log, start, log.current_version()) == Counter(
        {
            (3, "x", 1): -1,
            (5, "x", 1): -1,
            (5, "y", 0): 1,
            (7, "x", 1): -1,
            (7, "z", 1): 1,
            (200, "n", 1): 1,
        }
    )
    spark.sql("REFRESH MATERIALIZED VIEW v")
    assert_view_matches_query(spark, "v")


def test_untracked_tables_are_not_logged(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE u (a INT) USING parquet")
    spark.sql("INSERT INTO u VALUES (1)")
    plan = spark.sql("EXPLAIN INSERT INTO u VALUES (2)").first()
    assert plan is not None and "CapturedWrite" not in plan[0]
    spark.sql("INSERT INTO u VALUES (2)")
    assert keys.TRACKING_LOG not in table_properties(spark, "u")
    assert spark.table("u").count() == 2


def test_a_failed_write_logs_nothing(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE t (v STRING, k INT) USING parquet")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT k FROM t")
    with pytest.raises(PySparkException):
        spark.sql("INSERT INTO t SELECT 'x', CAST(1 DIV 0 AS INT)")
    log = change_log_of(spark, "t")
    assert log.current_version() == 1
    spark.sql("INSERT INTO t VALUES ('y', 2)")
    assert changes(log, 1, 2) == Counter({("y", 2): 1})


def test_retiring_an_overwrites_links_never_removes_another_tables_log(
    spark: SparkSession, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An overwrite retires the links it kept in its table's log, and the compaction that
    deletes them runs in the background: here after the table's last view was dropped (its
    log with it: the warehouse holds no log file then) and while another table's tracking
    begins. Only the copy-on-write version directories the removal empties may go with the
    links, never a directory of logs (``delete_retired``) that another log is created in."""
    spark.sql("CREATE TABLE a (k INT) USING parquet")
    spark.sql("INSERT INTO a VALUES (1)")
    spark.sql("CREATE MATERIALIZED VIEW va AS SELECT k FROM a")
    spark.sql("INSERT OVERWRITE a VALUES (2)")  # retires the link it kept of the old file
    start, looked, finish = threading.Event(), threading.Event(), threading.Event()
    delete_compacted, has_files = ChangeLog._delete_compacted, fs.has_files

    def late_removal(log: ChangeLog, *args: Any) -> None:
        start.wait()
        try:
            delete_compacted(log, *args)
        finally:
            looked.set()

    def slow_look(spark: SparkSession, directory: str) -> bool:
        found = has_files(spark, directory)  # the warehouse holds no log file now
        looked.set()
        finish.wait()  # the other table's log is created meanwhile
        return found

    monkeypatch.setattr(ChangeLog, "_delete_compacted", late_removal)
    monkeypatch.setattr(fs, "has_files", slow_look)
    try:
        spark.sql("REFRESH MATERIALIZED VIEW va")  # compacts; its removal waits for start
        spark.sql("DROP MATERIALIZED VIEW va")
        start.set()
        assert looked.wait(60)
        spark.sql("CREATE TABLE b (k INT) USING parquet")
        spark.sql("INSERT INTO b VALUES (1)")
        spark.sql("CREATE MATERIALIZED VIEW vb AS SELECT k FROM b")
    finally:
        start.set()
        finish.set()
    fs.wait_for_removals()
    assert change_log_of(spark, "b").current_version() == 1  # its START
    spark.sql("INSERT INTO b VALUES (2)")
    refreshed = spark.sql("REFRESH MATERIALIZED VIEW vb").first()
    assert refreshed is not None and refreshed.mode == "INCREMENTAL", refreshed
    assert_view_matches_query(spark, "vb")
