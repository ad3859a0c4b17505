"""CREATE [OR REPLACE] MATERIALIZED VIEW [IF NOT EXISTS] name ... AS query

``plan_create`` makes every check without side effects (EXPLAIN CREATE shows its result);
``execute_create`` materializes the first snapshot and creates the catalog view over it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession

from sparkmv.analyze.maintainability import Maintainability
from sparkmv.analyze.query import ParsedQuery, parse_query, query_dataframe
from sparkmv.apply.fixpoints import fixpoint_writer, query_hash, recursive_nodes
from sparkmv.apply.materialize import (
    ViewDefinition,
    create_catalog_view,
    now_ms,
    write_new_snapshot,
)
from sparkmv.capture.tracking import TRACKING_KEYS, BaseTable, positions, schemas
from sparkmv.catalog import properties as keys
from sparkmv.catalog.history import remove as remove_history
from sparkmv.catalog.metadata import MvMetadata, RefreshStats, StorageLayout
from sparkmv.catalog.modes import RefreshPolicy, RefreshTrigger
from sparkmv.catalog.schedule import Schedule, ScheduleKind, format_interval
from sparkmv.commands.context import CommandContext, Rows
from sparkmv.commands.dependencies import check_no_cycle
from sparkmv.commands.on_commit import check_immediate, mark_immediate
from sparkmv.config import SCHEDULE_MIN_INTERVAL_SECONDS
from sparkmv.delta.engine import BaseState, Version
from sparkmv.delta.rules import delta_engine
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.faults import checkpoint
from sparkmv.identifiers import TableName
from sparkmv.jobs import job_step
from sparkmv.parse.statements import ColumnSpec, CreateStatement
from sparkmv.plan.aggregate_view import compiled_types_json
from sparkmv.plan.refresh_plan import bucket_count, check_policy, storage_layout
from sparkmv.plan.view_delta import maintainability_of, schemas_key, stored_rows
from sparkmv.storage import snapshot

RESULT_SCHEMA = ""
INITIAL_REASON = "initial materialization"


@dataclass(frozen=True)
class DerivedRows:
    """A snapshot's stored rows derived from the view's old contents (``ALTER ... AS``), and
    how, for the refresh reason."""

    rows: DataFrame
    reason: str


Derive = Callable[[list[BaseTable], StorageLayout], DerivedRows | None]
"""Given the base tables as tracked and the new layout: the derived rows, or None (compute)."""


@dataclass(frozen=True)
class CreatePlan:
    """A checked CREATE: what will be materialized, and what it replaces (if anything)."""

    name: TableName
    query: ParsedQuery
    database: str  # where the query's unqualified names resolve
    data: DataFrame
    definition: ViewDefinition
    policy: RefreshPolicy
    trigger: RefreshTrigger
    maintainability: Maintainability
    replaces: MvMetadata | None
    schedule: Schedule | None = None
    # the replaced view's change log, if views read it: it stays theirs (the new contents
    # then differ from what the log vouches for, and they refresh fully, saying why)
    kept_properties: dict[str, str] = field(default_factory=dict)


def run(context: CommandContext, statement: CreateStatement) -> Rows:
    plan = plan_create(context, statement)
    if plan is not None:
        execute_create(context, plan)
    return []


def plan_create(context: CommandContext, statement: CreateStatement) -> CreatePlan | None:
    """Check ``statement``; None when IF NOT EXISTS finds the name taken (nothing to do)."""
    name = context.catalog.resolve(statement.name)
    check_user_properties(statement.properties)
    replaces: MvMetadata | None = None
    kept: dict[str, str] = {}
    existing = context.catalog.entry(name)
    if existing is not None:
        if statement.if_not_exists:
            return None
        if not statement.or_replace:
            raise SparkMvError(ErrorClass.MATERIALIZED_VIEW_ALREADY_EXISTS, name=name)
        replaces = context.catalog.get(name)  # refuses to replace a table or a plain view
        kept = {k: existing.properties[k] for k in TRACKING_KEYS if k in existing.properties}
    database = context.spark.catalog.currentDatabase()
    query = parse_query(statement.query, database)
    if replaces is not None:
        check_no_cycle(context.catalog, name, query.base_tables)
    data = query_dataframe(context.spark, query.text, database)
    columns = view_columns(statement.columns, data.columns)
    policy = statement.refresh.policy or RefreshPolicy.AUTO
    maintainability = maintainability_of(context.spark, query, database, data)
    check_policy(name, policy, maintainability)
    check_schedule(context.spark, name, statement.schedule)
    return CreatePlan(
        name=name,
        query=query,
        database=database,
        data=data,
        definition=ViewDefinition(columns, statement.comment, statement.properties),
        policy=policy,
        trigger=statement.refresh.trigger or RefreshTrigger.ON_DEMAND,
        maintainability=maintainability,
        replaces=replaces,
        schedule=statement.schedule,
        kept_properties=kept,
    )


def check_schedule(spark: SparkSession, name: TableName, schedule: Schedule | None) -> None:
    """Refuse a ``SCHEDULE EVERY`` or ``TARGET LAG`` shorter than the session's minimum
    (``SCHEDULE_MIN_INTERVAL_SECONDS``); DOWNSTREAM takes its readers' lag, checked there."""
    if schedule is None or schedule.kind is ScheduleKind.DOWNSTREAM:
        return
    minimum_ms = int(SCHEDULE_MIN_INTERVAL_SECONDS.value(spark) * 1000)
    if schedule.interval_ms < minimum_ms:
        raise SparkMvError(
            ErrorClass.MATERIALIZED_VIEW_TARGET_LAG_TOO_SMALL,
            clause="SCHEDULE EVERY" if schedule.kind is ScheduleKind.EVERY else "TARGET LAG",
            name=name,
            interval=f"'{format_interval(schedule.interval_ms)}'",
            minimum=f"'{format_interval(minimum_ms)}'",
            conf=SCHEDULE_MIN_INTERVAL_SECONDS.key,
        )


def execute_create(
    context: CommandContext,
    plan: CreatePlan,
    history: MvMetadata | None = None,
    reason: str = INITIAL_REASON,
    derive: Derive | None = None,
) -> MvMetadata:
    """Materialize ``plan`` and create (or replace) its catalog view.

    ``history`` carries creation time and counters over (ALTER ... AS); otherwise they start
    afresh. ``derive`` may supply the stored rows from the old contents instead (then the
    counters record an incremental refresh). The catalog statement is the commit point:
    before it, only an unreferenced snapshot exists.
    """
    started = now_ms()
    root = snapshot.storage_root(context.spark, plan.name)
    if plan.replaces is None:
        # A crash between an earlier DROP's catalog change and its file removal leaves data,
        # and a refresh history.
        snapshot.remove_path(context.spark, root)
        remove_history(context.spark, plan.name)
    bases = context.start_tracking(plan.name, plan.query.base_tables)  # before reading
    immediate = plan.trigger is RefreshTrigger.ON_COMMIT
    if immediate:
        try:
            check_immediate(plan.name, bases)
        except SparkMvError:
            if plan.replaces is None:
                context.stop_tracking(plan.name, plan.query.base_tables)
            raise
        mark_immediate(bases, plan.name, True)  # before the commit: the catalog decides
    buckets = bucket_count(context.spark, bases)
    layout = storage_layout(plan.policy, plan.maintainability, buckets)
    data = plan.data
    derived = derive(bases, layout) if derive is not None else None
    if derived is not None:
        data = derived.rows
    state = None
    recursive = recursive_nodes(plan.maintainability.root)
    compiled_key = checked_schemas(context.spark, plan, bases)
    if layout.buckets and (derived is None or recursive):  # the tables at the logged versions
        states = {b.name: BaseState(b.rows(context.spark)) for b in bases}
        with delta_engine(context.spark, states) as engine:  # through the delta rules
            if derived is None:
                data = stored_rows(plan.maintainability, engine, compiled_key)
            # The fixpoints, computed while the engine's temporary views exist (rows derived
            # from the old contents computed none; the next refresh needs them).
            for node in recursive:
                engine.value(node, Version.NEW)
            query = query_hash(plan.query.text, plan.database)
            step = f"CREATE MATERIALIZED VIEW {plan.name}"
            state = fixpoint_writer(engine, plan.maintainability.root, query, step)
    try:
        with job_step(context.spark, f"CREATE MATERIALIZED VIEW {plan.name}: compute"):
            path, rows = write_new_snapshot(context.spark, root, data, layout)
        if state is not None:  # a recursive CTE's fixpoint, committed with the rows
            try:
                state(path)
            except BaseException:
                snapshot.remove_path(context.spark, path)
                raise
    except BaseException:
        if plan.replaces is None:
            context.stop_tracking(plan.name, plan.query.base_tables)
        raise
    checkpoint("create.before_commit")
    finished = now_ms()
    previous = history.stats if history is not None else RefreshStats()
    replaced = history.row_count if history else 0
    if derived is None:
        stats = previous.after_full_refresh(rows, replaced, reason, started, finished)
    else:
        reason = f"{reason}, derived from its stored rows: {derived.reason}"
        stats = previous.after_incremental_refresh(rows, replaced, reason, started, finished)
    metadata = MvMetadata(
        name=plan.name,
        query=plan.query.text,
        query_database=plan.database,
        policy=plan.policy,
        trigger=plan.trigger,
        base_tables=plan.query.base_tables,
        columns=tuple(column.name for column in plan.definition.columns),
        snapshot=path,
        row_count=rows,
        created_ms=history.created_ms if history is not None else finished,
        stats=stats,
        consumed_versions=positions(bases),
        layout=layout,
        checked_schemas=compiled_key,
        compiled_types=compiled_types_json(compiled_key),
        schedule=plan.schedule,
    )
    try:
        properties = {**plan.definition.user_properties, **plan.kept_properties}
        create_catalog_view(
            context.spark,
            metadata,
            dataclasses.replace(plan.definition, user_properties=properties),
            replace=plan.replaces is not None,
        )
    except BaseException:
        snapshot.remove_path(context.spark, path)
        raise
    if not immediate:
        mark_immediate(bases, plan.name, False)  # a replaced ON COMMIT view's markers
    if plan.replaces is not None:
        snapshot.remove_snapshots(context.spark, root, keep=[plan.replaces.snapshot, path])
        dropped = set(plan.replaces.base_tables) - set(plan.query.base_tables)
        context.stop_tracking(plan.name, tuple(sorted(dropped)))
    return metadata


def checked_schemas(spark: SparkSession, plan: CreatePlan, bases: list[BaseTable]) -> str:
    """The ``schemas_key`` the plan's maintainability was checked for: the schemas tracking
    read right after the check ("" when the view is not maintained, or a table is untracked)."""
    base_schemas = schemas(bases)
    if not plan.maintainability.incremental or base_schemas is None:
        return ""
    return schemas_key(spark, plan.query.text, plan.database, base_schemas)


def check_user_properties(properties: dict[str, str]) -> None:
    for key in properties:
        if key.lower().startswith(keys.PREFIX):
            raise SparkMvError(
                ErrorClass.MATERIALIZED_VIEW_RESERVED_PROPERTY, key=key, prefix=keys.PREFIX
            )


def view_columns(listed: tuple[ColumnSpec, ...], returned: list[str]) -> tuple[ColumnSpec, ...]:
    """The view's columns: the listed names (with comments) or the query's own names."""
    if listed and len(listed) != len(returned):
        raise SparkMvError(
            ErrorClass.MATERIALIZED_VIEW_COLUMN_COUNT_MISMATCH,
            listed=len(listed),
            returned=len(returned),
        )
    columns = listed or tuple(ColumnSpec(name) for name in returned)
    seen: set[str] = set()
    for column in columns:
        if column.name.lower() in seen:
            raise SparkMvError(ErrorClass.MATERIALIZED_VIEW_DUPLICATE_COLUMN, column=column.name)
        seen.add(column.name.lower())
    return columns
