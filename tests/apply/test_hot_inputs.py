"""Hot inputs (``apply/hot_inputs.py``): an unchanged join input is read from Spark's cache by
the refreshes after the first, at its logged version only, and dropped once it changes. Each
refresh leaves the view equal to its query."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import assert_view_matches_query, session_confs, view_description
from pyspark.sql import SparkSession
from sparkmv.apply.hot_inputs import hot_inputs
from sparkmv.config import HOT_INPUT_MAX_BYTES, HOT_INPUT_MAX_TABLES

QUERY = (
    "SELECT d.name, count(*) AS n, sum(f.v) AS s FROM fact f JOIN dim d ON f.k = d.k"
    " WHERE d.k < 8 GROUP BY d.name"
)


@pytest.fixture
def tables(spark: SparkSession, db: str) -> Iterator[str]:
    hot_inputs(spark).clear()
    spark.sql("CREATE TABLE fact (id BIGINT, k INT, v INT) USING parquet")
    spark.sql("INSERT INTO fact SELECT id, id % 10, id % 7 FROM range(1000)")
    spark.sql("CREATE TABLE dim (k INT, name STRING, unread STRING) USING parquet")
    spark.sql("INSERT INTO dim SELECT id, concat('k', id), 'x' FROM range(10)")
    spark.sql(f"CREATE MATERIALIZED VIEW v REFRESH INCREMENTAL AS {QUERY}")
    yield db
    hot_inputs(spark).clear()


def refresh(spark: SparkSession) -> str:
    return str(spark.sql("REFRESH MATERIALIZED VIEW v").collect()[0].mode)


def cached_versions(spark: SparkSession, table: str) -> list[int]:
    return [key.version for key, _ in hot_inputs(spark).cached({table})]


def test_an_unchanged_input_is_cached_at_its_version_and_dropped_when_it_changes(
    spark: SparkSession, tables: str
) -> None:
    dim = f"{tables}.dim"
    spark.sql("INSERT INTO fact VALUES (5000, 3, 1)")
    assert refresh(spark) == "INCREMENTAL"
    assert_view_matches_query(spark, "v")
    (key, cached_bytes), *others = hot_inputs(spark).cached({dim})
    assert not others
    assert key.read == ("k", "name")  # ``unread`` is not kept
    assert cached_bytes > 0  # the refresh's job computed the cached batches
    assert "Cached Inputs" in view_description(spark, "v")

    spark.sql("DELETE FROM fact WHERE id = 7")
    assert refresh(spark) == "INCREMENTAL"  # read from the cache
    assert_view_matches_query(spark, "v")
    assert cached_versions(spark, dim) == [key.version]

    spark.sql("UPDATE dim SET name = 'three' WHERE k = 3")  # the dimension changes
    assert refresh(spark) == "INCREMENTAL"
    assert_view_matches_query(spark, "v")
    assert cached_versions(spark, dim) == []  # its old version is read no more

    spark.sql("INSERT INTO fact VALUES (5001, 3, 2)")
    assert refresh(spark) == "INCREMENTAL"
    assert_view_matches_query(spark, "v")
    assert cached_versions(spark, dim) == [key.version + 1]


def test_no_input_is_cached_past_the_bounds(spark: SparkSession, tables: str) -> None:
    for bound in (HOT_INPUT_MAX_BYTES, HOT_INPUT_MAX_TABLES):
        with session_confs(spark, {bound.key: "0"}):
            spark.sql("INSERT INTO fact VALUES (6000, 4, 1)")
            assert refresh(spark) == "INCREMENTAL"
            assert_view_matches_query(spark, "v")
            assert cached_versions(spark, f"{tables}.dim") == []
        hot_inputs(spark).clear()
    assert "Cached Inputs" not in view_description(spark, "v")
