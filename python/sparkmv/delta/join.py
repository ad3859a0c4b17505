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

Join order: the inputs are joined starting from the term's ``ΔR_i`` (the smallest input,
so every intermediate result stays near the size of the change), each next input one that
a conjunct of the condition connects to those already joined, with every conjunct attached
to the first join where it can be evaluated. Left to Spark, a chain of condition-less
joins under one filter kept a FROM list's unlucky order and cross-joined tables that the
condition only connects later (creating a 10-way join view of sqllogictest's select5 took
about 50 s instead of 10 s, and its refreshes longer still).
"""

from __future__ import annotations

from functools import reduce
from operator import mul

from pyspark.sql import DataFrame
from sqlglot import exp

from sparkmv.analyze.relational import Join
from sparkmv.delta.engine import DeltaEngine, DeltaRule, Version, column, spark_expression
from sparkmv.zset import WEIGHT


def join(node: Join, inputs: list[DataFrame], start: int = 0) -> DataFrame:
    """The Z-set join of ``inputs`` under ``node``'s condition: weights multiply. The
    joins begin at input ``start`` and follow the condition (``join_order``)."""
    weights = [f"__w{index}" for index in range(len(inputs))]
    renamed = [
        frame.withColumnRenamed(WEIGHT, weight)
        for frame, weight in zip(inputs, weights, strict=True)
    ]
    order, attached = join_order(node, start)
    joined = renamed[order[0]]
    if attached[0]:
        joined = joined.where(spark_expression(exp.and_(*attached[0])))
    for index, conjuncts in zip(order[1:], attached[1:], strict=True):
        if conjuncts:
            joined = joined.join(renamed[index], spark_expression(exp.and_(*conjuncts)))
        else:
            joined = joined.join(renamed[index])  # no condition connects it: a cross join
    weight = reduce(mul, [column(w) for w in weights]).alias(WEIGHT)
    return joined.select(*(column(o) for o in node.outputs), weight)


def join_order(node: Join, start: int) -> tuple[list[int], list[list[exp.Expr]]]:
    """The order in which to join ``node``'s inputs from ``start``, and per step the
    conjuncts of the condition first evaluable there (step 0: a filter on ``start``).

    Greedy, as Spark's ``ReorderJoin``: the next input is the first one that a conjunct
    connects to the inputs already joined, else the first one left. Inner joins commute,
    so any order gives the same Z-set; the order only decides the intermediate sizes.
    """
    owner = {name: index for index, child in enumerate(node.inputs) for name in child.outputs}
    pending = [
        (conjunct, {owner[c.name] for c in conjunct.find_all(exp.Column) if c.name in owner})
        for conjunct in conjuncts_of(node.condition)
    ]
    order = [start]
    attached: list[list[exp.Expr]] = [[c for c, inputs in pending if inputs <= {start}]]
    pending = [(c, inputs) for c, inputs in pending if not inputs <= {start}]
    rest = [index for index in range(len(node.inputs)) if index != start]
    while rest:
        done = set(order)
        connected = (
            index
            for index in rest
            if any(index in inputs and inputs <= done | {index} for _, inputs in pending)
        )
        chosen = next(connected, rest[0])
        rest.remove(chosen)
        order.append(chosen)
        done.add(chosen)
        attached.append([c for c, inputs in pending if inputs <= done])
        pending = [(c, inputs) for c, inputs in pending if not inputs <= done]
    return order, attached


def conjuncts_of(condition: exp.Expr | None) -> list[exp.Expr]:
    """The conjuncts of ``condition`` (nested ANDs and parentheses flattened)."""
    if condition is None:
        return []
    if isinstance(condition, exp.Paren):
        return conjuncts_of(condition.this)
    if isinstance(condition, exp.And):
        return conjuncts_of(condition.this) + conjuncts_of(condition.expression)
    return [condition]


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
            start=changed,
        )
        for changed, versions in delta_terms(node, engine)
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
