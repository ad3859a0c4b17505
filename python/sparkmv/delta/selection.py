"""Selection: ``Δσ_C(R) = σ_C(ΔR)`` (lecture notes; Blakeley §5.1).

Selection is linear: a row of the change passes the predicate or not, whatever its weight,
so the weights pass through unchanged. SQL's three-valued logic is Spark's own: a row whose
predicate is NULL is dropped from the change exactly as from the table.

A selection over an inner join is the join under both conditions,
``σ_C(R_1 ⋈_D … ⋈_D R_n) = R_1 ⋈_{C ∧ D} … ⋈_{C ∧ D} R_n`` (both keep exactly the
combinations for which ``C ∧ D`` is true), so a ``WHERE`` over a ``FROM`` list is evaluated by
the join rule, which joins the inputs along the conjuncts of ``C`` instead of crossing them.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from sqlglot import exp

from sparkmv.analyze.relational import Filter, Join
from sparkmv.delta.engine import DeltaEngine, DeltaRule, Version, spark_expression


def evaluate(node: Filter, version: Version, engine: DeltaEngine) -> DataFrame:
    if isinstance(node.child, Join):
        return engine.evaluate(selected_join(node, node.child), version)
    return engine.evaluate(node.child, version).where(spark_expression(node.predicate))


def delta(node: Filter, engine: DeltaEngine) -> DataFrame:
    if isinstance(node.child, Join):
        return engine.delta(selected_join(node, node.child))
    return engine.delta(node.child).where(spark_expression(node.predicate))


def selected_join(node: Filter, join: Join) -> Join:
    """``node`` (a selection over ``join``) as one join under both conditions."""
    conditions = [c for c in (join.condition, node.predicate) if c is not None]
    return Join(join.inputs, exp.and_(*conditions))


def describe(node: Filter, version: Version | None, engine: DeltaEngine) -> str:
    return f"σ({engine.describe(node.child, version)})"


RULE = DeltaRule(Filter, evaluate, delta, describe)
