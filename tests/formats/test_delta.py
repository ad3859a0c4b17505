"""Views over Delta Lake tables (``capture/delta_source.py``): their changes are read from the
table's own log, whoever wrote them. Every maintenance check compares the view with its query
run afresh (``assert_view_matches_query``) and asserts the refresh mode.

sparkmv captures no Delta write: the writes here go through the session's SQL untouched (as
any plain session's would), and one test writes from a separate process that never loads
sparkmv, by the table's path."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest
from conftest import (
    assert_view_matches_query,
    python_env,
    session_confs,
    spark_examples,
    table_location,
    view_description,
)
from delta_lake import jars, requires_delta
from differential import (
    MAINTAINABLE,
    NO_SHRINK,
    refresh,
    refresh_checked,
)
from format_streams import (
    RICH_INITIAL,
    RICH_STEPS,
    FormatTables,
    Step,
    always_incremental,  # noqa: F401 (a fixture pytestmark uses)
    auto_weighs_the_formats_sizes,
    r_rows,
    steps,
    views_are_maintained,
)
from hypothesis import example, given, settings
from pyspark.sql import SparkSession
from sparkmv.capture import delta_source
from sparkmv.config import DELTA_LOG_FILES_READ
from test_golden_sql import INPUTS, check_golden

pytestmark = [requires_delta, pytest.mark.usefixtures("always_incremental")]

CDF = "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"


def delta_tables(database: str) -> FormatTables:
    """The differential's ``r`` and ``q`` as Delta tables of the current database."""
    return FormatTables("r", "q", f"USING delta {CDF}", "OPTIMIZE r")


@settings(max_examples=spark_examples(1), phases=NO_SHRINK)
@given(initial=r_rows, stream=steps)
@example(initial=RICH_INITIAL, stream=RICH_STEPS)
def test_views_over_delta_tables_are_maintained_from_the_change_data_feed(
    spark: SparkSession, db: str, initial: list[tuple[Any, ...]], stream: list[Step]
) -> None:
    views_are_maintained(spark, db, delta_tables, initial, stream)


def test_a_write_by_a_process_without_sparkmv_is_read_from_the_log(
    spark: SparkSession, db: str
) -> None:
    spark.sql(f"CREATE TABLE r (a INT, b INT) USING delta {CDF}")
    spark.sql("INSERT INTO r VALUES (1, 1), (2, 2)")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT b, COUNT(*) AS n FROM r GROUP BY b")
    path = table_location(spark, "r").as_uri()
    writer = textwrap.dedent(f"""
        from pyspark.sql import SparkSession
        spark = (SparkSession.builder.master("local[1]")
                 .config("spark.jars", {",".join(jars())!r})
                 .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
                 .config("spark.sql.catalog.spark_catalog",
                         "org.apache.spark.sql.delta.catalog.DeltaCatalog")
                 .getOrCreate())
        assert "sparkmv" not in (spark.conf.get("spark.sql.extensions") or "")
        t = "delta.`{path}`"
        spark.sql(f"INSERT INTO {{t}} VALUES (3, 1), (4, 4)")
        spark.sql(f"UPDATE {{t}} SET b = 5 WHERE a = 2")
        spark.sql(f"DELETE FROM {{t}} WHERE a = 1")
        spark.stop()
    """)
    subprocess.run([sys.executable, "-c", writer], env=python_env(), check=True, timeout=300)
    assert refresh(spark, "v") == ("INCREMENTAL", MAINTAINABLE)
    assert_view_matches_query(spark, "v")
    assert sorted(spark.table("v").collect()) == [(1, 1), (4, 1), (5, 1)]


def test_a_table_without_change_records_refreshes_fully_naming_the_property(
    spark: SparkSession, db: str
) -> None:
    spark.sql("CREATE TABLE r (a INT) USING delta")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT COUNT(*) AS n FROM r")
    spark.sql("INSERT INTO r VALUES (1)")
    mode, reason = refresh_checked(spark, "v")
    assert mode == "FULL"
    assert f"set its property {delta_source.CHANGE_DATA_FEED_PROPERTY} = true" in reason
    plan = spark.sql("EXPLAIN REFRESH MATERIALIZED VIEW v").collect()[0][0]
    assert delta_source.CHANGE_DATA_FEED_PROPERTY in plan
    feed = delta_source.CHANGE_DATA_FEED_PROPERTY
    spark.sql(f"ALTER TABLE r SET TBLPROPERTIES ('{feed}' = 'true')")
    assert refresh_checked(spark, "v")[0] == "FULL"  # the view has not read the feed yet
    spark.sql("INSERT INTO r VALUES (2)")
    assert refresh_checked(spark, "v") == ("INCREMENTAL", MAINTAINABLE)


def test_a_recreated_table_is_not_read_against_the_old_ones_versions(
    spark: SparkSession, db: str
) -> None:
    spark.sql(f"CREATE TABLE r (a INT) USING delta {CDF}")
    spark.sql("INSERT INTO r VALUES (1), (2), (3)")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT SUM(a) AS total FROM r")
    spark.sql("DROP TABLE r")
    spark.sql(f"CREATE TABLE r (a INT) USING delta {CDF}")
    spark.sql("INSERT INTO r VALUES (10)")
    spark.sql("INSERT INTO r VALUES (20)")  # version 2 again, of another table
    mode, reason = refresh_checked(spark, "v")
    assert mode == "FULL"
    assert "has not read the current changelog of base table" in reason
    spark.sql("INSERT INTO r VALUES (5)")
    assert refresh_checked(spark, "v") == ("INCREMENTAL", MAINTAINABLE)


def test_a_range_crossing_a_vacuum_or_a_schema_change_refreshes_fully(
    spark: SparkSession, db: str
) -> None:
    spark.sql(f"CREATE TABLE r (a INT) USING delta {CDF}")
    spark.sql("INSERT INTO r VALUES (1), (2)")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT a FROM r WHERE a > 1")
    spark.sql("INSERT INTO r VALUES (3)")
    spark.sql("VACUUM r")
    mode, reason = refresh_checked(spark, "v")
    assert mode == "FULL"
    assert "VACUUM" in reason and "change files" in reason
    spark.sql("ALTER TABLE r ADD COLUMNS (c STRING)")
    spark.sql("INSERT INTO r VALUES (4, 'x')")
    mode, reason = refresh_checked(spark, "v")
    assert mode == "FULL"
    assert "schema changed" in reason


def test_an_optimize_alone_changes_nothing(spark: SparkSession, db: str) -> None:
    spark.sql(f"CREATE TABLE r (a INT) USING delta {CDF}")
    spark.sql("INSERT INTO r VALUES (1)")
    spark.sql("INSERT INTO r VALUES (2)")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT a, COUNT(*) AS n FROM r GROUP BY a")
    spark.sql("OPTIMIZE r")
    assert refresh_checked(spark, "v")[0] == "INCREMENTAL"
    changelog = view_description(spark, "v")[f"Changelog {db}.r"]
    assert "read from its Delta Change Data Feed (table_changes)" in changelog


def test_change_queries_follow_the_tables_properties() -> None:
    cdf = {delta_source.CHANGE_DATA_FEED_PROPERTY: "true"}
    tracked = {delta_source.ROW_TRACKING_PROPERTY: "true"}
    assert delta_source.change_query({**cdf, **tracked}, True) is delta_source.SPARK_CHANGELOG
    assert delta_source.change_query({**cdf, **tracked}, False) is delta_source.CHANGE_DATA_FEED
    assert delta_source.change_query(cdf, True) is delta_source.CHANGE_DATA_FEED
    assert isinstance(delta_source.change_query(tracked, False), str)
    assert delta_source.history_problem([(3, "WRITE"), (4, "OPTIMIZE")]) == ""
    assert "version 4" in delta_source.history_problem([(5, "VACUUM END"), (4, "ADD COLUMNS")])


def test_the_log_is_read_as_metadata_and_sizes_the_table_for_auto(
    spark: SparkSession, db: str
) -> None:
    """The range's commits are read as the log's files (``DeltaLogFiles``, no Spark job)."""
    auto_weighs_the_formats_sizes(spark, "r", f"USING delta {CDF}")


def test_more_commits_than_the_driver_reads_are_checked_by_the_history(
    spark: SparkSession, db: str
) -> None:
    """Past ``DELTA_LOG_FILES_READ`` commits the range is vetted by ``DESCRIBE HISTORY``: a
    VACUUM is seen as well, and the refresh after it is incremental again (unsized)."""
    with session_confs(spark, {DELTA_LOG_FILES_READ.key: "0"}):
        spark.sql(f"CREATE TABLE r (a INT) USING delta {CDF}")
        spark.sql("INSERT INTO r VALUES (1), (2)")
        spark.sql("CREATE MATERIALIZED VIEW v AS SELECT a FROM r WHERE a > 1")
        spark.sql("INSERT INTO r VALUES (3)")
        spark.sql("VACUUM r")
        mode, reason = refresh_checked(spark, "v")
        assert mode == "FULL" and "VACUUM" in reason, reason
        spark.sql("INSERT INTO r VALUES (4)")
        assert refresh_checked(spark, "v") == ("INCREMENTAL", MAINTAINABLE)


def test_golden_full_refreshes_and_their_reasons(spark: SparkSession) -> None:
    """``sql-tests/inputs/formats/delta_full_reasons.sql``: the FULL cases above in one golden
    file, as a user sees it (``make golden-formats`` regenerates it). An OPTIMIZE is left to
    its test: its output holds times and sizes."""
    check_golden(spark, INPUTS / "formats" / "delta_full_reasons.sql")
