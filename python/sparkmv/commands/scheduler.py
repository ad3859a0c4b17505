"""The scheduler: refreshes the views that have a schedule (``SCHEDULE EVERY``, ``TARGET
LAG``) on their own, in the process of ``sparkmv server`` or ``sparkmv.serve()``.

Each look (``Scheduler.run_once``) gathers the facts of every materialized view from the
catalog and the change logs (``gather``: no Spark job; the change logs' manifests carry each
write's time), asks the pure decision (``commands/schedule_decision.py``) which views are due,
and refreshes those, each after the views it reads, exactly as ``REFRESH MATERIALIZED VIEW``
does (``cascade.refresh_one``: under the view's lock, so never two refreshes of one view at
once, and its ON COMMIT readers after it), with trigger SCHEDULE in the refresh history. A
refresh that fails is in the history (FAILED, with its error class) and in the log, and the
view backs off: it is tried again after ``SCHEDULE_RETRY_SECONDS``, twice as long after each
further failure, at most ``SCHEDULE_MAX_RETRY_SECONDS``. The back-off and the time of each
view's last scheduled run are this process's memory: a restarted server starts afresh from
the catalog (each view's last refresh).

Time comes from a ``Clock``, so that tests drive the scheduler with a clock of their own and
call ``run_once`` themselves; the server's thread (``start``) waits on a stop event between
looks, so ``stop`` ends it at once (after the refresh running, if any).

One scheduler runs per process (``running``): DESCRIBE EXTENDED and SHOW MATERIALIZED VIEWS
ask it when each view is due next; without one they say the schedule is not running.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pyspark.sql import SparkSession

from sparkmv.capture.source import ChangeRangeError
from sparkmv.capture.tracking import BaseTable
from sparkmv.catalog.history import Trigger
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.commands import cascade
from sparkmv.commands.context import CommandContext
from sparkmv.commands.refresh_history import describe_error, triggered_by
from sparkmv.commands.schedule_decision import (
    Backoff,
    Decision,
    ViewState,
    after_failure,
    decide,
)
from sparkmv.config import (
    SCHEDULE_MAX_RETRY_SECONDS,
    SCHEDULE_POLL_SECONDS,
    SCHEDULE_RETRY_SECONDS,
)
from sparkmv.identifiers import TableName
from sparkmv.parse.statements import RefreshStatement

log = logging.getLogger(__name__)


class Clock(Protocol):
    """Where the scheduler's time comes from."""

    def now_ms(self) -> int:
        """The time now, in epoch milliseconds (the change logs' commit times' scale)."""
        ...

    def wait(self, seconds: float, stop: threading.Event) -> bool:
        """Wait ``seconds`` or until ``stop`` is set; whether it is set."""
        ...


class SystemClock:
    """The wall clock."""

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def wait(self, seconds: float, stop: threading.Event) -> bool:
        return stop.wait(seconds)


@dataclass(frozen=True)
class Outcome:
    """One scheduled refresh of ``view``: ``error_class`` None when it succeeded."""

    view: TableName
    error_class: str | None = None


@dataclass
class Scheduler:
    """The scheduler of ``spark``'s views (module docstring). ``last_runs``, ``backoff``
    and ``decision`` change only in ``run_once``, under ``_guard``."""

    spark: SparkSession
    clock: Clock = field(default_factory=SystemClock)
    last_runs: dict[TableName, int] = field(default_factory=dict)
    backoff: dict[TableName, Backoff] = field(default_factory=dict)
    decision: Decision | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def run_once(self) -> list[Outcome]:
        """One look: refresh the views due now, each after those it reads; what each
        refresh did. A due view that reads (directly or not) a view whose refresh failed in
        this look is held back until a later look: its refresh could not catch up what is
        pending for it (the failure is in the history; the held view is not refreshed, so
        it records nothing)."""
        with self._guard:
            context = CommandContext.of(self.spark)
            states = self.states(context)
            decision = self.decide_over(states)
            reads = {state.name: state.reads for state in states}
            outcomes: list[Outcome] = []
            unfinished: set[TableName] = set()  # failed or held in this look
            for name in decision.due:
                if self._stop.is_set():
                    break
                if any(upstream in unfinished for upstream in reads[name]):
                    log.info("sparkmv: %s waits for a view it reads, whose refresh failed", name)
                    unfinished.add(name)
                    continue
                outcome = self._refresh(context, name)
                if outcome.error_class is not None:
                    unfinished.add(name)
                outcomes.append(outcome)
            return outcomes

    def states(self, context: CommandContext) -> list[ViewState]:
        """The decision's facts of the catalog's scheduled views as they are now."""
        return [
            state_of(view, bases, self.last_runs.get(view.name)) for view, bases in gather(context)
        ]

    def decide_over(self, states: list[ViewState]) -> Decision:
        """The decision over ``states`` now (kept as ``decision``)."""
        self.decision = decide(states, self.backoff, self.clock.now_ms())
        return self.decision

    def _refresh(self, context: CommandContext, name: TableName) -> Outcome:
        """Refresh ``name`` as REFRESH does, trigger SCHEDULE; a failure backs it off."""
        try:
            with triggered_by(Trigger.SCHEDULE):
                cascade.refresh_one(context, RefreshStatement(name))
        except Exception as error:
            error_class, message = describe_error(error)
            now = self.clock.now_ms()
            self.backoff[name] = after_failure(
                self.backoff.get(name),
                now,
                int(SCHEDULE_RETRY_SECONDS.value(self.spark) * 1000),
                int(SCHEDULE_MAX_RETRY_SECONDS.value(self.spark) * 1000),
            )
            self.last_runs[name] = now
            log.warning(
                "sparkmv: the scheduled refresh of %s failed (%s: %s); retrying after %s",
                name,
                error_class,
                message,
                self.backoff[name].retry_at_ms,
            )
            return Outcome(name, error_class)
        self.backoff.pop(name, None)
        self.last_runs[name] = self.clock.now_ms()
        return Outcome(name)

    def start(self) -> None:
        """Run ``run_once`` every ``SCHEDULE_POLL_SECONDS`` in a daemon thread, and register
        as this process's scheduler (``running``)."""
        global _running
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="sparkmv-scheduler", daemon=True)
        _running = self
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Stop the thread (after the refresh it is running, if any) and unregister."""
        global _running
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if _running is self:
            _running = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception:  # a look that failed (the metastore away): the next one retries
                log.warning("sparkmv: the scheduler's look at the views failed", exc_info=True)
            if self.clock.wait(SCHEDULE_POLL_SECONDS.value(self.spark), self._stop):
                return


_running: Scheduler | None = None


def running() -> Scheduler | None:
    """This process's running scheduler, if any."""
    return _running


def gather(context: CommandContext) -> list[tuple[MvMetadata, list[BaseTable]]]:
    """Every materialized view of the catalog that has a schedule or is read, directly or
    not, by one that has, with its base tables as tracking sees them (nothing started or
    reconciled: ``peek_tracking``). Views outside that set are listed only."""
    views = {
        view.name: view
        for database in context.spark.catalog.listDatabases()
        for view in context.catalog.list(database.name.lower())
    }
    wanted: set[TableName] = set()

    def want(name: TableName) -> None:
        if name in wanted or name not in views:
            return
        wanted.add(name)
        for base in views[name].base_tables:
            want(TableName.parse_qualified(base))

    for view in views.values():
        if view.schedule is not None:
            want(view.name)
    return [(views[name], context.peek_tracking(views[name].base_tables)) for name in wanted]


def state_of(view: MvMetadata, bases: Sequence[BaseTable], last_run: int | None) -> ViewState:
    """The decision's facts of ``view`` (``last_run``: the scheduler's own last run of it)."""
    reads = tuple(TableName.parse_qualified(base.name) for base in bases if base.materialized_view)
    refreshed = max(view.stats.last_refreshed_ms, view.created_ms)
    return ViewState(
        name=view.name,
        schedule=view.schedule,
        reads=reads,
        last_run_ms=max(refreshed, last_run or 0),
        pending_ms=oldest_pending_ms(view, bases),
        expected_ms=view.stats.last_duration_ms,
    )


def oldest_pending_ms(view: MvMetadata, bases: Sequence[BaseTable]) -> int | None:
    """When the oldest change of ``view``'s base tables that it has not consumed was
    committed (its change log's commit time); None when it consumed every one. What a log
    cannot date (a catalog's changelog, a log that missed writes or was re-created or
    compacted past the view) counts as pending since the view's last refresh: the change
    is no older than that, so the lag is never under-stated. An untracked table's changes
    are not known, and do not count."""
    since_refresh = max(view.stats.last_refreshed_ms, view.created_ms)
    times: list[int] = []
    for base in bases:
        source = base.source
        consumed = view.consumed_versions.get(base.name)
        if source is None:
            continue
        if base.problem or consumed is None or consumed.log != source.identity:
            times.append(since_refresh)
        elif base.version > consumed.version:
            times.append(_commit_time(base, consumed.version + 1) or since_refresh)
    return min(times) if times else None


def _commit_time(base: BaseTable, version: int) -> int | None:
    """When ``version`` of ``base``'s change log was committed; None when not known."""
    if base.log is None:
        return None
    try:
        return base.log.commits(version - 1, version)[0].timestamp_ms
    except ChangeRangeError:
        return None
