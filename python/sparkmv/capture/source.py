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


class ChangeRangeError(Exception):
    """The source cannot answer for a version range (compacted away, or in the future)."""
