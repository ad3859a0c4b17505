"""Scan of a base table: the leaves of the delta rules.

``R_new`` is the table's rows with weight 1; ``ΔR`` is the change log's net changes
(``ChangeSource.net_changes``, Hanson §2.2's ``A-net``/``D-net`` as one Z-set), and
``R_old = R_new − ΔR`` (Hanson Appendix A: ``R' = R − D`` with the net changes; here as a
weighted union, so no row is deleted more often than it occurs).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparkmv.analyze.relational import Scan
from sparkmv.delta.engine import (
    DeltaEngine,
    DeltaRule,
    Version,
    column,
    spark_expression,
    with_outputs,
)
from sparkmv.zset import WEIGHT, weighted


def evaluate(node: Scan, version: Version, engine: DeltaEngine) -> DataFrame:
    state = engine.tables[node.table]
    rows = weighted(state.rows.select(*(column(c) for c in node.columns)), 1)
    if version is Version.OLD and state.change is not None:
        retracted = state.change.select(
            *(column(c) for c in node.columns), (-column(WEIGHT)).alias(WEIGHT)
        )
        rows = rows.unionByName(retracted)
    return with_outputs(rows, node.columns, node.outputs)


def delta(node: Scan, engine: DeltaEngine) -> DataFrame:
    """``ΔR``, less the rows this occurrence's irrelevance filter drops (Blakeley §4)."""
    change = engine.tables[node.table].change
    if change is None:
        raise ValueError(f"{node.table} did not change")
    screen = engine.screens.get(node)
    if screen is not None:
        change = change.where(spark_expression(screen))
    selected = change.select(*(column(c) for c in node.columns), F.col(WEIGHT).cast("long"))
    return with_outputs(selected, node.columns, node.outputs)


def describe(node: Scan, version: Version | None, engine: DeltaEngine) -> str:
    name = node.table.rpartition(".")[2]
    if node.alias and node.alias != name:
        name = f"{name} {node.alias}"
    if version is None:
        return f"Δ{name}'" if node in engine.screens else f"Δ{name}"  # ' : screened
    return f"{name}_old" if version is Version.OLD else name


RULE = DeltaRule(Scan, evaluate, delta, describe)
