"""CREATE [OR REPLACE] MATERIALIZED VIEW [IF NOT EXISTS] name ... AS query"""

from __future__ import annotations

from sparkmv.analyze.maintainability import analyze_maintainability
from sparkmv.analyze.query import parse_query, query_dataframe
from sparkmv.apply import snapshot
from sparkmv.apply.materialize import (
    ViewDefinition,
    create_catalog_view,
    now_ms,
    write_new_snapshot,
)
from sparkmv.catalog import properties as keys
from sparkmv.catalog.metadata import MvMetadata, RefreshStats
from sparkmv.commands.context import CommandContext, Rows
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.faults import checkpoint
from sparkmv.parse.statements import (
    ColumnSpec,
    CreateStatement,
    RefreshPolicy,
    RefreshTrigger,
)
from sparkmv.plan.refresh_plan import check_policy

RESULT_SCHEMA = ""


def run(context: CommandContext, statement: CreateStatement) -> Rows:
    name = context.catalog.resolve(statement.name)
    check_trigger(statement.refresh.trigger)
    check_user_properties(statement.properties)
    existing: MvMetadata | None = None
    if context.catalog.properties(name) is not None:
        if statement.if_not_exists:
            return []
        if not statement.or_replace:
            raise SparkMvError(ErrorClass.MATERIALIZED_VIEW_ALREADY_EXISTS, name=name)
        existing = context.catalog.get(name)  # refuses to replace a table or a plain view
    database = context.spark.catalog.currentDatabase()
    query = parse_query(statement.query, database)
    data = query_dataframe(context.spark, query.text, database)
    columns = view_columns(statement.columns, data.columns)
    policy = statement.refresh.policy or RefreshPolicy.AUTO
    check_policy(name, policy, analyze_maintainability(query))

    started = now_ms()
    root = snapshot.storage_root(context.spark, name)
    if existing is None:
        # A crash between an earlier DROP's catalog change and its file removal leaves data.
        snapshot.remove_path(context.spark, root)
    path, rows = write_new_snapshot(context.spark, root, data)
    checkpoint("create.before_commit")
    finished = now_ms()
    metadata = MvMetadata(
        name=name,
        query=query.text,
        query_database=database,
        policy=policy,
        trigger=statement.refresh.trigger or RefreshTrigger.ON_DEMAND,
        base_tables=query.base_tables,
        columns=tuple(column.name for column in columns),
        snapshot=path,
        row_count=rows,
        created_ms=finished,
        stats=RefreshStats(
            refreshes=1,
            full_refreshes=1,
            rows_inserted=rows,
            last_mode="FULL",
            last_reason="initial materialization",
            last_refreshed_ms=finished,
            last_duration_ms=finished - started,
        ),
    )
    definition = ViewDefinition(columns, statement.comment, statement.properties)
    try:
        create_catalog_view(context.spark, metadata, definition, replace=existing is not None)
    except BaseException:
        snapshot.remove_path(context.spark, path)
        raise
    if existing is not None:
        snapshot.remove_snapshots(context.spark, root, keep=[existing.snapshot, path])
    return []


def check_trigger(trigger: RefreshTrigger | None) -> None:
    if trigger is RefreshTrigger.ON_COMMIT:
        raise SparkMvError(
            ErrorClass.MATERIALIZED_VIEW_UNSUPPORTED_FEATURE,
            feature="REFRESH ON COMMIT (maintenance inside every write to a base table)",
            hint="Use ON DEMAND (the default) and run REFRESH MATERIALIZED VIEW.",
        )


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
