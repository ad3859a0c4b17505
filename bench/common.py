"""What the refresh benchmarks share: timing a refresh, counting its Spark jobs, checking a view.

``refresh()`` runs one ``REFRESH MATERIALIZED VIEW`` statement and records, in a ``Timed``, its
wall time, the mode, reason, Δview (``+rows_inserted/-rows_deleted``) and ``irrelevant_rows`` of
the row it returns,
the number of Spark jobs it launched and the time those jobs ran (the union of their
submission-to-completion intervals; the rest of the wall time is driver work: the statement's
trip through the bridge, planning in Python, metastore calls, file listings) and, given a
``Py4jCalls``, how many Python→JVM calls (py4j round trips) it made. ``mismatch()`` compares a
view with its query as a multiset.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sparkmv
from pyspark.sql import SparkSession

LISTENER_WAIT_MS = 10_000  # job events reach the status store through Spark's listener bus


def bench_session(warehouse: str) -> SparkSession:
    """The one local session a benchmark run uses (2 cores: 2 shuffle partitions)."""
    return sparkmv.session(
        warehouse,
        **{
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "4g",
        },
    )


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
    irrelevant: list[int] = field(default_factory=list)  # changed rows the filters dropped

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def mode(self) -> str:
        return "/".join(dict.fromkeys(self.modes))  # distinct, in order of first appearance


class Py4jCalls:
    """Counts this process's Python→JVM calls (py4j round trips) from its creation on.

    sparkmv's handler runs in this process (py4j calls it back), so a statement's count
    includes every DataFrame and Column operation the refresh made: each is a round trip, and
    many make Spark analyze a plan on the JVM side.
    """

    def __init__(self, spark: SparkSession) -> None:
        self.count = 0
        gateway: Any = spark.sparkContext._gateway
        client = gateway._gateway_client
        send = client.send_command

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return send(*args, **kwargs)

        client.send_command = counted  # JavaObjects look it up on the client at each call


def refresh(
    spark: SparkSession, statement: str, into: Timed, calls: Py4jCalls | None = None
) -> None:
    before = last_job_id(spark)
    calls_before = calls.count if calls is not None else 0
    started = time.perf_counter()
    row = spark.sql(statement).collect()[0]
    into.samples.append(time.perf_counter() - started)
    if calls is not None:
        into.calls.append(calls.count - calls_before)
    after = last_job_id(spark)
    into.modes.append(str(row["mode"]))
    into.reasons.append(str(row["reason"]))
    into.changes.append(f"+{row['rows_inserted']}/-{row['rows_deleted']}")
    into.irrelevant.append(int(row["irrelevant_rows"]))
    into.jobs.append(after - before)
    into.in_jobs.append(seconds_in_jobs(spark, before + 1, after))


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
