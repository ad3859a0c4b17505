"""Randomized differential tests: non-linear recursive views (issue 25 item 1) × edge writes.

The graphs and write batches of ``test_differential_recursive`` (nodes 0..4, cycles,
self-loops, duplicate edges, NULL targets; inserts, deletes and updates of edges and start
nodes), with a fleet of views whose step reads the CTE more than once, which Spark evaluates
with every reference reading the previous level only: path doubling (two references, the
length doubling per level, so ``n < 4`` bounds it over cycles), three references, two
references and the edge table, a ``UNION ALL`` in the step whose inputs read different
references, and an anchor over ``start``; the bag itself, ``COUNT(*)`` and ``MIN`` per group
and ``DISTINCT`` above the CTE. After CREATE and after every refresh every view equals its
query run afresh by Spark, and every refresh is INCREMENTAL. (A file of its own: the two
fleets run on two workers.)
"""

from __future__ import annotations

from conftest import spark_examples
from differential import NO_SHRINK
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from test_differential_recursive import batches, check_fleet, edges, nodes

DOUBLING = (
    "WITH RECURSIVE r(s, d, n) AS (SELECT s, d, 1 FROM e UNION ALL"
    " SELECT a.s, b.d, a.n + b.n FROM r a JOIN r b ON a.d = b.s WHERE a.n < 4)"
)
NONLINEAR_VIEWS = {
    "doubled": f"{DOUBLING} SELECT * FROM r",
    "doubled_pairs": f"{DOUBLING} SELECT DISTINCT s, d FROM r WHERE n > 1",
    "tripled": "WITH RECURSIVE r(s, d, n) AS (SELECT s, d, 1 FROM e UNION ALL"
    " SELECT a.s, c.d, a.n + b.n + c.n FROM r a JOIN r b ON a.d = b.s JOIN r c ON b.d = c.s"
    " WHERE a.n < 3) SELECT s, d, COUNT(*) AS walks, MIN(n) AS shortest FROM r GROUP BY s, d",
    "with_edges": "WITH RECURSIVE r(s, d, n) AS (SELECT s, d, 1 FROM e UNION ALL"
    " SELECT a.s, e.d, a.n + b.n + 1 FROM r a JOIN r b ON a.d = b.s JOIN e ON b.d = e.s"
    " WHERE a.n < 3) SELECT s, d, n, COUNT(*) AS walks FROM r GROUP BY s, d, n",
    "mixed_union": "WITH RECURSIVE r(s, d, n) AS (SELECT s, d, 1 FROM e UNION ALL"
    " SELECT x.s, x.d, x.n + 1 FROM (SELECT a.s, b.d, a.n FROM r a JOIN r b ON a.d = b.s"
    " UNION ALL SELECT s, d, n FROM r) x WHERE x.n < 3)"
    " SELECT d, MIN(n) AS m, COUNT(*) AS walks FROM r GROUP BY d",
    "from_start": "WITH RECURSIVE r(s, d, n) AS (SELECT e.s, e.d, 1 FROM e JOIN start"
    " ON e.s = start.n UNION ALL SELECT a.s, b.d, a.n + b.n FROM r a JOIN r b ON a.d = b.s"
    " WHERE a.n < 4) SELECT DISTINCT s, d FROM r",
}


@settings(max_examples=spark_examples(1), phases=NO_SHRINK)
@given(
    graph=edges,
    starts=st.lists(nodes, max_size=3),
    steps=st.lists(batches(), min_size=1, max_size=2),
)
@example(  # a cycle, a self-loop, a duplicate edge, a NULL target; every kind of write
    graph=[(0, 1), (1, 2), (2, 0), (2, 2), (1, 2), (3, None)],
    starts=[0, 2],
    steps=[
        [
            "INSERT INTO e VALUES (2, 3), (3, 4), (1, 2)",
            "DELETE FROM e WHERE s = 2 AND d = 0",
            "INSERT INTO start VALUES (3)",
        ],
        ["UPDATE e SET d = 1 WHERE s = 2", "DELETE FROM start WHERE n = 0"],
    ],
)
def test_nonlinear_recursive_views_equal_their_queries(
    spark: SparkSession,
    db: str,
    graph: list[tuple[int, int | None]],
    starts: list[int],
    steps: list[list[str]],
) -> None:
    check_fleet(spark, db, NONLINEAR_VIEWS, graph, starts, steps)
