"""INTERSECT and EXCEPT (set semantics) maintained as per-row counters of their two inputs
(``analyze/relational.RelationalBuilder._set_comparison``): a row is in ``A INTERSECT B``
while both counters are positive, in ``A EXCEPT B`` while only ``A``'s is."""

from __future__ import annotations

import pytest
from conftest import assert_view_matches_query
from pyspark.sql import SparkSession

STEPS = [
    "INSERT INTO a VALUES (1, 'x'), (1, 'x'), (2, NULL), (NULL, NULL), (3, 'z')",
    "INSERT INTO b VALUES (1, 'x'), (NULL, NULL), (4, 'w')",  # NULLs compare equal
    "DELETE FROM a WHERE k = 1",  # both copies leave A
    "INSERT INTO a VALUES (1, 'x'), (4, 'w')",  # and come back; 4 enters both
    "UPDATE b SET v = 'y' WHERE k = 4",  # a row moves within B
    "DELETE FROM b",  # B empties: EXCEPT is A's distinct rows
    "INSERT INTO b SELECT k, v FROM a",  # B catches up: EXCEPT empties
]


@pytest.mark.parametrize(
    "query",
    [
        "SELECT k, v FROM a INTERSECT SELECT k, v FROM b",
        "SELECT k, v FROM a EXCEPT SELECT k, v FROM b",
        # nested: below a join and a UNION, so maintained from its changed groups
        "SELECT x.k, a.v FROM (SELECT k FROM a EXCEPT SELECT k FROM b) AS x JOIN a ON x.k = a.k",
        "SELECT k FROM a INTERSECT SELECT k FROM b UNION ALL SELECT k FROM b"
        " EXCEPT SELECT k FROM a WHERE k = 3",
    ],
)
def test_set_comparisons_follow_their_counters(spark: SparkSession, db: str, query: str) -> None:
    spark.sql("CREATE TABLE a (k INT, v STRING) USING parquet")
    spark.sql("CREATE TABLE b (k INT, v STRING) USING parquet")
    # INCREMENTAL: over tables this small AUTO refreshes a set comparison below a join
    # fully (its counters are a step of their own, ``plan/cost.steps_apart``)
    spark.sql(f"CREATE MATERIALIZED VIEW v REFRESH INCREMENTAL AS {query}")
    for step in STEPS:
        spark.sql(step)
        row = spark.sql("REFRESH MATERIALIZED VIEW v").collect()[0]
        assert row["mode"] == "INCREMENTAL", (step, row["reason"])
        assert_view_matches_query(spark, "v")
