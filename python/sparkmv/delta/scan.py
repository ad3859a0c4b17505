"""Scan of a base table: the leaves of the delta rules.

``R_new`` is the table's rows with weight 1; ``ΔR`` is the change log's net changes
(``ChangeSource.net_changes``, Hanson §2.2's ``A-net``/``D-net`` as one Z-set), and
``R_old = R_new − ΔR`` (Hanson Appendix A: ``R' = R − D`` with the net changes; here as a
weighted union, so no row is deleted more often than it occurs).
"""

from __future__ import annotations

from sparkmv.analyze.relational import Scan
from sparkmv.delta.engine import DeltaEngine, DeltaRule, Version, sql_expression
from sparkmv.delta.relation import WEIGHT_SQL, Relation, renamed


def evaluate(node: Scan, version: Version, engine: DeltaEngine) -> Relation:
    state = engine.tables[node.table]
    sql = f"{_select(node, 'CAST(1 AS BIGINT)')} FROM {engine.view_of(state.rows)}"
    if version is Version.OLD and state.change is not None:
        retracted = _select(node, f"-CAST({WEIGHT_SQL} AS BIGINT)")
        sql += f" UNION ALL {retracted} FROM {engine.view_of(state.change)}"
    return engine.query(sql)


def delta(node: Scan, engine: DeltaEngine) -> Relation:
    """``ΔR``, less the rows this occurrence's irrelevance filter drops (Blakeley §4)."""
    change = engine.tables[node.table].change
    if change is None:
        raise ValueError(f"{node.table} did not change")
    sql = f"{_select(node, f'CAST({WEIGHT_SQL} AS BIGINT)')} FROM {engine.view_of(change)}"
    screen = engine.screens.get(node)
    if screen is not None:
        sql += f" WHERE {sql_expression(screen)}"
    return engine.query(sql)


def _select(node: Scan, weight: str) -> str:
    """The select list of the scan's columns under its internal names, then ``weight``."""
    return f"SELECT {renamed(node.columns, node.outputs)}, {weight} AS {WEIGHT_SQL}"


def describe(node: Scan, version: Version | None, engine: DeltaEngine) -> str:
    name = node.table.rpartition(".")[2]
    if node.alias and node.alias != name:
        name = f"{name} {node.alias}"
    if version is None:
        return f"Δ{name}'" if node in engine.screens else f"Δ{name}"  # ' : screened
    return f"{name}_old" if version is Version.OLD else name


RULE = DeltaRule(Scan, evaluate, delta, describe)
