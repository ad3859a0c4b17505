"""ALTER MATERIALIZED VIEW name { SET REFRESH ... | [SET] SCHEDULE EVERY ... | [SET] TARGET LAG
... | DROP SCHEDULE | AS query }"""

from __future__ import annotations

from dataclasses import replace

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparkmv.analyze.maintainability import Maintainability, analyze_maintainability, qualified
from sparkmv.analyze.query import ParsedQuery, current_database, parse_query
from sparkmv.capture.tracking import BaseTable, positions
from sparkmv.catalog import properties as keys
from sparkmv.catalog.metadata import MvMetadata, StorageLayout
from sparkmv.catalog.modes import RefreshTrigger
from sparkmv.commands import create
from sparkmv.commands.context import CommandContext, Rows
from sparkmv.commands.create import CreatePlan, DerivedRows
from sparkmv.commands.on_commit import check_immediate, mark_immediate
from sparkmv.delta.engine import BaseState
from sparkmv.delta.rules import delta_engine
from sparkmv.identifiers import quote_identifier
from sparkmv.parse.statements import (
    AlterQueryStatement,
    AlterRefreshStatement,
    AlterScheduleStatement,
    ColumnSpec,
    CreateStatement,
    RefreshClause,
)
from sparkmv.plan.aggregate_view import AggregateView, aggregate_view
from sparkmv.plan.definition_change import (
    OLD_ROWS,
    Derivation,
    JoinedTable,
    derivation,
    rollup,
    same_input,
)
from sparkmv.plan.refresh_plan import check_policy, view_query
from sparkmv.plan.view_delta import base_table_columns, stored_rows
from sparkmv.storage import snapshot
from sparkmv.storage.stored_columns import storage_columns

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


def run_set_schedule(context: CommandContext, statement: AlterScheduleStatement) -> Rows:
    """Set (or drop) the view's schedule; metadata only. The scheduler of a running server
    reads it at its next look (``commands/scheduler.py``)."""
    view = context.catalog.get(context.catalog.resolve(statement.name))
    create.check_schedule(context.spark, view.name, statement.schedule)
    updated = view.with_changes(schedule=statement.schedule)
    context.catalog.commit(updated, snapshot.view_text(updated))
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
        schedule=view.schedule,
    )
    with current_database(context.spark, view.query_database):
        plan = create.plan_create(context, replacement)
    assert plan is not None  # OR REPLACE always plans
    columns = tuple(
        ColumnSpec(column.name, comments.get(column.name.lower()))
        for column in plan.definition.columns
    )
    plan = replace(plan, definition=replace(plan.definition, columns=columns))
    create.execute_create(
        context,
        plan,
        history=view,
        reason="definition changed by ALTER ... AS",
        derive=lambda bases, layout: derived_rows(context, view, plan, bases, layout),
    )
    return []


def derived_rows(
    context: CommandContext,
    view: MvMetadata,
    plan: CreatePlan,
    bases: list[BaseTable],
    layout: StorageLayout,
) -> DerivedRows | None:
    """The new definition's stored rows from the old contents (``definition_change``): an
    aggregate view's groups rolled up from the old groups' state, another view's rows from
    the old rows. None: the new view is a DISTINCT one, or not maintained (its storage is
    not a bag of its rows or groups), the old one had not consumed every change of its base
    tables (its rows are not the old query's now), or the definitions differ otherwise."""
    maintained = plan.maintainability
    if not layout.buckets or maintained.counted:
        return None
    current = positions(bases)
    consumed = {name: position for name, position in current.items() if name in view.base_tables}
    if set(consumed) != set(view.base_tables) or consumed != view.consumed_versions:
        return None
    old_query = parse_query(view.query, view.query_database)
    if old_query.tree is None or plan.query.tree is None:
        return None
    _, columns = base_table_columns(context.spark, plan.query.base_tables)
    old_tree = qualified(old_query.tree, view.query_database, columns)
    new_tree = qualified(plan.query.tree, plan.database, columns)
    grouped = aggregate_view(maintained.root)
    if grouped is not None:
        if not same_input(old_tree, new_tree):
            return None
        old = analyze_maintainability(
            old_query, view.query_database, None, columns, check_plan=False
        )
        return _rolled_up(context, view, old, grouped, bases)
    found = derivation(old_tree, new_tree)
    if found is None:
        return None
    added: Maintainability | None = None
    if found.added_query is not None:
        tree = parse_query(found.added_query, plan.database).tree
        query = ParsedQuery(found.added_query, tree, plan.query.base_tables)
        added = analyze_maintainability(query, plan.database, None, columns, check_plan=False)
        if not added.incremental:
            return None
    old_names = [item.alias_or_name for item in old_tree.expressions]
    old_rows = context.spark.table(view.name.quoted).toDF(*old_names).alias(OLD_ROWS)
    if found.joined is not None:
        joined = next((base for base in bases if base.name == found.joined.table), None)
        if joined is None or joined.log is None:  # its rows at no logged version
            return None
        old_rows = _joined(old_rows, joined.rows(context.spark), found.joined)
    rows = _as_stored(old_rows, found, plan)
    if added is not None:
        rows = rows.unionByName(_added_rows(context, added, bases))
    return DerivedRows(rows, found.change)


def _rolled_up(
    context: CommandContext,
    view: MvMetadata,
    old: Maintainability,
    new: AggregateView,
    bases: list[BaseTable],
) -> DerivedRows | None:
    """The new aggregate view's stored groups rolled up from the old view's stored group
    state (``definition_change.rollup``), or None when they do not follow from it (or the
    old view keeps no group state, or keeps value counters)."""
    previous = aggregate_view(old.root) if old.incremental else None
    if previous is None or not view.layout.grouped or view.layout.value_counters:
        return None
    found = rollup(previous.aggregate, new.aggregate)
    if found is None:
        return None
    spark = context.spark
    groups = f"(SELECT * FROM {snapshot.live_rows_source(view)}) AS {quote_identifier('s')}"
    sums = {
        field.name: field.dataType.simpleString()
        for field in spark.sql(f"SELECT * FROM {groups}").schema.fields
        if field.name.startswith("mv_s")
    }
    state = found.state_sql(new.aggregate, groups, sums)
    states = {base.name: BaseState(base.rows(spark)) for base in bases}
    with delta_engine(spark, states) as engine:  # the calls' types: an analysis, no job
        types = new.types(engine)
    rows = spark.sql(new.with_visible_sql(f"({state}) AS {quote_identifier('r')}", types))
    return DerivedRows(rows, found.change)


def _joined(old_rows: DataFrame, table_rows: DataFrame, joined: JoinedTable) -> DataFrame:
    """The old rows joined to ``table_rows`` (the joined table at its logged version)."""
    other = table_rows.alias(joined.alias)
    if joined.condition is None:
        return old_rows.crossJoin(other)
    return old_rows.join(other, F.expr(joined.condition), joined.kind)


def _as_stored(old_rows: DataFrame, found: Derivation, plan: CreatePlan) -> DataFrame:
    """The old rows (joined already) filtered and projected as ``found`` says, with the new
    query's column types, under the storage's names."""
    if found.filter is not None:  # over the old columns, some of which the projection drops
        old_rows = old_rows.where(found.filter)
    rows = old_rows.selectExpr(*found.select_list)
    names = storage_columns(len(plan.data.schema.fields))
    typed = [
        F.col(column).cast(field.dataType).alias(name)
        for column, field, name in zip(rows.columns, plan.data.schema.fields, names, strict=True)
    ]
    return rows.select(*typed)


def _added_rows(
    context: CommandContext, maintained: Maintainability, bases: list[BaseTable]
) -> DataFrame:
    """The stored rows of the query ``maintained`` was found for (the rows removed
    conjuncts excluded) over the base tables at the versions tracking logged, through the
    delta rules as CREATE reads them."""
    states = {base.name: BaseState(base.rows(context.spark)) for base in bases}
    with delta_engine(context.spark, states) as engine:  # its temporary views, dropped
        return stored_rows(maintained, engine)  # once analyzed, the rows no longer need them
