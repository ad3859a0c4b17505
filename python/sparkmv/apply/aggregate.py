"""The merge of an aggregate view's storage (one row per group, ``plan/aggregate_view.py``):
the touched buckets' groups get their new state and visible columns; a group whose
``COUNT(*)`` reaches zero is dropped (a global aggregate's one row stays)."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from sparkmv.apply.incremental import Merge, write_merged
from sparkmv.apply.snapshot import BUCKET_COLUMN, VISIBLE_COLUMN, storage_columns
from sparkmv.delta import aggregate as agg
from sparkmv.delta.engine import DeltaEngine
from sparkmv.plan.aggregate_view import OLD, AggregateView
from sparkmv.zset import COUNT_COLUMN


def group_merge(view: AggregateView, engine: DeltaEngine) -> Merge:
    schema = view.stored_rows(engine).schema  # analysis only

    def rewrite(stored: DataFrame, change: DataFrame, path: str) -> dict[str, int]:
        merged = view.merged(stored, change, engine, [BUCKET_COLUMN])
        return write_merged(merged, _metrics(view), kept_rows, path)

    def kept_rows(merged: DataFrame) -> DataFrame:
        return merged.where(view.kept()).select(*view.storage(), BUCKET_COLUMN)

    return Merge(view.keys, schema, rewrite)


def _metrics(view: AggregateView) -> list[Column]:
    """Visible rows inserted and deleted (a group whose visible values change counts as
    one of each), rows rewritten (groups and value counters), rows with a negative
    counter."""
    visible = storage_columns(len(view.project.outputs))
    was, now = F.coalesce(F.col(OLD + VISIBLE_COLUMN), F.lit(False)), F.col(VISIBLE_COLUMN)
    same = reduce(
        lambda a, b: a & b, [F.col(c).eqNullSafe(F.col(OLD + c)) for c in visible], F.lit(True)
    )
    unchanged = was & now & same
    counters = [COUNT_COLUMN] + [
        agg.count_column(i)
        for i, call in enumerate(view.aggregate.calls)
        if agg.count_column(i) in view.state
    ]
    if view.counters:
        counters.append(agg.VALUE_COUNT_COLUMN)
    negative = reduce(lambda a, b: a | b, [F.col(c) < 0 for c in counters])
    return [
        F.sum(F.when(now & ~unchanged, 1).otherwise(0)),
        F.sum(F.when(was & ~unchanged, 1).otherwise(0)),
        F.sum(F.when(view.kept(), 1).otherwise(0)),
        F.sum(F.when(negative, 1).otherwise(0)),
    ]
