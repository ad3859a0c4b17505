"""Inner join of any number of inputs, self-joins included: the bilinear rule.

For two inputs ``Δ(R ⋈ S) = ΔR ⋈ S_old + R_new ⋈ ΔS`` (lecture notes; Hanson Appendix A's
corrected formula, with ``S_old = S_new − ΔS``). For n inputs, with ``R_i`` before and after
the change,

    Δ(R_1 ⋈ … ⋈ R_n) = Σ_i  R_1,new ⋈ … ⋈ R_i−1,new ⋈ ΔR_i ⋈ R_i+1,old ⋈ … ⋈ R_n,old

and a term whose ``ΔR_i`` is empty vanishes, so only the inputs that changed contribute a
term: the rows of Blakeley's truth table (§5.3, Alg. 5.1) with at least one changed input,
grouped so that each combination of changes is counted exactly once. Joined weights
multiply, so an inserted row joined with a deleted partner contributes ``+1 · −1``.
A self-join is two inputs over the same table and needs nothing special.
"""

from __future__ import annotations

from functools import reduce
from operator import mul

from pyspark.sql import DataFrame

from sparkmv.analyze.relational import Join
from sparkmv.delta.engine import DeltaEngine, DeltaRule, Version, column, spark_expression
from sparkmv.zset import WEIGHT


def join(node: Join, inputs: list[DataFrame]) -> DataFrame:
    """The Z-set join of ``inputs`` under ``node``'s condition: weights multiply."""
    weights = [f"__w{index}" for index in range(len(inputs))]
    renamed = [
        frame.withColumnRenamed(WEIGHT, weight)
        for frame, weight in zip(inputs, weights, strict=True)
    ]
    # A condition-less join followed by the condition: Spark turns it into hash joins.
    joined = reduce(lambda left, right: left.join(right), renamed)
    if node.condition is not None:
        joined = joined.where(spark_expression(node.condition))
    weight = reduce(mul, [column(w) for w in weights]).alias(WEIGHT)
    return joined.select(*(column(o) for o in node.outputs), weight)


def evaluate(node: Join, version: Version, engine: DeltaEngine) -> DataFrame:
    return join(node, [engine.evaluate(i, version) for i in node.inputs])


def delta_terms(node: Join, engine: DeltaEngine) -> list[tuple[int, list[Version | None]]]:
    """Per changed input ``i``: the versions of the inputs in its term (None: ``ΔR_i``)."""
    terms = []
    for index, changed in enumerate(node.inputs):
        if not engine.changed(changed):
            continue
        versions: list[Version | None] = [Version.NEW] * index + [None]
        versions += [Version.OLD] * (len(node.inputs) - index - 1)
        terms.append((index, versions))
    return terms


def delta(node: Join, engine: DeltaEngine) -> DataFrame:
    terms = [
        join(
            node,
            [
                engine.delta(i) if v is None else engine.evaluate(i, v)
                for i, v in zip(node.inputs, versions, strict=True)
            ],
        )
        for _, versions in delta_terms(node, engine)
    ]
    return reduce(DataFrame.union, terms)


def describe(node: Join, version: Version | None, engine: DeltaEngine) -> str:
    if version is not None:
        return " ⋈ ".join(engine.describe(i, version) for i in node.inputs)
    terms = [
        " ⋈ ".join(engine.describe(i, v) for i, v in zip(node.inputs, versions, strict=True))
        for _, versions in delta_terms(node, engine)
    ]
    return " + ".join(terms)


RULE = DeltaRule(Join, evaluate, delta, describe)
