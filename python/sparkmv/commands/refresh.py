"""REFRESH MATERIALIZED VIEW name [FULL | INCREMENTAL]

Incremental when the query is maintainable, the policy allows it, and every base table's
change log covers the versions since the last refresh; otherwise full, with the reason in
the result row and in DESCRIBE EXTENDED. A refresh with no pending change reads no data.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from sparkmv.analyze.maintainability import Maintainability
from sparkmv.analyze.query import parse_query, query_dataframe
from sparkmv.apply.incremental import ChangeDoesNotFitError
from sparkmv.apply.materialize import commit_snapshot, full_refresh, incremental_refresh, now_ms
from sparkmv.capture.tracking import BaseTable, positions
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.commands.context import CommandContext, Rows
from sparkmv.config import STORAGE_BUCKETS_CONF
from sparkmv.delta.engine import BaseState, DeltaEngine
from sparkmv.delta.rules import delta_engine
from sparkmv.parse.statements import RefreshMode, RefreshStatement
from sparkmv.plan.refresh_plan import (
    FULL,
    INCREMENTAL,
    RefreshPlan,
    incremental_obstacle,
    plan_refresh,
    storage_layout,
)
from sparkmv.plan.view_delta import maintainability_of, stored_change, stored_rows

RESULT_SCHEMA = (
    "mode STRING, reason STRING, rows_inserted BIGINT, rows_deleted BIGINT, duration_ms BIGINT"
)
NO_CHANGE = "no base table changed since the last refresh"


@dataclass(frozen=True)
class ViewQuery:
    """A view's query as Spark analyzed it, and whether the delta rules can maintain it."""

    data: DataFrame
    maintainability: Maintainability


def view_query(spark: SparkSession, view: MvMetadata) -> ViewQuery:
    data = query_dataframe(spark, view.query, view.query_database)
    parsed = parse_query(view.query, view.query_database)
    return ViewQuery(data, maintainability_of(spark, parsed, view.query_database, data))


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
    spark: SparkSession, view: MvMetadata, bases: list[BaseTable], with_changes: bool
) -> DeltaEngine:
    """The delta engine over the base tables as this refresh reads them (with their net
    changes since the view's last refresh when ``with_changes``)."""
    changed = {base.name for base in changed_tables(view, bases)} if with_changes else set()
    states = {}
    for base in bases:
        change = None
        if base.name in changed and base.log is not None:
            change = base.log.net_changes(view.consumed_versions[base.name].version, base.version)
        states[base.name] = BaseState(base.rows(spark), change)
    return delta_engine(states)


def run(context: CommandContext, statement: RefreshStatement) -> Rows:
    started = now_ms()
    spark = context.spark
    view = context.catalog.get(context.catalog.resolve(statement.name))
    query = view_query(spark, view)
    plan_refresh(view.name, view.policy, statement.mode, query.maintainability)  # may refuse
    bases = context.start_tracking(view.name, view.base_tables)
    plan = refresh_plan(view, query, statement.mode, bases)
    consumed = view.with_changes(consumed_versions=positions(bases))
    updated: MvMetadata | None = None
    if plan.reason == NO_CHANGE:
        updated = consumed.with_changes(
            stats=view.stats.after_incremental_refresh(0, 0, NO_CHANGE, started, now_ms())
        )
        commit_snapshot(spark, context.catalog, view, updated)
    elif plan.mode == INCREMENTAL:
        engine = base_states(spark, view, bases, True)
        change, merge = stored_change(query.maintainability, engine, view.layout)
        try:
            updated = incremental_refresh(
                spark, context.catalog, consumed, change, merge, plan.reason, started
            )
        except ChangeDoesNotFitError as error:
            plan = RefreshPlan(FULL, f"the view's change did not fit its stored rows ({error})")
    if updated is None:
        buckets = int(spark.conf.get(STORAGE_BUCKETS_CONF, "0") or "0")
        layout = storage_layout(view.policy, query.maintainability, bases, buckets)
        data = query.data
        if layout.buckets:
            data = stored_rows(query.maintainability, base_states(spark, view, bases, False))
        updated = full_refresh(spark, context.catalog, consumed, data, layout, plan.reason, started)
    context.compact_logs(view.base_tables)
    inserted = updated.stats.rows_inserted - view.stats.rows_inserted
    deleted = updated.stats.rows_deleted - view.stats.rows_deleted
    return [(plan.mode, plan.reason, inserted, deleted, now_ms() - started)]
