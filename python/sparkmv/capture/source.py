"""``ChangeSource``: the one question a refresh asks a base table.

"Which rows were inserted into and deleted from R between version a and version b?" The
answer is a Z-set DataFrame (``sparkmv.zset``) of the net changes: ``A-net = A − D`` and
``D-net = D − A`` of Hanson §2.2, so a row inserted and deleted inside the range is absent.
The change log of this package implements it; a table whose catalog offers Spark's change
feed (``SELECT ... FROM t CHANGES FROM VERSION a TO VERSION b``, Spark ≥ 4.2) can implement
it too without the refresh noticing the difference.
"""

from __future__ import annotations

from typing import Protocol

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType


class ChangeSource(Protocol):
    """Net changes of one base table, by version."""

    def current_version(self) -> int:
        """The version of the latest committed change (0 before the first)."""
        ...

    def earliest_readable(self) -> int:
        """The smallest ``a`` for which ``net_changes(a, b)`` can still be answered."""
        ...

    def net_changes(self, start: int, end: int) -> DataFrame:
        """The net changes of versions ``(start, end]`` as a consolidated Z-set.

        Raises ``ChangeRangeError`` when the source no longer (or not yet) covers the
        range; the caller then refreshes fully.
        """
        ...


class VersionedChanges(ChangeSource, Protocol):
    """A ``ChangeSource`` as a refresh reads it: sparkmv's own change log
    (``change_log.ChangeLog``) or a catalog's changelog (``changelog_source.ChangelogSource``).
    """

    @property
    def identity(self) -> str:
        """What the versions are versions of: a view records it with the version it consumed
        (``LogPosition.log``), so a table re-created under its name (new versions) is never
        read against an old version."""
        ...

    @property
    def schema(self) -> StructType:
        """The table's columns, which every change row has (in this order)."""
        ...

    def row_changes(self, start: int, end: int, read: set[str] | None = None) -> DataFrame:
        """The change rows of versions ``(start, end]`` as a Z-set, not consolidated (a row
        inserted then deleted appears twice). A reader of only the columns ``read`` (None:
        all) may be spared changes that leave them as they were."""
        ...

    def inserts_only(self, start: int, end: int, read: set[str] | None = None) -> bool:
        """Whether every row ``row_changes(start, end, read)`` returns is an insertion
        (weight +1), known without reading them; False when unknown. Such a change needs
        no consolidation: no two of its rows can cancel."""
        ...

    def unreadable_reason(self, start: int, end: int) -> str:
        """Why ``net_changes(start, end)`` cannot be answered; "" when it can."""
        ...


class ChangeRangeError(Exception):
    """The source cannot answer for a version range (compacted away, or in the future)."""
