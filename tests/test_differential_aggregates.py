"""Randomized differential tests: aggregate views × write streams (issue: aggregates).

Random aggregate views (``view_generator.AggregateViewBuilder``: COUNT, SUM, AVG, MIN, MAX,
their DISTINCT forms and decimal sums, GROUP BY keys that are expressions, global
aggregates, HAVING, aggregates over joins and derived tables, and aggregates joined further)
over three small tables with NULLs and duplicates, under random INSERT / DELETE / UPDATE /
MERGE batches. Groups vanish and come back, arguments are all NULL, extremes are deleted.
After every refresh the view equals its query run afresh (DESIGN §7) and every refresh is
incremental.
"""

from __future__ import annotations

from conftest import assert_view_matches_query, spark_examples
from differential import NO_SHRINK, example_database, run_stream
from hypothesis import given, note, settings
from pyspark.sql import SparkSession
from view_generator import Scenario, aggregate_views, scenarios


@settings(max_examples=spark_examples(3), phases=NO_SHRINK)
@given(scenario=scenarios(aggregate_views()))
def test_aggregate_views_match_their_query_after_every_refresh(
    spark: SparkSession, db: str, scenario: Scenario
) -> None:
    note(scenario.script())
    with example_database(spark, db):
        for statement in scenario.setup:
            spark.sql(statement)
        spark.sql(scenario.view.create("v"))
        assert_view_matches_query(spark, "v")

        def check(mode: str, reason: str) -> None:
            assert_view_matches_query(spark, "v")
            assert mode == "INCREMENTAL", reason

        run_stream(spark, scenario.steps, check)
