"""What a join view's incremental refresh cannot avoid reading: an upper bound on its ratio.

Issue 23 asks, at TPC-H SF 1 and against FULL, for Q3, Q5 and Q10 at least 4× and for Q12,
Q14 and Q19 at least 2.5×, with ``bench/tpch.py``'s change: RF1/RF2 of random orders and
``UPDATE``s of a few random rows of ``part``, ``partsupp``, ``supplier`` and ``customer``.

An inner join's change is a sum of terms, one per changed input, each joining that input's
change with the other inputs (``docs/join-state.md``). The term of a changed *dimension* row
reads the rows of the fact tables that join it: the lineitems of a changed customer's orders
(Q3, Q5, Q10), of a changed supplier (Q5), of a changed part (Q14, Q19). The changed keys
are random, so on parquet that is a scan of ``lineitem``: every file, row group and page holds
some of them (``docs/join-state.md``, "Why a lookup by key does not help on parquet"). Q12
reads only ``orders`` and ``lineitem``; its term ``L_new ⋈ ΔO`` reads the lineitems of the
changed orders, which is a scan too unless a declared foreign key proves that a new order's
lineitems are all in ``ΔL`` and a deleted order's are all gone.

This script times, with plain Spark and no sparkmv, per query:

- ``INSERT OVERWRITE`` of the query into a parquet table: what a full refresh costs at least;
- that one term, as cheaply as Spark computes it: the changed keys as a literal list, the
  small side broadcast, only the columns the view reads, aggregated so that little comes
  back, nothing written.

An incremental refresh computes that term and more (the other inputs' terms, the merge, the
commit), so ``INSERT OVERWRITE / term`` bounds its ratio against FULL from above. The changed
keys are sampled as ``bench/tpch.py`` samples its updates: ``SF × 100`` customers among those
its ``UPDATE`` picks from, ``SF × 100`` parts and suppliers, ``2 × SF × 1500`` orders (RF1's
and RF2's).

``python bench/join_floor.py [sf] [--rounds 9]`` (default SF 1; medians of the rounds after
the first). Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from common import bench_session, print_header
from pyspark.sql import SparkSession
from tpch import (
    MIN_RATIO,
    UPDATES,
    UPDATES_PER_SF,
    SfResult,
    generate,
    load,
    order_count,
    read_query,
)

SEED = 5

# Per query: the term its change cannot avoid, over the sampled keys ``{customers}``,
# ``{suppliers}``, ``{parts}`` and ``{orders}``; the view's own filters on the rows it reads.
TERMS = {
    3: (
        "the lineitems of the changed customers' orders",
        "SELECT /*+ BROADCAST(o) */ l_orderkey, o_orderdate, o_shippriority,"
        " sum(l_extendedprice * (1 - l_discount)) FROM orders o JOIN lineitem"
        " ON l_orderkey = o_orderkey WHERE o_custkey IN ({customers})"
        " AND o_orderdate < DATE '1995-03-15' AND l_shipdate > DATE '1995-03-15'"
        " GROUP BY l_orderkey, o_orderdate, o_shippriority",
    ),
    5: (
        "the lineitems of the changed customers' orders and of the changed suppliers",
        "SELECT /*+ BROADCAST(o) */ l_suppkey, o_custkey,"
        " sum(l_extendedprice * (1 - l_discount)) FROM orders o JOIN lineitem"
        " ON l_orderkey = o_orderkey WHERE (l_suppkey IN ({suppliers})"
        " OR o_custkey IN ({customers})) AND o_orderdate >= DATE '1994-01-01'"
        " AND o_orderdate < DATE '1995-01-01' GROUP BY l_suppkey, o_custkey",
    ),
    10: (
        "the lineitems of the changed customers' orders",
        "SELECT /*+ BROADCAST(o) */ o_custkey, sum(l_extendedprice * (1 - l_discount))"
        " FROM orders o JOIN lineitem ON l_orderkey = o_orderkey"
        " WHERE o_custkey IN ({customers}) AND o_orderdate >= DATE '1993-10-01'"
        " AND o_orderdate < DATE '1994-01-01' AND l_returnflag = 'R' GROUP BY o_custkey",
    ),
    12: (
        "the lineitems of the changed orders (no foreign key declared)",
        "SELECT l_orderkey, l_shipmode, count(*) FROM lineitem WHERE l_orderkey IN ({orders})"
        " AND l_shipmode IN ('MAIL', 'SHIP') AND l_commitdate < l_receiptdate"
        " AND l_shipdate < l_commitdate AND l_receiptdate >= DATE '1994-01-01'"
        " AND l_receiptdate < DATE '1995-01-01' GROUP BY l_orderkey, l_shipmode",
    ),
    14: (
        "the lineitems of the changed parts",
        "SELECT l_partkey, sum(l_extendedprice * (1 - l_discount)) FROM lineitem"
        " WHERE l_partkey IN ({parts}) AND l_shipdate >= DATE '1995-09-01'"
        " AND l_shipdate < DATE '1995-10-01' GROUP BY l_partkey",
    ),
    19: (
        "the lineitems of the changed parts",
        "SELECT l_partkey, l_quantity, sum(l_extendedprice * (1 - l_discount)) FROM lineitem"
        " WHERE l_partkey IN ({parts}) AND l_shipinstruct = 'DELIVER IN PERSON'"
        " AND l_shipmode IN ('AIR', 'AIR REG') AND l_quantity <= 30"
        " GROUP BY l_partkey, l_quantity",
    ),
}


def sampled_keys(spark: SparkSession, table: str, key: str, among: str, count: int) -> str:
    """``count`` keys of ``table`` at random (the smallest by a seeded hash), as an SQL list."""
    rows = spark.sql(
        f"SELECT {key} FROM {table} WHERE {among} ORDER BY xxhash64({key}, {SEED}), {key}"
        f" LIMIT {count}"
    ).collect()
    return ", ".join(str(row[0]) for row in rows)


def changed_keys(spark: SparkSession, sf: float) -> dict[str, str]:
    among = {update.table: update.among for update in UPDATES}
    updated = max(round(sf * UPDATES_PER_SF), 1)
    return {
        "customers": sampled_keys(spark, "customer", "c_custkey", among["customer"], updated),
        "suppliers": sampled_keys(spark, "supplier", "s_suppkey", "TRUE", updated),
        "parts": sampled_keys(spark, "part", "p_partkey", "TRUE", updated),
        "orders": sampled_keys(spark, "orders", "o_orderkey", "TRUE", 2 * order_count(sf)),
    }


def median_seconds(action: str, spark: SparkSession, rounds: int) -> float:
    """The median seconds of ``action`` (a statement, its rows collected) after a first run."""
    samples = []
    for _ in range(rounds + 1):
        started = time.perf_counter()
        spark.sql(action).collect()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("sf", nargs="?", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    data, _ = generate(args.sf)
    with tempfile.TemporaryDirectory() as warehouse:
        spark = bench_session(warehouse)
        load(spark, data, SfResult(args.sf))
        keys = changed_keys(spark, args.sf)
        print(f"TPC-H SF {args.sf:g}, plain Spark; medians of {args.rounds} rounds\n")
        print_header(
            f"{'query':<6}{'INSERT OVERWRITE':>18}{'term':>8}{'bound':>8}{'target':>8}  the term"
        )
        for number, (label, term) in TERMS.items():
            query = read_query(number)
            spark.sql(f"CREATE TABLE plain_q{number} USING parquet AS {query.body}")
            overwrite = median_seconds(
                f"INSERT OVERWRITE plain_q{number} {query.body}", spark, args.rounds
            )
            floor = median_seconds(term.format(**keys), spark, args.rounds)
            print(
                f"Q{number:<5}{overwrite:>16.2f} s{floor:>6.2f} s{overwrite / floor:>7.1f}x"
                f"{MIN_RATIO[number]:>7.1f}x  {label}",
                flush=True,
            )
        spark.stop()


if __name__ == "__main__":
    main()
