"""A view's recursive CTEs' fixpoints (``delta/recursive.py``), stored in its snapshot.

Each fixpoint is a Z-set (the CTE's columns ``c0``, ``c1``, …, the level and the weight;
consolidated when written whole, else the previous files hard-linked plus an appended file
of ``ΔR``, until ``FIXPOINT_MAX_FILES``) written as parquet under the snapshot, in
``_sparkmv_fixpoints/<query>-<key>``: hidden from the view's data by its name, written
before the commit that publishes the snapshot, so the view's rows and the fixpoint they were
derived with are committed together (a crash before the commit leaves an unreferenced
snapshot, removed by a later refresh).
``<query>`` is a hash of the view's query and database: a snapshot written for another
definition holds no fixpoint of this one (``ALTER ... AS`` writes the new definition's with
its snapshot, even when it derives the rows from the old ones), and a fixpoint missing makes
the next refresh FULL, which writes it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession

from sparkmv import fs
from sparkmv.analyze.ir import Node, Recursive, walk
from sparkmv.config import FIXPOINT_MAX_FILES
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
    nodes = recursive_nodes(root)
    for node in nodes:
        path = fixpoint_path(snapshot, query, node.key)
        if not fs.exists(spark, f"{path}/_SUCCESS"):
            return None
        stored[node.key] = spark.read.parquet(path)
    return Fixpoints(stored, paths={n.key: fixpoint_path(snapshot, query, n.key) for n in nodes})


def fixpoint_writer(
    engine: DeltaEngine, root: Node | None, query: str, step: str
) -> Callable[[str], None] | None:
    """What writes the fixpoints of ``root``'s recursive CTEs as ``engine`` has them (as of
    NEW: computed afresh, or the stored ones plus their change) into a snapshot; None when
    the view has none."""
    nodes = recursive_nodes(root)
    if not nodes:
        return None

    spark = engine.views.spark

    def write(snapshot: str) -> None:
        for node in nodes:
            if node.key not in engine.fixpoints.computed:
                engine.value(node, Version.NEW)
            path = fixpoint_path(snapshot, query, node.key)
            with job_step(spark, f"{step}: store the fixpoint of {node.ref.name}"):
                if not _appended(spark, engine.fixpoints, node.key, path):
                    engine.fixpoints.computed[node.key].write.parquet(path)

    return write


def _appended(spark: SparkSession, fixpoints: Fixpoints, key: str, path: str) -> bool:
    """Store ``R_new = R_old + ΔR`` as the files of ``R_old`` (hard links) and ``ΔR``
    appended: a Z-set need not be consolidated, and the refresh then writes ``O(|ΔR|)``
    rather than the whole fixpoint. False (nothing written) when there is no stored
    fixpoint and change, or ``R_old`` already has ``FIXPOINT_MAX_FILES`` files: then the whole,
    consolidated ``R_new`` is written (compaction)."""
    old, change = fixpoints.paths.get(key), fixpoints.changes.get(key)
    if old is None:
        return False
    files = [name for name in fs.list_names(spark, old) if name.endswith(".parquet")]
    if change is None:  # the fixpoint did not change: links only
        change = fixpoints.stored[key].limit(0)
    elif len(files) >= FIXPOINT_MAX_FILES.count(spark):
        return False
    fs.link_all(spark, [(f"{old}/{name}", f"{path}/{name}") for name in files])
    change.coalesce(1).write.mode("append").parquet(path)
    return True
