"""The graph of materialized views over materialized views, read both ways.

Upstream: the views a view's query reads (its base tables that are materialized views, from
its metadata). Downstream: the views that read it (the dependents its change log lists,
``ChangeLog.dependents``; a view without a log has none).

The graph is acyclic by construction: a view can only read views that exist when it is
created (its query is analyzed then), so every edge points from an older view to a newer
one; and a new definition of an existing view ``v`` (``CREATE OR REPLACE``, ``ALTER ... AS``)
is refused when it reads ``v`` itself or any view downstream of ``v`` (``check_no_cycle``),
the only way an edge could point back. Orders computed here therefore terminate and are
topological.
"""

from __future__ import annotations

from collections.abc import Callable

from sparkmv.capture.change_log import ChangeLog
from sparkmv.catalog import properties as keys
from sparkmv.catalog.views import ViewCatalog
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.identifiers import TableName


def upstream_views(catalog: ViewCatalog, view: TableName) -> list[TableName]:
    """The materialized views ``view``'s query reads directly."""
    metadata = catalog.find(view)
    if metadata is None:
        return []
    names = [TableName.parse_qualified(name) for name in metadata.base_tables]
    entries = catalog.entries(names) if names else {}
    return [name for name in names if (e := entries[name]) is not None and e.is_materialized_view]


def downstream_views(catalog: ViewCatalog, view: TableName) -> list[TableName]:
    """The materialized views that read ``view`` directly (those its change log lists and
    that still exist as materialized views)."""
    entry = catalog.entry(view)
    if entry is None or keys.TRACKING_LOG not in entry.properties:
        return []
    log = ChangeLog(catalog.spark, entry.properties[keys.TRACKING_LOG], entry.schema)
    names = [TableName.parse_qualified(name) for name in sorted(log.dependents())]
    entries = catalog.entries(names) if names else {}
    return [name for name in names if (e := entries[name]) is not None and e.is_materialized_view]


def upstream_order(catalog: ViewCatalog, view: TableName) -> list[TableName]:
    """Every view ``view`` reads, directly or not, each after the views it reads
    (topological): the order ``REFRESH ... CASCADE`` refreshes them in, before ``view``."""
    return _post_order(view, lambda name: upstream_views(catalog, name))[:-1]


def downstream_order(catalog: ViewCatalog, view: TableName) -> list[TableName]:
    """Every view that reads ``view``, directly or not, each before the views it reads: the
    order ``DROP ... CASCADE`` drops them in, before ``view``."""
    return _post_order(view, lambda name: downstream_views(catalog, name))[:-1]


def check_no_cycle(catalog: ViewCatalog, view: TableName, base_tables: tuple[str, ...]) -> None:
    """Refuse a new definition of the existing view ``view`` that reads ``view`` itself or a
    view downstream of it: the view would (indirectly) read itself."""
    read = {TableName.parse_qualified(name) for name in base_tables}
    downstream = [view, *downstream_order(catalog, view)]
    cyclic = next((name for name in downstream if name in read), None)
    if cyclic is not None:
        path = "itself" if cyclic == view else f"{cyclic}, which reads {view}"
        raise SparkMvError(ErrorClass.MATERIALIZED_VIEW_CYCLE, name=view, path=path)


def _post_order(root: TableName, edges: Callable[[TableName], list[TableName]]) -> list[TableName]:
    """The nodes reachable from ``root`` along ``edges``, each after all nodes it reaches
    (``root`` last), each once. The graph is acyclic (module docstring)."""
    order: list[TableName] = []
    seen: set[TableName] = set()

    def visit(node: TableName) -> None:
        seen.add(node)
        for successor in edges(node):
            if successor not in seen:
                visit(successor)
        order.append(node)

    visit(root)
    return order
