"""The merge of an aggregate view's storage (one row per group, ``plan/aggregate_view.py``):
the touched buckets' groups get their new state and visible columns; a group whose
``COUNT(*)`` reaches zero is dropped (a global aggregate's one row stays).

The merged rows are one Spark SQL query (``AggregateView.merged_sql``); what is kept of
them and the metrics are SQL text too, so that a merge costs a few py4j round trips
instead of one per column and operator."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparkmv.apply.incremental import Merge, write_merged
from sparkmv.apply.snapshot import BUCKET_COLUMN, VISIBLE_COLUMN
from sparkmv.delta import aggregate as agg
from sparkmv.delta.engine import DeltaEngine
from sparkmv.parse.statements import quote_identifier as q
from sparkmv.parse.statements import sql_string
from sparkmv.plan.aggregate_view import OLD, AggregateView
from sparkmv.zset import COUNT_COLUMN

ROW = "__sparkmv_row"


def group_merge(view: AggregateView, engine: DeltaEngine) -> Merge:
    schema = view.stored_rows(engine).schema  # analysis only
    # The stored columns and the bucket as one struct, expanded again by ``ROW.*``: one
    # column to pass to the JVM instead of one per stored column.
    fields = [*view.storage(), BUCKET_COLUMN]
    row = ", ".join(f"{sql_string(c)}, {q(c)}" for c in fields)
    stored_row = f"named_struct({row}) AS {q(ROW)}"
    kept = view.kept_sql()

    def rewrite(stored: DataFrame, change: DataFrame, path: str) -> dict[str, int]:
        merged = view.merged(stored, change, engine, [BUCKET_COLUMN])
        return write_merged(merged, _metrics(view), kept_rows, path)

    def kept_rows(merged: DataFrame) -> DataFrame:
        return merged.where(F.expr(kept)).select(F.expr(stored_row)).select(f"{q(ROW)}.*")

    return Merge(view.keys, schema, rewrite)


def _metrics(view: AggregateView) -> list[str]:
    """Visible rows inserted and deleted (a group whose visible values change counts as
    one of each), rows rewritten (groups and value counters), rows with a negative
    counter."""
    was, now = f"coalesce({q(OLD + VISIBLE_COLUMN)}, FALSE)", q(VISIBLE_COLUMN)
    same = " AND ".join(["TRUE", *(f"{q(c)} <=> {q(OLD + c)}" for c in view.visible)])
    unchanged = f"({was} AND {now} AND {same})"
    counters = [COUNT_COLUMN] + [
        agg.count_column(i)
        for i, call in enumerate(view.aggregate.calls)
        if agg.count_column(i) in view.state
    ]
    if view.counters:
        counters.append(agg.VALUE_COUNT_COLUMN)
    negative = " OR ".join(f"{q(c)} < 0" for c in counters)

    def count(condition: str) -> str:
        return f"sum(CASE WHEN {condition} THEN 1 ELSE 0 END)"

    return [
        count(f"{now} AND NOT {unchanged}"),
        count(f"{was} AND NOT {unchanged}"),
        count(f"({view.kept_sql()})"),
        count(f"({negative})"),
    ]
