"""``UNION ALL``: ``Δ(R ∪ S) = ΔR ∪ ΔS`` (linear; Z-set addition).

Inputs line up by position, as in SQL; Spark widens their types as the query would (an
untyped ``NULL`` takes the other inputs' type: the padding of an outer join's unmatched rows).

A union with a negated input is a difference, ``A ⊎ −B`` (``ir.Negate``): its value as of NEW
is consolidated (equal rows' weights summed, zeros dropped), so that a row of ``B`` and its
twin in ``A`` cancel there and then. Every other rule's value over the tables as they are now
has positive weights only, and the rules above rely on it (a stored bag row per unit of
weight, the MIN/MAX and DISTINCT-count states of the rows present).
"""

from __future__ import annotations

from sparkmv.analyze.ir import Negate, Node, UnionAll
from sparkmv.delta.engine import DeltaEngine, DeltaRule, Version
from sparkmv.delta.relation import Relation, consolidated_sql, renamed_sql
from sparkmv.delta.semijoin import native_value


def union_all(node: UnionAll, parts: list[tuple[Node, Relation]], engine: DeltaEngine) -> Relation:
    """The union of the children's Z-sets, their columns named by ``node``'s outputs."""
    return engine.query(
        " UNION ALL ".join(renamed_sql(part, child.outputs, node.outputs) for child, part in parts)
    )


def evaluate(node: UnionAll, version: Version, engine: DeltaEngine) -> Relation:
    native = native_value(node, version, engine)  # an anti-join's, by Spark's own
    if native is not None:
        return native
    value = union_all(node, [(c, engine.value(c, version)) for c in node.children], engine)
    if version is Version.NEW and any(isinstance(c, Negate) for c in node.children):
        return engine.query(consolidated_sql(value, list(node.outputs)))
    return value


def delta(node: UnionAll, engine: DeltaEngine) -> Relation:
    # Every child, the unchanged ones as empty changes: Spark then widens the column types
    # exactly as for the union's value (an INT branch united with a BIGINT one is BIGINT
    # even when only the INT branch changed).
    return union_all(node, [(c, engine.change(c)) for c in node.children], engine)


def describe(node: UnionAll, version: Version | None, engine: DeltaEngine) -> str:
    children = [c for c in node.children if version is not None or engine.changed(c)]
    text = " ∪ ".join(engine.describe(child, version) for child in children)
    return text if len(children) == 1 else f"({text})"


RULE = DeltaRule(UnionAll, evaluate, delta, describe)
