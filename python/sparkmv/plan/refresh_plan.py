"""``plan_refresh``: how one refresh computes the view, and why (docs/refresh-plan.md).

A refresh's plan is decided once, by ``plan_refresh``: REFRESH executes it, EXPLAIN REFRESH
prints it and DESCRIBE EXTENDED shows it as the next refresh. The rules, first match wins:

1. no mode requested and nothing pending (``nothing_pending``): nothing to do — no data
   read, no analysis of the query, no catalog write;
2. INCREMENTAL asked for (``REFRESH ... INCREMENTAL``, or policy INCREMENTAL and no mode
   requested) of a query the delta rules cannot maintain: refused, naming the construct;
3. a base table's log missed changes (a write bypassed capture): FULL, saying which;
4. ``REFRESH ... FULL``, or policy FULL and no mode requested: FULL;
5. a query the delta rules cannot maintain: FULL, naming the construct;
6. a base table whose log does not cover the versions since the last refresh, or a storage
   laid out for full refreshes only (``incremental_obstacle``): FULL, saying why;
7. no base table changed: only record the refresh (the versions read, the schemas checked);
8. policy AUTO, no mode requested, cost-based choice on (``REFRESH_COST_BASED_CONF``) and
   every base table and its change sized (by tracking's listing and log, or for a table
   read through its catalog's changelog by its format's metadata: Delta's log, Iceberg's
   snapshot summaries): the mode ``plan/cost.py`` estimates cheaper, both estimates in the
   reason;
9. otherwise INCREMENTAL.

A plan that refreshes carries the estimates the cost model could make (full: when every base
table is sized; incremental: under rules 8 and 9); the refresh's duration is recorded
against the chosen mode's (``RefreshStats.planned``). Planning reads metadata only (log
manifests, file listings, footers); every row the refresh computes is computed by Spark.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from pyspark.sql import DataFrame, SparkSession

from sparkmv import frames
from sparkmv.analyze.constructs import volatile_construct
from sparkmv.analyze.maintainability import Maintainability
from sparkmv.analyze.query import parse_query, query_dataframe
from sparkmv.analyze.relational import read_columns
from sparkmv.capture.tracking import BaseTable, schemas
from sparkmv.catalog.metadata import PLAIN, MvMetadata, StorageLayout
from sparkmv.catalog.modes import RefreshMode, RefreshPolicy
from sparkmv.config import (
    STORAGE_BUCKET_BYTES,
    STORAGE_BUCKETS_CONF,
    STORAGE_MAX_BUCKETS,
    conf_value,
)
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.identifiers import TableName
from sparkmv.plan.aggregate_view import aggregate_view
from sparkmv.plan.cost import (
    CostEstimate,
    base_bytes,
    change_bytes,
    cost_based,
    estimate_cost,
    extra_joins,
    joined_bytes,
    steps_apart,
    table_bytes,
)
from sparkmv.plan.key_proofs import MetadataKeyProof, metadata_key_proof
from sparkmv.plan.view_delta import checked_maintainability, maintainability_of, schemas_key

NO_CHANGE = "no base table changed since the last refresh"
MAINTAINABLE = "the query is incrementally maintainable"


@dataclass(frozen=True)
class ViewQuery:
    """A view's query, whether the delta rules can maintain it, and the ``schemas_key``
    that verdict was checked for ("" when it was not); ``data``: the query as Spark
    analyzes it, made when first asked for (an incremental refresh whose verdict was checked
    for the same key never asks: its statements come from the IR)."""

    maintainability: Maintainability
    checked_schemas: str
    analyzed: Callable[[], DataFrame]

    @cached_property
    def data(self) -> DataFrame:
        return self.analyzed()


@dataclass(frozen=True)
class ChangedTable:
    """A base table whose log has versions ``(consumed_version, current_version]`` the view
    has not consumed; ``logged_bytes``: the bytes its change is read from, as the view reads
    it (``cost.change_bytes``; None when not measured: a table whose catalog's changelog
    does not say, or a plan decided before the cost estimates)."""

    name: str
    consumed_version: int
    current_version: int
    logged_bytes: int | None = field(default=None, compare=False)


def consumed_versions(changed: Sequence[ChangedTable]) -> dict[str, int]:
    """The version the view consumed of each ``changed`` table, by name."""
    return {table.name: table.consumed_version for table in changed}


@dataclass(frozen=True)
class RefreshPlan:
    """How one refresh computes the view (``mode``) and why (``reason``), as REFRESH reports
    them. ``nothing_pending``: the view is its query's result already; the refresh has
    nothing to do, or only records what it checked (reported as INCREMENTAL). ``changed``:
    the base tables with versions the view has not consumed. ``cost``: the estimates (None
    when a base table or its change is not sized).
    ``query``: the view's query as analyzed for the plan (None when rule 1 decided without
    it), which the refresh then runs; ``key_proof``: the join-term proofs the estimate
    asked, which the refresh's terms then ask again without reading anything twice."""

    mode: RefreshMode
    reason: str
    changed: tuple[ChangedTable, ...] = ()
    cost: CostEstimate | None = None
    nothing_pending: bool = False
    query: ViewQuery | None = field(default=None, compare=False, repr=False)
    key_proof: MetadataKeyProof | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        assert not self.nothing_pending or self.mode is RefreshMode.INCREMENTAL

    @property
    def model_ms(self) -> float:
        """The cost model's estimate of the chosen mode (0: none), which the refresh's
        measured duration is recorded against."""
        return self.cost.model_ms(self.mode) if self.cost is not None else 0.0


def plan_refresh(
    spark: SparkSession,
    view: MvMetadata,
    requested: RefreshMode | None,
    bases: list[BaseTable],
) -> RefreshPlan:
    """The plan of a refresh of ``view`` (``requested``: the mode the statement asks for)
    over ``bases`` as tracking read them: the rules of this module's docstring. Reads log
    manifests and file listings and analyzes the query; runs no Spark job."""
    if requested is None and nothing_pending(spark, view, bases):
        return RefreshPlan(RefreshMode.INCREMENTAL, NO_CHANGE, nothing_pending=True)
    query = view_query(spark, view, bases)
    maintainability = query.maintainability
    changed = changed_tables(view, bases)
    wants_incremental = requested is RefreshMode.INCREMENTAL or (
        requested is None and view.policy is RefreshPolicy.INCREMENTAL
    )
    if wants_incremental and not maintainability.incremental:
        raise SparkMvError(
            ErrorClass.MATERIALIZED_VIEW_NOT_INCREMENTAL,
            name=view.name,
            reason=maintainability.reason,
        )
    sizes = table_bytes(bases)
    sized = len(sizes) == len(bases)

    def full(reason: str) -> RefreshPlan:
        cost = estimate_cost(view, sum(sizes.values())) if sized else None
        return RefreshPlan(RefreshMode.FULL, reason, changed, cost, query=query)

    missed = [base.problem for base in bases if base.log is not None and base.problem]
    if missed:  # a log that missed changes cannot say what changed: recompute
        return full("; ".join(missed))
    if requested is RefreshMode.FULL:
        return full("full refresh requested")
    if requested is None and view.policy is RefreshPolicy.FULL:
        return full("refresh policy is FULL")
    if not maintainability.incremental:
        return full(maintainability.reason)
    obstacle = incremental_obstacle(view, maintainability, bases)
    if obstacle:
        return full(obstacle)
    if not changed:
        return RefreshPlan(RefreshMode.INCREMENTAL, NO_CHANGE, nothing_pending=True, query=query)
    assert maintainability.root is not None
    names = {table.name for table in changed}
    changed = measured_changes(spark, maintainability, bases, changed)
    if not sized or any(table.logged_bytes is None for table in changed):
        # a table whose format's metadata does not say its size, or its change's
        return RefreshPlan(RefreshMode.INCREMENTAL, MAINTAINABLE, changed, query=query)
    proof = metadata_key_proof(spark, bases, consumed_versions(changed))
    cost = estimate_cost(
        view,
        sum(sizes.values()),
        sum(table.logged_bytes or 0 for table in changed),
        joined_bytes(maintainability.root, sizes, names, proof),
        steps_apart(maintainability.root, names),
        extra_joins(maintainability.root, sizes, names),
    )
    mode, reason = RefreshMode.INCREMENTAL, MAINTAINABLE
    if requested is None and view.policy is RefreshPolicy.AUTO and cost_based(spark):
        mode, reason = cost.cheaper(), cost.choice()
    return RefreshPlan(mode, reason, changed, cost, query=query, key_proof=proof)


def view_query(
    spark: SparkSession, view: MvMetadata, bases: list[BaseTable] | None = None
) -> ViewQuery:
    """The view's query, its verdict decided again (the base tables may have changed).
    Given ``bases`` as tracking read them, neither the rules' type check nor Spark's
    analysis of the query runs when the check passed for the same ``schemas_key`` before
    (``MvMetadata.checked_schemas``)."""
    parsed = parse_query(view.query, view.query_database)

    def analyzed() -> DataFrame:
        return query_dataframe(spark, view.query, view.query_database)

    base_schemas = schemas(bases) if bases is not None else None
    key = ""
    if base_schemas is not None:
        key = schemas_key(spark, view.query, view.query_database, base_schemas)
        if key == view.checked_schemas:
            found = checked_maintainability(parsed, view.query_database, base_schemas)
            return ViewQuery(found, key, analyzed)
    data = analyzed()
    found = maintainability_of(spark, parsed, view.query_database, data)
    return ViewQuery(found, key if found.incremental else "", lambda: data)


def nothing_pending(spark: SparkSession, view: MvMetadata, bases: list[BaseTable]) -> bool:
    """Whether the view's contents are its query's result now without reading any data:
    every base table is tracked, its log saw every write, and the view consumed its current
    version — and the query's result depends on its tables alone. That holds for a view
    whose query passed the incremental check (it refuses anything volatile); another one's
    query is parsed and analyzed (no job) to see whether it is deterministic. A view whose
    policy is FULL, or whose storage a refresh would lay out anew, is refreshed as asked."""
    if view.policy is RefreshPolicy.FULL or not view.snapshot:
        return False
    for base in bases:
        consumed = view.consumed_versions.get(base.name)
        if base.source is None or base.problem or consumed is None:
            return False
        if consumed.log != base.source.identity or consumed.version != base.version:
            return False
    if view.checked_schemas:
        return bool(view.layout.buckets)
    tree = parse_query(view.query, view.query_database).tree
    if tree is None or volatile_construct(tree):
        return False
    return frames.deterministic(query_dataframe(spark, view.query, view.query_database))


def changed_tables(view: MvMetadata, bases: list[BaseTable]) -> tuple[ChangedTable, ...]:
    """The base tables whose changes (log or changelog) are at another version than the view
    consumed."""
    changed = []
    for base in bases:
        consumed = view.consumed_versions.get(base.name)
        if base.source is not None and consumed is not None and consumed.version != base.version:
            changed.append(ChangedTable(base.name, consumed.version, base.version))
    return tuple(changed)


def measured_changes(
    spark: SparkSession,
    maintainability: Maintainability,
    bases: list[BaseTable],
    changed: tuple[ChangedTable, ...],
) -> tuple[ChangedTable, ...]:
    """``changed`` with the bytes an incremental refresh reads as each one's change
    (``logged_bytes``, for the columns the view reads)."""
    assert maintainability.root is not None
    read = read_columns(maintainability.root)
    by_name = {base.name: base for base in bases}
    return tuple(
        replace(
            table,
            logged_bytes=change_bytes(
                spark, by_name[table.name], table.consumed_version, read.get(table.name)
            ),
        )
        for table in changed
    )


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
    base table without a readable log for the versions since the view's last refresh
    (``log_obstacle``), or a storage not laid out for incremental maintenance."""
    for base in bases:
        obstacle = log_obstacle(view, base)
        if obstacle:
            return obstacle
    if not view.layout.buckets or view.layout != storage_layout(
        RefreshPolicy.AUTO, maintainability, view.layout.buckets
    ):
        return "the view's storage is laid out for full refreshes only; this one rewrites it"
    return ""


def log_obstacle(view: MvMetadata, base: BaseTable) -> str:
    """Why ``base``'s changes cannot give the view its changes since its last refresh (""
    when they can): the table is untracked, its log missed changes, the view has not read
    this log or changelog (the table was re-created), or it does not cover the versions
    (compacted or expired, or a write the log could not log row by row)."""
    source = base.source
    if source is None:
        return f"base table {base.name} is not tracked: {base.problem}"
    if base.problem:
        return base.problem
    consumed = view.consumed_versions.get(base.name)
    if consumed is None or consumed.log != source.identity:
        kind = "changelog" if base.changelog is not None else "change log"
        return f"the view has not read the current {kind} of base table {base.name}"
    if base.version != consumed.version:
        unreadable = source.unreadable_reason(consumed.version, base.version)
        if unreadable:
            return f"base table {base.name}: {unreadable}"
    return ""


def change_source(base: BaseTable) -> str:
    """Where ``base``'s changes are read from, as EXPLAIN REFRESH and DESCRIBE name it."""
    if base.changelog is not None:
        return f"{base.changelog.query.name}, at version {base.version}"
    if base.log is not None:
        return f"sparkmv's change log, at version {base.version}"
    return f"none (not tracked: {base.problem})"


def bucket_count(spark: SparkSession, bases: list[BaseTable]) -> int:
    """The hash buckets a full refresh lays a maintainable view out in: ``STORAGE_BUCKETS_CONF``
    when set, else sized from the base tables' bytes (``STORAGE_BUCKET_BYTES`` each, at most
    ``STORAGE_MAX_BUCKETS``)."""
    configured = int(conf_value(spark, STORAGE_BUCKETS_CONF) or "0")
    if configured > 0:
        return configured
    sized = math.ceil(base_bytes(bases) / STORAGE_BUCKET_BYTES.count(spark))
    return min(STORAGE_MAX_BUCKETS.count(spark), max(1, sized))


def storage_layout(
    policy: RefreshPolicy, maintainability: Maintainability, buckets: int
) -> StorageLayout:
    """The layout a full refresh writes: bucketed (``buckets`` of them, ``bucket_count``;
    counted for a DISTINCT view) when the view may be maintained incrementally, plain
    otherwise. Under AUTO it is bucketed whichever mode a refresh takes, so a full refresh
    the cost model chose leaves the view ready for incremental ones."""
    if not maintainability.incremental or policy is RefreshPolicy.FULL:
        return PLAIN
    grouped = aggregate_view(maintainability.root)
    if grouped is not None and not grouped.aggregate.keys:
        buckets = 1  # a global aggregate is one row
    return StorageLayout(
        counted=maintainability.counted,
        buckets=buckets,
        grouped=grouped is not None,
        value_counters=grouped is not None and bool(grouped.counters),
    )
