"""DESCRIBE MATERIALIZED VIEW [EXTENDED] name, in Spark's DESCRIBE TABLE layout."""

from __future__ import annotations

from datetime import UTC, datetime

from sparkmv.capture.source import ChangeRangeError
from sparkmv.catalog import properties as keys
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.commands.context import CommandContext, Rows
from sparkmv.parse.statements import DescribeStatement, TableName

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
        rows.append(("", "", ""))
        rows.append((SECTION, "", ""))
        rows.extend(
            (key, value, "") for key, value in information(view, entry.properties, entry.comment)
        )
        rows.extend((key, value, "") for key, value in change_logs(context, view))
    return rows


def change_logs(context: CommandContext, view: MvMetadata) -> list[tuple[str, str]]:
    """Per base table: the change-log version the view consumed and what is pending since."""
    rows = []
    for qualified in view.base_tables:
        state = context.tracking.state(TableName.parse_qualified(qualified))
        if state.log is None:
            rows.append((f"Change Log {qualified}", f"not tracked: {state.untracked_reason}"))
            continue
        position = view.consumed_versions.get(qualified)
        consumed = position.version if position else 0
        current = state.log.current_version()
        problem = state.log.verify(context.tracking.files(state.table, state.entry))
        if position is None or position.log != state.log.root:
            problem = problem or "the view has not read this table's current change log"
        try:
            if problem:
                raise ChangeRangeError(problem)
            pending = state.log.net_changes(consumed, current).count() if current > consumed else 0
        except ChangeRangeError as error:
            text = f"the next refresh is full: {error}"
        else:
            skipped = view.stats.irrelevant_rows_skipped.get(qualified, 0)
            text = (
                f"consumed version {consumed}, current version {current}, {pending} pending "
                f"rows logged, {skipped} irrelevant rows skipped"
            )
        rows.append((f"Change Log {qualified}", text))
    return rows


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
