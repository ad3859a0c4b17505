"""What immediate maintenance costs a write, from one run (issue: ON COMMIT).

The median single-row ``INSERT`` into a table of N rows (default 1M) read by one aggregate
view refreshed ``ON COMMIT``, against the same ``INSERT`` into an identical table whose view is
refreshed ``ON DEMAND`` (the write is captured either way). The ratio is what the write pays
for a view that is current when the statement returns; pg_ivm measures 1.7x. The medians of
all inserts and of the last ten are printed: the first refreshes of a process run while the
JVM still compiles Spark's code (``bench/fixed_cost.py``). Each view is checked against its
query at the end.

``python bench/on_commit.py [table_rows] [inserts]`` (defaults 1M rows, 30 inserts).
Not a test: nothing is asserted.
"""

from __future__ import annotations

import statistics
import sys

from common import Timed, bench_database, measure, mismatch, print_header
from pyspark.sql import SparkSession

VIEW = "SELECT k, count(*) AS n, sum(v) AS total FROM {table} GROUP BY k"


def load(spark: SparkSession, table: str, rows: int) -> None:
    spark.sql(f"CREATE TABLE {table} (id BIGINT, k INT, v BIGINT) USING parquet")
    spark.sql(f"INSERT INTO {table} SELECT id, CAST(id % 1000 AS INT), id % 97 FROM range({rows})")


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    inserts = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    spark = bench_database("on_commit")
    timed = {"ON COMMIT": Timed(), "ON DEMAND": Timed()}
    for trigger, table in (("ON COMMIT", "immediate"), ("ON DEMAND", "deferred")):
        load(spark, table, rows)
        spark.sql(
            f"CREATE MATERIALIZED VIEW {table}_view REFRESH {trigger} AS "
            + VIEW.format(table=table)
        )
    for i in range(inserts + 1):  # the first of each is a warm-up
        for trigger, table in (("ON COMMIT", "immediate"), ("ON DEMAND", "deferred")):
            into = timed[trigger] if i else Timed()
            measure(spark, f"INSERT INTO {table} VALUES ({rows + i}, {i % 7}, {i})", into)
    spark.sql("REFRESH MATERIALIZED VIEW deferred_view").collect()
    print(f"\nsingle-row INSERT into a {rows:,}-row table read by one aggregate view")
    print_header(f"{'view refreshed':<16} {'median s':>9} {'last 10 s':>9} {'jobs':>5}")
    medians = {  # per trigger: of every insert, of the last ten
        trigger: (statistics.median(samples.samples), statistics.median(samples.samples[-10:]))
        for trigger, samples in timed.items()
    }
    for trigger, (every, last) in medians.items():
        jobs = statistics.median(timed[trigger].jobs)
        print(f"{trigger:<16} {every:>9.3f} {last:>9.3f} {jobs:>5.0f}")
    for index, label in enumerate(("all", "last 10")):
        ratio = medians["ON COMMIT"][index] / medians["ON DEMAND"][index]
        print(f"ON COMMIT / ON DEMAND, {label}: {ratio:.2f}x (target <= 2x; pg_ivm 1.7x)")
    for table in ("immediate", "deferred"):
        found = mismatch(spark, f"{table}_view", VIEW.format(table=table))
        print(f"{table}_view: {'OK' if found is None else 'WRONG ' + found}")
    spark.stop()


if __name__ == "__main__":
    main()
