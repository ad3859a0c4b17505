"""TPC-H refresh benchmark: all 22 queries, incremental vs full refresh (issues 5 and 24).

Incremental and full refresh after RF1/RF2 and updates of the other tables, from one run.

For each scale factor (defaults SF 0.1 and SF 1) the script generates the eight TPC-H tables
with DuckDB's ``tpch`` extension (``CALL dbgen``, exported as parquet and cached in
``bench/.data/sf<SF>/``, so reruns skip generation; DuckDB is closed before Spark starts), loads
them in their own database as parquet tables, and creates each query of ``QUERIES`` (read from
``../shared/corpora/tpch/queries/q<N>.sql``, its ``ORDER BY``/``LIMIT`` removed: they are
applied when the view is read) twice as a materialized view: ``q<N>_inc`` (policy AUTO:
incremental when it can) and ``q<N>_full`` (refreshed with ``REFRESH ... FULL``), so that both
copies consume the same change, and once as an ordinary parquet table ``q<N>_plain`` (``CREATE
TABLE ... AS``), which each round rewrites with ``INSERT OVERWRITE`` of the query: what a user
without materialized views would do (in the same session, so its write passes sparkmv's
capture hook, which only looks the table up: no view reads it).

Each round applies TPC-H's refresh functions through the extension (plain Spark SQL; sparkmv
captures the writes), each on ``SF × 1500`` orders, in one of two ways (``--change``; by default
both, one after the other on the same tables and views, reported apart):

- ``range``: RF1 ``INSERT INTO orders`` copies of existing orders with new keys above the
  current maximum (a different slice of the largest original keys each round) and ``INSERT INTO
  lineitem`` their 1–7 lineitems with the new ``l_orderkey``; RF2 ``DELETE FROM lineitem`` and
  ``DELETE FROM orders`` the orders with the smallest keys left (``key > previous bound AND key
  <= bound``; copy-on-write). Key ranges flatter copy-on-write (the deleted rows sit in a few
  row groups of a few files) and row-group skipping;
- ``random``: the same, but RF1 copies a random sample of the original orders and RF2 deletes
  randomly spread original orders (``IN (<keys>)``), so that deleted rows are spread over every
  file. The samples are the orders with the smallest ``xxhash64(o_orderkey, seed, round)``:
  seeded (``--seed``) and deterministic.

RF1 and RF2 touch only ``orders`` and ``lineitem``: Q2, Q11 and Q16 read neither and would
pass as no change, and the dimension side of the other joins would never change. So each round
(either way) then ``UPDATE``s ``SF × 100`` rows of each of ``part``, ``partsupp``, ``supplier``
and ``customer`` (``UPDATES``; plain Spark SQL, captured and copy-on-write like RF2), picked the
same seeded way (the smallest hash of the key, the seed, the round and the table). The
assignments move rows into or out of the queries' filters, joins and groups, or change columns
they return: ``p_name``/``p_brand``/``p_type``/``p_size``/``p_container`` (Q2, Q8, Q9, Q14, Q16,
Q17, Q19, Q20), ``ps_supplycost``/``ps_availqty`` (Q2's minimum, Q9, Q11, Q20), ``s_acctbal``/
``s_comment``/``s_nationkey`` (Q2, Q16's ``NOT IN``, the nation joins), ``c_acctbal``/
``c_mktsegment``/``c_nationkey`` (Q3, Q5, Q7, Q8, Q10, Q22's average); the values toggle (a row
updated again moves back). ``partsupp``'s rows are sampled among those Q2, Q11 or Q20 read (of
``p_size = 15`` brass parts, ``forest`` parts or German suppliers), ``customer``'s among those
of Q22's country codes: a few uniform ones would rarely touch them.

The writes are timed on their own (that is capture's cost, not the refresh's). Then, for
each query, ``REFRESH ... q<N>_inc``, ``REFRESH ... q<N>_full FULL`` and ``INSERT OVERWRITE
q<N>_plain``; their order alternates between rounds. Each statement is measured alike
(``common.measure``): wall time, Spark jobs launched, the time outside Spark jobs (driver work:
the bridge, building and analysing plans in Python, metastore calls, file listings) and py4j
round trips, counted on every thread (the JVM's callback into sparkmv's handler, the handler's
calls back into the JVM, py4j's releases of collected objects). Printed per query, SF and
change: the medians over the rounds, the first round's incremental refresh on its own (the
first at its SF in the process: cold caches and a JVM not yet warmed up), the ratio full /
incremental, the mode AUTO chose (a query AUTO cannot maintain, or finds cheaper to
recompute, refreshes fully; the reason is printed below the table), the view rows the
incremental refresh reported inserting/deleting (Δview, last round) and the check: after the
last round of a change both copies are compared with their query as a multiset (``EXCEPT
ALL`` both ways, and the counts), OK or WRONG. Each view is also read
once with its ``ORDER BY``/``LIMIT``.

``QUERIES`` are all 22 (``--queries`` picks some): since issue 24 sparkmv maintains their
subqueries (``[NOT] EXISTS``, ``[NOT] IN``, scalar aggregates, decorrelated) and outer joins
incrementally.

A second table says where an incremental refresh's time goes: the part during which a Spark job
ran, the rest, the py4j round trips by kind (calls: methods, constructors, fields; lookups:
resolving ``jvm.a.b.C`` and members by reflection; releases of JVM objects Python dropped), and
a refresh with nothing pending (the fixed cost; it launches no job); a closing note sums it up
per SF. Last, one line per query of the "fast refresh" issue (``TARGET_QUERIES``) against its
targets (at SF 1, or at the largest SF run when SF 1 is not), each marked met / NOT MET; the
dimension updates are part of the change they refresh since issue 24. A copy of the
whole run at SF 0.01 goes first, unprinted, so that JVM warm-up does not land in the first
measurement.

With ``--no-updates`` a round is RF1 and RF2 alone: the change issue 23 states its targets
for (the updates came with issue 24).

``python bench/tpch.py [sf ...] [--change range|random|both] [--seed N] [--rounds N]
[--queries 1,6,…] [--no-updates]`` (default ``0.1 1``, both, seed 5, 3 rounds, all 22, with
the updates). Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import sqlglot
from common import Py4jCalls, Timed, bench_session, measure, mismatch, print_header, refresh
from duckdb_extensions import extension_importer
from pyspark.sql import Row, SparkSession
from sqlglot import exp

QUERY_DIR = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "tpch" / "queries"
DATA_DIR = Path(__file__).resolve().parent / ".data"
TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")
QUERIES = tuple(range(1, 23))
ORDERS_PER_SF = 1500  # TPC-H's refresh functions insert and delete SF × 1500 orders
UPDATES_PER_SF = 100  # rows of each of part, partsupp, supplier, customer updated per round
ROUNDS = 3
SEED = 5
WARM_UP_SF = 0.01
CHANGE_TITLES = {
    "range": "key ranges (RF1 copies the largest keys, RF2 deletes the smallest)",
    "random": "random orders (RF1 copies a random sample, RF2 deletes randomly spread orders)",
}

# The "fast refresh" issue's targets, for its queries: incremental vs FULL at TARGET_SF.
TARGET_QUERIES = (1, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14, 19)
TARGET_SF = 1.0
BASE_SF = 0.1  # the ratio at TARGET_SF should be MIN_GROWTH × the ratio at BASE_SF
MIN_RATIO = {1: 8.0, 3: 4.0, 5: 4.0, 10: 4.0, 12: 2.5, 14: 2.5, 19: 2.5, 6: 2.0}
# Issue 53's targets per incremental refresh.
MAX_JOBS_SINGLE_TABLE = 1
MAX_JOBS_JOIN = 3
MAX_ROUND_TRIPS = 100
MIN_GROWTH = 3.0


@dataclass(frozen=True)
class Query:
    number: int
    body: str  # the query without its ORDER BY / LIMIT: the view's query
    order: str  # its ORDER BY / LIMIT, applied when the view is read
    tables: int  # distinct tables it reads

    @property
    def label(self) -> str:
        return f"Q{self.number}"

    def view(self, suffix: str) -> str:
        return f"q{self.number}_{suffix}"

    @property
    def max_jobs(self) -> int:
        return MAX_JOBS_SINGLE_TABLE if self.tables == 1 else MAX_JOBS_JOIN


@dataclass
class Writes:
    """The change of one scale factor: RF1 (inserts), RF2 (deletes) and the updates of the
    other tables, timed per statement."""

    inserted: dict[str, int] = field(default_factory=dict)  # rows, per table, all rounds
    deleted: dict[str, int] = field(default_factory=dict)
    updated: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, list[float]] = field(default_factory=dict)  # per statement kind

    def time(self, spark: SparkSession, kind: str, statement: str) -> list[Row]:
        """Run ``statement`` and record its seconds under ``kind``; the rows it returned."""
        started = time.perf_counter()
        rows = spark.sql(statement).collect()
        self.seconds.setdefault(kind, []).append(time.perf_counter() - started)
        return rows


@dataclass
class ChangeResult:
    """What the rounds of one way of changing the tables (``--change``) measured at one SF."""

    change: str
    writes: Writes = field(default_factory=Writes)
    overwrite: dict[int, Timed] = field(default_factory=dict)  # INSERT OVERWRITE, per query
    full: dict[int, Timed] = field(default_factory=dict)
    incremental: dict[int, Timed] = field(default_factory=dict)
    no_change: dict[int, Timed] = field(default_factory=dict)
    wrong: dict[int, list[str]] = field(default_factory=dict)  # mismatches, per query

    @property
    def maintained(self) -> list[int]:
        """The queries whose AUTO copy refreshed incrementally in every round."""
        return [
            number
            for number, timed in self.incremental.items()
            if set(timed.modes) == {"INCREMENTAL"}
        ]

    def ratio(self, number: int) -> float:
        return self.full[number].median / self.incremental[number].median


@dataclass
class SfResult:
    sf: float
    rows: dict[str, int] = field(default_factory=dict)  # per table, after the load
    generate_s: float = 0.0
    load_s: float = 0.0
    create_s: float = 0.0
    changes: dict[str, ChangeResult] = field(default_factory=dict)  # in the order run
    ordered_rows: dict[int, int] = field(default_factory=dict)  # rows read with ORDER BY/LIMIT


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
    ctes = {cte.alias for cte in tree.find_all(exp.CTE)}
    tables = len({table.name for table in tree.find_all(exp.Table)} - ctes)
    return Query(number, body.sql(dialect="spark", comments=False), order, tables)


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
    for query in queries:  # not timed: the INSERT OVERWRITE target
        spark.sql(f"CREATE TABLE {query.view('plain')} USING parquet AS {query.body}")


def scalar(spark: SparkSession, query: str) -> int:
    return int(spark.sql(query).collect()[0][0])


def copy_columns(spark: SparkSession, table: str, key: str, offset: int) -> str:
    """The select list copying ``table``'s rows with ``key + offset`` as their key."""
    return ", ".join(
        f"{column} + {offset} AS {column}" if column == key else column
        for column in spark.table(table).columns
    )


Predicate = Callable[[str], str]  # the order key's column → a condition on it


def rf1(spark: SparkSession, orders: Predicate, offset: int, writes: Writes) -> None:
    """Insert copies of the ``orders`` and their lineitems, ``offset`` added to their keys."""
    for table, key in (("orders", "o_orderkey"), ("lineitem", "l_orderkey")):
        where = orders(key)
        inserted = scalar(spark, f"SELECT count(*) FROM {table} WHERE {where}")
        writes.time(
            spark,
            f"RF1 INSERT {table}",
            f"INSERT INTO {table} SELECT {copy_columns(spark, table, key, offset)} "
            f"FROM {table} WHERE {where}",
        )
        writes.inserted[table] = writes.inserted.get(table, 0) + inserted


def rf2(spark: SparkSession, orders: Predicate, writes: Writes) -> None:
    """Delete the ``orders`` and their lineitems."""
    for table, key in (("lineitem", "l_orderkey"), ("orders", "o_orderkey")):
        rows = writes.time(spark, f"RF2 DELETE {table}", f"DELETE FROM {table} WHERE {orders(key)}")
        writes.deleted[table] = writes.deleted.get(table, 0) + int(rows[0]["num_affected_rows"])


def order_count(sf: float) -> int:
    return max(round(sf * ORDERS_PER_SF), 1)


def change_range(
    spark: SparkSession, sf: float, state: dict[str, int], writes: Writes, seed: int
) -> None:
    """RF1 then RF2 on key ranges: ``state`` holds the key bounds between rounds."""
    orders = order_count(sf)
    # RF1: copies of the `orders` largest original keys not copied yet, shifted above them all
    high = state["copy_below"]
    low = scalar(
        spark,
        f"SELECT min(o_orderkey) FROM (SELECT o_orderkey FROM orders WHERE o_orderkey <= {high} "
        f"ORDER BY o_orderkey DESC LIMIT {orders})",
    )
    offset = (state["round"] + 1) * state["key_offset"]
    rf1(spark, lambda key: f"{key} BETWEEN {low} AND {high}", offset, writes)
    state["copy_below"] = low - 1
    # RF2: the `orders` smallest keys left, with their lineitems
    previous = state["deleted_up_to"]
    bound = scalar(
        spark,
        f"SELECT max(o_orderkey) FROM (SELECT o_orderkey FROM orders WHERE o_orderkey > "
        f"{previous} ORDER BY o_orderkey LIMIT {orders})",
    )
    rf2(spark, lambda key: f"{key} > {previous} AND {key} <= {bound}", writes)
    state["deleted_up_to"] = bound


def sample_orders(
    spark: SparkSession, sf: float, state: dict[str, int], seed: int, purpose: str
) -> str:
    """``SF × 1500`` original order keys (not copies) spread at random: the smallest by a hash
    of the key, the seed, the round and ``purpose``; as an SQL list."""
    keys = spark.sql(
        f"SELECT o_orderkey FROM orders WHERE o_orderkey < {state['key_offset']} "
        f"ORDER BY xxhash64(o_orderkey, {seed}, {state['round']}, '{purpose}'), o_orderkey "
        f"LIMIT {order_count(sf)}"
    ).collect()
    return ", ".join(str(row[0]) for row in sorted(keys))


def change_random(
    spark: SparkSession, sf: float, state: dict[str, int], writes: Writes, seed: int
) -> None:
    """RF1 then RF2 on random orders: copies of a random sample, deletes of other random
    orders, spread over the whole key range (and so over every file)."""
    copied = sample_orders(spark, sf, state, seed, "RF1")
    offset = (state["round"] + 1) * state["key_offset"]
    rf1(spark, lambda key: f"{key} IN ({copied})", offset, writes)
    deleted = sample_orders(spark, sf, state, seed, "RF2")
    rf2(spark, lambda key: f"{key} IN ({deleted})", writes)


@dataclass(frozen=True)
class Update:
    """One table's ``UPDATE`` of each round: which rows are sampled, what is assigned."""

    table: str
    key: tuple[str, ...]  # the table's primary key
    assignments: str  # the SET list
    among: str = "TRUE"  # the rows sampled from


# Each assignment moves rows into or out of some query's filters, joins or groups, or changes
# a column a query returns. Values toggle, so a row updated again (a later round) moves back.
UPDATES = (
    Update(
        "part",
        ("p_partkey",),
        # p_name: Q9 ('%green%'), Q20 ('forest%'); p_brand: Q16, Q17, Q19; p_type: Q2
        # ('%BRASS'), Q8, Q14 ('PROMO%'), Q16; p_size: Q2 (15), Q16 (14); p_container: Q17, Q19
        "p_name = CASE WHEN p_name LIKE 'forest%' THEN concat('old ', p_name) "
        "ELSE concat('forest green ', p_name) END, "
        "p_brand = CASE WHEN p_brand = 'Brand#23' THEN 'Brand#45' ELSE 'Brand#23' END, "
        "p_type = CASE WHEN p_type LIKE '%BRASS' THEN 'PROMO BURNISHED COPPER' "
        "ELSE 'STANDARD POLISHED BRASS' END, "
        "p_size = CASE WHEN p_size = 15 THEN 14 ELSE 15 END, "
        "p_container = CASE WHEN p_container = 'MED BOX' THEN 'SM CASE' ELSE 'MED BOX' END",
    ),
    Update(
        "partsupp",
        ("ps_partkey", "ps_suppkey"),
        # ps_supplycost: Q2 (the minimum), Q9, Q11; ps_availqty: Q11, Q20 (> half the sold
        # quantity: small values flip it)
        "ps_supplycost = CAST(ps_supplycost / 2 AS DECIMAL(15, 2)), "
        "ps_availqty = CASE WHEN ps_availqty >= 20 THEN ps_availqty % 20 "
        "ELSE ps_availqty + 5000 END",
        # a uniform sample of a few rows would rarely touch Q2, Q11 or Q20: the rows they read
        "ps_partkey IN (SELECT p_partkey FROM part WHERE p_size = 15 AND p_type LIKE '%BRASS' "
        "OR p_name LIKE 'forest%') OR ps_suppkey IN (SELECT s_suppkey FROM supplier JOIN "
        "nation ON s_nationkey = n_nationkey WHERE n_name = 'GERMANY')",
    ),
    Update(
        "supplier",
        ("s_suppkey",),
        # s_acctbal: Q2's output; s_comment: Q16 (NOT IN the complaints); s_nationkey: Q2, Q5,
        # Q7-Q9, Q11, Q20, Q21
        "s_acctbal = -s_acctbal, "
        "s_comment = CASE WHEN s_comment LIKE '%Customer%Complaints%' THEN 'no complaints' "
        "ELSE concat(s_comment, ' Customer Complaints') END, "
        "s_nationkey = (s_nationkey + 1) % 25",
    ),
    Update(
        "customer",
        ("c_custkey",),
        # c_acctbal: Q10's output, Q22 (the average, the filter); c_mktsegment: Q3;
        # c_nationkey: Q5, Q7, Q8, Q10
        "c_acctbal = -c_acctbal, "
        "c_mktsegment = CASE WHEN c_mktsegment = 'BUILDING' THEN 'MACHINERY' ELSE 'BUILDING' END, "
        "c_nationkey = (c_nationkey + 1) % 25",
        # Q22 reads 7 of the 25 country codes: a few uniform rows would rarely touch it
        "substring(c_phone, 1, 2) IN ('13', '31', '23', '29', '30', '18', '17')",
    ),
)


def key_condition(key: tuple[str, ...], rows: list[Row]) -> str:
    """A condition on ``key`` that selects ``rows`` (their key's values)."""
    if not rows:
        return "FALSE"
    if len(key) == 1:
        return f"{key[0]} IN ({', '.join(str(row[0]) for row in rows)})"
    matches = (
        " AND ".join(f"{column} = {value}" for column, value in zip(key, row, strict=True))
        for row in rows
    )
    return " OR ".join(f"({match})" for match in matches)


def sample_rows(
    spark: SparkSession, sf: float, update: Update, state: dict[str, int], seed: int
) -> str:
    """``SF × UPDATES_PER_SF`` rows of ``update.among`` at random (the smallest by a hash of
    the key, the seed, the round and the table), as a condition on their key."""
    key = ", ".join(update.key)
    rows = spark.sql(
        f"SELECT {key} FROM {update.table} WHERE {update.among} "
        f"ORDER BY xxhash64({key}, {seed}, {state['round']}, '{update.table}'), {key} "
        f"LIMIT {max(round(sf * UPDATES_PER_SF), 1)}"
    ).collect()
    return key_condition(update.key, sorted(rows))


def update_tables(
    spark: SparkSession, sf: float, state: dict[str, int], writes: Writes, seed: int
) -> None:
    """``UPDATE`` a few random rows of each of ``UPDATES``' tables (RF1 and RF2 touch only
    orders and lineitem: Q2, Q11 and Q16 read neither)."""
    for update in UPDATES:
        where = sample_rows(spark, sf, update, state, seed)
        rows = writes.time(
            spark,
            f"UPDATE {update.table}",
            f"UPDATE {update.table} SET {update.assignments} WHERE {where}",
        )
        writes.updated[update.table] = writes.updated.get(update.table, 0) + int(
            rows[0]["num_affected_rows"]
        )


CHANGES: dict[str, Callable[[SparkSession, float, dict[str, int], Writes, int], None]] = {
    "range": change_range,
    "random": change_random,
}


def check(spark: SparkSession, queries: list[Query], measured: ChangeResult) -> None:
    """Compare both copies of each view with its query."""
    for query in queries:
        expected = spark.sql(query.body).cache()  # run once for both copies
        expected.createOrReplaceTempView("expected")
        found = (
            mismatch(spark, query.view(suffix), "SELECT * FROM expected")
            for suffix in ("inc", "full")
        )
        measured.wrong[query.number] = [found_ for found_ in found if found_ is not None]
        expected.unpersist()


def measure_round(
    spark: SparkSession,
    calls: Py4jCalls,
    queries: list[Query],
    measured: ChangeResult,
    round_: int,
) -> None:
    """Per query: the incremental refresh, the full one and the INSERT OVERWRITE, in an order
    that alternates between rounds."""
    for query in queries:
        statements: list[tuple[Callable[..., object], str, dict[int, Timed]]] = [
            (refresh, f"REFRESH MATERIALIZED VIEW {query.view('inc')}", measured.incremental),
            (refresh, f"REFRESH MATERIALIZED VIEW {query.view('full')} FULL", measured.full),
            (
                measure,
                f"INSERT OVERWRITE TABLE {query.view('plain')} {query.body}",
                measured.overwrite,
            ),
        ]
        for run, statement, into in statements[:: 1 if round_ % 2 == 0 else -1]:
            run(spark, statement, into.setdefault(query.number, Timed()), calls)


def run_sf(
    spark: SparkSession,
    calls: Py4jCalls,
    sf: float,
    data: Path,
    queries: list[Query],
    rounds: int,
    changes: list[str],
    seed: int,
    database: str,
    updates: bool = True,
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
            "round": 0,  # over all changes: each round's copies get their own key offset
        }
        for kind in changes:
            measured = result.changes[kind] = ChangeResult(kind)
            for round_ in range(rounds):
                CHANGES[kind](spark, sf, state, measured.writes, seed)
                if updates:
                    update_tables(spark, sf, state, measured.writes, seed)
                state["round"] += 1
                measure_round(spark, calls, queries, measured, round_)
            for query in queries:  # nothing pending: the fixed cost of a refresh
                refresh(
                    spark,
                    f"REFRESH MATERIALIZED VIEW {query.view('inc')}",
                    measured.no_change.setdefault(query.number, Timed()),
                    calls,
                )
            check(spark, queries, measured)
        for query in queries:
            ordered = f"SELECT * FROM {query.view('inc')} {query.order}"
            result.ordered_rows[query.number] = len(spark.sql(ordered).collect())
    finally:  # drop everything: the next SF needs the disk
        spark.catalog.dropTempView("expected")
        for query in queries:
            for suffix in ("inc", "full"):
                spark.sql(f"DROP MATERIALIZED VIEW IF EXISTS {query.view(suffix)}")
            spark.sql(f"DROP TABLE IF EXISTS {query.view('plain')}")
        for table in TABLES:
            spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql("USE default")
        spark.sql(f"DROP DATABASE {database}")
    return result


def medians(
    values: Iterable[list[float]] | Iterable[list[int]], scale: float = 1, spec: str = ".0f"
) -> str:
    """The medians of several series, ``a/b/c``."""
    return "/".join(f"{scale * statistics.median(series):{spec}}" for series in values)


def closing_note(sf: float, measured: ChangeResult) -> str:
    """Over all incremental refreshes of one SF and change: how long, how much of it outside
    Spark jobs, how many jobs and py4j round trips, and the refresh with nothing pending."""
    where = f"SF {sf_name(sf)}, {measured.change}"
    maintained = [measured.incremental[number] for number in measured.maintained]
    if not maintained:
        return f"  {where}: no view refreshed incrementally"
    wall = [sample for timed in maintained for sample in timed.samples]
    driver = [seconds for timed in maintained for seconds in timed.driver]
    jobs = [count for timed in maintained for count in timed.jobs]
    calls = [count for timed in maintained for count in timed.calls]
    idle = [
        sample for number in measured.maintained for sample in measured.no_change[number].samples
    ]
    return (
        f"  {where}: an incremental refresh took {statistics.median(wall):.2f} s "
        f"(median over {len(maintained)} views), {sum(driver) / sum(wall):.0%} of it outside "
        f"Spark jobs, with {statistics.median(jobs):g} jobs and {statistics.median(calls):.0f} "
        f"py4j round trips (~{1000 * sum(driver) / max(sum(calls), 1):.2f} ms of driver time "
        f"per round trip); with nothing pending {statistics.median(idle):.2f} s (the fixed cost)"
    )


def report_refreshes(
    results: list[SfResult], queries: list[Query], kind: str, rounds: int, updates: bool
) -> None:
    updated = ", ".join(update.table for update in UPDATES)
    others = f"then UPDATEs of {updated}" if updates else "no other table updated"
    print(
        f"\nrefresh after RF1 + RF2 on {CHANGE_TITLES[kind]}; SF × {ORDERS_PER_SF} orders each; "
        f"{others}; median of {rounds} rounds"
    )
    header = (
        f"{'query':<5} {'SF':>4} {'overwrite s':>11} {'full s':>7} {'incr s':>7} {'1st s':>6} "
        f"{'ratio':>7}  "
        f"{'AUTO mode':<12} {'jobs o/f/i':>10} {'py4j o/f/i':>16} {'driver ms o/f/i':>17} "
        f"{'Δview':>13}  check"
    )
    print_header(header)
    for query in queries:
        for result in results:
            measured = result.changes[kind]
            trio = [
                measured.overwrite[query.number],
                measured.full[query.number],
                measured.incremental[query.number],
            ]
            overwrite, full, incremental = trio
            print(
                f"{query.label:<5} {sf_name(result.sf):>4} {overwrite.median:11.2f} "
                f"{full.median:7.2f} {incremental.median:7.2f} {incremental.samples[0]:6.2f} "
                f"{measured.ratio(query.number):6.2f}x  {incremental.mode:<12} "
                f"{medians((timed.jobs for timed in trio), spec='g'):>10} "
                f"{medians(timed.calls for timed in trio):>16} "
                f"{medians((timed.driver for timed in trio), 1000):>17} "
                f"{incremental.changes[-1]:>13}  "
                f"{'WRONG' if measured.wrong[query.number] else 'OK'}"
            )
    print(
        "  o/f/i: INSERT OVERWRITE of the query into a parquet table / REFRESH ... FULL / "
        "incremental (AUTO);"
    )
    print("  1st s: the first round's incremental refresh (the driver's caches are cold);")
    print(
        "  ratio: full s / incr s; jobs: Spark jobs launched; py4j: round trips (every thread); "
        "driver ms: wall"
    )
    print(
        "  time while no Spark job ran (medians); Δview: +rows_inserted/-rows_deleted the "
        "incremental refresh reported"
    )
    print("  (last round); check: both copies vs the query after the last round")
    for result in results:
        for query in queries:
            for found in result.changes[kind].wrong[query.number]:
                print(f"  WRONG at SF {sf_name(result.sf)}: {found}")
    fallbacks = {
        (query.label, reason)
        for result in results
        for query in queries
        for mode, reason in zip(
            result.changes[kind].incremental[query.number].modes,
            result.changes[kind].incremental[query.number].reasons,
            strict=True,
        )
        if mode != "INCREMENTAL"
    }
    for label, reason in sorted(fallbacks, key=lambda item: (int(item[0][1:]), item[1])):
        print(f"  {label}: AUTO refreshed fully: {reason}")


def report_time(results: list[SfResult], queries: list[Query], kinds: list[str]) -> None:
    print("\nwhere an incremental refresh's time goes (AUTO copies that refreshed incrementally;")
    print("medians): wall s, Spark jobs, s while a job ran, s outside jobs (driver), py4j round")
    print("trips in all and by kind (calls, lookups by reflection, releases of JVM objects); then")
    print("the same refresh with nothing pending (the fixed cost)")
    header = (
        f"{'query':<5} {'SF':>4} {'change':<6} {'incr s':>7} {'jobs':>4} {'in jobs':>7} "
        f"{'driver':>7} {'py4j':>6} {'calls':>6} {'lookups':>7} {'releases':>8}  "
        f"{'no change s':>11} {'jobs':>4} {'py4j':>5}"
    )
    print_header(header)
    for query in queries:
        for kind in kinds:
            for result in results:
                measured = result.changes[kind]
                if query.number not in measured.maintained:
                    continue
                incremental = measured.incremental[query.number]
                idle = measured.no_change[query.number]
                print(
                    f"{query.label:<5} {sf_name(result.sf):>4} {kind:<6} "
                    f"{incremental.median:7.2f} {statistics.median(incremental.jobs):4g} "
                    f"{statistics.median(incremental.in_jobs):7.2f} "
                    f"{statistics.median(incremental.driver):7.2f} "
                    f"{statistics.median(incremental.calls):6.0f} "
                    f"{incremental.median_calls('call'):6.0f} "
                    f"{incremental.median_calls('lookup'):7.0f} "
                    f"{incremental.median_calls('release'):8.0f}  {idle.median:11.2f} "
                    f"{statistics.median(idle.jobs):4g} {statistics.median(idle.calls):5.0f}"
                )
    for result in results:
        for kind in kinds:
            print(closing_note(result.sf, result.changes[kind]))


Mark = tuple[str, bool | None]  # what was measured against what target; met, or None: no target


def at_most(label: str, value: float, limit: float) -> Mark:
    return f"{label} {value:g} ≤ {limit:g}", value <= limit


def target_marks(query: Query, by_sf: dict[float, SfResult], sf: float, kind: str) -> list[Mark]:
    """``query``'s results at ``sf`` for the ``kind`` change against the issue's targets."""
    measured = by_sf[sf].changes[kind]
    number = query.number
    incremental = measured.incremental[number]
    ratio = measured.ratio(number)
    marks: list[Mark] = []
    if number in MIN_RATIO:
        marks.append((f"ratio {ratio:.2f}x ≥ {MIN_RATIO[number]:g}x", ratio >= MIN_RATIO[number]))
    else:
        marks.append((f"ratio {ratio:.2f}x (no target)", None))
    if number not in measured.maintained:
        met = None if number not in MIN_RATIO else False
        marks.append((f"AUTO refreshed {incremental.mode}: no incremental refresh", met))
        return marks
    marks.append(at_most("jobs", max(incremental.jobs), query.max_jobs))
    marks.append(at_most("py4j", max(incremental.calls), MAX_ROUND_TRIPS))
    base = by_sf.get(BASE_SF)
    if sf == TARGET_SF and base is not None and number in base.changes[kind].maintained:
        growth = ratio / base.changes[kind].ratio(number)
        marks.append(
            (
                f"ratio SF {sf_name(sf)} / SF {sf_name(BASE_SF)} {growth:.2f} ≥ {MIN_GROWTH:g}",
                growth >= MIN_GROWTH,
            )
        )
    else:
        marks.append(
            (f"ratio growth: needs SF {sf_name(BASE_SF)} and SF {sf_name(TARGET_SF)}", None)
        )
    return marks


def report_targets(results: list[SfResult], queries: list[Query], kinds: list[str]) -> None:
    by_sf = {result.sf: result for result in results}
    sf = TARGET_SF if TARGET_SF in by_sf else max(by_sf)
    print(
        f"\ntargets (incremental vs FULL at SF {sf_name(sf)}: median ratio; jobs and py4j round "
        f"trips of the worst round, ≤ {MAX_JOBS_SINGLE_TABLE} jobs for a single table, "
        f"≤ {MAX_JOBS_JOIN} for a join)"
    )
    if sf != TARGET_SF:
        print(
            f"  SF {sf_name(TARGET_SF)} not run: measured at SF {sf_name(sf)}, below the "
            "targets' SF"
        )
    met = total = 0
    for query in queries:
        if query.number not in TARGET_QUERIES:
            continue
        for kind in kinds:
            marks = target_marks(query, by_sf, sf, kind)
            cells = [
                text if ok is None else f"{text} {'met' if ok else 'NOT MET'}" for text, ok in marks
            ]
            print(f"  {query.label:<4} {kind:<6} " + "; ".join(cells))
            met += sum(ok is True for _, ok in marks)
            total += sum(ok is not None for _, ok in marks)
    print(f"  {met} of {total} targets met")


def report_data(results: list[SfResult], queries: list[Query], rounds: int) -> None:
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
        for kind, measured in result.changes.items():
            writes = measured.writes
            updated = ", ".join(
                f"{rows // rounds:,} {table}" for table, rows in writes.updated.items()
            )
            print(
                f"  {kind} change per round: RF1 +{writes.inserted['orders'] // rounds:,} orders "
                f"+{writes.inserted['lineitem'] // rounds:,} lineitems, RF2 "
                f"-{writes.deleted['orders'] // rounds:,} orders "
                f"-{writes.deleted['lineitem'] // rounds:,} lineitems"
                + (f", UPDATE {updated} rows" if updated else "")
                + "; writes (capture's cost, median s): "
                + ", ".join(
                    f"{statement} {statistics.median(samples):.2f}"
                    for statement, samples in writes.seconds.items()
                )
            )


def report(
    results: list[SfResult], queries: list[Query], kinds: list[str], rounds: int, updates: bool
) -> None:
    for kind in kinds:
        report_refreshes(results, queries, kind, rounds, updates)
    report_time(results, queries, kinds)
    report_targets(results, queries, kinds)
    report_data(results, queries, rounds)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("sfs", nargs="*", type=float, default=[0.1, 1.0], metavar="sf")
    parser.add_argument("--change", choices=("range", "random", "both"), default="both")
    parser.add_argument("--seed", type=int, default=SEED, help="of the random change")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument(
        "--no-updates",
        dest="updates",
        action="store_false",
        help="RF1/RF2 only, the change issue 23 states its targets for: no UPDATE of "
        + ", ".join(update.table for update in UPDATES),
    )
    parser.add_argument(
        "--queries",
        type=lambda text: [int(number) for number in text.split(",")],
        default=list(QUERIES),
        help="comma-separated query numbers (default: all 22)",
    )
    return parser.parse_args()


def main() -> None:
    args = arguments()
    sfs: list[float] = args.sfs
    kinds = list(CHANGES) if args.change == "both" else [args.change]
    rounds: int = args.rounds
    started = time.perf_counter()
    queries = [read_query(number) for number in args.queries]
    data = {}
    generated = {}
    for sf in dict.fromkeys([WARM_UP_SF, *sfs]):  # before Spark starts: DuckDB is closed
        data[sf], generated[sf] = generate(sf)
    with tempfile.TemporaryDirectory() as warehouse:
        spark = bench_session(warehouse)
        calls = Py4jCalls(spark)
        # warm-up: JIT, codegen, metastore connections; not printed
        run_sf(
            spark,
            calls,
            WARM_UP_SF,
            data[WARM_UP_SF],
            queries,
            1,
            kinds,
            args.seed,
            "bench_tpch_warm_up",
            args.updates,
        )
        results = []
        for sf in sfs:
            result = run_sf(
                spark,
                calls,
                sf,
                data[sf],
                queries,
                rounds,
                kinds,
                args.seed,
                f"bench_tpch_sf{sf_name(sf).replace('.', '_')}",
                args.updates,
            )
            result.generate_s = generated[sf]
            results.append(result)
        report(results, queries, kinds, rounds, args.updates)
        spark.stop()
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
