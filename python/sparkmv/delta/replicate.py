"""Replication ``ρ_n(X)``: each row ``(t, n)`` of ``X`` as ``n`` copies of ``t``
(``ir.Replicate``), the last step of ``EXCEPT ALL`` and ``INTERSECT ALL``.

Linear: a row ``(t, n)`` of weight ``w`` contributes ``w · n`` to ``t``, so

    value:  ρ(X_v)(t) = Σ_n X_v(t, n) · n      (v = OLD or NEW)
    delta:  Δρ(X) = ρ(ΔX)

A counter that moves from ``n`` to ``n'`` is the change ``−(t, n) + (t, n')`` of ``X``, which
replicates to ``(n' − n)·t``: only the difference of copies is written.
"""

from __future__ import annotations

from sparkmv.analyze.ir import Replicate
from sparkmv.delta.engine import DeltaEngine, DeltaRule, Version
from sparkmv.delta.relation import WEIGHT_SQL, Relation
from sparkmv.identifiers import quote_identifier


def replicated(node: Replicate, zset: Relation, engine: DeltaEngine) -> Relation:
    """``zset`` (``node.child``'s value or change) with each weight times its copies."""
    columns = "".join(f"{quote_identifier(o)}, " for o in node.outputs)
    weight = f"{WEIGHT_SQL} * CAST({quote_identifier(node.copies)} AS BIGINT)"
    return engine.query(f"SELECT {columns}{weight} AS {WEIGHT_SQL} FROM {zset.subquery('n')}")


def evaluate(node: Replicate, version: Version, engine: DeltaEngine) -> Relation:
    return replicated(node, engine.value(node.child, version), engine)


def delta(node: Replicate, engine: DeltaEngine) -> Relation:
    return replicated(node, engine.change(node.child), engine)


def describe(node: Replicate, version: Version | None, engine: DeltaEngine) -> str:
    return f"ρ({engine.describe(node.child, version)})"


RULE = DeltaRule(Replicate, evaluate, delta, describe)
