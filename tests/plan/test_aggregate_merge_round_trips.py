"""An aggregate view's merge is built as Spark SQL text, not column by column: building the
merged rows, what is kept of them and the metrics costs a few py4j round trips (it cost
about 1,700 when every column, alias and select went through the DataFrame API)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from conftest import assert_view_matches_query, py4j_round_trips
from pyspark.sql import SparkSession
from sparkmv.plan import aggregate_view as merge_module
from sparkmv.plan.aggregate_view import AggregateView

MAX_MERGE_ROUND_TRIPS = 150
"""Measured 10-70 (releases of JVM objects included); built column by column, the merge took
about 2,000."""


@contextmanager
def counted_calls(spark: SparkSession, counts: dict[str, int], label: str) -> Iterator[None]:
    """Adds the py4j round trips made while the block runs to ``counts[label]``."""
    with py4j_round_trips(spark) as trips:
        yield
    counts[label] = counts.get(label, 0) + trips.count


@pytest.mark.parametrize(
    "query",
    [
        "SELECT g, count(*) AS n, sum(x) AS s, min(x) AS lo, max(x) AS hi FROM t GROUP BY g",
        "SELECT g, count(DISTINCT x) AS d, avg(x) AS a FROM t GROUP BY g HAVING count(*) > 1",
    ],
)
def test_the_merge_takes_few_round_trips(
    spark: SparkSession, db: str, monkeypatch: pytest.MonkeyPatch, query: str
) -> None:
    spark.sql("CREATE TABLE t (g INT, x INT) USING parquet")
    spark.sql("INSERT INTO t SELECT id % 7, CAST(id % 11 AS INT) FROM range(100)")
    spark.sql(f"CREATE MATERIALIZED VIEW v AS {query}")
    spark.sql("INSERT INTO t VALUES (1, 100), (2, -5), (NULL, 3), (9, 9)")
    spark.sql("DELETE FROM t WHERE x = 10 OR (g = 3 AND x = 0)")
    counts: dict[str, int] = {}
    merged, metrics = AggregateView.merged, merge_module._group_metrics

    def counted_merged(view: AggregateView, *args: Any) -> Any:
        with counted_calls(spark, counts, "merge"):
            return merged(view, *args)

    def counted_metrics(view: AggregateView) -> Any:
        with counted_calls(spark, counts, "merge"):
            return metrics(view)

    monkeypatch.setattr(AggregateView, "merged", counted_merged)
    monkeypatch.setattr(merge_module, "_group_metrics", counted_metrics)
    row = spark.sql("REFRESH MATERIALIZED VIEW v").collect()[0]
    assert row["mode"] == "INCREMENTAL"
    assert 0 < counts["merge"] <= MAX_MERGE_ROUND_TRIPS
    assert_view_matches_query(spark, "v")
