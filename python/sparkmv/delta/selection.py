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

from sqlglot import exp

from sparkmv.analyze.relational import Filter, Join, Node
from sparkmv.delta.engine import DeltaEngine, DeltaRule, Version, sql_expression
from sparkmv.delta.relation import Relation


def evaluate(node: Filter, version: Version, engine: DeltaEngine) -> Relation:
    if isinstance(node.child, Join):
        return engine.value(selected_join(node, node.child), version)
    return select(node, engine.value(node.child, version), engine)


def delta(node: Filter, engine: DeltaEngine) -> Relation:
    if isinstance(node.child, Join):
        return engine.change(selected_join(node, node.child))
    return select(node, engine.change(node.child), engine)


def select(node: Filter, zset: Relation, engine: DeltaEngine) -> Relation:
    predicate = sql_expression(node.predicate)
    return engine.query(f"SELECT * FROM {zset.subquery('s')} WHERE {predicate}")


def selected_join(node: Filter, join: Join) -> Join:
    """``node`` (a selection over ``join``) as one join under both conditions."""
    conditions = [c for c in (join.condition, node.predicate) if c is not None]
    return Join(join.inputs, exp.and_(*conditions))


def describe(node: Filter, version: Version | None, engine: DeltaEngine) -> str:
    child: Node = selected_join(node, node.child) if isinstance(node.child, Join) else node.child
    return f"σ({engine.describe(child, version)})"


RULE = DeltaRule(Filter, evaluate, delta, describe)
