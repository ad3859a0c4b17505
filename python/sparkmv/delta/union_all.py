"""``UNION ALL``: ``Δ(R ∪ S) = ΔR ∪ ΔS`` (linear; Z-set addition).

Inputs line up by position, as in SQL; Spark widens their types as the query would.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame

from sparkmv.analyze.relational import UnionAll
from sparkmv.delta.engine import DeltaEngine, DeltaRule, Version, with_outputs


def evaluate(node: UnionAll, version: Version, engine: DeltaEngine) -> DataFrame:
    parts = [
        with_outputs(engine.evaluate(child, version), child.outputs, node.outputs)
        for child in node.children
    ]
    return reduce(DataFrame.union, parts)


def delta(node: UnionAll, engine: DeltaEngine) -> DataFrame:
    # Every child, the unchanged ones as empty changes: Spark then widens the column types
    # exactly as for the union's value (an INT branch united with a BIGINT one is BIGINT
    # even when only the INT branch changed).
    parts = [
        with_outputs(engine.delta(child), child.outputs, node.outputs) for child in node.children
    ]
    return reduce(DataFrame.union, parts)


def describe(node: UnionAll, version: Version | None, engine: DeltaEngine) -> str:
    children = [c for c in node.children if version is not None or engine.changed(c)]
    text = " ∪ ".join(engine.describe(child, version) for child in children)
    return text if len(children) == 1 else f"({text})"


RULE = DeltaRule(UnionAll, evaluate, delta, describe)
