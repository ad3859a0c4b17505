"""Incremental vs full refresh for the same change, from one run (issue: incremental refresh).

For each of two fact sizes (defaults 1M and 10M rows) the script builds, in its own database,
``fact`` (parquet, ``FILES`` files), ``dim1`` (1,000 rows) and ``dim2`` (100 rows), and two
views, each created twice (``*_inc``, ``*_full``) so that both copies have consumed the same
versions of the base tables:

(a) filter-project: ``SELECT id, k1, amount * 2, upper(note) FROM fact WHERE flag < 10``
    (10% of the fact rows);
(b) 3-way join: ``fact ⋈ dim1 ⋈ dim2`` with ``d1.region < 2`` (10% of the fact rows);
(c) distinct aggregate: ``SELECT k1, count(DISTINCT k2), count(*), sum(amount) FROM fact
    GROUP BY k1`` (1,000 groups; 100,000 per-(group, value) counters beside them).

Each round changes ``fact`` by inserting 0.1% new rows (new ids) and deleting 0.1% of the rows
(``id % 1000 = r``, spread over every file, by copy-on-write); the writes are timed on their
own (that is capture's cost, not the refresh's). Then, for each view, ``REFRESH ... v_inc``
(policy AUTO: incremental when it can) and ``REFRESH ... v_full FULL`` (forced recompute)
consume the same change; their order alternates between rounds. Printed are the medians over
the rounds, the ratio full / incremental, the mode each refresh reported and the view rows it
reported inserting/deleting (Δview, last round), then, per refresh, the Spark jobs it launched,
its py4j round trips (counted on every thread, as ``common.Py4jCalls`` does for
``bench/tpch.py``: the JVM's callback into sparkmv's handler, the handler's calls back, py4j's
releases of collected JVM objects) and its driver time (wall time while no Spark job ran).
Refresh cost should follow |Δ|, not |fact|, so the ratio should grow with the fact size
(printed as "ratio growth"). Last, a second AUTO refresh with no pending change: its time, its
mode, the number of Spark jobs it launched (it should launch none over the data) and its py4j
round trips.

Then the cost of reading each view: a scan of every column (``sum(hash(*))``, median of 3)
of ``v_inc``, whose buckets were patched (its mask is skipped by an anti join), and of
``v_full``, written whole by its last refresh.

After the refreshes every view is compared with its query as a multiset (``EXCEPT ALL`` both
ways, and the counts): OK or WRONG. A tiny copy of the whole run goes first, unprinted, so
that JVM warm-up does not land in the first measurement.

``python bench/refresh.py [small_rows] [large_rows] [rounds]`` (defaults 1M, 10M, 3).
Not a test: nothing is asserted.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field

from common import (
    Py4jCalls,
    Timed,
    bench_session,
    mismatch,
    print_header,
    refresh,
    seconds,
)
from pyspark.sql import SparkSession

FILES = 12
CHANGE_FRACTION = 1000  # 1 row in 1000 inserted, 1 in 1000 deleted: 0.1% each
WARM_UP_ROWS = 20_000

# Deterministic pseudo-random columns of fact row ``id`` (used for the load and the inserts).
FACT_COLUMNS = (
    "id",
    "CAST(pmod(hash(id, 1), 1000) AS INT) AS k1",
    "CAST(pmod(hash(id, 2), 100) AS INT) AS k2",
    "CAST(pmod(hash(id, 3), 10000000) / 100 AS DECIMAL(12,2)) AS amount",
    "CAST(pmod(hash(id, 4), 100) AS INT) AS flag",
    "concat('note-', CAST(pmod(hash(id, 5), 100000) AS STRING)) AS note",
)

VIEWS = {
    "filter-project": (
        "fp",
        "SELECT id, k1, amount * 2 AS doubled, upper(note) AS note FROM fact WHERE flag < 10",
    ),
    "3-way join": (
        "j3",
        "SELECT f.id, f.amount, d1.name, d2.label FROM fact f "
        "JOIN dim1 d1 ON f.k1 = d1.k1 JOIN dim2 d2 ON f.k2 = d2.k2 WHERE d1.region < 2",
    ),
    "distinct aggregate": (
        "da",
        "SELECT k1, count(DISTINCT k2) AS k2s, count(*) AS n, sum(amount) AS total "
        "FROM fact GROUP BY k1",
    ),
}


@dataclass
class SizeResult:
    rows: int
    inserted: int = 0
    deleted: int = 0
    insert: Timed = field(default_factory=Timed)
    delete: Timed = field(default_factory=Timed)
    full: dict[str, Timed] = field(default_factory=dict)
    incremental: dict[str, Timed] = field(default_factory=dict)
    no_change: dict[str, Timed] = field(default_factory=dict)
    read_patched: dict[str, Timed] = field(default_factory=dict)
    read_rewritten: dict[str, Timed] = field(default_factory=dict)
    masked: dict[str, str] = field(default_factory=dict)  # Masked Rows of v_inc
    wrong: dict[str, list[str]] = field(default_factory=dict)  # mismatches, per view label


def load(spark: SparkSession, rows: int) -> None:
    spark.range(rows).selectExpr(*FACT_COLUMNS).repartition(FILES).write.format(
        "parquet"
    ).saveAsTable("fact")
    spark.range(1000).selectExpr(
        "CAST(id AS INT) AS k1", "concat('name-', id) AS name", "CAST(id % 20 AS INT) AS region"
    ).coalesce(1).write.format("parquet").saveAsTable("dim1")
    spark.range(100).selectExpr("CAST(id AS INT) AS k2", "concat('label-', id) AS label").coalesce(
        1
    ).write.format("parquet").saveAsTable("dim2")
    for prefix, query in VIEWS.values():
        for suffix in ("inc", "full"):
            spark.sql(f"CREATE MATERIALIZED VIEW {prefix}_{suffix} AS {query}")


def change(spark: SparkSession, rows: int, round_: int, result: SizeResult) -> None:
    """Insert ``rows / 1000`` new rows, delete the rows with ``id % 1000 = 7 + round_``."""
    count = max(rows // CHANGE_FRACTION, 1)
    start = rows + round_ * count  # new ids: after the load and after earlier rounds' inserts
    insert = (
        f"INSERT INTO fact SELECT {', '.join(FACT_COLUMNS)} FROM range({start}, {start + count})"
    )
    result.insert.samples.append(seconds(lambda: spark.sql(insert).collect()))
    result.inserted += count
    delete = f"DELETE FROM fact WHERE id % {CHANGE_FRACTION} = {7 + round_}"
    started = time.perf_counter()
    affected = spark.sql(delete).collect()[0][0]
    result.delete.samples.append(time.perf_counter() - started)
    result.deleted += int(affected)


def run_size(
    spark: SparkSession, calls: Py4jCalls, rows: int, rounds: int, database: str
) -> SizeResult:
    spark.sql(f"CREATE DATABASE {database}")
    spark.sql(f"USE {database}")
    result = SizeResult(rows)
    try:
        load(spark, rows)
        for round_ in range(rounds):
            change(spark, rows, round_, result)
            for label, (prefix, _) in VIEWS.items():
                statements = [
                    (f"REFRESH MATERIALIZED VIEW {prefix}_inc", result.incremental),
                    (f"REFRESH MATERIALIZED VIEW {prefix}_full FULL", result.full),
                ]
                for statement, into in statements[:: 1 if round_ % 2 == 0 else -1]:
                    refresh(spark, statement, into.setdefault(label, Timed()), calls)
        for label, (prefix, _) in VIEWS.items():
            refresh(
                spark,
                f"REFRESH MATERIALIZED VIEW {prefix}_inc",
                result.no_change.setdefault(label, Timed()),
                calls,
            )
        for label, (prefix, _) in VIEWS.items():
            for suffix, into in (("inc", result.read_patched), ("full", result.read_rewritten)):
                timed = into.setdefault(label, Timed())
                timed.samples += [read_all(spark, f"{prefix}_{suffix}") for _ in range(3)]
            described = spark.sql(f"DESCRIBE MATERIALIZED VIEW EXTENDED {prefix}_inc").collect()
            result.masked[label] = next(
                r.data_type for r in described if r.col_name == "Masked Rows"
            )
        for label, (prefix, query) in VIEWS.items():
            found = (mismatch(spark, f"{prefix}_{suffix}", query) for suffix in ("inc", "full"))
            result.wrong[label] = [found_ for found_ in found if found_ is not None]
    finally:  # drop everything: the next size needs the disk
        for prefix, _ in VIEWS.values():
            for suffix in ("inc", "full"):
                spark.sql(f"DROP MATERIALIZED VIEW IF EXISTS {prefix}_{suffix}")
        for table in ("fact", "dim1", "dim2"):
            spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql("USE default")
        spark.sql(f"DROP DATABASE {database}")
    return result


def read_all(spark: SparkSession, view: str) -> float:
    """Seconds to read every column of every row of ``view``."""
    return seconds(lambda: spark.sql(f"SELECT sum(hash(*)) FROM {view}").collect())


def report(results: list[SizeResult], rounds: int) -> None:
    print(f"\nrefresh after inserting + deleting 0.1% of fact (median of {rounds} rounds)")
    header = (
        f"{'view':<18} {'fact rows':>11} {'full s':>8} {'incr s':>8} {'ratio':>7}  "
        f"{'AUTO mode':<12} {'FULL mode':<9} {'AUTO Δview':>13} {'FULL Δview':>17} check"
    )
    print_header(header)
    for label in VIEWS:
        for result in results:
            full, incremental = result.full[label], result.incremental[label]
            print(
                f"{label:<18} {result.rows:>11,} {full.median:8.2f} {incremental.median:8.2f} "
                f"{full.median / incremental.median:6.2f}x  {incremental.mode:<12} "
                f"{full.mode:<9} {incremental.changes[-1]:>13} {full.changes[-1]:>17} "
                f"{'WRONG' if result.wrong[label] else 'OK'}"
            )
    reasons = {
        reason
        for result in results
        for timed in (*result.incremental.values(), *result.no_change.values())
        for mode, reason in zip(timed.modes, timed.reasons, strict=True)
        if mode != "INCREMENTAL"
    }
    print("  Δview: rows_inserted/rows_deleted the refresh reported (last round)")
    for result in results:
        for label in VIEWS:
            for found in result.wrong[label]:
                print(f"  WRONG at {result.rows:,} fact rows: {found}")
    for reason in sorted(reasons):
        print(f"  AUTO refreshed fully: {reason}")

    print("\nper refresh (medians), incremental (AUTO) / full: Spark jobs, py4j round trips,")
    print("driver ms (wall time while no Spark job ran)")
    header = (
        f"{'view':<18} {'fact rows':>11} {'jobs i/f':>9} {'py4j i/f':>11} {'driver ms i/f':>15}"
    )
    print_header(header)
    for label in VIEWS:
        for result in results:
            pair = (result.incremental[label], result.full[label])
            jobs = "/".join(f"{statistics.median(timed.jobs):g}" for timed in pair)
            calls = "/".join(f"{statistics.median(timed.calls):.0f}" for timed in pair)
            driver = "/".join(f"{1000 * statistics.median(timed.driver):.0f}" for timed in pair)
            print(f"{label:<18} {result.rows:>11,} {jobs:>9} {calls:>11} {driver:>15}")

    small, large = results[0], results[-1]
    growth = ", ".join(
        f"{label} {ratio(large, label) / ratio(small, label):.2f}x" for label in VIEWS
    )
    print(f"\nratio growth ({large.rows:,} / {small.rows:,} fact rows): {growth}")

    print("\nno-change refresh (AUTO, nothing pending):")
    for result in results:
        cells = ", ".join(
            f"{label} {result.no_change[label].median:.2f} s "
            f"({result.no_change[label].mode}, Spark jobs: {result.no_change[label].jobs[-1]}, "
            f"py4j round trips: {result.no_change[label].calls[-1]})"
            for label in VIEWS
        )
        print(f"  {result.rows:>11,} fact rows: {cells}")

    print("\nreading a view (all columns), patched (v_inc) / rewritten (v_full), median of 3:")
    for result in results:
        cells = ", ".join(
            f"{label} {result.read_patched[label].median:.2f} / "
            f"{result.read_rewritten[label].median:.2f} s ({result.masked[label]} masked rows)"
            for label in VIEWS
        )
        print(f"  {result.rows:>11,} fact rows: {cells}")

    print("\nchange capture (the writes, median per round):")
    for result in results:
        print(
            f"  {result.rows:>11,} fact rows: INSERT {result.inserted // rounds:,} rows "
            f"{result.insert.median:.2f} s, DELETE {result.deleted // rounds:,} rows "
            f"{result.delete.median:.2f} s (copy-on-write, {FILES} files)"
        )


def ratio(result: SizeResult, label: str) -> float:
    return result.full[label].median / result.incremental[label].median


def main() -> None:
    small_rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    large_rows = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000_000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as warehouse:
        spark = bench_session(warehouse)
        calls = Py4jCalls(spark)
        # warm-up: JIT, codegen, metastore connections; not printed
        run_size(spark, calls, WARM_UP_ROWS, 1, "bench_refresh_warm_up")
        results = [
            run_size(spark, calls, rows, rounds, f"bench_refresh_{size}")
            for size, rows in (("small", small_rows), ("large", large_rows))
        ]
        report(results, rounds)
        spark.stop()
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
