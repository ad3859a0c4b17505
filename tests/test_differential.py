"""Randomized differential tests: random views × random write streams, oracle after each refresh.

Every refresh must leave the view equal to its query run afresh (DESIGN §7), whatever mode
the planner picks. Each stream follows the insert → no change → retraction pattern.
"""

from __future__ import annotations

import itertools

from conftest import assert_view_matches_query, spark_examples
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

VIEWS = [
    "SELECT a, b FROM {r} WHERE a IS NULL OR a > 1",
    "SELECT DISTINCT b FROM {r}",
    "SELECT {r}.a, {s}.c FROM {r} JOIN {s} ON {r}.b = {s}.b",
    "SELECT x.a, y.a AS a2 FROM {r} x JOIN {r} y ON x.b = y.b AND x.a < y.a",
    "SELECT b, COUNT(*) AS n, SUM(a) AS total, MIN(a) AS low FROM {r} GROUP BY b",
    "SELECT b FROM {r} UNION ALL SELECT b FROM {s}",
    "SELECT b FROM {r} UNION SELECT b FROM {s} WHERE c <> 'x'",
    "SELECT COUNT(*) AS n, AVG(a) AS mean FROM {r}",
]

small = st.one_of(st.none(), st.integers(0, 3))
r_rows = st.lists(st.tuples(small, small), max_size=6)
s_rows = st.lists(st.tuples(small, st.sampled_from([None, "x", "y"])), max_size=6)
_names = itertools.count()


def write(spark: SparkSession, table: str, rows: list[tuple[object, ...]], schema: str) -> None:
    if rows:
        spark.createDataFrame(rows, schema).write.insertInto(table)


def retract(spark: SparkSession, table: str, rows: list[tuple[object, ...]], schema: str) -> None:
    """Remove one copy of each of ``rows`` (the table is small: rewrite it whole)."""
    remaining = [tuple(row) for row in spark.table(table).collect()]
    for row in rows:
        remaining.remove(tuple(row))
    spark.createDataFrame(remaining, schema).write.insertInto(table, overwrite=True)


@settings(max_examples=spark_examples(4))
@given(
    view=st.sampled_from(VIEWS),
    initial=st.tuples(r_rows, s_rows),
    batches=st.lists(st.tuples(r_rows, s_rows), min_size=1, max_size=2),
)
def test_random_views_under_random_writes(
    spark: SparkSession,
    db: str,
    view: str,
    initial: tuple[list[tuple[object, ...]], list[tuple[object, ...]]],
    batches: list[tuple[list[tuple[object, ...]], list[tuple[object, ...]]]],
) -> None:
    n = next(_names)
    r, s, v = f"r{n}", f"s{n}", f"v{n}"
    r_schema, s_schema = "a INT, b INT", "b INT, c STRING"
    spark.sql(f"CREATE TABLE {r} ({r_schema}) USING parquet")
    spark.sql(f"CREATE TABLE {s} ({s_schema}) USING parquet")
    write(spark, r, initial[0], r_schema)
    write(spark, s, initial[1], s_schema)
    spark.sql(f"CREATE MATERIALIZED VIEW {v} AS " + view.format(r=r, s=s))
    assert_view_matches_query(spark, v)
    for r_new, s_new in batches:
        write(spark, r, r_new, r_schema)
        write(spark, s, s_new, s_schema)
        spark.sql(f"REFRESH MATERIALIZED VIEW {v}")
        assert_view_matches_query(spark, v)
        spark.sql(f"REFRESH MATERIALIZED VIEW {v}")  # no change
        assert_view_matches_query(spark, v)
        retract(spark, r, r_new, r_schema)
        retract(spark, s, s_new, s_schema)
        spark.sql(f"REFRESH MATERIALIZED VIEW {v}")
        assert_view_matches_query(spark, v)
