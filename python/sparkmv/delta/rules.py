"""The ordered registry of delta rules, one per operator (as sqlglot orders its optimizer
rules): the first rule whose operator matches a node handles it."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import SparkSession

from sparkmv.delta import (
    aggregate,
    distinct,
    join,
    negate,
    project,
    recursive,
    replicate,
    scan,
    selection,
    union_all,
    window,
)
from sparkmv.delta.engine import BaseState, DeltaEngine, DeltaRule, KeyProof
from sparkmv.delta.relation import TempViews

RULES: tuple[DeltaRule, ...] = (
    scan.RULE,
    selection.RULE,
    project.RULE,
    join.RULE,
    union_all.RULE,
    negate.RULE,
    replicate.RULE,
    distinct.RULE,
    aggregate.RULE,
    window.RULE,
    recursive.RULE,
    recursive.REF_RULE,
)


def delta_engine(
    spark: SparkSession, tables: Mapping[str, BaseState], proofs: KeyProof | None = None
) -> DeltaEngine:
    """The rules over ``tables`` (with ``proofs``, join terms may read an input from its
    change: ``delta/join.py``); use it as a context manager (``DeltaEngine``)."""
    return DeltaEngine(tables, RULES, TempViews(spark), proofs=proofs)
