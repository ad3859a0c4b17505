"""``DISTINCT`` (and ``UNION`` = ``DISTINCT(UNION ALL)``) via multiplicity counters.

``δ(R)`` holds each row of ``R`` once. With ``n(t)`` the multiplicity of ``t`` in ``R``
(Blakeley §5.1's counter), a change ``ΔR`` changes ``δ(R)`` only where the counter crosses
zero:

    Δδ(R)(t) = [n_old(t) + ΔR(t) > 0] − [n_old(t) > 0]     for t in ΔR

Inside a query (a DISTINCT subquery, a UNION joined further) ``n_old`` is counted from
``R_old`` restricted to the rows of ``ΔR``; at the top of a view the storage keeps the
counter per row instead (``apply``), so nothing is recounted.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparkmv.analyze.relational import Distinct
from sparkmv.delta.engine import DeltaEngine, DeltaRule, Version
from sparkmv.delta.relation import Relation
from sparkmv.zset import WEIGHT, column, consolidate, materialized


def distinct(zset: DataFrame) -> DataFrame:
    """The rows of ``zset`` with positive total weight, once each."""
    return consolidate(zset).where(column(WEIGHT) > 0).withColumn(WEIGHT, F.lit(1).cast("long"))


def evaluate(node: Distinct, version: Version, engine: DeltaEngine) -> Relation:
    return engine.relation(distinct(engine.evaluate(node.child, version)))


def delta(node: Distinct, engine: DeltaEngine) -> Relation:
    return engine.relation(counted_change(node, engine))


def counted_change(node: Distinct, engine: DeltaEngine) -> DataFrame:
    change = materialized(consolidate(engine.delta(node.child)))  # read twice below
    keys = [f"__k{index}" for index in range(len(node.outputs))]
    changed_rows = change.select(
        *(column(o).alias(k) for o, k in zip(node.outputs, keys, strict=True))
    )
    same = reduce(
        lambda a, b: a & b,
        [column(o).eqNullSafe(column(k)) for o, k in zip(node.outputs, keys, strict=True)],
    )
    old = engine.evaluate(node.child, Version.OLD).join(changed_rows, same, "left_semi")
    old_counts = consolidate(old).select(
        *(column(o).alias(k) for o, k in zip(node.outputs, keys, strict=True)),
        column(WEIGHT).alias("__old"),
    )
    joined = change.join(old_counts, same, "left")
    before = F.coalesce(column("__old"), F.lit(0))
    after = before + column(WEIGHT)
    weight = F.when(after > 0, 1).otherwise(0) - F.when(before > 0, 1).otherwise(0)
    return (
        joined.select(*(column(o) for o in node.outputs), weight.cast("long").alias(WEIGHT))
    ).where(column(WEIGHT) != 0)


def describe(node: Distinct, version: Version | None, engine: DeltaEngine) -> str:
    if version is not None:
        return f"δ({engine.describe(node.child, version)})"
    child = engine.describe(node.child, None)
    old = engine.describe(node.child, Version.OLD)
    return f"δΔ({child}; counted in {old})"


RULE = DeltaRule(Distinct, evaluate, delta, describe)
