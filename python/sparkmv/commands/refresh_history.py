"""Every refresh's record in its view's refresh history (``catalog/history.py``), made in one
place: ``recorded`` wraps the refresh of one view (``commands/refresh.py``), and the refresh
tells it its plan once it has one (``planned``).

The record is written when the refresh has ended: committed (``SUCCEEDED``), with nothing
pending (``SKIPPED``) or failed (``FAILED``, with the error's class; the error is raised on
unchanged). What started the refresh (``Trigger``) is set by the caller around it
(``triggered_by``: ``commands/cascade.py``, ``commands/on_commit.py``); a REFRESH statement
otherwise. The Spark jobs it ran and the bytes their tasks read are counted as Spark reports
them (``jobs.start_counting``, no job of its own), from its plan on: planning runs no job
(``plan_refresh``), and neither does a refresh with nothing pending, which is not counted (it
would cost two py4j round trips of its 20-odd) and records 0. A history that cannot be
written is logged, and does not fail the refresh.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from sparkmv.apply.materialize import now_ms
from sparkmv.capture.tracking import BaseTable, positions
from sparkmv.catalog import history
from sparkmv.catalog.history import RefreshRecord, Status, Trigger
from sparkmv.catalog.modes import RefreshMode
from sparkmv.catalog.views import RefreshFacts
from sparkmv.commands.context import CommandContext, Rows
from sparkmv.config import HISTORY_RETENTION
from sparkmv.errors import SparkMvError
from sparkmv.faults import checkpoint
from sparkmv.jobs import JobCount, start_counting, stop_counting
from sparkmv.plan.refresh_plan import RefreshPlan

log = logging.getLogger(__name__)

_trigger: ContextVar[Trigger] = ContextVar("sparkmv_refresh_trigger", default=Trigger.STATEMENT)
_recording: ContextVar[_Recording | None] = ContextVar("sparkmv_refresh_recording", default=None)


@contextmanager
def triggered_by(trigger: Trigger) -> Iterator[None]:
    """The refreshes run meanwhile (in this thread) were started by ``trigger``."""
    token = _trigger.set(trigger)
    try:
        yield
    finally:
        _trigger.reset(token)


@dataclass
class _Recording:
    """What the refresh being recorded has told of itself so far, and the tag of its jobs
    (``jobs.start_counting``) once it counts them."""

    spark: SparkSession
    plan: RefreshPlan | None = None
    bases: Sequence[BaseTable] = field(default_factory=list)
    jobs_tag: str | None = None

    def jobs(self) -> JobCount:
        """The jobs counted, counting stopped (none with nothing pending)."""
        if self.jobs_tag is not None:
            tag, self.jobs_tag = self.jobs_tag, None
            try:
                return stop_counting(self.spark, tag)
            except Exception:  # the refresh's outcome stands; its jobs are not known
                log.warning("sparkmv: a refresh's Spark jobs were not counted", exc_info=True)
                return JobCount()
        return JobCount(0, 0) if self.plan is not None and self.plan.nothing_pending else JobCount()


def planned(plan: RefreshPlan, bases: list[BaseTable]) -> None:
    """The refresh being recorded runs ``plan`` over ``bases`` (as tracking read them): its
    jobs are counted from now on, unless it has nothing to do."""
    recording = _recording.get()
    if recording is not None:
        recording.plan, recording.bases = plan, bases
        if not plan.nothing_pending:
            recording.jobs_tag = start_counting(recording.spark)


class _Result(Protocol):
    @property
    def rows(self) -> Rows: ...


R = TypeVar("R", bound=_Result)


def recorded(
    refresh: Callable[[CommandContext, Any, RefreshFacts, int], R],
) -> Callable[[CommandContext, Any, RefreshFacts, int], R]:
    """``refresh(context, statement, facts, started)``, the refresh of the view ``facts``
    describe, with its record appended to the view's history."""

    @functools.wraps(refresh)
    def run(context: CommandContext, statement: Any, facts: RefreshFacts, started: int) -> R:
        spark = context.spark
        retention = HISTORY_RETENTION.count(spark)
        if retention <= 0:
            return refresh(context, statement, facts, started)
        recording = _Recording(spark)
        token = _recording.set(recording)
        trigger = _trigger.get()
        try:
            result = refresh(context, statement, facts, started)
        except BaseException as error:
            _recording.reset(token)
            record = _failed(facts, started, trigger, recording, recording.jobs(), error)
            _append(context, facts, record, retention)
            raise
        _recording.reset(token)
        record = _succeeded(facts, started, trigger, recording, recording.jobs(), result.rows)
        _append(context, facts, record, retention)
        return result

    return run


def _succeeded(
    facts: RefreshFacts,
    started: int,
    trigger: Trigger,
    recording: _Recording,
    jobs: JobCount,
    rows: Rows,
) -> RefreshRecord:
    """The record of a refresh that returned ``rows`` (``commands/refresh.py``'s result row:
    mode, reason, rows inserted, deleted, irrelevant rows skipped, duration)."""
    mode, reason, inserted, deleted, irrelevant, duration = rows[0]
    plan = recording.plan
    skipped = plan is not None and plan.nothing_pending
    return RefreshRecord(
        view=str(facts.view.name),
        started_ms=started,
        ended_ms=started + int(duration),
        trigger=trigger.value,
        status=(Status.SKIPPED if skipped else Status.SUCCEEDED).value,
        mode=mode,
        reason=reason,
        estimated_ms=_estimate(plan, RefreshMode(mode)),
        rows_inserted=inserted,
        rows_deleted=deleted,
        irrelevant_rows=irrelevant,
        base_versions=_versions(recording.bases),
        spark_jobs=jobs.jobs,
        bytes_read=jobs.bytes_read,
    )


def _failed(
    facts: RefreshFacts,
    started: int,
    trigger: Trigger,
    recording: _Recording,
    jobs: JobCount,
    error: BaseException,
) -> RefreshRecord:
    """The record of a refresh that raised ``error`` (nothing committed). ``base_versions``:
    the versions it was refreshing to, when it got as far as planning."""
    plan = recording.plan
    error_class, message = describe_error(error)
    return RefreshRecord(
        view=str(facts.view.name),
        started_ms=started,
        ended_ms=now_ms(),
        trigger=trigger.value,
        status=Status.FAILED.value,
        mode=None if plan is None else plan.mode.value,
        reason=None if plan is None else plan.reason,
        estimated_ms=None if plan is None else _estimate(plan, plan.mode),
        base_versions=_versions(recording.bases),
        spark_jobs=jobs.jobs,
        bytes_read=jobs.bytes_read,
        error_class=error_class,
        error_message=message,
    )


def describe_error(error: BaseException) -> tuple[str, str]:
    """The error class of ``error`` as a Spark user sees it (sparkmv's own, Spark's, or the
    exception's type when it has none), and the first line of its message."""
    if isinstance(error, SparkMvError):
        return error.error_class.name, error.message.splitlines()[0]
    condition: str | None = None
    message = str(error)
    if isinstance(error, PySparkException):
        condition = error.getCondition()
        message = error.getMessage() if hasattr(error, "getMessage") else message
    elif isinstance(error, Py4JJavaError):
        java = error.java_exception
        try:
            condition = java.getCondition()
        except Exception:  # not a SparkThrowable
            condition = None
        message = str(java.getMessage())
    first = message.strip().splitlines()[0] if message.strip() else ""
    if condition:  # as sparkmv's own: without the class before it and the SQLSTATE after it
        first = re.sub(r" SQLSTATE: \w+$", "", first.removeprefix(f"[{condition}] "))
    return condition or type(error).__name__, first


def _estimate(plan: RefreshPlan | None, mode: RefreshMode) -> int | None:
    """The cost model's estimate of ``mode`` (corrected by the view's history), if any."""
    cost = None if plan is None else plan.cost
    if cost is None:
        return None
    chosen = cost.full if mode is RefreshMode.FULL else cost.incremental
    return None if chosen is None else round(chosen.estimated_ms)


def _versions(bases: Sequence[BaseTable]) -> dict[str, int]:
    return {table: position.version for table, position in positions(list(bases)).items()}


def _append(
    context: CommandContext, facts: RefreshFacts, record: RefreshRecord, retention: int
) -> None:
    checkpoint("history.before_record")  # the refresh has ended, its record is not written
    try:
        history.append(context.spark, facts.view.name, record, retention)
    except Exception:
        log.warning(
            "sparkmv: the refresh history of %s was not written", facts.view.name, exc_info=True
        )
