"""The scheduler's decision alone (no Spark): which views are due, in which order, and when
each is due next, over a chain of views a <- b <- c (c reads b, b reads a)."""

from __future__ import annotations

from sparkmv.catalog.schedule import Schedule, ScheduleKind
from sparkmv.commands.schedule_decision import Backoff, ViewState, after_failure, decide
from sparkmv.identifiers import TableName

MINUTE = 60_000
A, B, C = TableName("a", "db"), TableName("b", "db"), TableName("c", "db")
EVERY_5 = Schedule(ScheduleKind.EVERY, 5 * MINUTE)
LAG_10 = Schedule(ScheduleKind.TARGET_LAG, 10 * MINUTE)
LAG_30 = Schedule(ScheduleKind.TARGET_LAG, 30 * MINUTE)
DOWNSTREAM = Schedule(ScheduleKind.DOWNSTREAM)


def chain(
    a: Schedule | None,
    b: Schedule | None,
    c: Schedule | None,
    pending_a: int | None = None,
    pending_b: int | None = None,
    pending_c: int | None = None,
) -> list[ViewState]:
    return [
        ViewState(C, c, (B,), pending_ms=pending_c),
        ViewState(B, b, (A,), pending_ms=pending_b),
        ViewState(A, a, (), pending_ms=pending_a),
    ]


def test_every_is_due_once_its_period_passed_since_the_last_run() -> None:
    views = [ViewState(A, EVERY_5, last_run_ms=100 * MINUTE)]
    early = decide(views, {}, 104 * MINUTE)
    assert early.due == ()
    assert early.plans[A].next_run_ms == 105 * MINUTE
    assert decide(views, {}, 105 * MINUTE).due == (A,)


def test_a_lag_is_due_before_the_oldest_pending_change_gets_older_than_it() -> None:
    views = [ViewState(A, LAG_10, pending_ms=100 * MINUTE, expected_ms=MINUTE)]
    before = decide(views, {}, 108 * MINUTE)
    assert before.due == ()
    assert before.plans[A].next_run_ms == 109 * MINUTE  # its refresh takes a minute
    assert before.plans[A].lag_ms == 8 * MINUTE
    assert decide(views, {}, 109 * MINUTE).due == (A,)


def test_nothing_pending_is_never_due_by_lag() -> None:
    decision = decide([ViewState(A, LAG_10)], {}, 1_000 * MINUTE)
    assert decision.due == ()
    assert decision.plans[A].next_run_ms is None
    assert decision.plans[A].lag_ms == 0


def test_a_lagging_reader_pulls_its_downstream_views_in_dependency_order() -> None:
    views = chain(DOWNSTREAM, DOWNSTREAM, LAG_10, pending_a=100 * MINUTE)
    assert decide(views, {}, 105 * MINUTE).due == ()
    decision = decide(views, {}, 110 * MINUTE)
    assert decision.due == (A, B, C)
    assert decision.plans[A].target_lag_ms == 10 * MINUTE  # its reader's, through b
    assert decision.plans[C].lag_ms == 10 * MINUTE  # a's change is not in c either


def test_downstream_views_without_a_scheduled_reader_never_refresh() -> None:
    views = chain(DOWNSTREAM, DOWNSTREAM, None, pending_a=0)
    decision = decide(views, {}, 10_000 * MINUTE)
    assert decision.due == ()
    assert decision.plans[A].next_run_ms is None
    assert decision.plans[A].target_lag_ms is None


def test_downstream_views_with_nothing_pending_are_not_pulled() -> None:
    views = chain(DOWNSTREAM, DOWNSTREAM, EVERY_5, pending_b=0)
    assert decide(views, {}, 5 * MINUTE).due == (B, C)  # a has nothing pending


def test_an_upstream_lag_is_lowered_to_its_readers() -> None:
    views = [*chain(LAG_30, None, None), ViewState(TableName("d", "db"), LAG_10, (A,))]
    decision = decide(views, {}, 0)
    assert decision.plans[A].target_lag_ms == 10 * MINUTE


def test_a_backed_off_view_is_not_due_nor_pulled_until_its_retry() -> None:
    views = chain(DOWNSTREAM, DOWNSTREAM, LAG_10, pending_a=0)
    backoff = {B: Backoff(2, 20 * MINUTE)}
    waiting = decide(views, backoff, 15 * MINUTE)
    # a is due by its own lag (its reader's); c is not: what is pending for it waits in b
    assert waiting.due == (A,)
    assert waiting.plans[B].next_run_ms == 20 * MINUTE
    assert waiting.plans[B].backoff == backoff[B]
    assert waiting.plans[C].next_run_ms is None
    assert waiting.plans[C].lag_ms == 15 * MINUTE  # still counted in its lag
    assert decide(views, backoff, 20 * MINUTE).due == (A, B, C)


def test_a_failing_every_view_retries_at_its_back_off_not_its_period() -> None:
    views = [ViewState(A, EVERY_5, last_run_ms=0)]
    backoff = {A: Backoff(1, 1 * MINUTE)}
    assert decide(views, backoff, 30_000).due == ()
    assert decide(views, backoff, 1 * MINUTE).due == (A,)


def test_back_off_doubles_up_to_its_cap() -> None:
    first = after_failure(None, 0, MINUTE, 5 * MINUTE)
    assert first == Backoff(1, MINUTE)
    second = after_failure(first, 10 * MINUTE, MINUTE, 5 * MINUTE)
    assert second == Backoff(2, 12 * MINUTE)
    third = after_failure(second, 20 * MINUTE, MINUTE, 5 * MINUTE)
    assert third == Backoff(3, 24 * MINUTE)
    capped = after_failure(Backoff(40, 0), 30 * MINUTE, MINUTE, 5 * MINUTE)
    assert capped == Backoff(41, 35 * MINUTE)


def test_views_without_a_schedule_are_never_due() -> None:
    views = chain(None, None, None, pending_a=0, pending_b=0, pending_c=0)
    assert decide(views, {}, 10_000 * MINUTE).due == ()
