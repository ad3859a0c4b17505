"""``Merge``: how a view's stored rows and its change ΔV combine, per storage layout.

A merge is planned here, as SQL over two relations (the stored rows a change hits, and the
change), and executed by ``apply/incremental.py``, which decides which stored rows to read
and where the result is written. A row layout's merge is ``row_merge``; an aggregate view's
is ``plan/aggregate_view.group_merge``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from sparkmv import frames
from sparkmv.catalog.metadata import StorageLayout
from sparkmv.delta.relation import WEIGHT_SQL, TempViews
from sparkmv.identifiers import quote_identifier
from sparkmv.storage.stored_columns import BUCKET_COLUMN, COUNT_COLUMN, storage_columns

METRICS = ("inserted", "deleted", "rewritten", "negative")
"""What a merge counts: visible rows inserted and deleted, stored rows written, and rows
whose multiplicity went negative (ΔV does not fit the stored view)."""


@dataclass(frozen=True)
class Merge:
    """How a layout merges a change into the stored rows it hits.

    ``key_columns``: the columns that identify a stored row (a row's value, a group's
    keys): a change row merges into the stored rows equal to it on them (NULL equal to
    NULL), and their hash is the row's bucket (as when the snapshot was written).
    ``schema``: a stored file's columns.
    ``merged(stored, change)``: the merge of ``stored`` (every stored row with the keys of
    some change row, and maybe others: an extra row merges with nothing and comes out
    as it was) with ``change``, both with the bucket column; ``by_bucket``: its rows are
    distributed by bucket already.
    ``metrics``: SQL aggregates over the merged rows, one per ``METRICS`` name.
    ``kept(merged)``: the rows to store, in ``schema`` plus the bucket column.
    ``bag``: the layout is a bag of rows (one stored row per copy): a change row of
    positive weight adds copies and needs no stored row, so only ΔV's deletions are
    looked up.
    """

    key_columns: list[str]
    schema: T.StructType
    merged: Callable[[DataFrame, DataFrame], DataFrame]
    metrics: tuple[str, ...]
    kept: Callable[[DataFrame], DataFrame]
    by_bucket: bool = False
    bag: bool = False


def row_merge(layout: StorageLayout, change: T.StructType) -> Merge:
    """The merge of a row layout (a bag of rows, or rows with a counter) with a change of
    schema ``change``: ΔV's columns ``c0 …`` and the weight.

    Per stored row value ``r`` of the touched buckets: ``old(r)`` copies (or its counter),
    ``delta(r) = ΔV(r)``, ``new(r) = old(r) + delta(r)``; ``r`` stays stored with ``new(r)``
    copies (counter) while that is positive. Built as one SQL statement (the DataFrame API
    would cost a py4j round trip per column and operator)."""
    visible = storage_columns(len(change.fields) - 1)
    types = {field.name: field.dataType for field in change.fields}
    fields = [T.StructField(c, types[c]) for c in visible]
    if layout.counted:
        fields.append(T.StructField(COUNT_COLUMN, T.LongType()))
    key_items = [quote_identifier(c) for c in [*visible, BUCKET_COLUMN]]
    keys = ", ".join(key_items)
    old = quote_identifier(COUNT_COLUMN) if layout.counted else "1"

    def merged(stored: DataFrame, change: DataFrame) -> DataFrame:
        views = TempViews(stored.sparkSession)
        try:
            # Shuffled by bucket once: the grouping by every key then needs no shuffle of
            # its own.
            return frames.sql(
                stored.sparkSession,
                f"SELECT {keys}, SUM(old) AS old, SUM(delta) AS delta,"
                " SUM(old) + SUM(delta) AS new FROM (SELECT * FROM ("
                f"SELECT {keys}, CAST({old} AS BIGINT) AS old, CAST(0 AS BIGINT) AS delta"
                f" FROM {views.name_of(stored)} UNION ALL"
                f" SELECT {keys}, CAST(0 AS BIGINT), CAST({WEIGHT_SQL} AS BIGINT)"
                f" FROM {views.name_of(change)}) DISTRIBUTE BY {BUCKET_COLUMN})"
                f" GROUP BY {keys}",
            )
        finally:
            views.drop()

    def kept(merged: DataFrame) -> DataFrame:
        if layout.counted:
            counter = f"new AS {quote_identifier(COUNT_COLUMN)}"
            return frames.select(merged, [*key_items, counter], "new > 0")
        # ``new`` copies of each row: the rows of an array of that many structs of it.
        copies = f"inline(array_repeat(struct({keys}), CAST(new AS INT)))"
        return frames.select(merged, [copies], "new > 0")

    return Merge(
        visible,
        T.StructType(fields),
        merged,
        _row_metrics(layout),
        kept,
        by_bucket=True,
        bag=not layout.counted,
    )


def _row_metrics(layout: StorageLayout) -> tuple[str, ...]:
    """Visible rows inserted and deleted, rows rewritten, rows gone negative: per group."""
    if layout.counted:  # a DISTINCT view shows a row while its counter is positive
        inserted = "SUM(CASE WHEN old <= 0 AND new > 0 THEN 1 ELSE 0 END)"
        deleted = "SUM(CASE WHEN old > 0 AND new <= 0 THEN 1 ELSE 0 END)"
        rewritten = "SUM(CASE WHEN new > 0 THEN 1 ELSE 0 END)"
    else:
        inserted = "SUM(greatest(delta, 0))"
        deleted = "SUM(greatest(-delta, 0))"
        rewritten = "SUM(greatest(new, 0))"
    return (inserted, deleted, rewritten, "SUM(CASE WHEN new < 0 THEN 1 ELSE 0 END)")
