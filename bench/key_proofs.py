"""What the join-term proofs from footer statistics save: an append of new keys to both inputs
of a join view (``plan/key_proofs.py``).

Tables shaped as TPC-H's ``orders`` and ``lineitem`` (``--orders`` orders, 1–7 lineitems each,
written as several parquet files), and two views over their join: the rows of one customer
segment, and revenue per customer segment. Each round appends ``--new`` orders with keys above
every existing one, and their lineitems (RF1's shape; not timed), then refreshes both views
(AUTO), once with the proofs (the default) and once, on a copy of each view that consumes the
same change, with them off (``spark.sparkmv.refresh.keyProofs.enabled=false``). With the
proofs each term reads only the changes, ``Δ(O ⋈ L) = ΔO ⋈ Δ⁻L + Δ⁺O ⋈ ΔL``; without, the
term of ``ΔO`` scans ``lineitem`` and that of ``ΔL`` scans ``orders``.

Printed per view: medians over the rounds after the first of the wall time, Spark jobs and py4j
round trips, with and without, and the ratio. Every view is checked against its query at the
end. ``SPARKMV_TEST_FS=objstore`` puts the warehouse on the tests' object store
(``common.bench_session``).

``python bench/key_proofs.py [--orders N] [--new N] [--rounds N]`` (defaults 1,500,000
orders, as TPC-H SF 1; 1,500 new per round, as its RF1; 5 rounds). Not a test: nothing is
asserted.
"""

from __future__ import annotations

import argparse
import statistics

from common import Py4jCalls, Timed, bench_database, mismatch, print_header, refresh
from pyspark.sql import SparkSession
from sparkmv.config import KEY_PROOFS_CONF

VIEWS = {
    "rows": "SELECT o.o_orderkey, o.o_orderdate, l.l_extendedprice FROM orders o"
    " JOIN lineitem l ON l.l_orderkey = o.o_orderkey WHERE o.o_segment = 3",
    "revenue": "SELECT o.o_segment, count(*) AS n, sum(l.l_extendedprice) AS revenue"
    " FROM orders o JOIN lineitem l ON l.l_orderkey = o.o_orderkey GROUP BY o.o_segment",
}


def load(spark: SparkSession, orders: int) -> None:
    spark.sql(
        "CREATE TABLE orders (o_orderkey BIGINT, o_orderdate DATE, o_segment INT) USING parquet"
    )
    spark.sql(
        "CREATE TABLE lineitem (l_orderkey BIGINT, l_linenumber INT, l_extendedprice DOUBLE)"
        " USING parquet"
    )
    spark.sql(
        f"INSERT INTO orders SELECT id, date_add(DATE'1992-01-01', CAST(id % 2400 AS INT)),"
        f" CAST(id % 5 AS INT) FROM range(1, {orders + 1}, 1, 8)"
    )
    spark.sql(
        "INSERT INTO lineitem SELECT o_orderkey, n, o_orderkey % 1000 + n FROM orders"
        " LATERAL VIEW explode(sequence(1, CAST(o_orderkey % 7 + 1 AS INT))) AS n"
    )


def append(spark: SparkSession, first: int, count: int) -> None:
    """``count`` new orders from key ``first`` on, with their lineitems (RF1's shape)."""
    spark.sql(
        f"INSERT INTO orders SELECT id, DATE'1998-08-01', CAST(id % 5 AS INT)"
        f" FROM range({first}, {first + count}, 1, 1)"
    )
    spark.sql(
        f"INSERT INTO lineitem SELECT id, n, id % 1000 + n FROM range({first}, {first + count},"
        " 1, 1) LATERAL VIEW explode(sequence(1, CAST(id % 7 + 1 AS INT))) AS n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=1_500_000)
    parser.add_argument("--new", type=int, default=1_500)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    spark = bench_database("key_proofs")
    load(spark, args.orders)
    for name, query in VIEWS.items():
        spark.sql(f"CREATE MATERIALIZED VIEW {name}_proven AS {query}")
        spark.sql(f"CREATE MATERIALIZED VIEW {name}_unproven AS {query}")
    calls = Py4jCalls(spark)
    timed = {(name, proven): Timed() for name in VIEWS for proven in (True, False)}
    first = args.orders + 1
    for _ in range(args.rounds):
        append(spark, first, args.new)
        first += args.new
        for name in VIEWS:
            for proven in (True, False):
                spark.conf.set(KEY_PROOFS_CONF, str(proven).lower())
                suffix = "proven" if proven else "unproven"
                statement = f"REFRESH MATERIALIZED VIEW {name}_{suffix}"
                refresh(spark, statement, timed[name, proven], calls)
    spark.conf.unset(KEY_PROOFS_CONF)
    print(f"{args.orders:,} orders; {args.new:,} new orders and their lineitems per round")
    print_header(f"{'view':<8} {'with proofs':>22} {'without':>22} {'ratio':>6} {'mode':>12} check")
    for name, query in VIEWS.items():
        row = [f"{name:<8}"]
        for proven in (True, False):
            run = timed[name, proven]
            later = slice(1, None) if args.rounds > 1 else slice(None)
            wall = statistics.median(run.samples[later])
            jobs = statistics.median(run.jobs[later])
            trips = statistics.median(run.calls[later])
            row.append(f"{wall * 1000:>8.0f} ms {jobs:>3.0f} j {trips:>4.0f} rt")
        with_, without = (
            statistics.median(timed[name, p].samples[1:] or timed[name, p].samples)
            for p in (True, False)
        )
        checks = [mismatch(spark, f"{name}_{s}", query) for s in ("proven", "unproven")]
        check = "OK" if checks == [None, None] else "WRONG " + "; ".join(filter(None, checks))
        print(*row, f"{without / with_:>5.1f}×", f"{timed[name, True].mode:>12}", check)


if __name__ == "__main__":
    main()
