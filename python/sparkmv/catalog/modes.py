"""How and when a view is refreshed: its policy and trigger (catalog metadata, set by CREATE
and ALTER) and the mode a refresh runs in (docs/sql-reference.md)."""

from __future__ import annotations

from enum import Enum


class RefreshPolicy(Enum):
    """How a refresh is computed (docs/sql-reference.md)."""

    AUTO = "AUTO"  # incremental when possible and cheaper, full otherwise
    INCREMENTAL = "INCREMENTAL"  # refused at CREATE when the query cannot be maintained
    FULL = "FULL"  # always recompute


class RefreshTrigger(Enum):
    """When a refresh happens (docs/sql-reference.md)."""

    ON_DEMAND = "ON DEMAND"  # deferred: on REFRESH MATERIALIZED VIEW
    ON_COMMIT = "ON COMMIT"  # immediate: inside every captured write to a base table


class RefreshMode(Enum):
    """The mode asked for by ``REFRESH MATERIALIZED VIEW v [FULL | INCREMENTAL]``."""

    FULL = "FULL"
    INCREMENTAL = "INCREMENTAL"
