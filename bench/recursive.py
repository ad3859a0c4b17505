"""Recursive views: incremental vs full refresh of bounded reachability over a 100k-edge graph
after 0.1 % edge changes (issue 25 item 1).

The graph: ``NODES`` = 50,000 nodes, ``EDGES`` = 100,000 edges ``e(s, d)``, each from node
``s`` to a node ``d`` in ``s+1 .. s+1000`` (a random DAG of out-degree 2 on average, so
bounded reachability stays far from astronomical: about 2 + 4 + 8 walks of length ≤ 3 per
node, ~700,000 walks, under Spark's recursion row limit of 1,000,000). The view is all-pairs
reachability within 3 steps::

    WITH RECURSIVE r(s, d, len) AS (SELECT s, d, 1 FROM e UNION ALL
      SELECT r.s, e.d, r.len + 1 FROM r JOIN e ON r.d = e.s WHERE r.len < 3)
    SELECT DISTINCT s, d FROM r

created twice (``reach_inc``, ``reach_full``). One change: 50 new edges inserted and 50
edges deleted (0.1 % of the edges). Then ``REFRESH reach_inc`` (AUTO, cost model off: its
mode is printed) and ``REFRESH reach_full FULL`` consume the same change; printed are each
one's seconds, the ratio full / incremental (one run), Spark jobs and py4j round trips
(``common.Py4jCalls``), then whether each view equals its query (``EXCEPT ALL`` both ways).

``python bench/recursive.py [edges]`` (default 100,000). Not a test: nothing is asserted.
"""

from __future__ import annotations

import sys

from common import Py4jCalls, Timed, bench_database, mismatch, print_header, refresh

QUERY = (
    "WITH RECURSIVE r(s, d, len) AS (SELECT s, d, 1 FROM e UNION ALL"
    " SELECT r.s, e.d, r.len + 1 FROM r JOIN e ON r.d = e.s WHERE r.len < 3)"
    " SELECT DISTINCT s, d FROM r"
)


def main() -> None:
    edges = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    nodes = edges // 2
    changed = max(1, edges // 2000)  # inserted, and as many deleted: 0.1 % of the edges
    spark = bench_database("recursive")
    spark.conf.set("spark.sparkmv.refresh.costBased", "false")
    spark.sql("CREATE TABLE e (s INT, d INT) USING parquet")
    spark.sql(
        f"INSERT INTO e SELECT CAST(pmod(id, {nodes}) AS INT) AS s,"
        f" CAST(pmod(id, {nodes}) + 1 + pmod(hash(id, 7), 1000) AS INT) AS d"
        f" FROM range({edges})"
    )
    for name in ("reach_inc", "reach_full"):
        spark.sql(f"CREATE MATERIALIZED VIEW {name} AS {QUERY}")
    walks = spark.sql(QUERY.replace("SELECT DISTINCT s, d FROM r", "SELECT count(*) FROM r"))
    print(f"{edges:,} edges over {nodes:,} nodes; {walks.collect()[0][0]:,} walks of length ≤ 3")
    spark.sql(
        f"INSERT INTO e SELECT CAST(pmod(hash(id, 11), {nodes}) AS INT),"
        f" CAST(pmod(hash(id, 11), {nodes}) + 1 + pmod(hash(id, 13), 1000) AS INT)"
        f" FROM range({changed})"
    )
    spark.sql(f"DELETE FROM e WHERE pmod(hash(s, d, 17), {edges // changed}) = 0")
    calls = Py4jCalls(spark)
    incremental, full = Timed(), Timed()
    refresh(spark, "REFRESH MATERIALIZED VIEW reach_inc", incremental, calls)
    refresh(spark, "REFRESH MATERIALIZED VIEW reach_full FULL", full, calls)
    print_header(f"{'refresh':<12} {'mode':<12} {'seconds':>8} {'jobs':>5} {'py4j':>6}  Δview")
    for label, timed in (("incremental", incremental), ("full", full)):
        print(
            f"{label:<12} {timed.modes[0]:<12} {timed.samples[0]:>8.2f} {timed.jobs[0]:>5}"
            f" {timed.calls[0]:>6}  {timed.changes[0]}"
        )
    print(f"ratio full / incremental: {full.samples[0] / incremental.samples[0]:.2f}")
    for name in ("reach_inc", "reach_full"):
        print(f"{name}: {mismatch(spark, name, QUERY) or 'OK'}")
    spark.stop()


if __name__ == "__main__":
    main()
