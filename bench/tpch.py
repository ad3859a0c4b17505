"""TPC-H refresh benchmark: incremental vs full refresh after RF1/RF2, from one run (issue 5).

For each scale factor (defaults SF 0.1 and SF 1) the script generates the eight TPC-H tables
with DuckDB's ``tpch`` extension (``CALL dbgen``, exported as parquet and cached in
``bench/.data/sf<SF>/``, so reruns skip generation; DuckDB is closed before Spark starts), loads
them in their own database as parquet tables, and creates each query of ``QUERIES`` (read from
``../shared/corpora/tpch/queries/q<N>.sql``, its ``ORDER BY``/``LIMIT`` removed: they are
applied when the view is read) twice as a materialized view: ``q<N>_inc`` (policy AUTO:
incremental when it can) and ``q<N>_full`` (refreshed with ``REFRESH ... FULL``), so that both
copies consume the same change.

Each round applies TPC-H's refresh functions through the extension (plain Spark SQL; sparkmv
captures the writes), each on ``SF × 1500`` orders:

- RF1: ``INSERT INTO orders`` copies of existing orders with new keys above the current
  maximum (a different slice of the largest original keys each round) and ``INSERT INTO
  lineitem`` their 1–7 lineitems with the new ``l_orderkey``;
- RF2: ``DELETE FROM lineitem`` and ``DELETE FROM orders`` the orders with the smallest keys
  left (``key > previous bound AND key <= bound``; copy-on-write).

The four writes are timed on their own (that is capture's cost, not the refresh's). Then, for
each view, ``REFRESH ... q<N>_inc`` and ``REFRESH ... q<N>_full FULL``; their order alternates
between rounds. Printed per query and SF: the medians over the rounds, the ratio full /
incremental, the mode AUTO chose (a query AUTO cannot maintain refreshes fully; the reason is
printed below the table), the number of Spark jobs each refresh launched, the view rows the
incremental refresh reported inserting/deleting (Δview, last round) and the check: after the
last round both copies are compared with their query as a multiset (``EXCEPT ALL`` both ways,
and the counts), OK or WRONG. Each view is also read once with its ``ORDER BY``/``LIMIT``.

``QUERIES`` are the TPC-H queries AUTO maintains incrementally (Q1, Q3, Q5–Q10, Q12, Q14, Q19)
and two that it refreshes fully, as examples of the reasons: Q4 (``EXISTS``) and Q13 (``LEFT
OUTER JOIN``); the others use subqueries in expressions too (Q2, Q11, Q15–Q18, Q20–Q22).

A second table says where an incremental refresh's time goes: the part during which a Spark job
ran, the rest (driver work: the bridge, building and analysing the delta plans, metastore
calls, file listings, change-log reads), the number of py4j round trips (every DataFrame and
Column operation of the refresh is one), and a refresh with nothing pending (the fixed cost; it
launches no job); a closing note sums it up per SF. A copy of the whole run at SF 0.01 goes
first, unprinted, so that JVM warm-up does not land in the first measurement.

``python bench/tpch.py [sf ...]`` (default ``0.1 1``). Not a test: nothing is asserted.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import sqlglot
from common import Py4jCalls, Timed, bench_session, mismatch, print_header, refresh
from duckdb_extensions import extension_importer
from pyspark.sql import Row, SparkSession

QUERY_DIR = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "tpch" / "queries"
DATA_DIR = Path(__file__).resolve().parent / ".data"
TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")
QUERIES = (1, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14, 19)
ORDERS_PER_SF = 1500  # TPC-H's refresh functions insert and delete SF × 1500 orders
ROUNDS = 2
WARM_UP_SF = 0.01


@dataclass(frozen=True)
class Query:
    number: int
    body: str  # the query without its ORDER BY / LIMIT: the view's query
    order: str  # its ORDER BY / LIMIT, applied when the view is read

    @property
    def label(self) -> str:
        return f"Q{self.number}"

    def view(self, suffix: str) -> str:
        return f"q{self.number}_{suffix}"


@dataclass
class Writes:
    """The change of one scale factor: RF1 (inserts) and RF2 (deletes), timed per statement."""

    inserted: dict[str, int] = field(default_factory=dict)  # rows, per table, all rounds
    deleted: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, list[float]] = field(default_factory=dict)  # per statement kind

    def time(self, spark: SparkSession, kind: str, statement: str) -> list[Row]:
        """Run ``statement`` and record its seconds under ``kind``; the rows it returned."""
        started = time.perf_counter()
        rows = spark.sql(statement).collect()
        self.seconds.setdefault(kind, []).append(time.perf_counter() - started)
        return rows


@dataclass
class SfResult:
    sf: float
    rows: dict[str, int] = field(default_factory=dict)  # per table, after the load
    generate_s: float = 0.0
    load_s: float = 0.0
    create_s: float = 0.0
    writes: Writes = field(default_factory=Writes)
    full: dict[int, Timed] = field(default_factory=dict)
    incremental: dict[int, Timed] = field(default_factory=dict)
    no_change: dict[int, Timed] = field(default_factory=dict)
    wrong: dict[int, list[str]] = field(default_factory=dict)  # mismatches, per query
    ordered_rows: dict[int, int] = field(default_factory=dict)  # rows read with ORDER BY/LIMIT

    @property
    def maintained(self) -> list[int]:
        """The queries whose AUTO copy refreshed incrementally in every round."""
        return [
            number
            for number, timed in self.incremental.items()
            if set(timed.modes) == {"INCREMENTAL"}
        ]


def read_query(number: int) -> Query:
    """The query of ``q<number>.sql`` without its ORDER BY / LIMIT, and those two apart."""
    text = (QUERY_DIR / f"q{number}.sql").read_text()
    tree = sqlglot.parse_one(text, dialect="spark")
    body = tree.copy()
    body.set("order", None)
    body.set("limit", None)
    order = " ".join(
        part.sql(dialect="spark")
        for part in (tree.args.get("order"), tree.args.get("limit"))
        if part is not None
    )
    return Query(number, body.sql(dialect="spark", comments=False), order)


def sf_name(sf: float) -> str:
    return f"{sf:g}"


def generate(sf: float) -> tuple[Path, float]:
    """The directory of the SF's eight parquet files (generated unless cached) and the seconds
    generating took (0 when cached)."""
    target = DATA_DIR / f"sf{sf_name(sf)}"
    if all((target / f"{table}.parquet").is_file() for table in TABLES):
        return target, 0.0
    started = time.perf_counter()
    staging = DATA_DIR / f".sf{sf_name(sf)}.partial"  # renamed into place when complete
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    # the extension is installed from its wheel into a directory of ours, not ~/.duckdb
    connection = duckdb.connect(config={"extension_directory": str(DATA_DIR / "extensions")})
    try:
        extension_importer.import_extension("tpch", con=connection)
        connection.execute("LOAD tpch")
        connection.execute(f"CALL dbgen(sf={sf})")
        for table in TABLES:
            connection.execute(f"COPY {table} TO '{staging / table}.parquet' (FORMAT parquet)")
    finally:
        connection.close()
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target, time.perf_counter() - started


def load(spark: SparkSession, data: Path, result: SfResult) -> None:
    started = time.perf_counter()
    for table in TABLES:
        # DuckDB's BIGINT, INTEGER, DECIMAL(15,2), DATE and VARCHAR read as Spark's own types
        spark.read.parquet(str(data / f"{table}.parquet")).write.format("parquet").saveAsTable(
            table
        )
        result.rows[table] = spark.table(table).count()
    result.load_s = time.perf_counter() - started


def create_views(spark: SparkSession, queries: list[Query], result: SfResult) -> None:
    started = time.perf_counter()
    for query in queries:
        spark.sql(f"CREATE MATERIALIZED VIEW {query.view('inc')} AS {query.body}")
        spark.sql(f"CREATE MATERIALIZED VIEW {query.view('full')} AS {query.body}")
    result.create_s = time.perf_counter() - started


def scalar(spark: SparkSession, query: str) -> int:
    return int(spark.sql(query).collect()[0][0])


def copy_columns(spark: SparkSession, table: str, key: str, offset: int) -> str:
    """The select list copying ``table``'s rows with ``key + offset`` as their key."""
    return ", ".join(
        f"{column} + {offset} AS {column}" if column == key else column
        for column in spark.table(table).columns
    )


def change(
    spark: SparkSession, sf: float, round_: int, state: dict[str, int], writes: Writes
) -> None:
    """RF1 then RF2 of round ``round_``: ``state`` holds the key bounds between rounds."""
    orders = max(round(sf * ORDERS_PER_SF), 1)
    # RF1: copies of the `orders` largest original keys not copied yet, shifted above them all
    high = state["copy_below"]
    low = scalar(
        spark,
        f"SELECT min(o_orderkey) FROM (SELECT o_orderkey FROM orders WHERE o_orderkey <= {high} "
        f"ORDER BY o_orderkey DESC LIMIT {orders})",
    )
    offset = (round_ + 1) * state["key_offset"]
    for table, key in (("orders", "o_orderkey"), ("lineitem", "l_orderkey")):
        where = f"{key} BETWEEN {low} AND {high}"
        inserted = scalar(spark, f"SELECT count(*) FROM {table} WHERE {where}")
        writes.time(
            spark,
            f"RF1 INSERT {table}",
            f"INSERT INTO {table} SELECT {copy_columns(spark, table, key, offset)} "
            f"FROM {table} WHERE {where}",
        )
        writes.inserted[table] = writes.inserted.get(table, 0) + inserted
    state["copy_below"] = low - 1
    # RF2: the `orders` smallest keys left, with their lineitems
    previous = state["deleted_up_to"]
    bound = scalar(
        spark,
        f"SELECT max(o_orderkey) FROM (SELECT o_orderkey FROM orders WHERE o_orderkey > "
        f"{previous} ORDER BY o_orderkey LIMIT {orders})",
    )
    for table, key in (("lineitem", "l_orderkey"), ("orders", "o_orderkey")):
        rows = writes.time(
            spark,
            f"RF2 DELETE {table}",
            f"DELETE FROM {table} WHERE {key} > {previous} AND {key} <= {bound}",
        )
        writes.deleted[table] = writes.deleted.get(table, 0) + int(rows[0]["num_affected_rows"])
    state["deleted_up_to"] = bound


def run_sf(
    spark: SparkSession,
    calls: Py4jCalls,
    sf: float,
    data: Path,
    queries: list[Query],
    rounds: int,
    database: str,
) -> SfResult:
    spark.sql(f"CREATE DATABASE {database}")
    spark.sql(f"USE {database}")
    result = SfResult(sf)
    try:
        load(spark, data, result)
        create_views(spark, queries, result)
        max_key = scalar(spark, "SELECT max(o_orderkey) FROM orders")
        state = {
            "key_offset": 10 ** len(str(max_key)),  # new keys: above every original key
            "copy_below": max_key,
            "deleted_up_to": 0,
        }
        for round_ in range(rounds):
            change(spark, sf, round_, state, result.writes)
            for query in queries:
                statements = [
                    (f"REFRESH MATERIALIZED VIEW {query.view('inc')}", result.incremental),
                    (f"REFRESH MATERIALIZED VIEW {query.view('full')} FULL", result.full),
                ]
                for statement, into in statements[:: 1 if round_ % 2 == 0 else -1]:
                    refresh(spark, statement, into.setdefault(query.number, Timed()), calls)
        for query in queries:  # nothing pending: the fixed cost of a refresh
            refresh(
                spark,
                f"REFRESH MATERIALIZED VIEW {query.view('inc')}",
                result.no_change.setdefault(query.number, Timed()),
                calls,
            )
        for query in queries:
            expected = spark.sql(query.body).cache()  # run once for both copies
            expected.createOrReplaceTempView("expected")
            found = (
                mismatch(spark, query.view(suffix), "SELECT * FROM expected")
                for suffix in ("inc", "full")
            )
            result.wrong[query.number] = [found_ for found_ in found if found_ is not None]
            expected.unpersist()
            ordered = f"SELECT * FROM {query.view('inc')} {query.order}"
            result.ordered_rows[query.number] = len(spark.sql(ordered).collect())
    finally:  # drop everything: the next SF needs the disk
        spark.catalog.dropTempView("expected")
        for query in queries:
            for suffix in ("inc", "full"):
                spark.sql(f"DROP MATERIALIZED VIEW IF EXISTS {query.view(suffix)}")
        for table in TABLES:
            spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql("USE default")
        spark.sql(f"DROP DATABASE {database}")
    return result


def driver_seconds(timed: Timed) -> list[float]:
    """Per sample: the seconds no Spark job ran (bridge, planning, metastore, listings)."""
    return [wall - in_jobs for wall, in_jobs in zip(timed.samples, timed.in_jobs, strict=True)]


def closing_note(result: SfResult) -> str:
    """Over all incremental refreshes of the SF: how long, how much of it outside Spark jobs,
    how many jobs and py4j round trips, and the refresh with nothing pending."""
    maintained = [result.incremental[number] for number in result.maintained]
    if not maintained:
        return f"  SF {sf_name(result.sf)}: no view refreshed incrementally"
    wall = [sample for timed in maintained for sample in timed.samples]
    driver = [seconds for timed in maintained for seconds in driver_seconds(timed)]
    jobs = [count for timed in maintained for count in timed.jobs]
    calls = [count for timed in maintained for count in timed.calls]
    idle = [sample for number in result.maintained for sample in result.no_change[number].samples]
    return (
        f"  SF {sf_name(result.sf)}: an incremental refresh took {statistics.median(wall):.2f} s "
        f"(median over {len(maintained)} views), {sum(driver) / sum(wall):.0%} of it outside "
        f"Spark jobs, with {statistics.median(jobs):g} jobs and {statistics.median(calls):.0f} "
        f"py4j round trips (~{1000 * sum(driver) / max(sum(calls), 1):.2f} ms of driver time "
        f"per round trip: building and analysing the delta plans, metastore and file-system "
        f"calls); with nothing pending {statistics.median(idle):.2f} s and no job (the fixed cost)"
    )


def report(results: list[SfResult], queries: list[Query], rounds: int) -> None:
    print(
        f"\nrefresh after RF1 + RF2 (SF × {ORDERS_PER_SF} orders each; median of {rounds} rounds)"
    )
    header = (
        f"{'query':<6} {'SF':>5} {'full s':>8} {'incr s':>8} {'ratio':>7}  {'AUTO mode':<12} "
        f"{'jobs incr':>9} {'jobs full':>9} {'Δview':>13}  check"
    )
    print_header(header)
    for query in queries:
        for result in results:
            full, incremental = result.full[query.number], result.incremental[query.number]
            print(
                f"{query.label:<6} {sf_name(result.sf):>5} {full.median:8.2f} "
                f"{incremental.median:8.2f} {full.median / incremental.median:6.2f}x  "
                f"{incremental.mode:<12} {statistics.median(incremental.jobs):9g} "
                f"{statistics.median(full.jobs):9g} {incremental.changes[-1]:>13}  "
                f"{'WRONG' if result.wrong[query.number] else 'OK'}"
            )
    print("  jobs: Spark jobs the refresh launched (median); Δview: +rows_inserted/-rows_deleted")
    print("  the incremental refresh reported (last round); check: both copies vs the query")
    for result in results:
        for query in queries:
            for found in result.wrong[query.number]:
                print(f"  WRONG at SF {sf_name(result.sf)}: {found}")
    fallbacks = {
        (query.label, reason)
        for result in results
        for query in queries
        for mode, reason in zip(
            result.incremental[query.number].modes,
            result.incremental[query.number].reasons,
            strict=True,
        )
        if mode != "INCREMENTAL"
    }
    for label, reason in sorted(fallbacks, key=lambda item: (int(item[0][1:]), item[1])):
        print(f"  {label}: AUTO refreshed fully: {reason}")

    print("\nwhere an incremental refresh's time goes (AUTO copies that refreshed incrementally;")
    print("medians): wall s, Spark jobs, s while a job ran, s outside jobs (driver), py4j round")
    print("trips; then the same refresh with nothing pending (the fixed cost)")
    header = (
        f"{'query':<6} {'SF':>5} {'incr s':>8} {'jobs':>5} {'in jobs':>8} {'driver':>8} "
        f"{'py4j':>7}  {'no change s':>11} {'jobs':>5} {'py4j':>6}"
    )
    print_header(header)
    for query in queries:
        for result in results:
            if query.number not in result.maintained:
                continue
            incremental, idle = result.incremental[query.number], result.no_change[query.number]
            print(
                f"{query.label:<6} {sf_name(result.sf):>5} {incremental.median:8.2f} "
                f"{statistics.median(incremental.jobs):5g} "
                f"{statistics.median(incremental.in_jobs):8.2f} "
                f"{statistics.median(driver_seconds(incremental)):8.2f} "
                f"{statistics.median(incremental.calls):7.0f}  {idle.median:11.2f} "
                f"{statistics.median(idle.jobs):5g} {statistics.median(idle.calls):6.0f}"
            )
    for result in results:
        print(closing_note(result))
    for result in results:
        print(
            f"\nSF {sf_name(result.sf)}: "
            + ", ".join(f"{table} {rows:,}" for table, rows in result.rows.items())
        )
        generated = f"generated in {result.generate_s:.1f} s" if result.generate_s else "cached"
        print(
            f"  data {generated}; load {result.load_s:.1f} s; CREATE of {2 * len(queries)} views "
            f"{result.create_s:.1f} s"
        )
        print(
            "  read with ORDER BY/LIMIT: "
            + ", ".join(
                f"{query.label} {result.ordered_rows[query.number]}"
                for query in queries
                if query.order
            )
            + " rows"
        )
        writes = result.writes
        print(
            f"  change per round: RF1 +{writes.inserted['orders'] // rounds:,} orders "
            f"+{writes.inserted['lineitem'] // rounds:,} lineitems, RF2 "
            f"-{writes.deleted['orders'] // rounds:,} orders "
            f"-{writes.deleted['lineitem'] // rounds:,} lineitems"
        )
        print(
            "  writes (capture's cost, median s): "
            + ", ".join(
                f"{kind} {statistics.median(samples):.2f}"
                for kind, samples in writes.seconds.items()
            )
        )


def main() -> None:
    sfs = [float(arg) for arg in sys.argv[1:]] or [0.1, 1.0]
    rounds = ROUNDS
    started = time.perf_counter()
    queries = [read_query(number) for number in QUERIES]
    data = {}
    generated = {}
    for sf in dict.fromkeys([WARM_UP_SF, *sfs]):  # before Spark starts: DuckDB is closed
        data[sf], generated[sf] = generate(sf)
    with tempfile.TemporaryDirectory() as warehouse:
        spark = bench_session(warehouse)
        # warm-up: JIT, codegen, metastore connections; not printed
        calls = Py4jCalls(spark)
        run_sf(spark, calls, WARM_UP_SF, data[WARM_UP_SF], queries, 1, "bench_tpch_warm_up")
        results = []
        for sf in sfs:
            result = run_sf(
                spark,
                calls,
                sf,
                data[sf],
                queries,
                rounds,
                f"bench_tpch_sf{sf_name(sf).replace('.', '_')}",
            )
            result.generate_s = generated[sf]
            results.append(result)
        report(results, queries, rounds)
        spark.stop()
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
