"""Aggregate views refreshed by the driver alone (``plan/driver_aggregate.py``): exact, and
without a Spark job.

Random views of the shape the driver maintains (plain keys, ``COUNT(*)``, ``COUNT(x)``,
``SUM(x)``, ``AVG(x)``, global aggregates, a WHERE of comparisons with literals, NULL
tests and IN lists under AND/OR/NOT) under the random write streams of the other
differential suites (INSERT, INSERT … SELECT, DELETE, UPDATE, MERGE; NULLs and duplicates).
A second suite draws TPC-H-like views over a table of decimals and dates: arithmetic
arguments (``sum(p * (1 - d) * (1 + t))``), decimal averages, and WHEREs of date constants
shifted by intervals, BETWEEN and arithmetic comparisons, under random inserts, deletes and
updates. Both draw HAVINGs and visible columns computed from the calls, which Spark computes
from the changed groups' state without a job.
After every refresh the view equals its query run afresh, the refresh was INCREMENTAL, and it
ran no Spark job: stored in several buckets, a new group is placed by the driver's own
``xxhash64`` (``buckets.bucket_of``).
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
from sparkmv.plan.driver_aggregate import _check_range
from sparkmv.plan.driver_expression import DriverMergeDeclinedError
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
    if draw(st.booleans()):  # a visible column computed from calls: Spark computes it
        items.append(f"{draw(st.sampled_from(COMPUTED))} AS g")
    items = draw(st.permutations(items))
    grouped = f" GROUP BY {', '.join(keys)}" if keys else ""
    where = f" WHERE {draw(conditions(table))}" if draw(st.booleans()) else ""
    having = f" HAVING {draw(st.sampled_from(HAVINGS))}" if draw(st.booleans()) else ""
    return View(f"SELECT {', '.join(items)} FROM {table.name}{where}{grouped}{having}")


COMPUTED = ["count(*) * 2 + 1", "sum(1) - count(*)", "count(*) / 3", "coalesce(sum(1), 0)"]
HAVINGS = ["count(*) > 1", "count(*) % 2 = 0", "sum(1) <= 2"]


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
            assert jobs == 0
            assert_view_matches_query(spark, "v")


LINE_DDL = (
    "CREATE TABLE line (k STRING, f STRING, q DECIMAL(5,2), p DECIMAL(9,2), d DECIMAL(3,2),"
    " t DECIMAL(3,2), n INT, day DATE) USING parquet"
)
LINE_VALUES: dict[str, list[str]] = {
    "k": ["NULL", "'a'", "'b'"],
    "f": ["'x'", "'y'"],
    "q": ["NULL", "1.00", "17.25", "-3.50", "24.00", "0.00"],
    "p": ["NULL", "905.00", "12345.67", "0.01", "-77.10"],
    "d": ["NULL", "0.00", "0.04", "0.05", "0.06", "0.07", "0.10"],
    "t": ["NULL", "0.00", "0.02", "0.08"],
    "n": ["NULL", "0", "1", "-2", "7", "1000"],
    "day": [
        "NULL",
        *(
            f"DATE '{day}'"
            for day in ("1994-01-01", "1994-06-30", "1995-01-01", "1998-09-02", "1998-09-03")
        ),
    ],
}
LINE_CALLS = [
    "count(*)",
    "count(q)",
    "sum(q)",
    "avg(q)",
    "avg(p)",
    "avg(d)",
    "sum(p * (1 - d))",
    "sum(p * (1 - d) * (1 + t))",
    "sum(p * d)",
    "sum(n * 2 + 1)",
    "avg(n - 1)",
    "sum(q * n)",
    "count(p * d)",
    "sum(-q)",
    "avg(n + q)",
]
LINE_COMPUTED = [
    "sum(q) / count(*)",  # a decimal division
    "round(avg(p), 1)",
    "sum(p * d) - sum(q)",
    "count(*) * 100",
]
LINE_CONDITIONS = [
    "day <= DATE '1998-12-01' - INTERVAL '90' DAY",
    "day >= DATE '1994-01-01' AND day < DATE '1994-01-01' + INTERVAL '1' YEAR",
    "d BETWEEN .06 - 0.01 AND .06 + 0.01",
    "q < 24",
    "q * 2 > p - 900",
    "n + 1 > 0",
    "day IN (DATE '1994-06-30', NULL)",
    "day = DATE '1994-05-31' + INTERVAL '1' MONTH",
    "d NOT BETWEEN 0.05 AND 0.07",
    "day IS NULL",
]


@st.composite
def line_conditions(draw: Draw, depth: int = 0) -> str:
    kind = draw(st.sampled_from(["atom"] * 3 + ["and", "or", "not"] * (depth < 2)))
    if kind == "atom":
        return draw(st.sampled_from(LINE_CONDITIONS))
    if kind == "not":
        return f"NOT ({draw(line_conditions(depth + 1))})"
    left, right = draw(line_conditions(depth + 1)), draw(line_conditions(depth + 1))
    return f"({left}) {kind.upper()} ({right})"


@st.composite
def line_rows(draw: Draw) -> str:
    row = st.tuples(*(st.sampled_from(values) for values in LINE_VALUES.values()))
    rows = draw(st.lists(row, min_size=1, max_size=4))
    return ", ".join("(" + ", ".join(values) + ")" for values in rows)


@st.composite
def line_writes(draw: Draw) -> list[str]:
    writes = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["insert", "insert", "delete", "update"]))
        where = draw(line_conditions(1))
        if kind == "insert":
            writes.append(f"INSERT INTO line VALUES {draw(line_rows())}")
        elif kind == "delete":
            writes.append(f"DELETE FROM line WHERE {where}")
        else:
            column = draw(st.sampled_from(["q", "d", "day", "k"]))
            value = draw(st.sampled_from(LINE_VALUES[column]))
            writes.append(f"UPDATE line SET {column} = {value} WHERE {where}")
    return writes


@settings(max_examples=spark_examples(6), phases=NO_SHRINK)
@given(
    keys=st.lists(st.sampled_from(["k", "f", "day"]), max_size=2, unique=True),
    calls=st.lists(st.sampled_from(LINE_CALLS), min_size=1, max_size=4, unique=True),
    where=st.one_of(st.just(""), line_conditions()),
    computed=st.lists(st.sampled_from(LINE_COMPUTED), max_size=2, unique=True),
    having=st.sampled_from(["", "", "count(*) > 1", "sum(q) > 10", "avg(p) < 1000"]),
    first=line_rows(),
    steps=st.lists(line_writes(), min_size=1, max_size=3),
)
def test_tpch_like_views_with_arithmetic_and_dates_are_refreshed_by_the_driver(
    spark: SparkSession,
    db: str,
    keys: list[str],
    calls: list[str],
    where: str,
    computed: list[str],
    having: str,
    first: str,
    steps: list[list[str]],
) -> None:
    items = [*keys, *(f"{call} AS f{i}" for i, call in enumerate(calls))]
    items += [f"{expression} AS g{i}" for i, expression in enumerate(computed)]
    query = f"SELECT {', '.join(items)} FROM line"
    query += f" WHERE {where}" if where else ""
    query += f" GROUP BY {', '.join(keys)}" if keys else ""
    query += f" HAVING {having}" if having else ""
    script = [
        LINE_DDL,
        f"INSERT INTO line VALUES {first}",
        f"CREATE MATERIALIZED VIEW v AS {query}",
    ]
    note(";\n".join([*script, *(w for step in steps for w in step)]))
    with (
        example_database(spark, db),
        session_confs(spark, {STORAGE_BUCKETS_CONF: "1", **ALWAYS_INCREMENTAL}),
    ):
        for statement in script:
            spark.sql(statement)
        for writes in steps:
            for statement in writes:
                spark.sql(statement)
            started = last_job_id(spark)
            row = spark.sql("REFRESH MATERIALIZED VIEW v").collect()[0]
            jobs = last_job_id(spark) - started
            note(f"{row.mode} ({row.reason}): {jobs} jobs")
            assert (row.mode, jobs) == ("INCREMENTAL", 0), row.reason
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
