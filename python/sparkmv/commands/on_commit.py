"""Immediate maintenance: views created or altered with ``REFRESH ... ON COMMIT`` are
refreshed by every captured write to one of their base tables, before the write's statement
returns (Hanson 1986's immediate strategy, as Oracle's ON COMMIT and pg_ivm do).

A write commits first (its change log's manifest), then each ON COMMIT view of the table is
refreshed as ``REFRESH MATERIALIZED VIEW v`` would refresh it: incrementally from the change
the write just logged, under the view's policy, and committed on its own. So a reader after
the statement sees the views current; a reader during it may see the table changed and a view
not yet (the two commits are separate, each atomic). A refresh that fails leaves the write
committed and the view as of its last refresh (consistent, not current): the statement fails
with ``MATERIALIZED_VIEW_ON_COMMIT_REFRESH_FAILED``, saying so. So does a process that dies
between the two commits, silently: either way DESCRIBE EXTENDED shows the view stale (``Up To
Date``), and the next write to a base table, or REFRESH, catches it up. A read does not: it
reads the view's snapshot as Spark reads any view.

Which views to refresh, the table's change log lists (``ChangeLog.immediate_dependents``,
kept by CREATE, ALTER and DROP); the catalog decides: a listed view no longer ON COMMIT is
left alone.

Views over views: a refresh of a materialized view that changes it is, for the views that
read it, a captured write (its change is logged, ``capture/view_log.py``): its ON COMMIT
readers are refreshed right after it, in the same statement, and theirs after them — the
same rules and the same failure semantics, one level at a time (the graph is acyclic,
``commands/dependencies.py``). This holds whatever refreshed the view: REFRESH, or an ON
COMMIT refresh of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from sparkmv.capture.tracking import BaseTable
from sparkmv.catalog.history import Trigger
from sparkmv.commands import refresh
from sparkmv.commands.context import CommandContext
from sparkmv.commands.refresh_history import triggered_by
from sparkmv.commands.view_locks import view_lock
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.faults import checkpoint
from sparkmv.identifiers import TableName


def refresh_immediate_views(
    context: CommandContext, table: TableName, views: Sequence[TableName]
) -> None:
    """Refresh each of ``views`` (the ON COMMIT dependents of ``table``, just written)."""
    for view in views:
        checkpoint("on_commit.before_refresh")  # the write is committed, the view not yet
        try:
            with view_lock(view), triggered_by(Trigger.ON_COMMIT):
                refreshed = refresh.refresh_if_immediate(context, view)
        except Exception as error:
            detail = error.message if isinstance(error, SparkMvError) else str(error)
            raise SparkMvError(
                ErrorClass.MATERIALIZED_VIEW_ON_COMMIT_REFRESH_FAILED,
                table=table,
                view=view,
                detail=detail.splitlines()[0] if detail else type(error).__name__,
            ) from error
        if refreshed is not None:  # else no longer an ON COMMIT view: the catalog decides
            refresh_immediate_views(context, view, refreshed.immediate)


def mark_immediate(bases: Sequence[BaseTable], view: TableName, immediate: bool) -> None:
    """List ``view`` among the ON COMMIT dependents of each tracked base table (or not)."""
    for base in bases:
        if base.log is not None:
            base.log.set_immediate(str(view), immediate)


def check_immediate(view: TableName, bases: Sequence[BaseTable]) -> None:
    """An ON COMMIT view needs every base table's writes captured: refuse it otherwise."""
    untracked = [base for base in bases if base.log is None]
    if untracked:
        base = untracked[0]
        raise SparkMvError(
            ErrorClass.MATERIALIZED_VIEW_ON_COMMIT_NOT_CAPTURED,
            view=view,
            table=base.name,
            reason=base.problem
            or (
                "its changes are read from its catalog's changelog, and sparkmv sees none "
                "of its writes"
                if base.changelog is not None
                else "untracked"
            ),
        )
