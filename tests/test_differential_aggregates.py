"""Randomized differential tests: aggregate views × write streams (issue: aggregates).

Random aggregate views (``view_generator.AggregateViewBuilder``: COUNT, SUM, AVG, MIN, MAX,
their DISTINCT forms and decimal sums, GROUP BY keys that are expressions, global
aggregates, HAVING, aggregates over joins and derived tables, and aggregates joined further)
over three small tables with NULLs and duplicates, under random INSERT / DELETE / UPDATE /
MERGE batches. Groups vanish and come back, arguments are all NULL, extremes are deleted.
After every refresh the view equals its query run afresh (docs/development.md) and every refresh is
incremental.
"""

from __future__ import annotations

from conftest import spark_examples
from differential import NO_SHRINK, check_scenario
from hypothesis import given, settings
from pyspark.sql import SparkSession
from view_generator import Scenario, aggregate_views, scenarios


@settings(max_examples=spark_examples(3), phases=NO_SHRINK)
@given(scenario=scenarios(aggregate_views()))
def test_aggregate_views_match_their_query_after_every_refresh(
    spark: SparkSession, db: str, scenario: Scenario
) -> None:
    check_scenario(spark, db, scenario, incremental=True)
