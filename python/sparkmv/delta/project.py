"""Projection with bag semantics: ``Δπ_X(R) = π_X(ΔR)`` (Blakeley §5.1).

Under bag semantics projection is linear: each row of the change keeps its weight, and two
rows that project to the same tuple simply add up. This is Blakeley's multiplicity counter:
a projected tuple disappears only when the weights of all its derivations cancel.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from sparkmv.analyze.relational import Project
from sparkmv.delta.engine import DeltaEngine, DeltaRule, Version, column, spark_expression
from sparkmv.zset import WEIGHT


def project(node: Project, zset: DataFrame) -> DataFrame:
    columns = [
        spark_expression(e).alias(o) for e, o in zip(node.expressions, node.outputs, strict=True)
    ]
    return zset.select(*columns, column(WEIGHT))


def evaluate(node: Project, version: Version, engine: DeltaEngine) -> DataFrame:
    return project(node, engine.evaluate(node.child, version))


def delta(node: Project, engine: DeltaEngine) -> DataFrame:
    return project(node, engine.delta(node.child))


def describe(node: Project, version: Version | None, engine: DeltaEngine) -> str:
    return f"π({engine.describe(node.child, version)})"


RULE = DeltaRule(Project, evaluate, delta, describe)
