"""One handler per statement kind, and the registry the bridge dispatches through.

Each command module defines ``RESULT_SCHEMA`` (a DDL string, "" for none) and
``run(context, statement) -> rows``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparkmv.commands import (
    alter,
    cascade,
    create,
    describe,
    drop,
    explain,
    show,
    show_refreshes,
)
from sparkmv.commands.context import CommandContext, Rows
from sparkmv.commands.view_locks import view_lock
from sparkmv.parse import parse_statement
from sparkmv.parse.statements import (
    AlterQueryStatement,
    AlterRefreshStatement,
    AlterScheduleStatement,
    CreateStatement,
    DescribeStatement,
    DropStatement,
    ExplainStatement,
    RefreshStatement,
    ShowRefreshesStatement,
    ShowStatement,
    Statement,
)

RESULT_SCHEMAS: dict[str, str] = {
    "CREATE": create.RESULT_SCHEMA,
    "REFRESH": cascade.RESULT_SCHEMA,
    "DROP": drop.RESULT_SCHEMA,
    "ALTER": alter.RESULT_SCHEMA,
    "DESCRIBE": describe.RESULT_SCHEMA,
    "SHOW": show.RESULT_SCHEMA,
    "SHOW_REFRESHES": show_refreshes.RESULT_SCHEMA,
    "EXPLAIN": explain.RESULT_SCHEMA,
}
"""Result schema per statement kind, as the shim names the kinds."""

_RUNNERS: dict[type, Callable[[CommandContext, Any], Rows]] = {
    CreateStatement: create.run,
    RefreshStatement: cascade.run,
    DropStatement: drop.run,
    AlterRefreshStatement: alter.run_set_refresh,
    AlterScheduleStatement: alter.run_set_schedule,
    AlterQueryStatement: alter.run_as_query,
    DescribeStatement: describe.run,
    ShowStatement: show.run,
    ShowRefreshesStatement: show_refreshes.run,
    ExplainStatement: explain.run,
}


_CHANGING_A_VIEW = (
    CreateStatement,
    DropStatement,
    AlterRefreshStatement,
    AlterScheduleStatement,
    AlterQueryStatement,
)
"""Statements run under their view's lock; a REFRESH takes the lock of each view it refreshes
(``cascade.refresh_one``), one at a time."""


def run_statement(context: CommandContext, statement: Statement) -> Rows:
    run = _RUNNERS[type(statement)]
    if isinstance(statement, _CHANGING_A_VIEW):
        with view_lock(statement.name):
            return run(context, statement)
    return run(context, statement)


def execute(context: CommandContext, sql_text: str) -> Rows:
    """Parse and run one materialized-view statement; its result rows."""
    return run_statement(context, parse_statement(sql_text))
