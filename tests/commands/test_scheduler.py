"""The scheduler (``commands/scheduler.py``) over a chain of views over views, driven by a
clock of the test's own: ``run_once`` is one look, and time passes only when the test moves
the clock (no sleeping). The chain: ``a`` (TARGET LAG DOWNSTREAM) over table ``t``, ``b``
(DOWNSTREAM) over ``a``, ``c`` (TARGET LAG '10 minutes') over ``b``."""

from __future__ import annotations

import threading

import pytest
from conftest import assert_view_matches_query, view_description
from conftest import refresh_history as history
from pyspark.sql import SparkSession
from sparkmv.apply.materialize import now_ms
from sparkmv.commands.scheduler import Outcome, Scheduler, running
from sparkmv.identifiers import TableName

MINUTE = 60_000


class FakeClock:
    """Time as the test sets it; a wait returns at once, as if stopped."""

    def __init__(self, start_ms: int) -> None:
        self.time_ms = start_ms
        self.waits: list[float] = []

    def now_ms(self) -> int:
        return self.time_ms

    def advance(self, milliseconds: int) -> None:
        self.time_ms += milliseconds

    def wait(self, seconds: float, stop: threading.Event) -> bool:
        self.waits.append(seconds)
        return True


@pytest.fixture
def chain(spark: SparkSession, db: str) -> str:
    spark.sql("CREATE TABLE t (k INT, v INT) USING parquet")
    spark.sql("INSERT INTO t VALUES (1, 10), (2, 20)")
    spark.sql(
        "CREATE MATERIALIZED VIEW a TARGET LAG DOWNSTREAM AS "
        "SELECT k, sum(v) AS total FROM t GROUP BY k"
    )
    spark.sql("CREATE MATERIALIZED VIEW b TARGET LAG DOWNSTREAM AS SELECT k, total FROM a")
    spark.sql(
        "CREATE MATERIALIZED VIEW c TARGET LAG '10 minutes' AS SELECT k FROM b WHERE total > 15"
    )
    return db


def names(db: str, *views: str) -> list[Outcome]:
    return [Outcome(TableName(view, db)) for view in views]


def test_target_lag_is_met_through_the_chain_in_dependency_order(
    spark: SparkSession, chain: str
) -> None:
    db = chain
    scheduler = Scheduler(spark, FakeClock(now_ms()))
    clock = scheduler.clock
    assert isinstance(clock, FakeClock)
    assert scheduler.run_once() == []  # nothing pending
    spark.sql("INSERT INTO t VALUES (3, 30), (1, 1)")
    clock.time_ms = now_ms()  # the change's commit time, or later
    clock.advance(MINUTE)
    assert scheduler.run_once() == []  # one minute old: c can wait
    decision = scheduler.decision
    assert decision is not None
    plan = decision.plans[TableName("c", db)]
    assert plan.target_lag_ms == 10 * MINUTE
    assert plan.next_run_ms is not None and plan.next_run_ms <= clock.time_ms + 9 * MINUTE
    assert plan.lag_ms >= MINUTE
    clock.time_ms = plan.next_run_ms  # the change would be older than the lag by its end
    assert scheduler.run_once() == names(db, "a", "b", "c")
    for view in ("a", "b", "c"):
        assert_view_matches_query(spark, view)
        assert [(r.trigger, r.status) for r in history(spark, view)] == [("SCHEDULE", "SUCCEEDED")]
    assert scheduler.decision is not None
    # Refreshed: nothing pending, the lag is met and nothing is due.
    clock.advance(20 * MINUTE)
    assert scheduler.run_once() == []
    assert scheduler.decision.plans[TableName("c", db)].lag_ms == 0


def test_downstream_views_refresh_only_when_a_reader_needs_them(
    spark: SparkSession, chain: str
) -> None:
    db = chain
    spark.sql("CREATE MATERIALIZED VIEW lonely TARGET LAG DOWNSTREAM AS SELECT k FROM t")
    spark.sql("ALTER MATERIALIZED VIEW c DROP SCHEDULE")
    spark.sql("INSERT INTO t VALUES (4, 40)")
    scheduler = Scheduler(spark, FakeClock(now_ms() + 1000 * MINUTE))
    assert scheduler.run_once() == []  # no scheduled reader: a, b and lonely never refresh
    for view in ("a", "b", "lonely"):
        assert history(spark, view) == []
    # c scheduled again, every 5 minutes: its due run pulls b and a (pending), not lonely.
    spark.sql("ALTER MATERIALIZED VIEW c SET SCHEDULE EVERY '5 minutes'")
    assert scheduler.run_once() == names(db, "a", "b", "c")
    assert history(spark, "lonely") == []
    for view in ("a", "b", "c"):
        assert_view_matches_query(spark, view)
    # c's next run: nothing pending upstream, so only c refreshes (a SKIPPED record).
    clock = scheduler.clock
    assert isinstance(clock, FakeClock)
    clock.advance(5 * MINUTE)
    assert scheduler.run_once() == names(db, "c")
    assert [r.status for r in history(spark, "c")] == ["SUCCEEDED", "SKIPPED"]
    assert len(history(spark, "a")) == 1


def test_a_failing_view_backs_off_and_is_recorded(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE t (k INT, v INT) USING parquet")
    spark.sql("INSERT INTO t VALUES (1, 10)")
    spark.conf.set("spark.sparkmv.schedule.retrySeconds", "60")
    spark.conf.set("spark.sparkmv.schedule.maxRetrySeconds", "150")
    try:
        spark.sql(
            "CREATE MATERIALIZED VIEW ratios SCHEDULE EVERY '5 minutes' AS "
            "SELECT k, 100 DIV (v - 8) AS r FROM t"
        )
        spark.sql("INSERT INTO t VALUES (5, 8)")  # its refresh divides by zero
        clock = FakeClock(now_ms() + 5 * MINUTE)
        scheduler = Scheduler(spark, clock)
        name = TableName("ratios", db)
        assert scheduler.run_once() == [Outcome(name, "DIVIDE_BY_ZERO")]
        (failed,) = history(spark, "ratios")
        assert (failed.trigger, failed.status, failed.error_class) == (
            "SCHEDULE",
            "FAILED",
            "DIVIDE_BY_ZERO",
        )
        assert scheduler.backoff[name].failures == 1
        assert scheduler.backoff[name].retry_at_ms == clock.time_ms + MINUTE
        clock.advance(MINUTE - 1)
        assert scheduler.run_once() == []  # backing off: not tried, nothing recorded
        assert len(history(spark, "ratios")) == 1
        assert scheduler.decision is not None
        plan = scheduler.decision.plans[name]
        assert plan.backoff == scheduler.backoff[name]
        assert plan.next_run_ms == scheduler.backoff[name].retry_at_ms
        clock.advance(1)
        assert scheduler.run_once() == [Outcome(name, "DIVIDE_BY_ZERO")]
        assert scheduler.backoff[name].failures == 2
        assert scheduler.backoff[name].retry_at_ms == clock.time_ms + 2 * MINUTE  # doubled
        clock.advance(2 * MINUTE)
        assert scheduler.run_once() == [Outcome(name, "DIVIDE_BY_ZERO")]
        assert scheduler.backoff[name].retry_at_ms == clock.time_ms + 150_000  # capped
        assert [(r.trigger, r.status) for r in history(spark, "ratios")] == [
            ("SCHEDULE", "FAILED")
        ] * 3
        # Fixed: the next try succeeds and the back-off is over.
        spark.sql("ALTER MATERIALIZED VIEW ratios AS SELECT k, 100 DIV (v - 7) AS r FROM t")
        clock.advance(150_000)
        assert scheduler.run_once() == [Outcome(name)]
        assert name not in scheduler.backoff
        assert_view_matches_query(spark, "ratios")
    finally:
        spark.conf.unset("spark.sparkmv.schedule.retrySeconds")
        spark.conf.unset("spark.sparkmv.schedule.maxRetrySeconds")


def test_a_failing_view_in_the_chain_backs_off_and_holds_its_readers(
    spark: SparkSession, chain: str
) -> None:
    db = chain
    spark.sql("ALTER MATERIALIZED VIEW b AS SELECT k, 100 DIV (total - 8) AS total FROM a")
    spark.sql("REFRESH MATERIALIZED VIEW c")  # c reads b's new contents: nothing pending
    spark.sql("INSERT INTO t VALUES (9, 8)")  # b's refresh divides by zero
    clock = FakeClock(now_ms() + 10 * MINUTE)
    scheduler = Scheduler(spark, clock)
    a, b = TableName("a", db), TableName("b", db)
    # c, due too, is held back: b's failure left what is pending for it in b.
    assert scheduler.run_once() == [Outcome(a), Outcome(b, "DIVIDE_BY_ZERO")]
    assert [(r.trigger, r.status) for r in history(spark, "b")] == [("SCHEDULE", "FAILED")]
    assert len(history(spark, "c")) == 1  # the REFRESH above
    assert scheduler.backoff[b].failures == 1
    # While b backs off, c is not refreshed either.
    clock.advance(30_000)
    assert scheduler.run_once() == []
    clock.advance(30_000)
    assert scheduler.run_once() == [Outcome(b, "DIVIDE_BY_ZERO")]
    assert scheduler.backoff[b].failures == 2
    assert [r.status for r in history(spark, "b")] == ["FAILED", "FAILED"]
    assert len(history(spark, "c")) == 1
    spark.sql("ALTER MATERIALIZED VIEW b AS SELECT k, 100 DIV (total - 7) AS total FROM a")
    clock.advance(2 * MINUTE)
    assert scheduler.run_once() == names(db, "b", "c")
    assert b not in scheduler.backoff
    for view in ("a", "b", "c"):
        assert_view_matches_query(spark, view)


class BlockingClock(FakeClock):
    """A ``FakeClock`` whose wait says that a look ended, then blocks until stopped."""

    def __init__(self, start_ms: int) -> None:
        super().__init__(start_ms)
        self.looked = threading.Event()

    def wait(self, seconds: float, stop: threading.Event) -> bool:
        self.waits.append(seconds)
        self.looked.set()
        return stop.wait()


def test_the_running_scheduler_is_what_describe_and_show_report(
    spark: SparkSession, chain: str
) -> None:
    assert running() is None
    assert view_description(spark, "c")["Next Scheduled Refresh"].startswith("not running")
    spark.sql("INSERT INTO t VALUES (6, 60)")
    clock = BlockingClock(now_ms())
    scheduler = Scheduler(spark, clock)
    scheduler.start()
    try:
        assert clock.looked.wait(600), "the scheduler's thread made no look"
        assert running() is scheduler
        assert clock.waits == [15.0]  # spark.sparkmv.schedule.pollSeconds
        plan = scheduler.decision.plans[TableName("c", chain)] if scheduler.decision else None
        assert plan is not None and plan.next_run_ms is not None
        described = view_description(spark, "c")
        assert described["Schedule"] == "TARGET LAG '10 minutes'"
        assert described["Next Scheduled Refresh"] != ""
        assert not described["Next Scheduled Refresh"].startswith("not running")
        assert described["Current Lag"].endswith(" seconds")
        assert described["Current Lag"] != "0 seconds"
        (row,) = spark.sql("SHOW MATERIALIZED VIEWS LIKE 'c'").collect()
        assert row.schedule == "TARGET LAG '10 minutes'"
        assert row.next_refresh == described["Next Scheduled Refresh"]
        assert row.current_lag_seconds >= 1
    finally:
        scheduler.stop()
    assert running() is None
