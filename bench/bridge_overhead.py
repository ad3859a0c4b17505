"""What a statement costs through the sparkmv bridge, next to plain Spark doing the same.

Prints, from one run: the shim jar build time; the median latency of no-op statements through
the bridge vs their plain-Spark counterparts (the ratio is the bridge's fixed cost); and a full
refresh of a small view vs running its query into a table. Not a test: nothing is asserted.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import sparkmv
from pyspark.sql import SparkSession
from sparkmv import jar

REPEATS = 30


def median_ms(action: Callable[[], object], repeats: int = REPEATS) -> float:
    action()  # warm up: first use loads classes and opens metastore connections
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def jar_build_seconds() -> float:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        jar.built_jar(Path(tmp) / "bench.jar", jar.shim_sources())  # timing the real build step
        return time.perf_counter() - started


def compare(spark: SparkSession, label: str, ours: str, plain: str) -> None:
    ours_ms = median_ms(lambda: spark.sql(ours).collect())
    plain_ms = median_ms(lambda: spark.sql(plain).collect())
    print(f"{label:<34} {ours_ms:8.1f} ms {plain_ms:8.1f} ms {ours_ms / plain_ms:6.2f}x")


def main() -> None:
    print(f"shim jar build (scalac from pyspark/jars): {jar_build_seconds():.1f} s")
    with tempfile.TemporaryDirectory() as warehouse:
        spark = sparkmv.session(warehouse, **{"spark.sql.shuffle.partitions": "2"})
        spark.sql("CREATE DATABASE bench")
        spark.sql("USE bench")
        header = f"statement (median of {REPEATS})"
        print(f"\n{header:<34} {'sparkmv':>11} {'plain':>11} {'ratio':>7}")
        compare(
            spark,
            "no-op DROP ... IF EXISTS",
            "DROP MATERIALIZED VIEW IF EXISTS nope",
            "DROP VIEW IF EXISTS nope",
        )
        compare(spark, "list (empty database)", "SHOW MATERIALIZED VIEWS", "SHOW TABLES")

        spark.sql("CREATE TABLE t USING parquet AS SELECT id, id % 10 AS k FROM range(10000)")
        spark.sql("CREATE MATERIALIZED VIEW v AS SELECT k, COUNT(*) AS n FROM t GROUP BY k")
        compare(spark, "describe", "DESCRIBE MATERIALIZED VIEW v", "DESCRIBE TABLE v")
        refresh_ms = median_ms(lambda: spark.sql("REFRESH MATERIALIZED VIEW v").collect(), 10)
        spark.sql("CREATE TABLE c (k BIGINT, n BIGINT) USING parquet")
        overwrite = "INSERT OVERWRITE TABLE c SELECT k, COUNT(*) AS n FROM t GROUP BY k"
        overwrite_ms = median_ms(lambda: spark.sql(overwrite).collect(), 10)
        print(
            f"{'full refresh vs INSERT OVERWRITE':<34} {refresh_ms:8.1f} ms "
            f"{overwrite_ms:8.1f} ms {refresh_ms / overwrite_ms:6.2f}x"
        )
        spark.stop()


if __name__ == "__main__":
    main()
