"""REFRESH MATERIALIZED VIEW name [FULL | INCREMENTAL]"""

from __future__ import annotations

from sparkmv.analyze.maintainability import Maintainability, analyze_maintainability
from sparkmv.analyze.query import parse_query, query_dataframe
from sparkmv.apply.materialize import full_refresh, now_ms
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.commands.context import CommandContext, Rows
from sparkmv.parse.statements import RefreshMode, RefreshStatement
from sparkmv.plan.refresh_plan import FULL, RefreshPlan, plan_refresh

RESULT_SCHEMA = (
    "mode STRING, reason STRING, rows_inserted BIGINT, rows_deleted BIGINT, duration_ms BIGINT"
)


def view_maintainability(view: MvMetadata) -> Maintainability:
    return analyze_maintainability(parse_query(view.query, view.query_database))


def refresh_plan(view: MvMetadata, requested: RefreshMode | None) -> RefreshPlan:
    return plan_refresh(view.name, view.policy, requested, view_maintainability(view))


def run(context: CommandContext, statement: RefreshStatement) -> Rows:
    started = now_ms()
    view = context.catalog.get(context.catalog.resolve(statement.name))
    plan = refresh_plan(view, statement.mode)
    consumed, missed = context.start_tracking(view.name, view.base_tables)
    if missed:  # a log that missed changes cannot say what changed: recompute
        plan = RefreshPlan(FULL, "; ".join(missed))
    data = query_dataframe(context.spark, view.query, view.query_database)
    updated = full_refresh(
        context.spark,
        context.catalog,
        view.with_changes(consumed_versions=consumed),
        data,
        plan.reason,
        started,
    )
    context.compact_logs(view.base_tables)
    return [(plan.mode, plan.reason, updated.row_count, view.row_count, now_ms() - started)]
