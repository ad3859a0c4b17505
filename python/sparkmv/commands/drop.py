"""DROP MATERIALIZED VIEW [IF EXISTS] name [CASCADE]

A view that other materialized views read is not dropped (they would lose their input:
``MATERIALIZED_VIEW_HAS_DEPENDENTS``) unless CASCADE, which drops every view that reads it,
directly or not, first — each before the views it reads (``dependencies.downstream_order``),
so that no view is ever left reading a dropped one.
"""

from __future__ import annotations

from sparkmv import fs
from sparkmv.catalog import history
from sparkmv.catalog import properties as keys
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.commands.context import CommandContext, Rows
from sparkmv.commands.dependencies import downstream_order, downstream_views
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.faults import checkpoint
from sparkmv.identifiers import TableName
from sparkmv.parse.statements import DropStatement
from sparkmv.storage import snapshot

RESULT_SCHEMA = ""


def run(context: CommandContext, statement: DropStatement) -> Rows:
    name = context.catalog.resolve(statement.name)
    entry = context.catalog.find_entry(name)
    if entry is None:
        if statement.if_exists:
            return []
        raise SparkMvError(ErrorClass.MATERIALIZED_VIEW_NOT_FOUND, name=name)
    # Only a view that some view read has a change log (and so, maybe, readers).
    logged = keys.TRACKING_LOG in entry.properties
    readers = downstream_views(context.catalog, name) if logged else []
    if readers and not statement.cascade:
        listed = ", ".join(str(reader) for reader in readers)
        raise SparkMvError(
            ErrorClass.MATERIALIZED_VIEW_HAS_DEPENDENTS, name=name, dependents=listed
        )
    for reader in downstream_order(context.catalog, name) if readers else []:
        drop_view(context, reader)
    drop_view(context, name)
    return []


def drop_view(context: CommandContext, name: TableName) -> None:
    """Drop the catalog view (the commit point), then its data, its refresh history
    (``catalog/history.py``), its reading of its base tables, and its own change log (no
    view reads it any more)."""
    entry = context.catalog.get_entry(name)
    view = MvMetadata.from_properties(name, entry.properties)
    context.catalog.drop_view(name)
    checkpoint("drop.after_commit")
    snapshot.remove_path(context.spark, snapshot.storage_root(context.spark, name))
    history.remove(context.spark, name)
    context.stop_tracking(name, view.base_tables)
    own_log = entry.properties.get(keys.TRACKING_LOG)
    if own_log is not None:
        fs.remove(context.spark, own_log)
