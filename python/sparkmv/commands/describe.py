"""DESCRIBE MATERIALIZED VIEW [EXTENDED] name, in Spark's DESCRIBE TABLE layout."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from sparkmv.apply.hot_inputs import hot_inputs
from sparkmv.apply.materialize import now_ms
from sparkmv.capture.tracking import BaseTable
from sparkmv.catalog import properties as keys
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.catalog.modes import RefreshTrigger
from sparkmv.catalog.schedule import ScheduleKind
from sparkmv.commands.context import CommandContext, Rows
from sparkmv.commands.dependencies import downstream_views
from sparkmv.commands.scheduler import oldest_pending_ms, running
from sparkmv.errors import SparkMvError
from sparkmv.parse.statements import DescribeStatement
from sparkmv.plan.cost import size
from sparkmv.plan.refresh_plan import changed_tables, log_obstacle, plan_refresh

RESULT_SCHEMA = "col_name STRING, data_type STRING, comment STRING"
SECTION = "# Materialized View Information"


def run(context: CommandContext, statement: DescribeStatement) -> Rows:
    name = context.catalog.resolve(statement.name)
    entry = context.catalog.get_entry(name)
    rows: Rows = [
        (field.name, field.dataType.simpleString(), field.metadata.get("comment"))
        for field in entry.schema.fields
    ]
    if statement.extended:
        view = MvMetadata.from_properties(name, entry.properties)
        bases = context.peek_tracking(view.base_tables)
        rows.append(("", "", ""))
        rows.append((SECTION, "", ""))
        rows.extend(
            (key, value, "") for key, value in information(view, entry.properties, entry.comment)
        )
        rows.extend((key, value, "") for key, value in view_graph(context, view, bases))
        rows.extend((key, value, "") for key, value in change_logs(view, bases))
        rows.extend((key, value, "") for key, value in cached_inputs(context, view))
        rows.extend((key, value, "") for key, value in next_refresh(context.spark, view, bases))
        rows.extend((key, value, "") for key, value in schedule_rows(context, view, bases))
    return rows


@dataclass(frozen=True)
class ScheduleReport:
    """What DESCRIBE EXTENDED and SHOW MATERIALIZED VIEWS say of a view's schedule: the
    clause, when the scheduler refreshes it next (or that none runs), and its current lag
    (the age of its oldest change not yet in it, counted through the views it reads), None
    for a view without a schedule (SHOW does not look at its logs)."""

    schedule: str | None
    next_refresh: str | None
    lag_ms: int | None


def schedule_report(
    context: CommandContext, view: MvMetadata, bases: list[BaseTable] | None = None
) -> ScheduleReport:
    """The ``ScheduleReport`` of ``view`` (``bases``: as tracking sees them, if known)."""
    if view.schedule is None:
        return ScheduleReport(None, None, None)
    scheduler = running()
    now = scheduler.clock.now_ms() if scheduler is not None else now_ms()
    pending = chain_pending_ms(context, view, bases)
    lag = 0 if pending is None else max(now - pending, 0)
    if scheduler is None:
        return ScheduleReport(view.schedule.clause, NOT_RUNNING, lag)
    decision = scheduler.decision
    plan = decision.plans.get(view.name) if decision is not None else None
    if plan is None:
        return ScheduleReport(view.schedule.clause, "at the scheduler's next look", lag)
    if plan.next_run_ms is None:
        waits_for = (
            "when a view that reads it refreshes on its schedule"
            if plan.target_lag_ms is None and view.schedule.kind is ScheduleKind.DOWNSTREAM
            else "after the next change of a base table"
        )
        return ScheduleReport(view.schedule.clause, waits_for, lag)
    text = format_ms(max(plan.next_run_ms, now))
    if plan.backoff is not None:
        text += f" (retry after {plan.backoff.failures} failed refreshes in a row)"
    return ScheduleReport(view.schedule.clause, text, lag)


NOT_RUNNING = (
    "not running: the schedule is stored; the scheduler runs in sparkmv server and sparkmv.serve()"
)


def chain_pending_ms(
    context: CommandContext, view: MvMetadata, bases: list[BaseTable] | None = None
) -> int | None:
    """When the oldest change not yet in ``view`` was committed, counted through the views
    it reads (``schedule_decision.pending_since``); None: nothing pending."""
    bases = context.peek_tracking(view.base_tables) if bases is None else bases
    times = [oldest_pending_ms(view, bases)]
    for base in bases:
        upstream = base.materialized_view
        if upstream is not None:
            times.append(chain_pending_ms(context, upstream))
    known = [time for time in times if time is not None]
    return min(known) if known else None


def schedule_rows(
    context: CommandContext, view: MvMetadata, bases: list[BaseTable]
) -> list[tuple[str, str]]:
    """The EXTENDED section's rows of the view's schedule (``schedule_report``)."""
    report = schedule_report(context, view, bases)
    if report.schedule is None:  # nothing to say, and no log to read
        return []
    seconds = lag_seconds(report.lag_ms or 0)
    return [
        ("Schedule", report.schedule),
        ("Next Scheduled Refresh", report.next_refresh or ""),
        ("Current Lag", f"{seconds} seconds" if seconds else "0 seconds: nothing pending"),
    ]


def lag_seconds(lag_ms: int) -> int:
    """A lag in whole seconds, rounded up: a change pending for any time shows a lag."""
    return -(-lag_ms // 1000)


def view_graph(
    context: CommandContext, view: MvMetadata, bases: list[BaseTable]
) -> list[tuple[str, str]]:
    """The dependency graph around the view, both ways: the materialized views it reads
    (its upstream views) and those that read it (its downstream views)."""
    reads = [base.name for base in bases if base.materialized_view is not None]
    read_by = [str(name) for name in downstream_views(context.catalog, view.name)]
    return [
        ("Reads Materialized Views", ", ".join(reads) or "(none)"),
        ("Read By Materialized Views", ", ".join(read_by) or "(none)"),
    ]


def change_logs(view: MvMetadata, bases: list[BaseTable]) -> list[tuple[str, str]]:
    """Per base table: the change-log version the view consumed and what is pending since,
    or why the next refresh cannot read it (``log_obstacle``, as the planner sees it). The
    pending rows are counted (one Spark job per changed table)."""
    rows = []
    for base in bases:
        source = base.source
        if base.changelog is not None:  # named apart from sparkmv's own logs
            label = f"Changelog {base.name}"
            prefix = f"read from {base.changelog.query.name}: "
        else:
            label, prefix = f"Change Log {base.name}", ""
        if source is None:
            rows.append((label, f"not tracked: {base.problem}"))
            continue
        obstacle = log_obstacle(view, base)
        if obstacle:
            rows.append((label, f"{prefix}the next refresh is full: {obstacle}"))
            continue
        consumed = view.consumed_versions[base.name].version
        current = base.version
        pending = source.net_changes(consumed, current).count() if current > consumed else 0
        skipped = view.stats.irrelevant_rows_skipped.get(base.name, 0)
        rows.append(
            (
                label,
                f"{prefix}consumed version {consumed}, current version {current}, {pending} "
                f"pending rows logged, {skipped} irrelevant rows skipped",
            )
        )
    return rows


def cached_inputs(context: CommandContext, view: MvMetadata) -> list[tuple[str, str]]:
    """The base tables of the view that Spark's cache holds for its refreshes, with the
    bytes their cached batches take (``apply/hot_inputs.py``); none when it holds none."""
    cached = hot_inputs(context.spark).cached(set(view.base_tables))
    if not cached:
        return []
    listed = "; ".join(
        f"{key.table} at version {key.version} ({', '.join(key.read)}): {size(n)}"
        for key, n in cached
    )
    return [("Cached Inputs", listed)]


def next_refresh(
    spark: SparkSession, view: MvMetadata, bases: list[BaseTable]
) -> list[tuple[str, str]]:
    """The mode and reason of the plan a ``REFRESH`` of the view would run now, with its cost
    estimates (``plan_refresh``: no Spark job), or the error it would fail with."""
    try:
        plan = plan_refresh(spark, view, None, bases)
    except (SparkMvError, PySparkException) as error:
        message = str(error).split("\n", 1)[0]  # without the JVM's stack trace
        return [("Next Refresh Mode", "none: it would fail"), ("Next Refresh Reason", message)]
    rows = [
        ("Up To Date", up_to_date(view, bases)),
        ("Next Refresh Mode", plan.mode.value),
        ("Next Refresh Reason", plan.reason),
    ]
    if plan.cost is not None:
        rows.append(("Next Refresh Cost", plan.cost.summary()))
    return rows


def up_to_date(view: MvMetadata, bases: list[BaseTable]) -> str:
    """Whether the view shows its query's result over its base tables now, as their change
    logs tell: stale once a base table changed since its last refresh (for an ON COMMIT
    view, only when its refresh after a write failed or was cut short)."""
    for base in bases:
        if base.source is None or base.problem:
            return f"unknown: the writes to base table {base.name} are not captured"
    if not changed_tables(view, bases) and not any(log_obstacle(view, b) for b in bases):
        return "yes"
    if view.trigger is RefreshTrigger.ON_COMMIT:
        return (
            "no (stale): an ON COMMIT refresh after a write failed or was interrupted; the "
            "next write to a base table or REFRESH catches it up"
        )
    return "no: a base table changed since the last refresh"


def information(
    view: MvMetadata, properties: dict[str, str], comment: str | None
) -> list[tuple[str, str]]:
    """The key/value rows of the EXTENDED section."""
    stats = view.stats
    user = keys.user_properties(properties)
    rows = [
        ("Name", str(view.name)),
        ("Query", view.query),
        ("Query Database", view.query_database),
        ("Refresh Policy", view.policy.value),
        ("Refresh Trigger", view.trigger.value),
        ("Base Tables", ", ".join(view.base_tables)),
        ("Refresh Count", str(stats.refreshes)),
        ("Full Refreshes", str(stats.full_refreshes)),
        ("Incremental Refreshes", str(stats.incremental_refreshes)),
        ("Rows Inserted", str(stats.rows_inserted)),
        ("Rows Deleted", str(stats.rows_deleted)),
        ("Irrelevant Rows Skipped", str(sum(stats.irrelevant_rows_skipped.values()))),
        ("Last Refresh Mode", stats.last_mode),
        ("Last Refresh Reason", stats.last_reason),
        ("Last Refreshed", format_ms(stats.last_refreshed_ms)),
        ("Last Refresh Duration", f"{stats.last_duration_ms} ms"),
        ("Row Count", str(view.row_count)),
        ("Created", format_ms(view.created_ms)),
        ("Storage", view.snapshot),
        ("Storage Layout", storage_layout_text(view)),
        ("Masked Rows", str(view.masked_rows)),
        ("Format Version", str(view.format_version)),
    ]
    if comment:
        rows.append(("Comment", comment))
    if user:
        listed = ", ".join(f"{k}={v}" for k, v in sorted(user.items()))
        rows.append(("Table Properties", f"[{listed}]"))
    return rows


def storage_layout_text(view: MvMetadata) -> str:
    layout = view.layout
    if not layout.buckets:
        return "plain (full refreshes rewrite it whole)"
    rows = "one row per copy"
    if layout.counted:
        rows = "one row per value with its multiplicity"
    elif layout.grouped:
        rows = "one row per group with its aggregate state"
        if layout.value_counters:
            rows += " and one per (group, DISTINCT value) with its count"
    buckets = "1 hash bucket" if layout.buckets == 1 else f"{layout.buckets} hash buckets"
    return f"{buckets}, {rows}"


def format_ms(epoch_ms: int) -> str:
    if not epoch_ms:
        return ""
    moment = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
