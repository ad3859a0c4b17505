"""Randomized differential tests: fixed views × random write streams, oracle after each refresh.

Every refresh must leave the view equal to its query run afresh (docs/development.md), and
report the mode it used: a view of the maintainable class refreshes INCREMENTAL, one outside it FULL
with the construct that stands in the way as its reason; a refresh with no change to the
tables the view reads does nothing (INCREMENTAL, "no base table changed ..."). Each view
runs on every run (one random stream each); each stream follows the insert → no change →
retraction pattern, through DataFrame writes (``insertInto``, an overwrite to retract).

The refresh policy is AUTO, with its cost-based choice off (``differential.ALWAYS_INCREMENTAL``):
it would pick FULL for changes as large as these tables, and the mode would say nothing about
whether the view is maintained.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest
from conftest import assert_view_matches_query, session_confs, spark_examples
from differential import ALWAYS_INCREMENTAL, MAINTAINABLE, NO_CHANGE, NO_SHRINK
from hypothesis import example, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession


@dataclass(frozen=True)
class ViewCase:
    """A view's query over ``{r}`` and ``{s}``, and the construct outside the maintainable
    class that its FULL refreshes must name ("" for a view refreshed incrementally)."""

    name: str
    query: str
    outside: str = ""

    @property
    def reads(self) -> frozenset[str]:
        """The tables the view reads, as "r" and "s"."""
        return frozenset(table for table in ("r", "s") if "{" + table + "}" in self.query)


VIEWS = [
    ViewCase("selection", "SELECT a, b FROM {r} WHERE a IS NULL OR a > 1"),
    ViewCase("distinct", "SELECT DISTINCT b FROM {r}"),
    ViewCase("join", "SELECT {r}.a, {s}.c FROM {r} JOIN {s} ON {r}.b = {s}.b"),
    ViewCase("self_join", "SELECT x.a, y.a AS a2 FROM {r} x JOIN {r} y ON x.b = y.b AND x.a < y.a"),
    ViewCase(
        "group_by", "SELECT b, COUNT(*) AS n, SUM(a) AS total, MIN(a) AS low FROM {r} GROUP BY b"
    ),
    ViewCase("union_all", "SELECT b FROM {r} UNION ALL SELECT b FROM {s}"),
    ViewCase("union", "SELECT b FROM {r} UNION SELECT b FROM {s} WHERE c <> 'x'"),
    ViewCase("global_aggregate", "SELECT COUNT(*) AS n, AVG(a) AS mean FROM {r}"),
    ViewCase("left_join", "SELECT {r}.a, {s}.c FROM {r} LEFT JOIN {s} ON {r}.b = {s}.b"),
    ViewCase("except_all", "SELECT b FROM {r} EXCEPT ALL SELECT b FROM {s}"),
    ViewCase(
        "intersect_all", "SELECT b, a > 0 AS p FROM {r} INTERSECT ALL SELECT b, c = 'x' FROM {s}"
    ),
    ViewCase(
        "except_all_joined",
        "SELECT d.b, COUNT(*) AS n FROM (SELECT b FROM {r} EXCEPT ALL SELECT b FROM {s}) AS d"
        " JOIN {r} ON d.b = {r}.b GROUP BY d.b",
    ),
]

# On every run each view also gets this stream (hypothesis's first generated example, the
# simplest one, has empty tables and batches): duplicates and NULLs in both tables and in the
# inserted rows, a batch that changes only s (nothing to do for a view of r alone).
RICH_INITIAL = (
    [(0, 1), (1, 1), (1, 1), (None, 2), (2, None), (3, 3)],
    [(1, "x"), (1, "y"), (None, "x"), (2, None), (3, "y")],
)
RICH_BATCHES = [
    ([(2, 1), (None, None), (1, 1)], [(1, "x"), (3, None)]),
    ([], [(2, "y"), (1, "x")]),
]

small = st.one_of(st.none(), st.integers(0, 3))
r_rows = st.lists(st.tuples(small, small), max_size=6)
s_rows = st.lists(st.tuples(small, st.sampled_from([None, "x", "y"])), max_size=6)
_names = itertools.count()


def write(spark: SparkSession, table: str, rows: list[tuple[object, ...]], schema: str) -> bool:
    """Append ``rows`` to ``table``; whether there were any (no rows: no write at all)."""
    if rows:
        spark.createDataFrame(rows, schema).write.insertInto(table)
    return bool(rows)


def retract(spark: SparkSession, table: str, rows: list[tuple[object, ...]], schema: str) -> None:
    """Remove one copy of each of ``rows`` (the table is small: rewrite it whole)."""
    remaining = [tuple(row) for row in spark.table(table).collect()]
    for row in rows:
        remaining.remove(tuple(row))
    spark.createDataFrame(remaining, schema).write.insertInto(table, overwrite=True)


def assert_refresh_mode(view: ViewCase, written: set[str], mode: str, reason: str) -> None:
    """The mode and reason a refresh must report, given the tables written since the last
    one: nothing to do when none of them is read; else INCREMENTAL for a view of the class,
    FULL naming the construct for one outside it."""
    if not written & view.reads:
        assert (mode, reason) == ("INCREMENTAL", NO_CHANGE), (mode, reason)
    elif view.outside:
        assert mode == "FULL" and view.outside in reason, (mode, reason)
    else:
        assert (mode, reason) == ("INCREMENTAL", MAINTAINABLE), (mode, reason)


@pytest.mark.parametrize("view", VIEWS, ids=lambda view: view.name)
@settings(max_examples=spark_examples(1), phases=NO_SHRINK)  # shrinking Spark runs takes hours
@given(
    initial=st.tuples(r_rows, s_rows),
    batches=st.lists(st.tuples(r_rows, s_rows), min_size=1, max_size=2),
)
@example(initial=RICH_INITIAL, batches=RICH_BATCHES)
def test_random_views_under_random_writes(
    spark: SparkSession,
    db: str,
    view: ViewCase,
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
    spark.sql(f"CREATE MATERIALIZED VIEW {v} AS " + view.query.format(r=r, s=s))
    assert_view_matches_query(spark, v)

    def refresh(written: set[str]) -> None:
        row = spark.sql(f"REFRESH MATERIALIZED VIEW {v}").collect()[0]
        note(f"tables written {sorted(written)}: {row.mode} ({row.reason})")
        assert_refresh_mode(view, written, row.mode, row.reason)
        assert_view_matches_query(spark, v)

    with session_confs(spark, ALWAYS_INCREMENTAL):
        for r_new, s_new in batches:
            appended = {"r"} if write(spark, r, r_new, r_schema) else set()
            appended |= {"s"} if write(spark, s, s_new, s_schema) else set()
            refresh(appended)
            refresh(set())  # no change
            retract(spark, r, r_new, r_schema)
            retract(spark, s, s_new, s_schema)
            refresh({"r", "s"})  # overwritten, even with the rows they had
