"""What the refresh benchmarks share: timing a statement, counting its Spark jobs and py4j round
trips, checking a view.

``measure()`` runs one statement and records, in a ``Timed``, its wall time, the number of Spark
jobs it launched and the time those jobs ran (the union of their submission-to-completion
intervals; the rest of the wall time is driver work: the statement's trip through the bridge,
planning in Python, metastore calls, file listings) and, given a ``Py4jCalls``, how many
Python→JVM calls (py4j round trips) it made, by kind. ``refresh()`` measures one ``REFRESH
MATERIALIZED VIEW`` statement and adds the mode, reason, Δview (``+rows_inserted/-rows_deleted``)
and ``irrelevant_rows`` of the row it returns. ``mismatch()`` compares a view with its query as a
multiset.
"""

from __future__ import annotations

import gc
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import sparkmv
from py4j import clientserver, java_gateway
from pyspark.sql import Row, SparkSession

LISTENER_WAIT_MS = 10_000  # job events reach the status store through Spark's listener bus
TESTS_DIR = Path(__file__).resolve().parent.parent / "tests"
SETTLE_TIMEOUT_S = 10.0  # at most this long waiting for py4j's pending object releases


def bench_session(warehouse: str) -> SparkSession:
    """The one local session a benchmark run uses (2 cores: 2 shuffle partitions).

    With ``SPARKMV_TEST_FS=objstore`` the warehouse is on the tests' object-store file system
    (``tests/object_store.py``: no hard links, rename by copy, no append, and no shortcut of
    the local file system at the driver): where users' tables live (S3, ABFS, GCS)."""
    conf = {
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.driver.memory": "4g",
        **object_store_conf(Path(warehouse)),
    }
    spark = sparkmv.session(warehouse, **conf)
    print(f"warehouse: {spark.conf.get('spark.sql.warehouse.dir')}")
    return spark


def object_store_conf(warehouse: Path) -> dict[str, str]:
    """The session conf putting ``warehouse`` on the object store when the run asks for it
    (``SPARKMV_TEST_FS=objstore``), else none."""
    sys.path.insert(0, str(TESTS_DIR))
    import object_store
    import versioned_catalog

    if not object_store.enabled():
        return {}
    warehouse.mkdir(parents=True, exist_ok=True)
    return {**versioned_catalog.session_conf(), **object_store.warehouse_conf(warehouse)}


def bench_database(name: str) -> SparkSession:
    """``bench_session`` over a fresh temporary warehouse, with database ``bench_<name>``
    created and current."""
    spark = bench_session(tempfile.mkdtemp(prefix=f"sparkmv-bench-{name.replace('_', '-')}-"))
    spark.sql(f"CREATE DATABASE bench_{name}")
    spark.sql(f"USE bench_{name}")
    return spark


def print_header(header: str) -> None:
    """A table's column header, underlined."""
    print(header)
    print("-" * len(header))


def seconds(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


@dataclass
class Timed:
    """Samples of one measured action, with the modes and reasons its refreshes reported."""

    samples: list[float] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)  # "+rows_inserted/-rows_deleted"
    jobs: list[int] = field(default_factory=list)  # Spark jobs launched, per sample
    in_jobs: list[float] = field(default_factory=list)  # seconds while a Spark job ran
    calls: list[int] = field(default_factory=list)  # py4j round trips, when counted
    call_kinds: list[Counter[str]] = field(default_factory=list)  # the same, by CALL_KINDS
    irrelevant: list[int] = field(default_factory=list)  # changed rows the filters dropped

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def mode(self) -> str:
        return "/".join(dict.fromkeys(self.modes))  # distinct, in order of first appearance

    @property
    def driver(self) -> list[float]:
        """Per sample: the seconds no Spark job ran (bridge, planning, metastore, listings)."""
        return [wall - in_jobs for wall, in_jobs in zip(self.samples, self.in_jobs, strict=True)]

    def median_calls(self, kind: str) -> float:
        return statistics.median(kinds[kind] for kinds in self.call_kinds)


# py4j commands (the first line of what Python sends, see py4j.protocol) grouped by what they do
CALL_KINDS = {
    "c": "call",  # a method call
    "i": "call",  # a constructor
    "f": "call",  # a field
    "a": "call",  # an array operation
    "l": "call",  # a list operation
    "S": "call",  # a call answered by a stream
    "r": "lookup",  # reflection: resolving jvm.a.b.C one name at a time, a member
    "j": "lookup",  # a JVM view: imports
    "d": "lookup",  # dir()
    "h": "lookup",  # help()
    "m": "release",  # memory: the JVM may drop an object Python no longer references
}
KIND_NAMES = ("call", "lookup", "release", "other")  # "other": e.g. a new connection's auth


class _Wire:
    """Every py4j command this process sends to the JVM, counted by kind.

    Counted where the bytes leave: ``send_command`` of the connection classes, on every thread.
    Under pinned-thread mode (PySpark's default) the gateway is a ``ClientServer`` whose
    ``JavaClient`` keeps one ``ClientServerConnection`` per Python thread: the caller's own, the
    one a JVM callback arrives on (sparkmv's handler runs on the thread py4j's ``PythonServer``
    starts for that connection and calls the JVM back over it), and the ``FinalizerWorker``'s,
    which sends the ``m`` (release) commands of collected ``JavaObject``s. Every ``JavaMember``,
    ``JavaObject``, ``JavaClass``, ``JVMView`` and collection goes through
    ``JavaClient.send_command`` → ``connection.send_command``; only a new connection's
    authentication calls ``connection.send_command`` directly, and is counted here too. Without
    pinned threads the connections are ``GatewayConnection``s, also counted.
    """

    lock: ClassVar[threading.Lock] = threading.Lock()
    sent: ClassVar[Counter[str]] = Counter()  # by kind
    in_flight: ClassVar[int] = 0  # commands sent whose answer has not arrived yet
    installed: ClassVar[bool] = False

    @classmethod
    def install(cls) -> None:
        with cls.lock:
            if cls.installed:
                return
            for connection in (clientserver.ClientServerConnection, java_gateway.GatewayConnection):
                connection.send_command = cls._counting(connection.send_command)
            cls.installed = True

    @classmethod
    def _counting(cls, send: Callable[..., Any]) -> Callable[..., Any]:
        def counted(connection: Any, command: str, *args: Any, **kwargs: Any) -> Any:
            kind = CALL_KINDS.get(command[:1], "other") if command[1:2] == "\n" else "other"
            with cls.lock:
                cls.sent[kind] += 1
                cls.in_flight += 1
            try:
                return send(connection, command, *args, **kwargs)
            finally:
                with cls.lock:
                    cls.in_flight -= 1

        return counted


class Py4jCalls:
    """Counts this process's Python→JVM calls (py4j round trips), on every thread.

    sparkmv's handler runs in this process (py4j calls it back), so a statement's count
    includes every DataFrame and Column operation the refresh made: each is a round trip, and
    many make Spark analyze a plan on the JVM side. Releases of JVM objects Python dropped
    (``m`` commands) are sent later by py4j's finalizer thread, which polls its queue once a
    second: ``settle()`` collects garbage and sends what is queued, so that they are counted
    with the statement that dropped the objects.
    """

    def __init__(self, spark: SparkSession) -> None:
        _Wire.install()
        gateway: Any = spark.sparkContext._gateway
        self.client: Any = gateway._gateway_client

    @property
    def count(self) -> int:
        return sum(self.by_kind().values())

    def by_kind(self) -> Counter[str]:
        with _Wire.lock:
            return Counter(_Wire.sent)

    def settle(self) -> None:
        """Collect garbage and send the releases it queued (and any other thread's pending
        command) before returning."""
        gc.collect()
        queue = getattr(self.client, "finalizer_deque", None)  # ClientServer only
        deadline = time.perf_counter() + SETTLE_TIMEOUT_S
        while queue is not None and time.perf_counter() < deadline:
            try:
                task = queue.pop()  # what FinalizerWorker does, without its 1 s poll
            except IndexError:
                break
            if task == clientserver.SHUTDOWN_FINALIZER_WORKER:
                queue.append(task)
                break
            client, target_id = task
            client.garbage_collect_object(target_id, False)
        while time.perf_counter() < deadline:
            with _Wire.lock:
                if _Wire.in_flight == 0:
                    return
            time.sleep(0.001)


def measure(
    spark: SparkSession, statement: str, into: Timed, calls: Py4jCalls | None = None
) -> list[Row]:
    """Run ``statement``; record its wall time, Spark jobs, time in jobs and py4j round trips in
    ``into``; the rows it returned."""
    before = last_job_id(spark)
    if calls is not None:
        calls.settle()
        calls_before = calls.by_kind()
    started = time.perf_counter()
    rows = spark.sql(statement).collect()
    into.samples.append(time.perf_counter() - started)
    if calls is not None:
        calls.settle()
        made = calls.by_kind()
        made.subtract(calls_before)
        into.call_kinds.append(Counter({kind: made[kind] for kind in KIND_NAMES}))
        into.calls.append(made.total())
    after = last_job_id(spark)
    into.jobs.append(after - before)
    into.in_jobs.append(seconds_in_jobs(spark, before + 1, after))
    return rows


def refresh(
    spark: SparkSession, statement: str, into: Timed, calls: Py4jCalls | None = None
) -> None:
    row = measure(spark, statement, into, calls)[0]
    into.modes.append(str(row["mode"]))
    into.reasons.append(str(row["reason"]))
    into.changes.append(f"+{row['rows_inserted']}/-{row['rows_deleted']}")
    into.irrelevant.append(int(row["irrelevant_rows"]))


def _status_store(spark: SparkSession) -> Any:
    context: Any = spark.sparkContext._jsc.sc()
    context.listenerBus().waitUntilEmpty(LISTENER_WAIT_MS)  # so that finished jobs are listed
    return context.statusStore()


def last_job_id(spark: SparkSession) -> int:
    """The highest Spark job id so far (job ids grow by one per job), -1 before the first."""
    jobs = _status_store(spark).jobsList(None)  # a Scala Seq, by job id
    return -1 if jobs.isEmpty() else max(jobs.head().jobId(), jobs.last().jobId())


def seconds_in_jobs(spark: SparkSession, first: int, last: int) -> float:
    """For how long at least one of the Spark jobs ``first..last`` was running."""
    store = _status_store(spark)
    intervals = []
    for job_id in range(first, last + 1):
        job = store.job(job_id)
        if job.submissionTime().isDefined() and job.completionTime().isDefined():
            intervals.append(
                (job.submissionTime().get().getTime(), job.completionTime().get().getTime())
            )
    covered_ms, end = 0, None
    for start, stop in sorted(intervals):
        if end is None or start > end:
            covered_ms += stop - start
            end = stop
        elif stop > end:
            covered_ms += stop - end
            end = stop
    return covered_ms / 1000


def mismatch(spark: SparkSession, view: str, query: str) -> str | None:
    """None when the view equals its query as a multiset, else what differs."""
    missing = spark.sql(f"SELECT count(*) FROM (({query}) EXCEPT ALL (SELECT * FROM {view}))")
    extra = spark.sql(f"SELECT count(*) FROM ((SELECT * FROM {view}) EXCEPT ALL ({query}))")
    counts = spark.sql(f"SELECT (SELECT count(*) FROM {view}), (SELECT count(*) FROM ({query}))")
    view_rows, query_rows = counts.collect()[0]
    missing_rows, extra_rows = missing.collect()[0][0], extra.collect()[0][0]
    if missing_rows == extra_rows == 0 and view_rows == query_rows:
        return None
    return (
        f"{view}: {view_rows:,} rows, query {query_rows:,}; "
        f"{missing_rows:,} missing, {extra_rows:,} extra"
    )
