"""Negation ``−X`` of a Z-set: every weight negated (``ir.Negate``).

Linear, like projection: ``(−X)(t) = −X(t)`` for every row ``t``, so

    value:  −X_v = X_v with weights negated      (v = OLD or NEW)
    delta:  Δ(−X) = −ΔX

since ``−X_new − (−X_old) = −(X_new − X_old)``. It only occurs under a ``UnionAll``, as the
difference ``A ⊎ −B`` with ``B ⊆ A`` as bags: the anti-join ``L ▷ R = L ⊎ −(L ⋉ R)`` of
``NOT EXISTS``, ``NOT IN`` and of the unmatched rows of outer joins (``analyze/decorrelate``).
The union then consolidates its value (``union_all``), so that every row of a value over the
tables as they are now keeps a positive weight, as the rules above it expect.
"""

from __future__ import annotations

from sparkmv.analyze.ir import Negate
from sparkmv.delta.engine import DeltaEngine, DeltaRule, Version
from sparkmv.delta.relation import WEIGHT_SQL, Relation
from sparkmv.identifiers import quote_identifier


def negated(node: Negate, zset: Relation, engine: DeltaEngine) -> Relation:
    """``zset`` (``node.child``'s value or change) with every weight negated."""
    columns = "".join(f"{quote_identifier(o)}, " for o in node.outputs)
    return engine.query(f"SELECT {columns}-{WEIGHT_SQL} AS {WEIGHT_SQL} FROM {zset.subquery('n')}")


def evaluate(node: Negate, version: Version, engine: DeltaEngine) -> Relation:
    return negated(node, engine.value(node.child, version), engine)


def delta(node: Negate, engine: DeltaEngine) -> Relation:
    return negated(node, engine.change(node.child), engine)


def describe(node: Negate, version: Version | None, engine: DeltaEngine) -> str:
    return f"−{engine.describe(node.child, version)}"


RULE = DeltaRule(Negate, evaluate, delta, describe)
