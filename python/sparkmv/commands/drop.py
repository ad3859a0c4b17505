"""DROP MATERIALIZED VIEW [IF EXISTS] name"""

from __future__ import annotations

from sparkmv.apply import snapshot
from sparkmv.commands.context import CommandContext, Rows
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.faults import checkpoint
from sparkmv.parse.statements import DropStatement

RESULT_SCHEMA = ""


def run(context: CommandContext, statement: DropStatement) -> Rows:
    """Drop the catalog view (the commit point), then its data."""
    name = context.catalog.resolve(statement.name)
    view = context.catalog.find(name)
    if view is None:
        if statement.if_exists:
            return []
        raise SparkMvError(ErrorClass.MATERIALIZED_VIEW_NOT_FOUND, name=name)
    context.catalog.drop_view(name)
    checkpoint("drop.after_commit")
    snapshot.remove_path(context.spark, snapshot.storage_root(context.spark, name))
    context.stop_tracking(name, view.base_tables)
    return []
