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

from sparkmv.analyze.relational import Distinct
from sparkmv.delta.engine import DeltaEngine, DeltaRule, Version
from sparkmv.delta.relation import WEIGHT_SQL, Relation, consolidated_sql
from sparkmv.identifiers import quote_identifier as _q


def distinct_sql(zset: Relation, columns: list[str]) -> str:
    """The rows of ``zset`` (its ``columns`` and the weight) with positive total weight, once
    each, as a Z-set of weight 1 (SQL)."""
    names = "".join(f"{_q(c)}, " for c in columns)
    counted = f"({consolidated_sql(zset, columns)}) AS {_q('d')}"
    return f"SELECT {names}CAST(1 AS BIGINT) AS {WEIGHT_SQL} FROM {counted} WHERE {WEIGHT_SQL} > 0"


def evaluate(node: Distinct, version: Version, engine: DeltaEngine) -> Relation:
    return engine.query(distinct_sql(engine.value(node.child, version), list(node.outputs)))


def delta(node: Distinct, engine: DeltaEngine) -> Relation:
    """``Δδ(R)(t) = [n_old(t) + ΔR(t) > 0] − [n_old(t) > 0]`` for the rows ``t`` of the
    consolidated ``ΔR`` (computed now: read twice below), ``n_old`` counted in ``R_old ⋉ ΔR``
    (null-safe on every column)."""
    columns = list(node.outputs)
    consolidated = engine.query(consolidated_sql(engine.change(node.child), columns))
    change = engine.materialized(consolidated)
    keys = [f"__k{index}" for index in range(len(columns))]
    same = " AND ".join(f"{_q(o)} <=> {_q(k)}" for o, k in zip(columns, keys, strict=True))
    renamed = ", ".join(f"{_q(o)} AS {_q(k)}" for o, k in zip(columns, keys, strict=True))
    changed_rows = f"(SELECT {renamed} FROM {change.subquery('c')}) AS {_q('t')}"
    old_rows = engine.query(
        f"SELECT * FROM {engine.value(node.child, Version.OLD).subquery('o')}"
        f" LEFT SEMI JOIN {changed_rows} ON {same}"
    )
    old_counts = (
        f"(SELECT {renamed}, {WEIGHT_SQL} AS {_q('__old')}"
        f" FROM ({consolidated_sql(old_rows, columns)}) AS {_q('n')}) AS {_q('b')}"
    )
    before = f"coalesce({_q('__old')}, 0)"
    after = f"{before} + {WEIGHT_SQL}"
    weight = (
        f"CAST((CASE WHEN {after} > 0 THEN 1 ELSE 0 END)"
        f" - (CASE WHEN {before} > 0 THEN 1 ELSE 0 END) AS BIGINT)"
    )
    names = "".join(f"{_q(o)}, " for o in columns)
    counted = (
        f"SELECT {names}{weight} AS {WEIGHT_SQL}"
        f" FROM {change.subquery('a')} LEFT JOIN {old_counts} ON {same}"
    )
    return engine.query(f"SELECT * FROM ({counted}) AS {_q('w')} WHERE {WEIGHT_SQL} <> 0")


def describe(node: Distinct, version: Version | None, engine: DeltaEngine) -> str:
    if version is not None:
        return f"δ({engine.describe(node.child, version)})"
    child = engine.describe(node.child, None)
    old = engine.describe(node.child, Version.OLD)
    return f"δΔ({child}; counted in {old})"


RULE = DeltaRule(Distinct, evaluate, delta, describe)
