"""The names of a view's stored columns (docs/architecture.md), shared by the stage that plans a
refresh's merge (``plan/``) and the one that writes it (``apply/``).

Storage columns are positional (``c0``, ``c1``, ...): the catalog view renames them to the
view's column names, so any column name Spark allows works and the hidden maintenance
columns below can sit beside them without ever showing in ``SELECT *``.
"""

from __future__ import annotations

COUNT_COLUMN = "mv_count"
"""Hidden: a row's multiplicity (a DISTINCT view) or a group's ``COUNT(*)`` (an aggregate
view)."""
GROUP_KEY_PREFIX = "mv_k"
"""Hidden, in an aggregate view's storage: its group keys ``mv_k0 …``."""
BUCKET_COLUMN = "mv_bucket"
"""Hidden: the partition column of a bucketed layout."""
VISIBLE_COLUMN = "mv_visible"
"""Hidden, in a grouped layout: whether a stored group is a row of the view."""


def storage_columns(count: int) -> list[str]:
    """The positional names of a view's first ``count`` stored columns."""
    return [f"c{i}" for i in range(count)]
