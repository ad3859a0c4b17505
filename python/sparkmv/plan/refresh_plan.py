"""``RefreshPlan``: the mode a refresh will use and why (DESIGN §2 policies)."""

from __future__ import annotations

from dataclasses import dataclass

from sparkmv.analyze.maintainability import Maintainability
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.parse.statements import RefreshMode, RefreshPolicy, TableName

FULL = "FULL"
INCREMENTAL = "INCREMENTAL"


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
