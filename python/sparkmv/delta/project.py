"""Projection with bag semantics: ``Δπ_X(R) = π_X(ΔR)`` (Blakeley §5.1).

Under bag semantics projection is linear: each row of the change keeps its weight, and two
rows that project to the same tuple simply add up. This is Blakeley's multiplicity counter:
a projected tuple disappears only when the weights of all its derivations cancel.
"""

from __future__ import annotations

from sparkmv.analyze.relational import Project
from sparkmv.delta.engine import DeltaEngine, DeltaRule, Version, sql_expression
from sparkmv.delta.relation import WEIGHT_SQL, Relation
from sparkmv.delta.semijoin import native_value
from sparkmv.identifiers import quote_identifier


def project(node: Project, zset: Relation, engine: DeltaEngine) -> Relation:
    columns = ", ".join(
        f"{sql_expression(e)} AS {quote_identifier(o)}"
        for e, o in zip(node.expressions, node.outputs, strict=True)
    )
    return engine.query(f"SELECT {columns}, {WEIGHT_SQL} FROM {zset.subquery('p')}")


def evaluate(node: Project, version: Version, engine: DeltaEngine) -> Relation:
    native = native_value(node, version, engine)  # a semi-join's, by Spark's own
    if native is not None:
        return native
    return project(node, engine.value(node.child, version), engine)


def delta(node: Project, engine: DeltaEngine) -> Relation:
    return project(node, engine.change(node.child), engine)


def describe(node: Project, version: Version | None, engine: DeltaEngine) -> str:
    return f"π({engine.describe(node.child, version)})"


RULE = DeltaRule(Project, evaluate, delta, describe)
