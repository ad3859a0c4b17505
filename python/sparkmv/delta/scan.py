"""Scan of a base table: the leaves of the delta rules.

``R_new`` is the table's rows with weight 1; ``ΔR`` is the change log's net changes
(``ChangeSource.net_changes``, Hanson §2.2's ``A-net``/``D-net`` as one Z-set), and
``R_old = R_new − ΔR`` (Hanson Appendix A: ``R' = R − D`` with the net changes; here as a
weighted union, so no row is deleted more often than it occurs).

The net change holds NULL in the columns the view never reads (``BaseState.read``, so that an
update of those alone cancels); ``R_new``'s are then NULL in ``R_old`` too, so that a row and
its retraction are equal rows and cancel when a rule consolidates ``R_old`` (a window's, whose
rows keep every column of its input). Nothing above a scan reads those columns.
"""

from __future__ import annotations

from sparkmv.analyze.relational import Scan
from sparkmv.delta.engine import DeltaEngine, DeltaRule, Version, sql_expression
from sparkmv.delta.relation import WEIGHT_SQL, Relation, renamed
from sparkmv.identifiers import quote_identifier


def evaluate(node: Scan, version: Version, engine: DeltaEngine) -> Relation:
    state = engine.tables[node.table]
    if version is Version.OLD and state.change is not None:
        kept = _select(node, "CAST(1 AS BIGINT)", state.read)
        retracted = _select(node, f"-CAST({WEIGHT_SQL} AS BIGINT)")
        sql = f"{kept} FROM {engine.view_of(state.rows)}"
        return engine.query(f"{sql} UNION ALL {retracted} FROM {engine.view_of(state.change)}")
    return engine.query(f"{_select(node, 'CAST(1 AS BIGINT)')} FROM {engine.view_of(state.rows)}")


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


def _select(node: Scan, weight: str, read: set[str] | None = None) -> str:
    """The select list of the scan's columns under its internal names, then ``weight``;
    the columns not in ``read`` (None: all are) NULL, of their type."""
    if read is None:
        return f"SELECT {renamed(node.columns, node.outputs)}, {weight} AS {WEIGHT_SQL}"
    wanted = {name.lower() for name in read}
    columns = [
        quote_identifier(c) if c.lower() in wanted else f"if(FALSE, {quote_identifier(c)}, NULL)"
        for c in node.columns
    ]
    pairs = zip(columns, node.outputs, strict=True)
    selected = ", ".join(f"{c} AS {quote_identifier(o)}" for c, o in pairs)
    return f"SELECT {selected}, {weight} AS {WEIGHT_SQL}"


def describe(node: Scan, version: Version | None, engine: DeltaEngine) -> str:
    name = node.table.rpartition(".")[2]
    if node.alias and node.alias != name:
        name = f"{name} {node.alias}"
    if version is None:
        return f"Δ{name}'" if node in engine.screens else f"Δ{name}"  # ' : screened
    return f"{name}_old" if version is Version.OLD else name


RULE = DeltaRule(Scan, evaluate, delta, describe)
