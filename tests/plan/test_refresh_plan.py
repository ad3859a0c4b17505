"""The refresh plan, case by case: what ``plan_refresh`` decides, that REFRESH runs exactly
that, that EXPLAIN and DESCRIBE show the same plan, and that the view equals its query after
every refresh (docs/development.md). No timings are asserted: the cost model's choices are pinned by
sizes, and its history by planting one.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import assert_view_matches_query, session_confs
from pyspark.errors import PySparkException
from pyspark.sql import Row, SparkSession
from sparkmv.catalog import properties as keys
from sparkmv.catalog.metadata import ModeHistory, MvMetadata
from sparkmv.catalog.modes import RefreshMode
from sparkmv.commands.context import CommandContext
from sparkmv.config import REFRESH_COST_BASED_CONF
from sparkmv.identifiers import TableName
from sparkmv.plan.refresh_plan import (
    MAINTAINABLE,
    NO_CHANGE,
    ChangedTable,
    RefreshPlan,
    plan_refresh,
)

BIG_ROWS = 40_000
"""Rows of ``big``: 64 hex characters each, about 3 MB of parquet — a change as large as the
table costs an incremental refresh more than ``TIE_MS`` over a full one (``plan/cost.py``)."""


def metadata(spark: SparkSession, view: str) -> MvMetadata:
    context = CommandContext.of(spark)
    return context.catalog.get(context.catalog.resolve(TableName(view)))


def planned(spark: SparkSession, view: str, requested: RefreshMode | None = None) -> RefreshPlan:
    """The plan a REFRESH of ``view`` would run now (tracking read without side effects)."""
    context = CommandContext.of(spark)
    found = metadata(spark, view)
    return plan_refresh(spark, found, requested, context.peek_tracking(found.base_tables))


def refreshed(spark: SparkSession, view: str, mode: str = "") -> Row:
    """REFRESH (``mode``: FULL, INCREMENTAL or none), then the oracle."""
    row = spark.sql(f"REFRESH MATERIALIZED VIEW {view} {mode}").collect()[0]
    assert_view_matches_query(spark, view)
    return row


def assert_runs(spark: SparkSession, view: str, plan: RefreshPlan, mode: str = "") -> None:
    """REFRESH reports the plan's mode and reason."""
    row = refreshed(spark, view, mode)
    assert (row.mode, row.reason) == (plan.mode.value, plan.reason)


def describe(spark: SparkSession, view: str) -> dict[str, str]:
    rows = spark.sql(f"DESCRIBE MATERIALIZED VIEW EXTENDED {view}").collect()
    return {row.col_name: row.data_type for row in rows}


def explain(spark: SparkSession, view: str) -> list[str]:
    text = spark.sql(f"EXPLAIN REFRESH MATERIALIZED VIEW {view}").collect()[0].plan
    return str(text).splitlines()


@pytest.fixture
def sales(spark: SparkSession, db: str) -> str:
    spark.sql("CREATE TABLE sales (id INT, region STRING, amount INT) USING parquet")
    spark.sql("INSERT INTO sales VALUES (1, 'eu', 10), (2, 'us', 5), (3, 'eu', 1)")
    return "sales"


def make_big(spark: SparkSession) -> None:
    spark.sql("CREATE TABLE big (id BIGINT, k INT, h STRING) USING parquet")
    insert_big(spark, 0, BIG_ROWS)
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT k, count(*) AS n FROM big GROUP BY k")


def insert_big(spark: SparkSession, start: int, end: int) -> None:
    spark.sql(
        "INSERT INTO big SELECT id, CAST(id % 10 AS INT), sha2(CAST(id AS STRING), 256)"
        f" FROM range({start}, {end})"
    )


def test_requested_full_recomputes(spark: SparkSession, sales: str) -> None:
    spark.sql(
        "CREATE MATERIALIZED VIEW v AS SELECT region, sum(amount) AS s FROM sales GROUP BY region"
    )
    spark.sql("INSERT INTO sales VALUES (4, 'asia', 7)")
    plan = planned(spark, "v", RefreshMode.FULL)
    assert (plan.mode, plan.reason) == (RefreshMode.FULL, "full refresh requested")
    assert plan.changed == (ChangedTable(f"{spark.catalog.currentDatabase()}.sales", 1, 2),)
    assert plan.cost is not None and plan.cost.incremental is None
    assert_runs(spark, "v", plan, "FULL")
    # the full refresh kept the bucketed layout: the next change is incremental again
    spark.sql("INSERT INTO sales VALUES (5, 'us', 2)")
    assert refreshed(spark, "v").mode == "INCREMENTAL"


def test_policy_full_recomputes_even_with_nothing_pending(spark: SparkSession, sales: str) -> None:
    spark.sql("CREATE MATERIALIZED VIEW v REFRESH FULL AS SELECT id, amount FROM sales")
    plan = planned(spark, "v")
    assert (plan.mode, plan.reason, plan.nothing_pending) == (
        RefreshMode.FULL,
        "refresh policy is FULL",
        False,
    )
    assert_runs(spark, "v", plan)


def test_a_query_that_cannot_be_maintained_is_recomputed_or_refused(
    spark: SparkSession, sales: str
) -> None:
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT id FROM sales ORDER BY id LIMIT 2")
    spark.sql("INSERT INTO sales VALUES (0, 'eu', 3)")
    plan = planned(spark, "v")
    assert plan.mode is RefreshMode.FULL and "LIMIT" in plan.reason
    with pytest.raises(PySparkException, match="MATERIALIZED_VIEW_NOT_INCREMENTAL"):
        spark.sql("REFRESH MATERIALIZED VIEW v INCREMENTAL").collect()
    assert_runs(spark, "v", plan)


def test_a_log_the_view_has_not_read_forces_full(spark: SparkSession, sales: str) -> None:
    """The base table was dropped and created again: its new log does not hold the view's
    changes."""
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT id, amount FROM sales WHERE amount > 2")
    spark.sql("DROP TABLE sales")
    spark.sql("CREATE TABLE sales (id INT, region STRING, amount INT) USING parquet")
    spark.sql("INSERT INTO sales VALUES (7, 'eu', 70)")
    peeked = planned(spark, "v")  # as EXPLAIN sees it: the new table is not tracked yet
    assert peeked.mode is RefreshMode.FULL and peeked.cost is None
    assert peeked.reason.endswith(".sales is not tracked: no materialized view tracks it")
    row = refreshed(spark, "v")  # tracks it, with a new log
    assert row.mode == "FULL"
    assert "has not read the current change log" in row.reason, row.reason


def test_nothing_pending_reads_nothing(spark: SparkSession, sales: str) -> None:
    spark.sql(
        "CREATE MATERIALIZED VIEW v AS SELECT region, count(*) AS n FROM sales GROUP BY region"
    )
    plan = planned(spark, "v")
    assert plan == RefreshPlan(RefreshMode.INCREMENTAL, NO_CHANGE, nothing_pending=True)
    assert plan.query is None  # decided without analyzing the query
    assert "Record the refresh in the catalog; no data is read." in explain(spark, "v")
    info = describe(spark, "v")
    assert (info["Next Refresh Mode"], info["Next Refresh Reason"]) == ("INCREMENTAL", NO_CHANGE)
    assert_runs(spark, "v", plan)
    # asked for INCREMENTAL, the query is analyzed, and there is still nothing to do
    asked = planned(spark, "v", RefreshMode.INCREMENTAL)
    assert (asked.nothing_pending, asked.query is not None) == (True, True)
    assert_runs(spark, "v", asked, "INCREMENTAL")


def test_a_tiny_change_is_incremental_by_cost(spark: SparkSession, sales: str) -> None:
    spark.sql(
        "CREATE MATERIALIZED VIEW v AS SELECT region, sum(amount) AS s FROM sales GROUP BY region"
    )
    spark.sql("INSERT INTO sales VALUES (4, 'asia', 7)")
    plan = planned(spark, "v")
    assert plan.mode is RefreshMode.INCREMENTAL
    assert plan.cost is not None and plan.cost.incremental is not None
    assert plan.reason == plan.cost.choice()
    assert plan.reason.startswith("incremental: estimated ")
    assert f"Cost: {plan.cost.summary()}" in explain(spark, "v")
    info = describe(spark, "v")
    assert (info["Next Refresh Mode"], info["Next Refresh Reason"]) == ("INCREMENTAL", plan.reason)
    assert info["Next Refresh Cost"] == plan.cost.summary()
    assert_runs(spark, "v", plan)
    history = metadata(spark, "v").stats.cost_history  # the refresh was measured
    assert history[RefreshMode.INCREMENTAL].refreshes == 1
    assert history[RefreshMode.INCREMENTAL].mean_model_ms == round(plan.model_ms, 1)


def test_a_change_as_large_as_the_table_is_full_by_cost(spark: SparkSession, db: str) -> None:
    make_big(spark)
    insert_big(spark, BIG_ROWS, 2 * BIG_ROWS)
    plan = planned(spark, "v")
    assert plan.mode is RefreshMode.FULL, plan.reason
    assert plan.reason.startswith("full: estimated ") and " vs incremental " in plan.reason
    assert plan.cost is not None and plan.cost.change_bytes * 3 > plan.cost.base_bytes
    assert_runs(spark, "v", plan)
    assert RefreshMode.FULL in metadata(spark, "v").stats.cost_history

    # The full refresh kept the bucketed layout: a tiny change is incremental again.
    insert_big(spark, 2 * BIG_ROWS, 2 * BIG_ROWS + 3)
    tiny = planned(spark, "v")
    assert tiny.mode is RefreshMode.INCREMENTAL, tiny.reason
    assert_runs(spark, "v", tiny)


def test_requests_policies_and_the_conf_override_the_cost(spark: SparkSession, db: str) -> None:
    make_big(spark)
    insert_big(spark, BIG_ROWS, 2 * BIG_ROWS)
    assert planned(spark, "v").mode is RefreshMode.FULL
    with session_confs(spark, {REFRESH_COST_BASED_CONF: "false"}):
        unweighed = planned(spark, "v")
    assert (unweighed.mode, unweighed.reason) == (RefreshMode.INCREMENTAL, MAINTAINABLE)
    assert unweighed.cost is not None and unweighed.cost.cheaper() is RefreshMode.FULL
    asked = planned(spark, "v", RefreshMode.INCREMENTAL)
    assert (asked.mode, asked.reason) == (RefreshMode.INCREMENTAL, MAINTAINABLE)
    assert_runs(spark, "v", asked, "INCREMENTAL")


def test_the_measured_history_shifts_the_choice(spark: SparkSession, db: str) -> None:
    """A 5 % change is incremental by default. Planted: incremental refreshes of this view
    measured far slower than the model estimated them; the same change is then full."""
    make_big(spark)
    insert_big(spark, BIG_ROWS, BIG_ROWS + BIG_ROWS // 20)
    default = planned(spark, "v")
    assert default.mode is RefreshMode.INCREMENTAL, default.reason
    view = metadata(spark, "v")
    slow = {RefreshMode.INCREMENTAL: ModeHistory(4, mean_ms=3e8, mean_model_ms=300.0)}
    stored = view.with_changes(stats=replace(view.stats, cost_history=slow)).to_properties()
    CommandContext.of(spark).catalog.alter_properties(
        view.name, {keys.COST_HISTORY: stored[keys.COST_HISTORY]}
    )
    shifted = planned(spark, "v")
    assert shifted.mode is RefreshMode.FULL, shifted.reason
    assert shifted.cost is not None and default.cost is not None
    assert shifted.cost.model_ms(RefreshMode.INCREMENTAL) == default.cost.model_ms(
        RefreshMode.INCREMENTAL
    )
    assert_runs(spark, "v", shifted)


def test_describe_says_when_the_next_refresh_would_fail(spark: SparkSession, sales: str) -> None:
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT id FROM sales")
    spark.sql("DROP TABLE sales")
    info = describe(spark, "v")
    assert info["Next Refresh Mode"] == "none: it would fail"
    assert "TABLE_OR_VIEW_NOT_FOUND" in info["Next Refresh Reason"]
