"""REFRESH MATERIALIZED VIEW name [FULL | INCREMENTAL]

Incremental when the query is maintainable, the policy allows it, and every base table's
change log covers the versions since the last refresh; otherwise full, with the reason in
the result row and in DESCRIBE EXTENDED. A refresh with no pending change reads no data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from sparkmv.analyze.constructs import volatile_construct
from sparkmv.analyze.maintainability import Maintainability
from sparkmv.analyze.query import parse_query, query_dataframe
from sparkmv.analyze.relational import Node, read_columns
from sparkmv.apply.incremental import ChangeDoesNotFitError
from sparkmv.apply.materialize import (
    commit_metadata,
    commit_snapshot,
    full_refresh,
    incremental_refresh,
    now_ms,
)
from sparkmv.capture.tracking import BaseTable, positions, schemas
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.commands.context import CommandContext, Rows
from sparkmv.config import INCREMENTAL_REFRESH_CONF, STORAGE_BUCKETS_CONF, session_conf
from sparkmv.delta.engine import BaseState, DeltaEngine
from sparkmv.delta.relation import net_change
from sparkmv.delta.rules import delta_engine
from sparkmv.parse.statements import RefreshMode, RefreshPolicy, RefreshStatement
from sparkmv.plan.refresh_plan import (
    FULL,
    INCREMENTAL,
    RefreshPlan,
    incremental_obstacle,
    plan_refresh,
    storage_layout,
)
from sparkmv.plan.view_delta import (
    SkippedRows,
    checked_maintainability,
    irrelevance_screens,
    maintainability_of,
    schemas_key,
    stored_change,
    stored_rows,
)

RESULT_SCHEMA = (
    "mode STRING, reason STRING, rows_inserted BIGINT, rows_deleted BIGINT,"
    " irrelevant_rows BIGINT, duration_ms BIGINT"
)
NO_CHANGE = "no base table changed since the last refresh"


@dataclass(frozen=True)
class ViewQuery:
    """A view's query as Spark analyzed it, whether the delta rules can maintain it, and
    the ``schemas_key`` that verdict was checked for ("" when it was not)."""

    data: DataFrame
    maintainability: Maintainability
    checked_schemas: str = ""


def view_query(
    spark: SparkSession, view: MvMetadata, bases: list[BaseTable] | None = None
) -> ViewQuery:
    """The view's query analyzed again (the base tables may have changed). Given ``bases``
    as tracking read them, the rules' type check is skipped when it passed for the same
    schemas before (``MvMetadata.checked_schemas``)."""
    data = query_dataframe(spark, view.query, view.query_database)
    parsed = parse_query(view.query, view.query_database)
    base_schemas = schemas(bases) if bases is not None else None
    if base_schemas is None:
        return ViewQuery(data, maintainability_of(spark, parsed, view.query_database, data))
    key = schemas_key(spark, data, base_schemas)
    if key == view.checked_schemas:
        found = checked_maintainability(parsed, view.query_database, data, base_schemas)
    else:
        found = maintainability_of(spark, parsed, view.query_database, data)
    return ViewQuery(data, found, key if found.incremental else "")


def refresh_plan(
    view: MvMetadata, query: ViewQuery, requested: RefreshMode | None, bases: list[BaseTable]
) -> RefreshPlan:
    """The mode this refresh uses: the policy's choice, then what the logs allow."""
    plan = plan_refresh(view.name, view.policy, requested, query.maintainability)
    missed = [base.problem for base in bases if base.log is not None and base.problem]
    if missed:  # a log that missed changes cannot say what changed: recompute
        return RefreshPlan(FULL, "; ".join(missed))
    if plan.mode == INCREMENTAL:
        obstacle = incremental_obstacle(view, query.maintainability, bases)
        if obstacle:
            return RefreshPlan(FULL, obstacle)
        if not changed_tables(view, bases):
            return RefreshPlan(INCREMENTAL, NO_CHANGE)
    return plan


def changed_tables(view: MvMetadata, bases: list[BaseTable]) -> list[BaseTable]:
    return [
        base
        for base in bases
        if base.log is not None
        and (consumed := view.consumed_versions.get(base.name)) is not None
        and consumed.version != base.version
    ]


def base_states(
    spark: SparkSession,
    view: MvMetadata,
    bases: list[BaseTable],
    with_changes: bool,
    root: Node | None = None,
) -> DeltaEngine:
    """The delta engine over the base tables as this refresh reads them (with their net
    changes since the view's last refresh when ``with_changes``; the columns ``root``
    never reads NULL in them)."""
    changed = {base.name for base in changed_tables(view, bases)} if with_changes else set()
    states = {}
    for base in bases:
        state = BaseState(base.rows(spark))
        if base.name in changed and base.log is not None:
            read = None if root is None else read_columns(root).get(base.name, set())
            consumed = view.consumed_versions[base.name].version
            logged = base.log.row_changes(consumed, base.version, read)
            state = BaseState(state.rows, net_change(logged, read), logged, read)
        states[base.name] = state
    return delta_engine(spark, states)


def screened_engine(
    spark: SparkSession, view: MvMetadata, query: ViewQuery, bases: list[BaseTable]
) -> DeltaEngine:
    """The delta engine of an incremental refresh: the base tables with their changes, each
    scan's change screened by its irrelevance filter."""
    engine = base_states(spark, view, bases, True, query.maintainability.root)
    return engine.screened(irrelevance_screens(query.maintainability, engine, spark))


def nothing_pending(spark: SparkSession, view: MvMetadata, bases: list[BaseTable]) -> bool:
    """Whether the view's contents are its query's result now without reading any data:
    every base table is tracked, its log saw every write, and the view consumed its current
    version — and the query's result depends on its tables alone. That holds for a view
    whose query passed the incremental check (it refuses anything volatile); another one's
    query is parsed and analyzed (no job) to see whether it is deterministic. A view whose
    policy is FULL, or whose storage a refresh would lay out anew, is refreshed as asked."""
    if view.policy is RefreshPolicy.FULL or not view.snapshot:
        return False
    for base in bases:
        consumed = view.consumed_versions.get(base.name)
        if base.log is None or base.problem or consumed is None:
            return False
        if consumed.log != base.log.root or consumed.version != base.version:
            return False
    if view.checked_schemas:
        return bool(view.layout.buckets)
    tree = parse_query(view.query, view.query_database).tree
    if tree is None or volatile_construct(tree):
        return False
    data: Any = query_dataframe(spark, view.query, view.query_database)
    return bool(data._jdf.queryExecution().analyzed().deterministic())


def no_change_plan(
    spark: SparkSession, view: MvMetadata, requested: RefreshMode | None, bases: list[BaseTable]
) -> RefreshPlan | None:
    """The plan of a refresh with nothing to do (``nothing_pending``), None otherwise; a
    refresh that asks for a mode gets it."""
    if requested is None and nothing_pending(spark, view, bases):
        return RefreshPlan(INCREMENTAL, NO_CHANGE)
    return None


def no_change_refresh(context: CommandContext, view: MvMetadata, started: int) -> Rows:
    """Record a refresh that found nothing to do: metadata only (one metastore call)."""
    stats = view.stats.after_incremental_refresh(0, 0, NO_CHANGE, started, now_ms())
    commit_metadata(context.spark, context.catalog, view.with_changes(stats=stats))
    return [(INCREMENTAL, NO_CHANGE, 0, 0, 0, now_ms() - started)]


def run(context: CommandContext, statement: RefreshStatement) -> Rows:
    started = now_ms()
    spark = context.spark
    view = context.catalog.get(context.catalog.resolve(statement.name))
    bases = context.start_tracking(view.name, view.base_tables)
    if no_change_plan(spark, view, statement.mode, bases) is not None:
        return no_change_refresh(context, view, started)
    query = view_query(spark, view, bases)
    plan_refresh(view.name, view.policy, statement.mode, query.maintainability)  # may refuse
    plan = refresh_plan(view, query, statement.mode, bases)
    consumed = view.with_changes(
        consumed_versions=positions(bases), checked_schemas=query.checked_schemas
    )
    updated: MvMetadata | None = None
    irrelevant: dict[str, int] = {}
    if plan.reason == NO_CHANGE:
        updated = consumed.with_changes(
            stats=view.stats.after_incremental_refresh(0, 0, NO_CHANGE, started, now_ms())
        )
        commit_snapshot(spark, context.catalog, view, updated)
    elif plan.mode == INCREMENTAL:
        assert query.maintainability.root is not None
        with (
            screened_engine(spark, view, query, bases) as screened,
            session_conf(spark, INCREMENTAL_REFRESH_CONF),
        ):
            skipped, engine = SkippedRows.observed(query.maintainability.root, screened)
            change, merge = stored_change(query.maintainability, engine, view.layout)

            def skipped_counts() -> dict[str, int]:
                irrelevant.update(skipped.counts(engine))
                return irrelevant

            try:
                updated = incremental_refresh(
                    spark,
                    context.catalog,
                    consumed,
                    change,
                    merge,
                    plan.reason,
                    started,
                    skipped_counts,
                )
            except ChangeDoesNotFitError as error:
                plan = RefreshPlan(FULL, f"the view's change did not fit its stored rows ({error})")
    if updated is None:
        buckets = int(spark.conf.get(STORAGE_BUCKETS_CONF, "0") or "0")
        layout = storage_layout(view.policy, query.maintainability, bases, buckets)
        data = query.data
        if layout.buckets:  # a DataFrame keeps the plans of the engine's temporary views
            with base_states(spark, view, bases, False) as engine:
                data = stored_rows(query.maintainability, engine)
        updated = full_refresh(spark, context.catalog, consumed, data, layout, plan.reason, started)
    context.compact_logs(bases, updated)
    inserted = updated.stats.rows_inserted - view.stats.rows_inserted
    deleted = updated.stats.rows_deleted - view.stats.rows_deleted
    dropped = sum(irrelevant.values()) if plan.mode == INCREMENTAL else 0
    return [(plan.mode, plan.reason, inserted, deleted, dropped, now_ms() - started)]
