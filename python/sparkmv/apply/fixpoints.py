"""A view's recursive CTEs' fixpoints (``delta/recursive.py``), stored in its snapshot.

Each fixpoint is a consolidated Z-set (the CTE's columns ``c0``, ``c1``, …, the level and
the weight) written as parquet under the snapshot, in ``_sparkmv_fixpoints/<query>-<key>``:
hidden from the view's data by its name, written before the commit that publishes the
snapshot, so the view's rows and the fixpoint they were derived with are committed together
(a crash before the commit leaves an unreferenced snapshot, removed by a later refresh).
``<query>`` is a hash of the view's query and database: a snapshot written for another
definition (``ALTER ... AS``) holds no fixpoint of this one, and a fixpoint missing makes
the next refresh FULL, which writes it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession

from sparkmv import fs
from sparkmv.analyze.ir import Node, Recursive, walk
from sparkmv.delta.engine import DeltaEngine, Fixpoints, Version
from sparkmv.jobs import job_step

FIXPOINTS_DIR = "_sparkmv_fixpoints"


def recursive_nodes(root: Node | None) -> list[Recursive]:
    return [] if root is None else [node for node in walk(root) if isinstance(node, Recursive)]


def query_hash(query: str, database: str) -> str:
    return hashlib.sha256(f"{database}\0{query}".encode()).hexdigest()[:16]


def fixpoint_path(snapshot: str, query: str, key: str) -> str:
    return f"{snapshot.rstrip('/')}/{FIXPOINTS_DIR}/{query}-{key}"


def stored_fixpoints(
    spark: SparkSession, snapshot: str, query: str, root: Node | None
) -> Fixpoints | None:
    """The fixpoints of ``root``'s recursive CTEs in ``snapshot`` (None: one is missing;
    empty when the view has none)."""
    stored: dict[str, DataFrame] = {}
    for node in recursive_nodes(root):
        path = fixpoint_path(snapshot, query, node.key)
        if not fs.exists(spark, f"{path}/_SUCCESS"):
            return None
        stored[node.key] = spark.read.parquet(path)
    return Fixpoints(stored)


def fixpoint_writer(
    engine: DeltaEngine, root: Node | None, query: str, step: str
) -> Callable[[str], None] | None:
    """What writes the fixpoints of ``root``'s recursive CTEs as ``engine`` has them (as of
    NEW: computed afresh, or the stored ones plus their change) into a snapshot; None when
    the view has none."""
    nodes = recursive_nodes(root)
    if not nodes:
        return None

    def write(snapshot: str) -> None:
        for node in nodes:
            if node.key not in engine.fixpoints.computed:
                engine.value(node, Version.NEW)
            rows = engine.fixpoints.computed[node.key]
            with job_step(engine.views.spark, f"{step}: store the fixpoint of {node.ref.name}"):
                rows.write.parquet(fixpoint_path(snapshot, query, node.key))

    return write
