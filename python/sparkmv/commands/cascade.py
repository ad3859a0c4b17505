"""REFRESH MATERIALIZED VIEW name [FULL | INCREMENTAL] [CASCADE], as a statement.

Plain REFRESH refreshes the view alone, against whatever its upstream views (the
materialized views it reads) have logged so far. With CASCADE, its upstream views are
refreshed first, each after the views it reads (``dependencies.upstream_order``), then the
view: each refresh commits on its own, so a failure leaves the views refreshed before it
refreshed and the rest as they were (each consistent; the failing statement says which).
The mode asked for applies to the named view only; upstream views refresh as their policies
decide. Either way, the ON COMMIT views that read a view a refresh changed are refreshed
after it (``on_commit.refresh_immediate_views``). The result is the named view's row.
"""

from __future__ import annotations

from dataclasses import replace

from sparkmv.catalog.history import Trigger
from sparkmv.commands import refresh
from sparkmv.commands.context import CommandContext, Rows
from sparkmv.commands.dependencies import upstream_order
from sparkmv.commands.on_commit import refresh_immediate_views
from sparkmv.commands.refresh_history import triggered_by
from sparkmv.commands.view_locks import view_lock
from sparkmv.parse.statements import RefreshStatement

RESULT_SCHEMA = refresh.RESULT_SCHEMA


def run(context: CommandContext, statement: RefreshStatement) -> Rows:
    name = context.catalog.resolve(statement.name)
    if statement.cascade:
        for upstream in upstream_order(context.catalog, name):
            with triggered_by(Trigger.CASCADE):
                refresh_one(context, RefreshStatement(upstream))
    return refresh_one(context, replace(statement, name=name, cascade=False))


def refresh_one(context: CommandContext, statement: RefreshStatement) -> Rows:
    """Refresh one view under its lock, then (the lock released, so that no thread holds one
    view's lock while it waits for another's) the ON COMMIT views that read it if it
    changed."""
    with view_lock(statement.name):
        refreshed = refresh.refresh_view(context, statement)
    refresh_immediate_views(context, statement.name, refreshed.immediate)
    return refreshed.rows
