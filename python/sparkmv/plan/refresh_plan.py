"""``RefreshPlan``: the mode a refresh will use and why (DESIGN §2 policies)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from sparkmv.analyze.maintainability import Maintainability
from sparkmv.capture.tracking import BaseTable
from sparkmv.catalog.metadata import PLAIN, MvMetadata, StorageLayout
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.parse.statements import RefreshMode, RefreshPolicy, TableName
from sparkmv.plan.aggregate_view import aggregate_view

FULL = "FULL"
INCREMENTAL = "INCREMENTAL"

TARGET_BUCKET_BYTES = 32 * 1024 * 1024
"""Base-table bytes per storage bucket: a 10M-row fact table gets about 7 buckets. A refresh
patches the buckets it touches (``apply/incremental.py``) at a cost that follows its change,
not their size, while every touched bucket costs a file: fewer, larger buckets."""
MAX_BUCKETS = 256


@dataclass(frozen=True)
class RefreshPlan:
    mode: str  # FULL or INCREMENTAL
    reason: str


def plan_refresh(
    name: TableName,
    policy: RefreshPolicy,
    requested: RefreshMode | None,
    maintainability: Maintainability,
) -> RefreshPlan:
    """Pick the refresh mode.

    ``REFRESH ... FULL`` and policy FULL recompute. ``REFRESH ... INCREMENTAL`` and policy
    INCREMENTAL require an incrementally maintainable query and fail otherwise. AUTO uses
    incremental maintenance when the query allows it and falls back to FULL with the reason.
    """
    if requested is RefreshMode.FULL:
        return RefreshPlan(FULL, "full refresh requested")
    if policy is RefreshPolicy.FULL and requested is None:
        return RefreshPlan(FULL, "refresh policy is FULL")
    wants_incremental = requested is RefreshMode.INCREMENTAL or policy is RefreshPolicy.INCREMENTAL
    if maintainability.incremental:
        return RefreshPlan(INCREMENTAL, "the query is incrementally maintainable")
    if wants_incremental:
        raise SparkMvError(
            ErrorClass.MATERIALIZED_VIEW_NOT_INCREMENTAL, name=name, reason=maintainability.reason
        )
    return RefreshPlan(FULL, maintainability.reason)


def check_policy(name: TableName, policy: RefreshPolicy, maintainability: Maintainability) -> None:
    """Refuse policy INCREMENTAL for a query that cannot be maintained incrementally."""
    if policy is RefreshPolicy.INCREMENTAL and not maintainability.incremental:
        raise SparkMvError(
            ErrorClass.MATERIALIZED_VIEW_NOT_INCREMENTAL, name=name, reason=maintainability.reason
        )


def incremental_obstacle(
    view: MvMetadata, maintainability: Maintainability, bases: list[BaseTable]
) -> str:
    """Why this refresh of a maintainable view cannot be incremental ("" when it can): a
    base table without a readable log for the versions since the view's last refresh, or a
    storage not laid out for incremental maintenance."""
    for base in bases:
        if base.log is None:
            return f"base table {base.name} is not tracked: {base.problem}"
        if base.problem:
            return base.problem
        consumed = view.consumed_versions.get(base.name)
        if consumed is None or consumed.log != base.log.root:
            return f"the view has not read the current change log of base table {base.name}"
        if base.version != consumed.version:
            unreadable = base.log.unreadable_reason(consumed.version, base.version)
            if unreadable:
                return f"base table {base.name}: {unreadable}"
    if not view.layout.buckets or view.layout != storage_layout(
        RefreshPolicy.AUTO, maintainability, bases, view.layout.buckets
    ):
        return "the view's storage is laid out for full refreshes only; this one rewrites it"
    return ""


def storage_layout(
    policy: RefreshPolicy, maintainability: Maintainability, bases: list[BaseTable], buckets: int
) -> StorageLayout:
    """The layout a full refresh writes: bucketed (and counted for a DISTINCT view) when the
    view may be maintained incrementally, plain otherwise. ``buckets`` > 0 is the configured
    bucket count; 0 sizes the buckets from the base tables' bytes (``TARGET_BUCKET_BYTES``)."""
    if not maintainability.incremental or policy is RefreshPolicy.FULL:
        return PLAIN
    grouped = aggregate_view(maintainability.root)
    if grouped is not None and not grouped.aggregate.keys:
        buckets = 1  # a global aggregate is one row
    if buckets <= 0:
        size = sum(f.size for base in bases if base.files is not None for f in base.files.files)
        buckets = min(MAX_BUCKETS, max(1, math.ceil(size / TARGET_BUCKET_BYTES)))
    return StorageLayout(
        counted=maintainability.counted,
        buckets=buckets,
        grouped=grouped is not None,
        value_counters=grouped is not None and bool(grouped.counters),
    )
