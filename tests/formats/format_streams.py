"""The randomized differential every table format runs (``test_delta.py``, ``test_iceberg.py``):
two tables of the format, ``r`` and ``q``, and a parquet table ``s``; four views over them (a
filter, an aggregate, a join with parquet, a join of the two); random streams of INSERT,
DELETE, UPDATE, MERGE and compaction, written by SQL that goes through no sparkmv capture.
After every step every view refreshes INCREMENTAL and equals its query run afresh.

Each format's suite runs with AUTO's cost-based choice off (``always_incremental``), so that
a refresh the change source allows is asserted INCREMENTAL whatever the cost model estimates
of these small tables; a test of that choice turns it back on.

Statements and views are templates over the tables' names (``{r}``, ``{q}``): a format places
its tables where its catalog keeps them (``FormatTables``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from conftest import assert_view_matches_query, last_job_id, session_confs
from differential import (
    ALWAYS_INCREMENTAL,
    example_database,
    note,
    refresh,
    refresh_each_incrementally,
)
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from sparkmv.config import REFRESH_COST_BASED_CONF

COMPACT = "COMPACT {r}"  # the format's own compaction of r (``FormatTables.compact``)
VIEWS = {
    "filtered": "SELECT a, b + 1 AS b1 FROM {r} r WHERE a IS NULL OR a > 0",
    "grouped": "SELECT b, COUNT(*) AS n, SUM(a) AS total, MIN(a) AS low FROM {r} r GROUP BY b",
    "joined": "SELECT r.a, s.c FROM {r} r JOIN s ON r.b = s.b",
    "both_of_the_format": "SELECT r.a, q.b FROM {r} r JOIN {q} q ON r.a = q.a",
}


@pytest.fixture
def always_incremental(spark: SparkSession) -> Iterator[None]:
    """The session with AUTO's cost-based choice off (module docstring)."""
    with session_confs(spark, ALWAYS_INCREMENTAL):
        yield


small = st.one_of(st.none(), st.integers(0, 3))
r_rows = st.lists(st.tuples(small, small), max_size=5)


@dataclass(frozen=True)
class Step:
    """SQL templates written between two refreshes."""

    statements: list[str]


@dataclass(frozen=True)
class FormatTables:
    """Where a format's ``r`` and ``q`` are, how its tables are created (``using``: the
    clause after the columns) and how ``r`` is compacted."""

    r: str
    q: str
    using: str
    compact: str

    def sql(self, template: str) -> str:
        if template == COMPACT:
            return self.compact
        return template.format(r=self.r, q=self.q)


def values(rows: list[tuple[Any, ...]]) -> str:
    return ", ".join(
        "(" + ", ".join("NULL" if v is None else repr(v) for v in row) + ")" for row in rows
    )


def statement(kind: str, rows: list[tuple[Any, ...]], key: int, value: int) -> str:
    if kind == "insert":
        return (
            f"INSERT INTO {{r}} VALUES {values(rows)}" if rows else "INSERT INTO {q} VALUES (1, 1)"
        )
    if kind == "delete":
        return f"DELETE FROM {{r}} WHERE a = {key}"
    if kind == "update":
        return f"UPDATE {{r}} SET b = {value} WHERE a = {key} OR b IS NULL"
    if kind == "merge":
        return (
            f"MERGE INTO {{r}} r USING (SELECT {key} AS a, {value} AS b) m ON r.a = m.a"
            " WHEN MATCHED AND r.b IS NULL THEN DELETE"
            " WHEN MATCHED THEN UPDATE SET b = m.b WHEN NOT MATCHED THEN INSERT *"
        )
    if kind == "q":
        return f"DELETE FROM {{q}} WHERE a = {key}"
    if kind == "s":
        return f"INSERT INTO s VALUES ({key}, 'z')"
    return COMPACT


steps = st.lists(
    st.builds(
        Step,
        st.lists(
            st.builds(
                statement,
                st.sampled_from(["insert", "delete", "update", "merge", "q", "s", "compact"]),
                r_rows,
                st.integers(0, 3),
                st.integers(0, 3),
            ),
            min_size=1,
            max_size=3,
        ),
    ),
    max_size=3,
)

RICH_INITIAL = [(0, 1), (1, 1), (1, 1), (None, 2), (2, None)]
RICH_STEPS = [
    Step(
        ["INSERT INTO {r} VALUES (1, 1), (NULL, 2), (3, NULL)", "UPDATE {r} SET b = 2 WHERE a = 1"]
    ),
    Step([statement("merge", [], 3, 1), "DELETE FROM {q} WHERE a = 0", COMPACT]),
    Step(["DELETE FROM {r} WHERE b = 2", "INSERT INTO s VALUES (1, 'w')"]),
]


def views_are_maintained(
    spark: SparkSession,
    db: str,
    tables_in: Callable[[str], FormatTables],
    initial: list[tuple[Any, ...]],
    stream: list[Step],
) -> None:
    """The differential of the module docstring, in a fresh database whose format tables are
    ``tables_in(database)``."""
    note(f"r: {initial}\nsteps: {stream}")
    with example_database(spark, db) as database:
        tables = tables_in(database)
        spark.sql(f"CREATE TABLE {tables.r} (a INT, b INT) {tables.using}")
        spark.sql(f"CREATE TABLE {tables.q} (a INT, b INT) {tables.using}")
        spark.sql(f"INSERT INTO {tables.q} VALUES (0, 0), (1, 1), (3, NULL)")
        spark.sql("CREATE TABLE s (b INT, c STRING) USING parquet")
        spark.sql("INSERT INTO s VALUES (1, 'x'), (2, 'y'), (NULL, 'x')")
        if initial:
            spark.sql(f"INSERT INTO {tables.r} VALUES {values(initial)}")
        for name, query in VIEWS.items():
            spark.sql(f"CREATE MATERIALIZED VIEW {name} AS {tables.sql(query)}")
            assert_view_matches_query(spark, name)
        for number, step in enumerate(stream, 1):
            for template in step.statements:
                spark.sql(tables.sql(template))
            refresh_each_incrementally(spark, VIEWS, f"{database} step {number}")


def auto_weighs_the_formats_sizes(spark: SparkSession, table: str, using: str) -> None:
    """The format's metadata sizes ``table`` and its changes (``ChangelogSizes``), and AUTO
    weighs them: a one-row change refreshes incrementally, in the refresh's own Spark job
    alone (the format's facts are metadata), and a change that rewrote every row fully, by
    the cost model's estimates."""
    with session_confs(spark, {REFRESH_COST_BASED_CONF: "true"}):
        spark.sql(f"CREATE TABLE {table} (a BIGINT, b BIGINT, c DOUBLE) {using}")
        spark.sql(f"INSERT INTO {table} SELECT id, id % 7, rand(3) FROM range(300000)")
        spark.sql(
            "CREATE MATERIALIZED VIEW v AS"
            f" SELECT b, COUNT(*) AS n, SUM(a) AS s FROM {table} GROUP BY b"
        )
        spark.sql(f"INSERT INTO {table} VALUES (1, 1, 0.5)")
        first = last_job_id(spark)
        mode, reason = refresh(spark, "v")
        assert (mode, last_job_id(spark) - first) == ("INCREMENTAL", 1), reason
        assert reason.startswith("incremental: estimated")
        assert_view_matches_query(spark, "v")
        spark.sql(f"UPDATE {table} SET c = c + 1")  # its change is about the table's size
        mode, reason = refresh(spark, "v")
        assert mode == "FULL" and reason.startswith("full: estimated"), reason
        assert_view_matches_query(spark, "v")
