"""The scheduler's decision, pure: given every view's schedule, its last run, the age of its
oldest unconsumed change, the graph of views over views, the failing views' back-off and
``now``, which views to refresh now (in dependency order) and when each is due next.
No Spark, no catalog: ``commands/scheduler.py`` gathers the facts and runs the refreshes.

The rules (docs/sql-reference.md#schedules):

- ``pending_since`` of a view: the time of its oldest change not yet in it, counted through
  the views it reads: the oldest of its own base tables' unconsumed changes and its upstream
  views' ``pending_since`` (a change an upstream view has not consumed is not in this view
  either). None: nothing pending.
- Effective lag: a ``TARGET LAG`` view's own lag, lowered to the effective lag of any view
  that reads it (a reader cannot be fresher than what it reads); a ``DOWNSTREAM`` view's is
  the smallest effective lag of its readers, None when none of them has one.
- ``SCHEDULE EVERY i``: due once ``i`` has passed since its last run.
- A view with an effective lag ``L``: due once ``now >= pending_since + L - expected``, where
  ``expected`` is its last refresh's duration (so that the refresh ends before the change is
  older than ``L``); nothing pending, not due.
- A due view pulls the ``DOWNSTREAM`` views it reads that have something pending (and theirs,
  transitively), so they refresh right before it: a DOWNSTREAM view without a scheduled
  reader never refreshes on its own.
- A view whose scheduled refreshes fail is backed off: not due (nor pulled) before its
  ``retry_at_ms``, whatever its schedule says; after that it is due at once. Meanwhile what
  is pending in it does not make its readers due by lag (their refreshes could not catch it
  up), though it counts in their lag.
- Views without a schedule are never due (the scheduler refreshes only what was asked).

The graph is acyclic (``commands/dependencies.py``), so every order here is topological.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from sparkmv.catalog.schedule import Schedule, ScheduleKind
from sparkmv.identifiers import TableName


@dataclass(frozen=True)
class ViewState:
    """The facts of one view at one look. ``reads``: the materialized views its query reads
    (among those the scheduler looked at). ``last_run_ms``: when its last refresh (or
    scheduled attempt) ended, or its creation. ``pending_ms``: its own base tables' oldest
    unconsumed change (upstream views' pending changes not counted here), None when none.
    ``expected_ms``: how long its last refresh took."""

    name: TableName
    schedule: Schedule | None
    reads: tuple[TableName, ...] = ()
    last_run_ms: int = 0
    pending_ms: int | None = None
    expected_ms: int = 0


@dataclass(frozen=True)
class Backoff:
    """A view whose last ``failures`` scheduled refreshes in a row failed: not tried before
    ``retry_at_ms``."""

    failures: int
    retry_at_ms: int


@dataclass(frozen=True)
class ViewPlan:
    """What the decision says of one view. ``next_run_ms``: when it is due (None: not by
    time, only when a base table changes or a reader pulls it; for an unscheduled view,
    never). ``lag_ms``: how old its oldest pending change is (0: none pending).
    ``target_lag_ms``: its effective lag (None: none)."""

    next_run_ms: int | None
    lag_ms: int
    target_lag_ms: int | None
    backoff: Backoff | None = None


@dataclass(frozen=True)
class Decision:
    """``due``: the views to refresh now, each after the views it reads. ``plans``: every
    view's ``ViewPlan``."""

    due: tuple[TableName, ...]
    plans: Mapping[TableName, ViewPlan]


def decide(
    views: Sequence[ViewState], backoff: Mapping[TableName, Backoff], now_ms: int
) -> Decision:
    """The decision of the module docstring's rules for ``views`` at ``now_ms``."""
    by_name = {view.name: view for view in views}
    order = topological(views)
    pending = pending_since(order, by_name)
    waiting = {name for name, blocked in backoff.items() if blocked.retry_at_ms > now_ms}
    catchable = pending_since(order, by_name, waiting)
    lags = effective_lags(order, by_name)
    plans: dict[TableName, ViewPlan] = {}
    due: set[TableName] = set()
    for name in order:
        view = by_name[name]
        age = 0 if pending[name] is None else max(now_ms - (pending[name] or 0), 0)
        blocked = backoff.get(name)
        next_run = next_run_ms(view, catchable[name], lags[name])
        if view.schedule is not None and blocked is not None:
            # a failing view is retried once its back-off is over, whatever its schedule
            next_run = blocked.retry_at_ms if name in waiting else now_ms
        if view.schedule is not None and next_run is not None and next_run <= now_ms:
            due.add(name)
        plans[name] = ViewPlan(next_run, age, lags[name], blocked)
    for name in reversed(order):  # readers first: each pulls what it reads
        if name in due:
            _pull(by_name[name], by_name, pending, backoff, now_ms, due)
    return Decision(tuple(name for name in order if name in due), plans)


def after_failure(
    previous: Backoff | None, now_ms: int, retry_ms: int, max_retry_ms: int
) -> Backoff:
    """The back-off after one more failure at ``now_ms``: ``retry_ms`` after the first, twice
    as long after each further one in a row, at most ``max_retry_ms``."""
    failures = 1 if previous is None else previous.failures + 1
    wait = min(retry_ms * 2 ** min(failures - 1, 62), max_retry_ms)
    return Backoff(failures, now_ms + wait)


def next_run_ms(view: ViewState, pending: int | None, lag: int | None) -> int | None:
    """When ``view`` is due by its schedule alone (no back-off): module docstring."""
    schedule = view.schedule
    if schedule is None:
        return None
    if schedule.kind is ScheduleKind.EVERY:
        return view.last_run_ms + schedule.interval_ms
    if lag is None or pending is None:
        return None
    return pending + lag - view.expected_ms


def topological(views: Sequence[ViewState]) -> list[TableName]:
    """The views' names, each after the views it reads (among ``views``), ties by name."""
    by_name = {view.name: view for view in views}
    order: list[TableName] = []
    seen: set[TableName] = set()

    def visit(name: TableName) -> None:
        seen.add(name)
        for upstream in sorted(by_name[name].reads, key=str):
            if upstream in by_name and upstream not in seen:
                visit(upstream)
        order.append(name)

    for name in sorted(by_name, key=str):
        if name not in seen:
            visit(name)
    return order


def pending_since(
    order: Sequence[TableName],
    by_name: Mapping[TableName, ViewState],
    waiting: Collection[TableName] = (),
) -> dict[TableName, int | None]:
    """Per view, its oldest pending change counted through its upstream views (``order``:
    topological, so each upstream view's is known first), except through the ``waiting``
    ones (backed off: what is pending in them no refresh of a reader can catch up now)."""
    found: dict[TableName, int | None] = {}
    for name in order:
        view = by_name[name]
        times = [view.pending_ms] + [
            found.get(upstream) for upstream in view.reads if upstream not in waiting
        ]
        known = [time for time in times if time is not None]
        found[name] = min(known) if known else None
    return found


def effective_lags(
    order: Sequence[TableName], by_name: Mapping[TableName, ViewState]
) -> dict[TableName, int | None]:
    """Per view, its effective lag (module docstring), readers before the views they read."""
    readers: dict[TableName, list[TableName]] = {name: [] for name in order}
    for name in order:
        for upstream in by_name[name].reads:
            if upstream in readers:
                readers[upstream].append(name)
    lags: dict[TableName, int | None] = {}
    for name in reversed(order):
        schedule = by_name[name].schedule
        candidates = [lags[reader] for reader in readers[name]]
        if schedule is not None and schedule.kind is ScheduleKind.TARGET_LAG:
            candidates.append(schedule.interval_ms)
        known = [lag for lag in candidates if lag is not None]
        kind = None if schedule is None else schedule.kind
        if kind is ScheduleKind.TARGET_LAG or (kind is ScheduleKind.DOWNSTREAM and known):
            lags[name] = min(known)
        else:
            lags[name] = None
    return lags


def _pull(
    view: ViewState,
    by_name: Mapping[TableName, ViewState],
    pending: Mapping[TableName, int | None],
    backoff: Mapping[TableName, Backoff],
    now_ms: int,
    due: set[TableName],
) -> None:
    """Add to ``due`` the DOWNSTREAM views ``view`` reads that have something pending and are
    not backed off, and theirs."""
    for name in view.reads:
        upstream = by_name.get(name)
        if upstream is None or upstream.schedule is None or name in due:
            continue
        if upstream.schedule.kind is not ScheduleKind.DOWNSTREAM or pending[name] is None:
            continue
        blocked = backoff.get(name)
        if blocked is not None and blocked.retry_at_ms > now_ms:
            continue
        due.add(name)
        _pull(upstream, by_name, pending, backoff, now_ms, due)
