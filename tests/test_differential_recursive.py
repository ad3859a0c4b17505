"""Randomized differential tests: recursive views (issue 25 item 1) × edge writes.

Random small graphs ``e(s, d)`` over nodes 0..4 (cycles, self-loops, duplicate edges, NULL
targets, which join nothing) and a ``start(n)`` table, under random batches that insert,
delete and update edges and start nodes. One fleet of views over ``WITH RECURSIVE ... UNION
ALL`` with a depth bound (``VIEWS``): reachability from a node (DISTINCT), all-pairs
reachability (DISTINCT), ``MIN(len)`` per pair, walk counts (``COUNT(*)`` per pair: bag
semantics), walks from the nodes of ``start`` (the anchor reads a second table that
changes), and the recursive CTE's bag itself. After CREATE and after every refresh every view
equals its query run afresh by Spark (its own ``WITH RECURSIVE`` is the oracle), and every
refresh is INCREMENTAL.

Steps that read the CTE more than once: ``test_differential_recursive_nonlinear.py``, over the
same graphs and writes.
"""

from __future__ import annotations

from conftest import assert_view_matches_query, session_confs, spark_examples
from differential import ALWAYS_INCREMENTAL, NO_SHRINK, example_database, note
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

NODES = 5
WALKS = (
    "WITH RECURSIVE r(s, d, len) AS (SELECT s, d, 1 FROM e UNION ALL"
    " SELECT r.s, e.d, r.len + 1 FROM r JOIN e ON r.d = e.s WHERE r.len < 3)"
)
VIEWS = {
    "reach_from_0": "WITH RECURSIVE r(n, k) AS (SELECT d, 1 FROM e WHERE s = 0 UNION ALL"
    " SELECT e.d, r.k + 1 FROM r JOIN e ON r.n = e.s WHERE r.k < 4) SELECT DISTINCT n FROM r",
    "reach_pairs": f"{WALKS} SELECT DISTINCT s, d FROM r",
    "shortest": f"{WALKS} SELECT s, d, MIN(len) AS len FROM r GROUP BY s, d",
    "walk_counts": f"{WALKS} SELECT s, d, COUNT(*) AS walks FROM r GROUP BY s, d",
    "from_start": "WITH RECURSIVE r(n, k) AS (SELECT n, 0 FROM start UNION ALL"
    " SELECT e.d, r.k + 1 FROM r JOIN e ON r.n = e.s WHERE r.k < 3)"
    " SELECT n, k, COUNT(*) AS walks FROM r GROUP BY n, k",
    "walks": f"{WALKS} SELECT * FROM r WHERE s <> 4",
}

nodes = st.integers(0, NODES - 1)
edges = st.lists(st.tuples(nodes, st.one_of(nodes, st.none())), max_size=8)


def _values(rows: list[tuple[int, int | None]]) -> str:
    return ", ".join(f"({s}, {'NULL' if d is None else d})" for s, d in rows)


@st.composite
def batches(draw: st.DrawFn) -> list[str]:
    """One batch of writes to ``e`` and ``start``."""
    writes = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["insert", "delete", "update", "start"]))
        if kind == "insert":
            rows = draw(st.lists(st.tuples(nodes, nodes), min_size=1, max_size=3))
            writes.append(f"INSERT INTO e VALUES {_values(list(rows))}")
        elif kind == "delete":
            writes.append(f"DELETE FROM e WHERE s = {draw(nodes)} AND d = {draw(nodes)}")
        elif kind == "update":
            writes.append(f"UPDATE e SET d = {draw(nodes)} WHERE s = {draw(nodes)}")
        elif draw(st.booleans()):
            writes.append(f"INSERT INTO start VALUES ({draw(nodes)})")
        else:
            writes.append(f"DELETE FROM start WHERE n = {draw(nodes)}")
    return writes


def check_fleet(
    spark: SparkSession,
    db: str,
    views: dict[str, str],
    graph: list[tuple[int, int | None]],
    starts: list[int],
    steps: list[list[str]],
) -> None:
    setup = [
        "CREATE TABLE e (s INT, d INT) USING parquet",
        "CREATE TABLE start (n INT) USING parquet",
    ]
    if graph:
        setup.append(f"INSERT INTO e VALUES {_values(graph)}")
    if starts:
        setup.append(f"INSERT INTO start VALUES {', '.join(f'({n})' for n in starts)}")
    note(";\n".join([*setup, *(w for step in steps for w in [*step, "-- refresh"])]))
    with example_database(spark, db), session_confs(spark, ALWAYS_INCREMENTAL):
        for statement in setup:
            spark.sql(statement)
        for name, query in views.items():
            spark.sql(f"CREATE MATERIALIZED VIEW {name} AS {query}")
            assert_view_matches_query(spark, name)
        for step in steps:
            for statement in step:
                spark.sql(statement)
            for name in views:
                row = spark.sql(f"REFRESH MATERIALIZED VIEW {name}").collect()[0]
                note(f"{name}: {row.mode} ({row.reason})")
                assert row.mode == "INCREMENTAL", (name, row.reason)
                assert_view_matches_query(spark, name)


@settings(max_examples=spark_examples(1), phases=NO_SHRINK)
@given(
    graph=edges,
    starts=st.lists(nodes, max_size=3),
    steps=st.lists(batches(), min_size=1, max_size=2),
)
@example(  # a cycle, a self-loop, a duplicate edge, a NULL target; insert, delete, update
    graph=[(0, 1), (1, 2), (2, 0), (2, 2), (1, 2), (3, None)],
    starts=[0, 0],
    steps=[
        [
            "INSERT INTO e VALUES (2, 3), (3, 4)",
            "DELETE FROM e WHERE s = 1 AND d = 2",
            "INSERT INTO start VALUES (3)",
        ],
        ["UPDATE e SET d = 1 WHERE s = 2", "DELETE FROM start WHERE n = 0"],
    ],
)
def test_recursive_views_equal_their_queries(
    spark: SparkSession,
    db: str,
    graph: list[tuple[int, int | None]],
    starts: list[int],
    steps: list[list[str]],
) -> None:
    check_fleet(spark, db, VIEWS, graph, starts, steps)
