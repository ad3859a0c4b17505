"""ALTER MATERIALIZED VIEW name { SET REFRESH ... | AS query }"""

from __future__ import annotations

from dataclasses import replace

from sparkmv.analyze.query import current_database
from sparkmv.apply import snapshot
from sparkmv.catalog import properties as keys
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.commands import create
from sparkmv.commands.context import CommandContext, Rows
from sparkmv.commands.on_commit import check_immediate, mark_immediate
from sparkmv.parse.statements import (
    AlterQueryStatement,
    AlterRefreshStatement,
    ColumnSpec,
    CreateStatement,
    RefreshClause,
    RefreshTrigger,
)
from sparkmv.plan.refresh_plan import check_policy, view_query

RESULT_SCHEMA = ""


def run_set_refresh(context: CommandContext, statement: AlterRefreshStatement) -> Rows:
    """Change the policy and/or trigger; metadata only, the data stays as it is (a view
    turned ON COMMIT is refreshed by the next write to a base table, or by REFRESH)."""
    view = context.catalog.get(context.catalog.resolve(statement.name))
    policy = statement.refresh.policy or view.policy
    check_policy(view.name, policy, view_query(context.spark, view).maintainability)
    trigger = statement.refresh.trigger or view.trigger
    updated = view.with_changes(policy=policy, trigger=trigger)
    immediate = trigger is RefreshTrigger.ON_COMMIT
    bases = context.start_tracking(view.name, view.base_tables)
    if immediate:
        check_immediate(view.name, bases)
        mark_immediate(bases, view.name, True)  # before the commit: the catalog decides
    context.catalog.commit(updated, snapshot.view_text(updated))
    if not immediate:
        mark_immediate(bases, view.name, False)
    return []


def run_as_query(context: CommandContext, statement: AlterQueryStatement) -> Rows:
    """Replace the definition, keeping comment, properties, policy, counters, creation time.

    Column names come from the new query; column comments are kept for names that remain.
    Counts as a full refresh in the view's counters.
    """
    name = context.catalog.resolve(statement.name)
    entry = context.catalog.get_entry(name)
    view = MvMetadata.from_properties(name, entry.properties)
    comments = entry.column_comments()
    replacement = CreateStatement(
        name=name,
        query=statement.query,
        or_replace=True,
        comment=entry.comment,
        properties=keys.user_properties(entry.properties),
        refresh=RefreshClause(view.policy, view.trigger),
    )
    with current_database(context.spark, view.query_database):
        plan = create.plan_create(context, replacement)
    assert plan is not None  # OR REPLACE always plans
    columns = tuple(
        ColumnSpec(column.name, comments.get(column.name.lower()))
        for column in plan.definition.columns
    )
    plan = replace(plan, definition=replace(plan.definition, columns=columns))
    create.execute_create(context, plan, history=view, reason="definition changed by ALTER ... AS")
    return []
