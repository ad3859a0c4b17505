"""One SparkSession for the whole run (a JVM start costs seconds), with a fresh database per test.

The session uses a temporary warehouse, so the embedded Derby catalog of the run is its own
and tests that start other processes use other warehouses.
"""

from __future__ import annotations

import gc
import itertools
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import object_store
import pytest
import sparkmv
import versioned_catalog
from formats import delta_lake, iceberg_tables
from hypothesis import HealthCheck, settings
from py4j import clientserver
from pyspark.sql import DataFrame, Row, SparkSession
from sparkmv.capture.change_log import ChangeLog
from sparkmv.capture.files import TableFiles
from sparkmv.capture.tracking import Tracking
from sparkmv.catalog.views import ViewCatalog
from sparkmv.faults import CRASH_AT_ENV
from sparkmv.identifiers import TableName
from sparkmv.zset import WEIGHT

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[1]
_databases = itertools.count()

# `make test` runs a seeded sample of every randomized test; `make test-full` a large one.
FULL_RUN = os.environ.get("SPARKMV_FULL_TESTS") == "1"
settings.register_profile(
    "sparkmv",
    derandomize=not FULL_RUN,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.load_profile("sparkmv")


def spark_examples(sample: int) -> int:
    """Examples for a randomized test that runs Spark jobs: ``sample`` in `make test`."""
    return sample * 20 if FULL_RUN else sample


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    warehouse = tmp_path_factory.mktemp("warehouse")
    session = sparkmv.session(
        warehouse,
        **{
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "2g",  # one session runs the whole suite
            # DSv2 test catalogs; Delta Lake and Iceberg too, in `make test-formats`
            **iceberg_tables.with_iceberg(
                delta_lake.with_delta(versioned_catalog.session_conf()), warehouse / "iceberg"
            ),
            # objstore:// paths; with SPARKMV_TEST_FS=objstore the warehouse is on them
            **(
                object_store.warehouse_conf(warehouse)
                if object_store.enabled()
                else object_store.session_conf(tmp_path_factory.mktemp("objstore"))
            ),
        },
    )
    yield session
    session.stop()


@pytest.fixture
def db(spark: SparkSession) -> Iterator[str]:
    """A fresh, current database for one test; dropped (with its views) afterwards."""
    name = f"t{os.getpid()}_{next(_databases)}"
    spark.sql(f"CREATE DATABASE {name}")
    spark.sql(f"USE {name}")
    yield name
    spark.sql("USE default")
    spark.sql(f"DROP DATABASE {name} CASCADE")


@contextmanager
def session_confs(spark: SparkSession, confs: Mapping[str, str]) -> Iterator[None]:
    """``confs`` set in the session for the block, unset afterwards."""
    for key, value in confs.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key in confs:
            spark.conf.unset(key)


def multiset(frame: DataFrame) -> Counter[tuple[object, ...]]:
    return Counter(tuple(row) for row in frame.collect())


def assert_view_matches_query(spark: SparkSession, view: str) -> None:
    """The correctness oracle (docs/development.md): the view equals its query run afresh, as
    multisets."""
    query = spark.sql(f"DESCRIBE MATERIALIZED VIEW EXTENDED {view}").collect()
    text = next(row.data_type for row in query if row.col_name == "Query")
    database = next(row.data_type for row in query if row.col_name == "Query Database")
    current = spark.catalog.currentDatabase()
    spark.catalog.setCurrentDatabase(database)
    try:
        expected = spark.sql(text)
        actual = spark.table(view)
        assert len(actual.columns) == len(expected.columns)
        rows = multiset(actual)
        assert rows == multiset(expected)
        row_count = next(row.data_type for row in query if row.col_name == "Row Count")
        assert int(row_count) == sum(rows.values()), "the catalog's row count is off"
    finally:
        spark.catalog.setCurrentDatabase(current)


def table_properties(spark: SparkSession, table: str) -> dict[str, str]:
    """``SHOW TBLPROPERTIES table`` as {key: value}."""
    return {row.key: row.value for row in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}


def view_description(spark: SparkSession, view: str) -> dict[str, str]:
    """``DESCRIBE MATERIALIZED VIEW EXTENDED view`` as {field: value} (its column rows come
    first, so a field such as ``Query`` wins over a column of that name)."""
    rows = spark.sql(f"DESCRIBE MATERIALIZED VIEW EXTENDED {view}").collect()
    return {str(row.col_name): str(row.data_type) for row in rows}


def assert_view_equals_query_except_all(spark: SparkSession, view: str) -> None:
    """The oracle (docs/development.md) computed by Spark rather than the driver: the view
    EXCEPT ALL its query run afresh and the query EXCEPT ALL the view are both empty
    (multisets; NULLs match), so on a cluster the comparison itself runs in the executors."""
    described = view_description(spark, view)
    current = spark.catalog.currentDatabase()
    spark.catalog.setCurrentDatabase(described["Query Database"])
    try:
        expected = spark.sql(described["Query"])
        actual = spark.table(view)
        assert len(actual.columns) == len(expected.columns)
        extra, missing = actual.exceptAll(expected), expected.exceptAll(actual)
        if extra.union(missing).count():
            raise AssertionError(
                f"{view} differs from its query: rows only in the view {extra.collect()}, "
                f"rows only in the query {missing.collect()}"
            )
    finally:
        spark.catalog.setCurrentDatabase(current)


def change_log_of(spark: SparkSession, table: str) -> ChangeLog:
    """The change log of tracked ``table`` (of the current database), as sparkmv finds it."""
    catalog = ViewCatalog(spark)
    log = Tracking(spark, catalog).state(catalog.resolve(TableName(table))).log
    assert log is not None, f"{table} is not tracked"
    return log


def table_location(spark: SparkSession, table: str) -> Path:
    """The local directory of ``table`` (a ``file:`` location, or the directory behind an
    ``objstore:`` one: ``object_store``), as its catalog entry says."""
    row = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").where("col_name = 'Location'").first()
    assert row is not None
    return local_path(spark, row.data_type)


def local_path(spark: SparkSession, path: str) -> Path:
    """The local file behind ``path``: a ``file:`` path's, or the object store's backing file
    of an ``objstore:`` one (what a test of a bucket would read with the store's client)."""
    root = spark.sparkContext._jsc.hadoopConfiguration().get(object_store.ROOT_CONF)
    return object_store.local_path(path, Path(str(root)))


def table_files(spark: SparkSession, table: str) -> TableFiles:
    """The current data files of ``table`` (of the current database)."""
    catalog = ViewCatalog(spark)
    return Tracking(spark, catalog).files(catalog.resolve(TableName(table)))


def zset_counter(zset: DataFrame) -> Counter[tuple[object, ...]]:
    """A Z-set DataFrame as {row: weight}."""
    return Counter({tuple(row[:-1]): int(row[WEIGHT]) for row in zset.collect()})


def zset_weights(zset: DataFrame) -> Counter[tuple[object, ...]]:
    """A Z-set DataFrame, consolidated or not, as {row: net weight}: equal rows' weights
    summed, rows whose weights cancel left out."""
    counts: Counter[tuple[object, ...]] = Counter()
    for row in zset.collect():
        counts[tuple(row[c] for c in zset.columns if c != WEIGHT)] += row[WEIGHT]
    return Counter({row: weight for row, weight in counts.items() if weight})


def z_difference(
    new: Counter[tuple[object, ...]], old: Counter[tuple[object, ...]]
) -> Counter[tuple[object, ...]]:
    """``new − old`` as a Z-set: positive for rows gained, negative for rows lost."""
    rows = set(new) | set(old)
    return Counter({row: new[row] - old[row] for row in rows if new[row] != old[row]})


def read_while(read: Callable[[], T], write: Callable[[], None]) -> list[T]:
    """What ``read`` returned, called in a loop by another thread while ``write`` ran.

    Fails if any read failed: a reader must never see a half-applied write.
    """
    results: list[T] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def loop() -> None:
        while not done.is_set():
            try:
                results.append(read())
            except BaseException as error:
                errors.append(error)

    reader = threading.Thread(target=loop)
    reader.start()
    try:
        write()
    finally:
        done.set()
        reader.join()
    assert not errors, errors
    return results


def python_env() -> dict[str, str]:
    """Environment for child processes: this interpreter's venv, the repo's package."""
    env = dict(os.environ)
    # A child's JVM lives for a few statements: C1 alone and the serial collector start it
    # sooner. (Not for the workers' long-lived sessions: C1-only code made them slower.)
    env.setdefault("JDK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    return env


def run_crash_step(
    arguments: list[str], crash_at: str | None, timeout: int = 600
) -> subprocess.CompletedProcess[str]:
    """Run a child Python process (``python *arguments``) with the kill point ``crash_at``
    armed (None: none, whatever this process's environment says); its output captured."""
    env = python_env()
    env.pop(CRASH_AT_ENV, None)
    if crash_at:
        env[CRASH_AT_ENV] = crash_at
    if object_store.enabled():  # the child's warehouse on the store too
        arguments = [str(object_store.CHILD), *arguments]
    return subprocess.run(
        [sys.executable, *arguments],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def last_job_id(spark: SparkSession) -> int:
    """The id of the last Spark job the driver started (-1: none yet), once the jobs that
    finished have reached Spark's status store."""
    context: Any = spark.sparkContext._jsc.sc()
    context.listenerBus().waitUntilEmpty(10_000)
    jobs = context.statusStore().jobsList(None)
    return -1 if jobs.isEmpty() else max(jobs.head().jobId(), jobs.last().jobId())


@dataclass
class RoundTrips:
    count: int = 0


@contextmanager
def py4j_round_trips(spark: SparkSession) -> Iterator[RoundTrips]:
    """The py4j round trips (Python→JVM messages) of what runs inside: every thread's (a
    refresh runs on py4j's callback thread), and the releases of the JVM objects it dropped,
    sent before the block ends; those dropped before it are sent (uncounted) first."""
    trips = RoundTrips()
    client: Any = spark.sparkContext._gateway._gateway_client
    send = client.send_command
    lock = threading.Lock()

    def counting(*args: Any, **kwargs: Any) -> Any:
        with lock:
            trips.count += 1
        return send(*args, **kwargs)

    _send_releases(client)
    client.send_command = counting
    try:
        yield trips
        _send_releases(client)
    finally:
        client.send_command = send


def _send_releases(client: Any) -> None:
    """Collect garbage and send the releases of JVM objects it queued now (py4j's finalizer
    thread would send them within a second, into whatever runs next)."""
    gc.collect()
    queue = getattr(client, "finalizer_deque", None)
    while queue:
        task = queue.pop()
        if task == clientserver.SHUTDOWN_FINALIZER_WORKER:
            queue.append(task)
            break
        owner, target_id = task
        owner.garbage_collect_object(target_id, False)


def refresh_history(spark: SparkSession, view: str) -> list[Row]:
    """The view's refresh records (SHOW MATERIALIZED VIEW REFRESHES), oldest first."""
    return list(reversed(spark.sql(f"SHOW MATERIALIZED VIEW REFRESHES FOR {view}").collect()))
