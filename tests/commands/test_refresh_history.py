"""The refresh history (``commands/refresh_history.py``, ``commands/show_refreshes.py``):
every refresh appends one record — incremental, full, skipped, failed — with what started it,
what it did, the estimate against the time it took, the versions it consumed and its Spark
jobs; SHOW MATERIALIZED VIEW REFRESHES and ``sparkmv_refresh_history`` read it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FULL_RUN, run_crash_step, session_confs
from conftest import refresh_history as history
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from sparkmv.catalog import history as store
from sparkmv.catalog.history import RefreshRecord, Status, Trigger
from sparkmv.config import HISTORY_RETENTION
from sparkmv.faults import CRASH_EXIT_CODE
from sparkmv.identifiers import TableName

QUERY = "SELECT k, count(*) AS n, sum(v) AS total FROM t GROUP BY k"


@pytest.fixture
def view(spark: SparkSession, db: str) -> str:
    spark.sql("CREATE TABLE t (k INT, v INT) USING parquet")
    spark.sql("INSERT INTO t VALUES (1, 10), (2, 20)")
    spark.sql(f"CREATE MATERIALIZED VIEW v AS {QUERY}")
    return f"{db}.v"


def test_every_refresh_appends_one_record(spark: SparkSession, view: str) -> None:
    assert history(spark, "v") == []  # CREATE is no refresh
    spark.sql("INSERT INTO t VALUES (1, 5), (3, 1)")
    incremental = spark.sql("REFRESH MATERIALIZED VIEW v").collect()[0]
    spark.sql("REFRESH MATERIALIZED VIEW v").collect()  # nothing pending
    spark.sql("INSERT INTO t VALUES (2, 2)")
    full = spark.sql("REFRESH MATERIALIZED VIEW v FULL").collect()[0]
    records = history(spark, "v")
    assert [(r.status, r.mode, r.trigger) for r in records] == [
        ("SUCCEEDED", "INCREMENTAL", "STATEMENT"),
        ("SKIPPED", "INCREMENTAL", "STATEMENT"),
        ("SUCCEEDED", "FULL", "STATEMENT"),
    ]
    first, skipped, last = records
    assert {r.view for r in records} == {view}
    # what REFRESH returned, recorded
    assert (first.reason, first.rows_inserted, first.rows_deleted, first.irrelevant_rows) == (
        incremental.reason,
        incremental.rows_inserted,
        incremental.rows_deleted,
        incremental.irrelevant_rows,
    )
    assert first.duration_ms == incremental.duration_ms
    assert (last.reason, last.rows_inserted, last.rows_deleted) == (
        full.reason,
        full.rows_inserted,
        full.rows_deleted,
    )
    assert skipped.reason == "no base table changed since the last refresh"
    # the estimate beside the time it took; none when nothing was pending
    assert first.estimated_ms is not None and first.estimated_ms > 0
    assert last.estimated_ms is not None and skipped.estimated_ms is None
    for record in records:
        assert record.started <= record.ended
        assert record.duration_ms == round((record.ended - record.started).total_seconds() * 1000)
        assert record.error_class is None
    # the change-log versions consumed: t's log has a commit per write (2 rows, then 2 more)
    base = f"{view.split('.')[0]}.t"
    assert first.base_versions == skipped.base_versions
    assert last.base_versions[base] == first.base_versions[base] + 1
    # Spark jobs: none with nothing pending, some for a refresh that computed rows
    assert skipped.spark_jobs == 0 and skipped.bytes_read == 0
    assert first.spark_jobs is not None and first.spark_jobs >= 1
    assert last.spark_jobs is not None and last.spark_jobs >= 1
    assert last.bytes_read is not None and last.bytes_read > 0


def test_a_failed_refresh_is_recorded_with_its_error_class(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE t (a INT) USING parquet")
    spark.sql("INSERT INTO t VALUES (1), (3)")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT a, 10 DIV (a - 2) AS q FROM t")
    spark.sql("INSERT INTO t VALUES (2)")
    with pytest.raises(PySparkException) as raised:
        spark.sql("REFRESH MATERIALIZED VIEW v").collect()
    assert raised.value.getCondition() == "DIVIDE_BY_ZERO"  # the refresh's error, unchanged
    (failed,) = history(spark, "v")
    assert failed.status == "FAILED"
    assert failed.error_class == "DIVIDE_BY_ZERO"
    assert "Division by zero" in failed.error_message
    assert failed.mode is not None and failed.reason  # as planned
    assert failed.rows_inserted is None and failed.rows_deleted is None
    assert failed.spark_jobs is not None and failed.spark_jobs >= 1


def test_triggers(spark: SparkSession, view: str) -> None:
    """A view refreshed by REFRESH ... CASCADE of a view over it, and an ON COMMIT view
    refreshed by a write, say so."""
    spark.sql("CREATE MATERIALIZED VIEW top AS SELECT k, n FROM v WHERE n > 0")
    spark.sql(f"CREATE MATERIALIZED VIEW now REFRESH ON COMMIT AS {QUERY}")
    spark.sql("INSERT INTO t VALUES (4, 4)")
    spark.sql("REFRESH MATERIALIZED VIEW top CASCADE").collect()
    assert [r.trigger for r in history(spark, "v")] == ["CASCADE"]
    assert [r.trigger for r in history(spark, "top")] == ["STATEMENT"]
    assert [(r.trigger, r.status) for r in history(spark, "now")] == [("ON COMMIT", "SUCCEEDED")]


def test_the_function_filters_joins_and_lists_every_view(
    spark: SparkSession, db: str, view: str
) -> None:
    spark.sql("CREATE MATERIALIZED VIEW w AS SELECT k FROM t")
    spark.sql("INSERT INTO t VALUES (5, 5)")
    spark.sql("REFRESH MATERIALIZED VIEW v FULL").collect()
    spark.sql("REFRESH MATERIALIZED VIEW v").collect()
    spark.sql("REFRESH MATERIALIZED VIEW w").collect()
    full = spark.sql(
        "SELECT view, mode, status FROM sparkmv_refresh_history('v') WHERE mode = 'FULL'"
    ).collect()
    assert [tuple(r) for r in full] == [(view, "FULL", "SUCCEEDED")]
    qualified = spark.sql(f"SELECT count(*) FROM sparkmv_refresh_history('{view}')").first()
    assert qualified is not None and qualified[0] == 2
    everything = spark.sql(
        f"SELECT view, count(*) AS n FROM sparkmv_refresh_history() WHERE view LIKE '{db}.%'"
        " GROUP BY view ORDER BY view"
    ).collect()
    assert [tuple(r) for r in everything] == [(view, 2), (f"{db}.w", 1)]
    joined = spark.sql(
        "SELECT h.view, h.base_versions[m.base] AS version FROM sparkmv_refresh_history() h"
        f" JOIN (SELECT '{db}.t' AS base) m ON h.base_versions[m.base] IS NOT NULL"
        f" WHERE h.view = '{db}.w'"
    ).collect()
    assert [r.view for r in joined] == [f"{db}.w"]
    newest = spark.sql("SHOW MATERIALIZED VIEW REFRESHES FOR v LIMIT 1").collect()
    assert [(r.mode, r.status) for r in newest] == [("INCREMENTAL", "SKIPPED")]
    assert spark.sql("SHOW MATERIALIZED VIEW REFRESHES FOR v LIMIT 0").collect() == []


def test_retention_keeps_the_newest(spark: SparkSession, view: str) -> None:
    with session_confs(spark, {HISTORY_RETENTION.key: "2"}):
        for i in range(4):
            spark.sql(f"INSERT INTO t VALUES ({i}, {i})")
            spark.sql(
                "REFRESH MATERIALIZED VIEW v FULL" if i == 3 else "REFRESH MATERIALIZED VIEW v"
            )
    records = history(spark, "v")
    assert len(records) == 2 and records[-1].mode == "FULL"
    with session_confs(spark, {HISTORY_RETENTION.key: "0"}):  # 0: not recorded
        spark.sql("REFRESH MATERIALIZED VIEW v FULL").collect()
    assert len(history(spark, "v")) == 2


def test_drop_removes_the_history_and_replace_keeps_it(spark: SparkSession, view: str) -> None:
    spark.sql("REFRESH MATERIALIZED VIEW v FULL").collect()
    spark.sql("CREATE OR REPLACE MATERIALIZED VIEW v AS SELECT k FROM t")
    assert len(history(spark, "v")) == 1
    spark.sql("DROP MATERIALIZED VIEW v")
    spark.sql(f"CREATE MATERIALIZED VIEW v AS {QUERY}")
    assert history(spark, "v") == []
    # A DROP that died after its commit left a history behind: CREATE removes it.
    db = view.split(".")[0]
    left = RefreshRecord(f"{db}.u", 1, 2, Trigger.STATEMENT.value, Status.SUCCEEDED.value)
    store.append(spark, TableName(name="u", database=db), left, retention=10)
    spark.sql("CREATE MATERIALIZED VIEW u AS SELECT k FROM t")
    assert history(spark, "u") == []


@pytest.mark.parametrize(
    ("statement", "condition"),
    [
        ("SHOW MATERIALIZED VIEW REFRESHES FOR no_such_view", "MATERIALIZED_VIEW_NOT_FOUND"),
        ("SHOW MATERIALIZED VIEW REFRESHES FOR t", "NOT_A_MATERIALIZED_VIEW"),
        ("SHOW MATERIALIZED VIEW REFRESHES LIMIT -1", "MATERIALIZED_VIEW_INVALID_LIMIT"),
        ("SHOW MATERIALIZED VIEW REFRESHES LIMIT 'x'", "MATERIALIZED_VIEW_INVALID_LIMIT"),
        ("SELECT * FROM sparkmv_refresh_history('no_such_view')", "MATERIALIZED_VIEW_NOT_FOUND"),
        ("SELECT * FROM sparkmv_refresh_history('v', 'w')", "MATERIALIZED_VIEW_HISTORY_ARGUMENTS"),
        ("SELECT * FROM sparkmv_refresh_history(1)", "MATERIALIZED_VIEW_HISTORY_ARGUMENTS"),
    ],
)
def test_errors(spark: SparkSession, view: str, statement: str, condition: str) -> None:
    with pytest.raises(PySparkException) as raised:
        spark.sql(statement).collect()
    assert raised.value.getCondition() == condition
    assert str(raised.value).startswith(f"[{condition}] ")


CRASH_SCRIPT = """
import sys, sparkmv
from sparkmv.faults import disarmed
spark = sparkmv.session(sys.argv[1])
for action in sys.argv[2].split("+"):  # only a refresh runs with the crash point armed
    if action == "refresh":
        spark.sql("REFRESH MATERIALIZED VIEW v").collect()
        continue
    with disarmed():
        if action == "setup":
            spark.sql("CREATE TABLE t (a INT) USING parquet")
            spark.sql("INSERT INTO t VALUES (1), (2)")
            spark.sql("CREATE MATERIALIZED VIEW v AS SELECT a, count(*) AS n FROM t GROUP BY a")
            spark.sql("INSERT INTO t VALUES (3)")
        else:
            rows = spark.sql("SHOW MATERIALIZED VIEW REFRESHES FOR v").collect()
            print("HISTORY", [r.status for r in rows], flush=True)
            print("ROWS", sorted(r.a for r in spark.table("v").collect()), flush=True)
spark.stop()
"""


# ``make test`` kills the refresh at the point only the history has (the one before its
# commit is the atomicity tests' own); ``make test-full`` at both.
CRASH_POINTS = (
    ["refresh.before_commit", "history.before_record"] if FULL_RUN else ["history.before_record"]
)


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_a_crash_mid_refresh_records_no_success(tmp_path: Path, point: str) -> None:
    """Killed before its commit, or after it but before its record: either way the history
    holds no record of the refresh, and the next one is recorded."""
    warehouse = str(tmp_path / "warehouse")
    crashed = run_crash_step(["-c", CRASH_SCRIPT, warehouse, "setup+refresh"], point, 300)
    assert crashed.returncode == CRASH_EXIT_CODE, crashed.stderr
    checked = run_crash_step(["-c", CRASH_SCRIPT, warehouse, "check+refresh+check"], None, 300)
    assert checked.returncode == 0, checked.stderr
    rows = "[1, 2]" if point == "refresh.before_commit" else "[1, 2, 3]"
    status = "SUCCEEDED" if point == "refresh.before_commit" else "SKIPPED"
    assert f"HISTORY []\nROWS {rows}\nHISTORY ['{status}']\nROWS [1, 2, 3]" in checked.stdout, (
        checked.stdout
    )


def test_explain_says_what_show_refreshes_would_do(spark: SparkSession, view: str) -> None:
    (plan,) = spark.sql("EXPLAIN SHOW MATERIALIZED VIEW REFRESHES FOR v").collect()
    assert "Execute SHOW MATERIALIZED VIEW REFRESHES" in plan[0]
