"""SHOW MATERIALIZED VIEWS [{FROM | IN} db] [LIKE 'pattern']"""

from __future__ import annotations

import re

from sparkmv.commands.context import CommandContext, Rows
from sparkmv.parse.statements import ShowStatement

RESULT_SCHEMA = (
    "namespace STRING, viewName STRING, refresh_policy STRING, refresh_trigger STRING, "
    "last_refreshed TIMESTAMP"
)


def run(context: CommandContext, statement: ShowStatement) -> Rows:
    database = (statement.database or context.spark.catalog.currentDatabase()).lower()
    return [
        (
            database,
            view.name.name,
            view.policy.value,
            view.trigger.value,
            view.stats.last_refreshed_ms or None,
        )
        for view in context.catalog.list(database)
        if statement.pattern is None or matches(statement.pattern, view.name.name)
    ]


def matches(pattern: str, name: str) -> bool:
    """Spark's SHOW TABLES LIKE: ``*`` (or ``%``) any text, ``|`` alternatives, no case."""
    for alternative in pattern.split("|"):
        regex = ".*".join(re.escape(part) for part in re.split(r"[*%]", alternative.strip()))
        if re.fullmatch(regex, name, flags=re.IGNORECASE):
            return True
    return False
