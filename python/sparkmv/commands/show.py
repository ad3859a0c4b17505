"""SHOW MATERIALIZED VIEWS [{FROM | IN} db] [LIKE 'pattern']"""

from __future__ import annotations

import re

from sparkmv.commands.context import CommandContext, Rows
from sparkmv.commands.describe import lag_seconds, schedule_report
from sparkmv.parse.statements import ShowStatement

RESULT_SCHEMA = (
    "namespace STRING, viewName STRING, refresh_policy STRING, refresh_trigger STRING, "
    "last_refreshed TIMESTAMP, schedule STRING, next_refresh STRING, current_lag_seconds BIGINT"
)
"""``schedule``, ``next_refresh`` and ``current_lag_seconds`` as DESCRIBE EXTENDED reports them
(``describe.schedule_report``); NULL for a view without a schedule."""


def run(context: CommandContext, statement: ShowStatement) -> Rows:
    database = (statement.database or context.spark.catalog.currentDatabase()).lower()
    rows: Rows = []
    for view in context.catalog.list(database):
        if statement.pattern is not None and not matches(statement.pattern, view.name.name):
            continue
        report = schedule_report(context, view)
        lag = None if report.lag_ms is None else lag_seconds(report.lag_ms)
        rows.append(
            (
                database,
                view.name.name,
                view.policy.value,
                view.trigger.value,
                view.stats.last_refreshed_ms or None,
                report.schedule,
                report.next_refresh,
                lag,
            )
        )
    return rows


def matches(pattern: str, name: str) -> bool:
    """Spark's SHOW TABLES LIKE: ``*`` (or ``%``) any text, ``|`` alternatives, no case."""
    for alternative in pattern.split("|"):
        regex = ".*".join(re.escape(part) for part in re.split(r"[*%]", alternative.strip()))
        if re.fullmatch(regex, name, flags=re.IGNORECASE):
            return True
    return False
