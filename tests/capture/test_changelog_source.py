"""Base tables read through their catalog's changelog (``capture/changelog_source.py``), over
the test-only DSv2 catalogs of ``versioned_catalog``: ``testcat`` answers Spark's
``CHANGES FROM VERSION``, ``plaincat`` does not."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import assert_view_matches_query, multiset, view_description
from pyspark.sql import SparkSession
from sparkmv.capture.changelog_source import describe
from sparkmv.capture.source import ChangeRangeError
from sparkmv.identifiers import TableName
from sparkmv.zset import WEIGHT
from versioned_catalog import (
    CHANGELOG_CATALOG,
    HAS_CHANGELOG,
    PLAIN_CATALOG,
    commit,
    expire_changes,
    requires_changelog,
)

SCHEMA = "a INT, b STRING"


def refresh(spark: SparkSession, view: str) -> tuple[str, str]:
    row = spark.sql(f"REFRESH MATERIALIZED VIEW {view}").collect()[0]
    return str(row.mode), str(row.reason)


def create_table(spark: SparkSession, table: str) -> None:
    spark.sql(f"CREATE TABLE {table} ({SCHEMA})")


@requires_changelog
def test_net_changes_weigh_inserts_deletes_and_update_images(spark: SparkSession, db: str) -> None:
    table = f"{CHANGELOG_CATALOG}.{db}.t"
    create_table(spark, table)
    spark.sql(f"INSERT INTO {table} VALUES (1, 'x'), (2, NULL), (2, NULL)")  # version 1
    commit(spark, table, SCHEMA, deleted=[(2, None)], updated=[((1, "x"), (1, "z"))])  # 2
    commit(spark, table, SCHEMA, inserted=[(1, "x")], updated=[((1, "z"), (3, None))])  # 3
    described = describe(spark, TableName.parse_qualified(table))
    assert described is not None and not described.refusal
    source = described.source(spark)
    assert not isinstance(source, str)
    assert source.current_version() == 3
    assert source.earliest_readable() == 0

    def net(start: int, end: int) -> Counter[tuple[object, ...]]:
        rows = source.net_changes(start, end).collect()
        return Counter({tuple(row)[:-1]: row[WEIGHT] for row in rows})

    assert net(0, 1) == {(1, "x"): 1, (2, None): 2}
    # (1, x) updated to (1, z): pre-image −1, post-image +1; one of the two (2, NULL) deleted
    assert net(1, 2) == {(1, "x"): -1, (1, "z"): 1, (2, None): -1}
    # (1, x) re-inserted, (1, z) updated away: the update's images net out over (1, 3]
    assert net(1, 3) == {(2, None): -1, (3, None): 1}
    assert net(0, 3) == {(1, "x"): 1, (2, None): 1, (3, None): 1}
    assert multiset(source.rows()) == {(1, "x"): 1, (2, None): 1, (3, None): 1}
    expire_changes(spark, table, 1)
    fresh = describe(spark, TableName.parse_qualified(table))
    assert fresh is not None
    expired = fresh.source(spark)
    assert not isinstance(expired, str)
    assert expired.earliest_readable() == 1  # versions 2 and 3 are still there
    with pytest.raises(ChangeRangeError, match="expired"):
        expired.net_changes(0, 3)


@requires_changelog
def test_view_over_a_changelog_table_is_maintained_without_capture(
    spark: SparkSession, db: str
) -> None:
    table = f"{CHANGELOG_CATALOG}.{db}.t"
    create_table(spark, table)
    spark.sql(f"INSERT INTO {table} VALUES (1, 'x'), (2, NULL), (2, NULL)")
    spark.sql(
        "CREATE MATERIALIZED VIEW v REFRESH INCREMENTAL AS "
        f"SELECT a, b FROM {table} WHERE a > 1 OR b IS NULL"
    )
    assert_view_matches_query(spark, "v")
    commit(spark, table, SCHEMA, deleted=[(2, None)], updated=[((1, "x"), (3, None))])
    spark.sql(f"INSERT INTO {table} VALUES (4, 'w'), (2, NULL)")
    assert refresh(spark, "v") == ("INCREMENTAL", "the query is incrementally maintainable")
    assert_view_matches_query(spark, "v")
    assert refresh(spark, "v")[1] == "no base table changed since the last refresh"
    described = view_description(spark, "v")
    changelog = described[f"Changelog {table}"]
    assert "changelog (CHANGES FROM VERSION)" in changelog
    assert "consumed version 3, current version 3" in changelog
    assert not spark.sql(f"SHOW TBLPROPERTIES {db}.v").where("key LIKE 'sparkmv.tracking%'").count()


@requires_changelog
def test_explain_refresh_names_the_change_source(spark: SparkSession, db: str) -> None:
    table = f"{CHANGELOG_CATALOG}.{db}.t"
    create_table(spark, table)
    spark.sql(f"INSERT INTO {table} VALUES (1, 'x')")
    spark.sql(f"CREATE MATERIALIZED VIEW v AS SELECT b, COUNT(*) AS n FROM {table} GROUP BY b")
    spark.sql(f"INSERT INTO {table} VALUES (2, 'x')")
    plan = spark.sql("EXPLAIN REFRESH MATERIALIZED VIEW v").collect()[0][0]
    assert f"Change source of {table}: its catalog's changelog (CHANGES FROM VERSION)" in plan
    assert f"Changed: {table} (changelog versions 1 to 2)" in plan
    assert "Mode: INCREMENTAL" in plan


@requires_changelog
def test_an_expired_range_refreshes_fully_with_the_sources_reason(
    spark: SparkSession, db: str
) -> None:
    table = f"{CHANGELOG_CATALOG}.{db}.t"
    create_table(spark, table)
    spark.sql(f"INSERT INTO {table} VALUES (1, 'x')")
    spark.sql(f"CREATE MATERIALIZED VIEW v AS SELECT a, b FROM {table}")
    spark.sql(f"INSERT INTO {table} VALUES (2, 'y')")
    spark.sql(f"INSERT INTO {table} VALUES (3, 'z')")
    expire_changes(spark, table, 2)
    mode, reason = refresh(spark, "v")
    assert mode == "FULL"
    source = "its catalog's changelog (CHANGES FROM VERSION)"
    assert f"base table {table}: {source} cannot give versions (1, 3]" in reason
    assert "expired" in reason
    assert_view_matches_query(spark, "v")
    spark.sql(f"INSERT INTO {table} VALUES (4, 'w')")
    assert refresh(spark, "v")[0] == "INCREMENTAL"  # (3, 4] is readable again
    assert_view_matches_query(spark, "v")


@requires_changelog
def test_a_dsv2_table_without_changelog_refreshes_fully_saying_why(
    spark: SparkSession, db: str
) -> None:
    table = f"{PLAIN_CATALOG}.{db}.t"
    create_table(spark, table)
    spark.sql(f"INSERT INTO {table} VALUES (1, 'x')")
    spark.sql(f"CREATE MATERIALIZED VIEW v AS SELECT a, b FROM {table}")
    spark.sql(f"INSERT INTO {table} VALUES (2, 'y')")
    mode, reason = refresh(spark, "v")
    assert mode == "FULL"
    assert reason == (
        f"base table {table} is not tracked: sparkmv tracks parquet tables of the session "
        f"catalog only, and catalog {PLAIN_CATALOG} offers no changelog "
        "(TableCatalog.loadChangelog: " + reason.split("loadChangelog: ", 1)[1]
    )
    assert_view_matches_query(spark, "v")
    described = view_description(spark, "v")
    assert described[f"Change Log {table}"].startswith("not tracked: sparkmv tracks parquet")


@pytest.mark.skipif(HAS_CHANGELOG, reason="this Spark has the changelog API")
def test_without_the_changelog_api_a_dsv2_table_refreshes_fully_saying_why(
    spark: SparkSession, db: str
) -> None:
    # Spark 4.1: even testcat, whose catalog would answer a changelog, is refused by the shim
    # (ChangelogCompat), so the view is refreshed fully with that reason.
    table = f"{CHANGELOG_CATALOG}.{db}.t"
    create_table(spark, table)
    spark.sql(f"INSERT INTO {table} VALUES (1, 'x')")
    spark.sql(f"CREATE MATERIALIZED VIEW v AS SELECT a, b FROM {table}")
    spark.sql(f"INSERT INTO {table} VALUES (2, 'y')")
    mode, reason = refresh(spark, "v")
    assert mode == "FULL"
    assert reason.startswith(f"base table {table} is not tracked: sparkmv tracks parquet tables")
    assert "has no changelog API (TableCatalog.loadChangelog" in reason
    assert_view_matches_query(spark, "v")


def test_a_missing_catalog_table_is_reported_missing(spark: SparkSession, db: str) -> None:
    assert describe(spark, TableName.parse_qualified(f"{CHANGELOG_CATALOG}.{db}.nothing")) is None
