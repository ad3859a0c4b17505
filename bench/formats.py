"""What a refresh over a Delta Lake or an Iceberg base table costs (issue 54): read from the
table's own log, against recomputing the view.

An aggregate view (``SELECT k, SUM(x), COUNT(*) FROM t GROUP BY k``, 100 groups) over a table
of ``rows`` rows in the format. Each round writes (not timed) one inserted row, or one inserted
and one deleted (a copy-on-write DELETE rewrites the data file holding the row), refreshes
incrementally, then refreshes again with nothing pending; after the rounds the view is
refreshed ``FULL`` as many times. Printed per refresh kind: the median time, Spark jobs and
py4j round trips (``common.Py4jCalls``), and FULL's median time over it. The view is checked
against its query at the end.

``make bench-formats`` runs both formats, each on its Spark line with its jars, as `make
test-formats` resolves them (``SPARKMV_DELTA_JARS``, ``SPARKMV_ICEBERG_JARS``);
``python bench/formats.py {delta|iceberg} [rows] [rounds]`` one (defaults 100000 rows, 5
rounds). Not a test: nothing is asserted.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

import sparkmv
from common import TESTS_DIR, Py4jCalls, Timed, mismatch, print_header, refresh
from pyspark.sql import SparkSession

sys.path.insert(0, str(TESTS_DIR / "formats"))
import delta_lake
import iceberg_tables

VIEW = "SELECT k, SUM(x) AS total, COUNT(*) AS n FROM {table} GROUP BY k"


def session(format_name: str, warehouse: Path) -> tuple[SparkSession, str, str]:
    """A session loading ``format_name``'s jars, the table's name and its CREATE clause."""
    conf = {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "4g"}
    if format_name == "delta":
        conf = delta_lake.with_delta(conf)
        table, clause = "t", "USING delta TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"
    else:
        conf = iceberg_tables.with_iceberg(conf, warehouse / "iceberg")
        table, clause = f"{iceberg_tables.CATALOG}.bench.t", "USING iceberg"
    if "spark.jars" not in conf:
        sys.exit(f"no {format_name} jars: run `make bench-formats`")
    return sparkmv.session(warehouse, **conf), table, clause


def row(label: str, timed: Timed) -> str:
    return (
        f"{label:<22} {timed.mode:<12} {statistics.median(timed.samples) * 1000:>9.0f}"
        f" {statistics.median(timed.jobs):>5.0f} {statistics.median(timed.calls):>8.0f}"
    )


def rounds_of(
    spark: SparkSession, table: str, rows: int, rounds: int, deletes: bool, calls: Py4jCalls
) -> tuple[Timed, Timed]:
    """``rounds`` writes of one inserted row (and one deleted, with ``deletes``), each followed
    by an incremental refresh and one with nothing pending."""
    incremental, nothing = Timed(), Timed()
    for number in range(rounds):
        key = rows + number + (rounds if deletes else 0)
        spark.sql(f"INSERT INTO {table} VALUES ({key}, {number % 100}, 1)")
        if deletes:
            spark.sql(f"DELETE FROM {table} WHERE id = {number}")
        refresh(spark, "REFRESH MATERIALIZED VIEW v", incremental, calls)
        refresh(spark, "REFRESH MATERIALIZED VIEW v", nothing, calls)
    return incremental, nothing


def main(format_name: str, rows: int, rounds: int) -> None:
    spark, table, clause = session(format_name, Path(tempfile.mkdtemp(prefix="sparkmv-bench-")))
    spark.sql(f"CREATE TABLE {table} (id BIGINT, k INT, x BIGINT) {clause}")
    spark.sql(f"INSERT INTO {table} SELECT id, CAST(id % 100 AS INT), id FROM range({rows})")
    spark.sql(f"CREATE MATERIALIZED VIEW v AS {VIEW.format(table=table)}")
    calls = Py4jCalls(spark)
    inserted, nothing = rounds_of(spark, table, rows, rounds, False, calls)
    changed, _ = rounds_of(spark, table, rows, rounds, True, calls)
    full = Timed()
    for _ in range(rounds):
        refresh(spark, "REFRESH MATERIALIZED VIEW v FULL", full, calls)
    print(f"{format_name}: {rows} rows, {rounds} rounds of each write, pyspark {spark.version}")
    print_header(f"{'refresh':<22} {'mode':<12} {'ms':>9} {'jobs':>5} {'py4j':>8} {'FULL/it':>8}")
    for label, timed in (
        ("after +1 row", inserted),
        ("after +1/-1 row", changed),
        ("nothing pending", nothing),
        ("FULL", full),
    ):
        print(f"{row(label, timed)} {full.median / timed.median:>7.1f}x")
    wrong = mismatch(spark, "v", VIEW.format(table=table))
    print("view equals its query" if wrong is None else f"VIEW DIFFERS: {wrong}")
    for timed in (inserted, changed):
        if timed.mode != "INCREMENTAL":
            print(f"reasons: {sorted(set(timed.reasons))}")


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if not arguments or arguments[0] not in ("delta", "iceberg"):
        sys.exit("usage: formats.py {delta|iceberg} [rows] [rounds]")
    main(
        arguments[0],
        int(arguments[1]) if len(arguments) > 1 else 100_000,
        int(arguments[2]) if len(arguments) > 2 else 5,
    )
