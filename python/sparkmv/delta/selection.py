"""Selection: ``Δσ_C(R) = σ_C(ΔR)`` (lecture notes; Blakeley §5.1).

Selection is linear: a row of the change passes the predicate or not, whatever its weight,
so the weights pass through unchanged. SQL's three-valued logic is Spark's own: a row whose
predicate is NULL is dropped from the change exactly as from the table.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from sparkmv.analyze.relational import Filter
from sparkmv.delta.engine import DeltaEngine, DeltaRule, Version, spark_expression


def evaluate(node: Filter, version: Version, engine: DeltaEngine) -> DataFrame:
    return engine.evaluate(node.child, version).where(spark_expression(node.predicate))


def delta(node: Filter, engine: DeltaEngine) -> DataFrame:
    return engine.delta(node.child).where(spark_expression(node.predicate))


def describe(node: Filter, version: Version | None, engine: DeltaEngine) -> str:
    return f"σ({engine.describe(node.child, version)})"


RULE = DeltaRule(Filter, evaluate, delta, describe)
