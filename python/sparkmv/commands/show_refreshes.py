"""SHOW MATERIALIZED VIEW REFRESHES [FOR name] [LIMIT n], and the table-valued function
``sparkmv_refresh_history([name])`` (the shim's ``RefreshHistoryFunction``) that returns the
same rows: the refresh history of a view, or of every view, newest first
(``catalog/history.py``). Reads the history's files only: no Spark job."""

from __future__ import annotations

from sparkmv.catalog import history
from sparkmv.commands.context import CommandContext, Rows
from sparkmv.parse.statements import ShowRefreshesStatement

RESULT_SCHEMA = (
    "view STRING, started TIMESTAMP, ended TIMESTAMP, duration_ms BIGINT, trigger STRING,"
    " status STRING, mode STRING, reason STRING, estimated_ms BIGINT, rows_inserted BIGINT,"
    " rows_deleted BIGINT, irrelevant_rows BIGINT, base_versions MAP<STRING, BIGINT>,"
    " spark_jobs BIGINT, bytes_read BIGINT, error_class STRING, error_message STRING"
)


def run(context: CommandContext, statement: ShowRefreshesStatement) -> Rows:
    name = None
    if statement.name is not None:
        name = context.catalog.resolve(statement.name)
        context.catalog.get_entry(name)  # a view that is not there (or no view) is an error
    return [
        (
            record.view,
            record.started_ms,
            record.ended_ms,
            record.ended_ms - record.started_ms,
            record.trigger,
            record.status,
            record.mode,
            record.reason,
            record.estimated_ms,
            record.rows_inserted,
            record.rows_deleted,
            record.irrelevant_rows,
            dict(record.base_versions),
            record.spark_jobs,
            record.bytes_read,
            record.error_class,
            record.error_message,
        )
        for record in history.read(context.spark, name, statement.limit)
    ]
