"""Randomized differential test of views over a table read through its catalog's changelog
(``capture/changelog_source.py``): a table ``r`` of the test-only DSv2 catalog ``testcat``
(``versioned_catalog``) that sparkmv does not track, alone and joined with a parquet table ``s``
that sparkmv tracks. Random rows with NULLs and duplicates; each step commits a version of
``r`` with random inserts, deletes of single copies and updates (pre/post-images), and
sometimes writes ``s`` with SQL. After every refresh each view equals its query run afresh
(docs/development.md) and the refresh was INCREMENTAL: policy AUTO, whose cost model cannot size a
changelog's table and so does not choose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conftest import assert_view_matches_query, spark_examples
from differential import NO_SHRINK, example_database, note, refresh_each_incrementally
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from versioned_catalog import CHANGELOG_CATALOG, commit, requires_changelog

pytestmark = requires_changelog

R_SCHEMA = "a INT, b INT"
VIEWS = {
    "filtered": "SELECT a, b + 1 AS b1 FROM {r} WHERE a IS NULL OR a > 0",
    "grouped": "SELECT b, COUNT(*) AS n, SUM(a) AS total, MIN(a) AS low FROM {r} GROUP BY b",
    "joined": "SELECT {r}.a, s.c FROM {r} JOIN s ON {r}.b = s.b",
}

small = st.one_of(st.none(), st.integers(0, 3))
r_row = st.tuples(small, small)
r_rows = st.lists(r_row, max_size=6)
s_rows = st.lists(st.tuples(small, st.sampled_from([None, "x", "y"])), max_size=4)


@dataclass(frozen=True)
class Step:
    """One version of ``r``: rows inserted, copies deleted and updated (picked by position in
    ``r``'s rows at the time, modulo their number), and rows written to ``s``."""

    inserted: list[tuple[Any, ...]]
    deleted: list[int]
    updated: list[tuple[int, tuple[Any, ...]]]
    s_inserted: list[tuple[Any, ...]]
    s_deleted_b: int | None


steps = st.lists(
    st.builds(
        Step,
        r_rows,
        st.lists(st.integers(0, 20), max_size=3),
        st.lists(st.tuples(st.integers(0, 20), r_row), max_size=3),
        s_rows,
        st.one_of(st.none(), st.integers(0, 3)),
    ),
    min_size=1,
    max_size=3,
)

RICH_STEPS = [
    Step([(1, 1), (None, None)], [0, 0], [(1, (2, None))], [(1, "x")], None),
    Step([], [3], [(0, (0, 1)), (0, (1, 1))], [], 1),
    Step([(1, 1), (1, 1)], [], [(2, (None, 2))], [(None, "y"), (2, "x")], None),
]


def values(rows: list[tuple[Any, ...]]) -> str:
    return ", ".join(
        "(" + ", ".join("NULL" if v is None else repr(v) for v in row) + ")" for row in rows
    )


def apply_step(spark: SparkSession, r: str, rows: list[tuple[Any, ...]], step: Step) -> None:
    """Commit ``step`` to ``r`` (``rows``: its rows, updated here) and write ``s``."""
    current = list(rows)
    deleted = [current.pop(i % len(current)) for i in step.deleted if current]
    updated = []
    for i, new in step.updated:
        if current:
            updated.append((current.pop(i % len(current)), new))
    rows[:] = current + [new for _, new in updated] + list(step.inserted)
    commit(spark, r, R_SCHEMA, inserted=step.inserted, deleted=deleted, updated=updated)
    if step.s_inserted:
        spark.sql(f"INSERT INTO s VALUES {values(step.s_inserted)}")
    if step.s_deleted_b is not None:
        spark.sql(f"DELETE FROM s WHERE b = {step.s_deleted_b}")


@settings(max_examples=spark_examples(1), phases=NO_SHRINK)
@given(r_initial=r_rows, s_initial=s_rows, stream=steps)
@example(
    r_initial=[(0, 1), (1, 1), (1, 1), (None, 2), (2, None), (3, 3)],
    s_initial=[(1, "x"), (1, "y"), (None, "x"), (2, None)],
    stream=RICH_STEPS,
)
def test_views_over_a_changelog_table(
    spark: SparkSession,
    db: str,
    r_initial: list[tuple[Any, ...]],
    s_initial: list[tuple[Any, ...]],
    stream: list[Step],
) -> None:
    note(f"r: {r_initial}\ns: {s_initial}\nsteps: {stream}")
    with example_database(spark, db) as database:
        r = f"{CHANGELOG_CATALOG}.{database}.r"
        spark.sql(f"CREATE TABLE {r} ({R_SCHEMA})")
        spark.sql("CREATE TABLE s (b INT, c STRING) USING parquet")
        rows = list(r_initial)
        if rows:
            spark.sql(f"INSERT INTO {r} VALUES {values(rows)}")
        if s_initial:
            spark.sql(f"INSERT INTO s VALUES {values(s_initial)}")
        for name, query in VIEWS.items():
            spark.sql(f"CREATE MATERIALIZED VIEW {name} AS {query.format(r=r)}")
            assert_view_matches_query(spark, name)
        for number, step in enumerate(stream, 1):
            apply_step(spark, r, rows, step)
            refresh_each_incrementally(spark, VIEWS, f"step {number}")
