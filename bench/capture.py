"""What change capture costs, from one run (issue: change capture).

1. ``INSERT`` of N rows, and of one row, into a tracked table (a materialized view reads it,
   so the write is logged) vs the same insert into an untracked table: the ratio is
   capture's overhead (the table's files listed in the JVM before and after the write, the
   log's head read and one commit published; no metastore lookup, and the rows are
   referenced, never copied).
2. ``DELETE`` of 0.1% of the rows of a table of M rows in F files by copy-on-write: once
   spread over every file (``id % 1000 = 0``) and once concentrated in one file
   (``id < M / 1000``). The rewrite should follow the affected files: the concentrated
   delete rewrites one file and links the others.

``python bench/capture.py [insert_rows] [table_rows] [files]`` (defaults 1M, 10M, 40).
Not a test: nothing is asserted.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import sparkmv
from pyspark.sql import SparkSession

REPEATS = 5
SINGLE_ROW_REPEATS = 15


def seconds(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def track(spark: SparkSession, table: str) -> None:
    spark.sql(f"CREATE MATERIALIZED VIEW {table}_count AS SELECT count(*) AS n FROM {table}")


def insert_overhead(spark: SparkSession, rows: int) -> None:
    """A bulk INSERT (``rows`` rows, where the write dominates) and a single-row one (where
    the fixed costs do: capture's, and the metastore's), tracked vs untracked."""
    for table in ("tracked", "untracked"):
        spark.sql(f"CREATE TABLE {table} (id BIGINT, v BIGINT) USING parquet")
        spark.sql(f"INSERT INTO {table} VALUES (0, 0)")  # warm up the write path
    track(spark, "tracked")
    bulk = "INSERT INTO {} SELECT id, id % 97 FROM range(" + str(rows) + ")"
    compare(spark, f"INSERT {rows:,} rows", bulk)
    compare(spark, "INSERT 1 row", "INSERT INTO {} VALUES (1, 1)", SINGLE_ROW_REPEATS)


def compare(spark: SparkSession, label: str, statement: str, repeats: int = REPEATS) -> None:
    """``statement`` (``{}``: the table) into the untracked and the tracked table."""
    timings: dict[str, list[float]] = {"untracked": [], "tracked": []}
    for _ in range(repeats):  # alternating, so both see the same machine
        for table, samples in timings.items():
            sql = statement.format(table)
            samples.append(seconds(lambda sql=sql: spark.sql(sql).collect()))
    untracked, tracked = (statistics.median(timings[t]) for t in ("untracked", "tracked"))
    print(
        f"{label} (median of {repeats}): untracked {untracked:.3f} s, "
        f"tracked {tracked:.3f} s, ratio {tracked / untracked:.2f}x"
    )


def table_files(spark: SparkSession, table: str) -> dict[str, int]:
    location = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").where("col_name = 'Location'")
    root = Path(str(location.first()[1]).removeprefix("file:"))  # type: ignore[index]
    return {p.name: p.stat().st_ino for p in root.glob("part-*.parquet")}


def delete_cost(spark: SparkSession, rows: int, files: int) -> None:
    print(f"DELETE of 0.1% of {rows:,} rows in {files} files (tracked, copy-on-write):")
    results = {}
    for name, condition in (("spread", "id % 1000 = 0"), ("concentrated", f"id < {rows // 1000}")):
        table = f"big_{name}"
        spark.range(rows).selectExpr("id", "id % 97 AS v").repartitionByRange(
            files, "id"
        ).write.format("parquet").saveAsTable(table)
        track(spark, table)
        before = table_files(spark, table)
        delete = f"DELETE FROM {table} WHERE {condition}"
        elapsed = seconds(lambda statement=delete: spark.sql(statement).collect())
        after = table_files(spark, table)
        linked = sum(1 for name_, inode in after.items() if before.get(name_) == inode)
        results[name] = elapsed
        print(
            f"  {name:<13} {elapsed:6.2f} s  files replaced {len(before) - linked:3d} "
            f"(by {len(after) - linked} new), linked {linked:3d}"
        )
    print(f"  spread / concentrated: {results['spread'] / results['concentrated']:.1f}x")


def main() -> None:
    insert_rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    table_rows = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000_000
    files = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    with tempfile.TemporaryDirectory() as warehouse:
        spark = sparkmv.session(warehouse, **{"spark.sql.shuffle.partitions": "4"})
        insert_overhead(spark, insert_rows)
        delete_cost(spark, table_rows, files)
        spark.stop()


if __name__ == "__main__":
    main()
