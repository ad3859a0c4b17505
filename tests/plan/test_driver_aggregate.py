"""Aggregate views refreshed by the driver alone (``plan/driver_aggregate.py``): exact, and
without a Spark job.

Random views of the shape the driver maintains (plain keys, ``COUNT(*)``, ``COUNT(x)``,
``SUM(x)``, ``AVG(x)``, global aggregates, a WHERE of comparisons with literals, NULL
tests and IN lists under AND/OR/NOT) under the random write streams of the other
differential suites (INSERT, INSERT … SELECT, DELETE, UPDATE, MERGE; NULLs and duplicates).
After every refresh the view equals its query run afresh, the refresh was INCREMENTAL, and —
stored in one bucket — it ran no Spark job. Stored in several buckets, a change that makes a
new group needs Spark's hash for its bucket: Spark refreshes it, exactly as well.
"""

from __future__ import annotations

import decimal

import pytest
from conftest import (
    assert_view_matches_query,
    last_job_id,
    session_confs,
    spark_examples,
)
from differential import ALWAYS_INCREMENTAL, NO_SHRINK, example_database, note
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import types as T
from sparkmv.config import STORAGE_BUCKETS_CONF
from sparkmv.plan.driver_aggregate import DriverMergeDeclinedError, _check_range
from view_generator import INTS, STRINGS, TABLES, Scenario, Step, Table, View, batches, rows_of

Draw = st.DrawFn


@st.composite
def conditions(draw: Draw, table: Table, depth: int = 0) -> str:
    """A WHERE the driver evaluates (``driver_predicate``): comparisons of a column with a
    literal of its kind, IS [NOT] NULL, [NOT] IN with NULLs, AND, OR, NOT."""
    kind = draw(
        st.sampled_from(["compare"] * 3 + ["null", "in"] + ["and", "or", "not"] * (depth < 2))
    )
    if kind in ("and", "or"):
        left, right = draw(conditions(table, depth + 1)), draw(conditions(table, depth + 1))
        return f"({left} {kind.upper()} {right})"
    if kind == "not":
        return f"NOT ({draw(conditions(table, depth + 1))})"
    column = draw(st.sampled_from(table.columns))
    if kind == "null":
        return f"{column.name} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    literal = (
        st.sampled_from([*(str(i) for i in INTS), "-1", "1.5"])
        if column.kind == "int"
        else st.sampled_from([f"'{s}'" for s in STRINGS])
    )
    if kind == "in":
        items = draw(st.lists(st.one_of(literal, st.just("NULL")), min_size=1, max_size=3))
        return f"{column.name} {draw(st.sampled_from(['', 'NOT ']))}IN ({', '.join(items)})"
    operator = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
    if draw(st.booleans()):
        return f"{column.name} {operator} {draw(literal)}"
    return f"{draw(literal)} {operator} {column.name}"


@st.composite
def driver_views(draw: Draw) -> View:
    """``SELECT keys…, calls… FROM table [WHERE …] GROUP BY keys…`` in a random column
    order."""
    table = draw(st.sampled_from(TABLES))
    names = [c.name for c in table.columns]
    numbers = [c.name for c in table.columns if c.kind == "int"]
    keys = draw(st.lists(st.sampled_from(names), max_size=2, unique=True))
    calls = ["count(*)", *(f"count({n})" for n in names)]
    calls += [f"{f}({n})" for n in numbers for f in ("sum", "avg")]
    chosen = draw(st.lists(st.sampled_from(calls), min_size=1, max_size=3, unique=True))
    items = [*keys, *(f"{call} AS f{i}" for i, call in enumerate(chosen))]
    items = draw(st.permutations(items))
    grouped = f" GROUP BY {', '.join(keys)}" if keys else ""
    where = f" WHERE {draw(conditions(table))}" if draw(st.booleans()) else ""
    return View(f"SELECT {', '.join(items)} FROM {table.name}{where}{grouped}")


@st.composite
def driver_scenarios(draw: Draw) -> Scenario:
    setup = [table.ddl(draw(rows_of(table, max_size=5))) for table in TABLES]
    view = draw(driver_views())
    steps = [Step(draw(batches(view.tables())), False) for _ in range(draw(st.integers(1, 4)))]
    return Scenario(setup, view, steps, {STORAGE_BUCKETS_CONF: draw(st.sampled_from("1113"))})


@settings(max_examples=spark_examples(6), phases=NO_SHRINK)
@given(scenario=driver_scenarios())
def test_plain_aggregate_views_are_refreshed_by_the_driver(
    spark: SparkSession, db: str, scenario: Scenario
) -> None:
    note(scenario.script())
    one_bucket = scenario.storage[STORAGE_BUCKETS_CONF] == "1"
    with (
        example_database(spark, db),
        session_confs(spark, {**scenario.storage, **ALWAYS_INCREMENTAL}),
    ):
        for statement in scenario.setup:
            spark.sql(statement)
        spark.sql(scenario.view.create("v"))
        for step in scenario.steps:
            for statement in step.writes:
                spark.sql(statement)
            first = last_job_id(spark)
            row = spark.sql("REFRESH MATERIALIZED VIEW v").collect()[0]
            jobs = last_job_id(spark) - first
            note(f"{row.mode} ({row.reason}): {jobs} jobs")
            assert row.mode == "INCREMENTAL", row.reason
            if one_bucket:
                assert jobs == 0
            assert_view_matches_query(spark, "v")


def test_decimal_sums_null_keys_and_a_global_aggregate(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE p (k STRING, d DECIMAL(6,2), n INT) USING parquet")
    spark.sql("INSERT INTO p VALUES ('a', 1.25, 1), (NULL, 2.50, NULL), (NULL, NULL, 3)")
    queries = {
        "grouped": "SELECT k, sum(d) AS s, count(d) AS c, avg(n) AS a FROM p GROUP BY k",
        "global": "SELECT sum(d) AS s, count(*) AS c, avg(n) AS a FROM p",
    }
    for name, query in queries.items():
        spark.sql(f"CREATE MATERIALIZED VIEW {name} AS {query}")
    writes = [
        "INSERT INTO p VALUES (NULL, 9999.99, 7), ('b', -0.01, NULL)",
        "DELETE FROM p WHERE k IS NULL",  # the NULL group goes
        "UPDATE p SET d = NULL WHERE k = 'a'",  # a sum of no values is NULL
        "DELETE FROM p",  # the global aggregate's one row stays: (NULL, 0, NULL)
        "INSERT INTO p VALUES (NULL, 0.00, 0)",
    ]
    for write in writes:
        spark.sql(write)
        for name in queries:
            first = last_job_id(spark)
            row = spark.sql(f"REFRESH MATERIALIZED VIEW {name}").collect()[0]
            assert (row.mode, last_job_id(spark) - first) == ("INCREMENTAL", 0), row.reason
            assert_view_matches_query(spark, name)


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (2**63, None),
        (-(2**63) - 1, T.LongType()),
        (decimal.Decimal("1000.00"), T.DecimalType(5, 2)),
        (decimal.Decimal("-1000.00"), T.DecimalType(5, 2)),
    ],
)
def test_a_sum_out_of_its_type_is_left_to_spark(value: object, kind: T.DataType | None) -> None:
    """Spark refuses such a sum in ANSI mode and wraps it without: the driver does neither."""
    with pytest.raises(DriverMergeDeclinedError):
        _check_range(value, kind)  # type: ignore[arg-type]
    _check_range(decimal.Decimal("999.99"), T.DecimalType(5, 2))
    _check_range(2**63 - 1, T.LongType())


def test_the_rows_a_where_drops_are_counted_as_irrelevant(spark: SparkSession, db: str) -> None:
    """As a refresh by Spark counts the rows its irrelevance filter (here the WHERE itself)
    drops from the change, in the REFRESH result and the view's counters."""
    spark.sql("CREATE TABLE e (k INT, v INT) USING parquet")
    spark.sql("INSERT INTO e VALUES (1, 5)")
    spark.sql("CREATE MATERIALIZED VIEW w AS SELECT k, sum(v) AS s FROM e WHERE v > 0 GROUP BY k")
    spark.sql("INSERT INTO e VALUES (1, 0), (2, -3), (2, NULL), (3, 7)")
    first = last_job_id(spark)
    row = spark.sql("REFRESH MATERIALIZED VIEW w").collect()[0]
    assert (row.mode, row.irrelevant_rows, last_job_id(spark) - first) == ("INCREMENTAL", 3, 0)
    assert_view_matches_query(spark, "w")
