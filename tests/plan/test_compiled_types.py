"""An aggregate view's types, compiled once under its ``schemas_key`` and stored with it
(``plan/aggregate_view.py: CompiledTypes``): a refresh in a new process reads them instead of
asking Spark's analyzer, and a schema change makes them stale (another key)."""

from __future__ import annotations

import json

import pytest
from conftest import assert_view_matches_query
from pyspark.sql import SparkSession
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.catalog.views import ViewCatalog
from sparkmv.identifiers import TableName
from sparkmv.plan import aggregate_view

QUERY = (
    "SELECT g, count(*) AS n, sum(x) AS s, avg(d) AS a, min(x) AS lo,"
    " count(DISTINCT x) AS dx FROM t GROUP BY g"
)


def metadata(spark: SparkSession, db: str) -> MvMetadata:
    found = ViewCatalog(spark).find(TableName("v", db))
    assert found is not None
    return found


def refresh_incrementally(spark: SparkSession, db: str) -> MvMetadata:
    row = spark.sql("REFRESH MATERIALIZED VIEW v").collect()[0]
    assert row["mode"] == "INCREMENTAL"
    assert_view_matches_query(spark, "v")
    return metadata(spark, db)


def test_compiled_types_are_stored_and_read_back_in_a_new_process(
    spark: SparkSession, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spark.sql("CREATE TABLE t (g INT, x INT, d DECIMAL(9, 2)) USING parquet")
    spark.sql("INSERT INTO t SELECT id % 5, CAST(id % 13 AS INT), id / 4 FROM range(60)")
    spark.sql(f"CREATE MATERIALIZED VIEW v AS {QUERY}")
    spark.sql("INSERT INTO t VALUES (1, 100, 1.25), (7, -3, NULL)")
    stored = refresh_incrementally(spark, db)
    assert stored.checked_schemas
    compiled = json.loads(stored.compiled_types)
    assert compiled["key"] == stored.checked_schemas
    in_process = aggregate_view._COMPILED[stored.checked_schemas]

    # A new process: nothing cached; the stored JSON gives back the same types.
    monkeypatch.setattr(aggregate_view, "_COMPILED", {})
    aggregate_view.remember_compiled_types(stored.checked_schemas, stored.compiled_types)
    assert aggregate_view._COMPILED[stored.checked_schemas] == in_process
    monkeypatch.setattr(aggregate_view, "_COMPILED", {})

    analyzed: list[str] = []
    probe = aggregate_view.agg.result_types

    def counted(*args: object) -> object:
        analyzed.append("result types")
        return probe(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(aggregate_view.agg, "result_types", counted)
    spark.sql("DELETE FROM t WHERE x = 3")
    refresh_incrementally(spark, db)
    assert analyzed == []  # read from the view's metadata, not asked of Spark


def test_types_stored_under_another_key_are_not_used(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE t (g INT, x INT, d DECIMAL(9, 2)) USING parquet")
    spark.sql("INSERT INTO t SELECT id % 5, CAST(id % 13 AS INT), id / 4 FROM range(60)")
    spark.sql(f"CREATE MATERIALIZED VIEW v AS {QUERY}")
    spark.sql("INSERT INTO t VALUES (2, 5, 0.5)")
    stored = refresh_incrementally(spark, db)
    aggregate_view.remember_compiled_types("another key", stored.compiled_types)
    assert "another key" not in aggregate_view._COMPILED
