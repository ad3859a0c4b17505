"""REFRESH MATERIALIZED VIEW name [FULL | INCREMENTAL]

Executes the plan ``plan/refresh_plan.py`` decides: incremental when the query is
maintainable, the policy allows it, every base table's changes (sparkmv's change log, or its
catalog's changelog) cover the versions since the last refresh and (under AUTO) the cost
model estimates it cheaper; otherwise full, with the reason in the result row and in DESCRIBE
EXTENDED. A refresh with no pending change reads no data (and, decided without analyzing the
query, writes nothing). A view that other views read logs the change it applies, in the same
commit (``capture/view_log.py``). Every refresh's duration is recorded against the model's
estimate of its mode, and every refresh appends a record to the view's refresh history
(``commands/refresh_history.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial

from pyspark.sql import SparkSession

from sparkmv.analyze.relational import Node, read_columns
from sparkmv.apply.fixpoints import fixpoint_writer, query_hash, recursive_nodes, stored_fixpoints
from sparkmv.apply.hot_inputs import hot_inputs, keeps
from sparkmv.apply.incremental import ChangeDoesNotFitError
from sparkmv.apply.materialize import (
    ChangeRecorder,
    commit_snapshot,
    full_refresh,
    incremental_refresh,
    now_ms,
    remove_unreferenced,
)
from sparkmv.capture.tracking import BaseTable, immediate_views, positions, schemas
from sparkmv.capture.view_log import ViewChangeLog
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.catalog.modes import RefreshMode, RefreshTrigger
from sparkmv.catalog.views import RefreshFacts
from sparkmv.commands import refresh_history
from sparkmv.commands.context import CommandContext, Rows
from sparkmv.config import (
    CHANGE_SINGLE_TASK_BYTES,
    HOT_INPUT_MAX_BYTES,
    INCREMENTAL_REFRESH_CONF,
    session_conf,
)
from sparkmv.delta.engine import BaseState, DeltaEngine, LazyRows
from sparkmv.delta.recursive import LevelLimitInChangeError, MissingFixpointError
from sparkmv.delta.rules import delta_engine
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.identifiers import TableName
from sparkmv.jobs import job_step
from sparkmv.parse.statements import RefreshStatement
from sparkmv.plan.aggregate_view import (
    compiled_types_json,
    remember_compiled_types,
    sums_its_change,
)
from sparkmv.plan.cost import table_bytes
from sparkmv.plan.key_proofs import MetadataKeyProof, metadata_key_proof
from sparkmv.plan.refresh_plan import (
    ChangedTable,
    RefreshPlan,
    ViewQuery,
    bucket_count,
    consumed_versions,
    plan_refresh,
    storage_layout,
)
from sparkmv.plan.view_delta import SkippedRows, irrelevance_screens, stored_change, stored_rows

RESULT_SCHEMA = (
    "mode STRING, reason STRING, rows_inserted BIGINT, rows_deleted BIGINT,"
    " irrelevant_rows BIGINT, duration_ms BIGINT"
)


@dataclass(frozen=True)
class Refreshed:
    """One view's refresh: its result rows, and the ON COMMIT views that read it, to refresh
    next because it changed (``commands/on_commit.py``)."""

    rows: Rows
    immediate: list[TableName]


def run(context: CommandContext, statement: RefreshStatement) -> Rows:
    """Refresh the one view ``statement`` names (``commands/cascade.py`` runs the
    statement: its upstream views first under CASCADE, its ON COMMIT dependents after)."""
    return refresh_view(context, statement).rows


def refresh_view(context: CommandContext, statement: RefreshStatement) -> Refreshed:
    """Refresh the view; when other views read it, its change is logged for them
    (``capture/view_log.py``) and its ON COMMIT readers are returned if it changed."""
    started = now_ms()
    return _refresh(context, statement, context.catalog.refresh_facts(statement.name), started)


def refresh_if_immediate(context: CommandContext, name: TableName) -> Refreshed | None:
    """``refresh_view`` of ``name`` if the catalog still has it as an ON COMMIT
    materialized view, else None (dropped, replaced by a table, or altered to ON DEMAND
    since a change log listed it). Decided from the facts the refresh reads anyway: one
    metastore call, not a lookup of its own first."""
    started = now_ms()
    try:
        facts = context.catalog.refresh_facts(name)
    except SparkMvError as error:
        if error.error_class in _GONE:
            return None
        raise
    if facts.view.trigger is not RefreshTrigger.ON_COMMIT:
        return None
    return _refresh(context, RefreshStatement(name), facts, started)


_GONE = (ErrorClass.MATERIALIZED_VIEW_NOT_FOUND, ErrorClass.NOT_A_MATERIALIZED_VIEW)
"""What ``refresh_facts`` raises for a name that is no materialized view (any more)."""


@refresh_history.recorded
def _refresh(
    context: CommandContext, statement: RefreshStatement, facts: RefreshFacts, started: int
) -> Refreshed:
    """``refresh_view``, with the catalog's ``facts`` of the view read."""
    view = facts.view
    recorder = ViewChangeLog.of(context.spark, facts.entry)
    bases = context.start_tracking(view.name, view.base_tables, facts)
    plan = plan_refresh(context.spark, view, statement.mode, bases)
    refresh_history.planned(plan, bases)
    if plan.nothing_pending:
        return Refreshed(record_no_change(context, view, plan, bases, started), [])
    assert plan.query is not None
    consumed = view.with_changes(
        consumed_versions=positions(bases), checked_schemas=plan.query.checked_schemas
    )
    irrelevant: dict[str, int] = {}
    updated: MvMetadata | None = None
    if plan.mode is RefreshMode.INCREMENTAL:
        try:
            updated = refresh_incrementally(
                context, consumed, plan, bases, started, irrelevant, recorder
            )
        except ChangeDoesNotFitError as error:
            reason = f"the view's change did not fit its stored rows ({error})"
            plan = replace(plan, mode=RefreshMode.FULL, reason=reason)
        except MissingFixpointError as error:
            reason = f"{error} (its snapshot was not written by a refresh of this query)"
            plan = replace(plan, mode=RefreshMode.FULL, reason=reason)
        except LevelLimitInChangeError as error:
            plan = replace(plan, mode=RefreshMode.FULL, reason=str(error))
    if updated is None:
        updated = refresh_fully(context, consumed, plan, bases, started, recorder)
    context.compact_logs(bases, updated)
    inserted = updated.stats.rows_inserted - view.stats.rows_inserted
    deleted = updated.stats.rows_deleted - view.stats.rows_deleted
    dropped = sum(irrelevant.values()) if plan.mode is RefreshMode.INCREMENTAL else 0
    changed = recorder is not None and updated.snapshot != view.snapshot
    immediate = immediate_views(recorder.log) if changed and recorder is not None else []
    rows = [(plan.mode.value, plan.reason, inserted, deleted, dropped, now_ms() - started)]
    return Refreshed(rows, immediate)


def record_no_change(
    context: CommandContext,
    view: MvMetadata,
    plan: RefreshPlan,
    bases: list[BaseTable],
    started: int,
) -> Rows:
    """A refresh that found nothing to do. One that decided so without analyzing the query
    (plan rule 1) writes nothing, the catalog included: the view's metadata already says
    what it would record, so it is not counted among the view's refreshes, and costs no
    metastore write; it only removes the snapshots a refresh that crashed left behind. One
    whose plan analyzed the query records the schemas it checked (so the next one need not)
    and counts itself, and retention runs."""
    if plan.query is None:
        remove_unreferenced(context.spark, view)
    else:
        stats = view.stats.after_incremental_refresh(0, 0, plan.reason, started, now_ms())
        updated = view.with_changes(
            consumed_versions=positions(bases),
            checked_schemas=plan.query.checked_schemas,
            stats=stats,
        )
        commit_snapshot(context.spark, context.catalog, view, updated)
        context.compact_logs(bases, updated)
    return [(plan.mode.value, plan.reason, 0, 0, 0, now_ms() - started)]


def refresh_incrementally(
    context: CommandContext,
    consumed: MvMetadata,
    plan: RefreshPlan,
    bases: list[BaseTable],
    started: int,
    irrelevant: dict[str, int],
    recorder: ChangeRecorder | None = None,
) -> MvMetadata:
    """Apply the view's change since its last refresh (``irrelevant`` gets the changed rows
    the irrelevance filters dropped, per base table); the committed metadata. Raises
    ``ChangeDoesNotFitError`` (nothing committed) when the change does not fit the view."""
    spark = context.spark
    assert plan.query is not None
    maintained = plan.query.maintainability
    assert maintained.root is not None
    measured = consumed.with_changes(stats=consumed.stats.planned(plan.model_ms))
    query = query_hash(consumed.query, consumed.query_database)
    fixpoints = stored_fixpoints(spark, consumed.snapshot, query, maintained.root)
    if fixpoints is None:
        name = recursive_nodes(maintained.root)[0].ref.name
        raise MissingFixpointError(f"the stored fixpoint of the recursive CTE {name} is missing")
    if fixpoints.stored:  # the recursion reads the changes through checkpoints, which
        # deliver no observed metrics: the skipped rows are not counted
        skipped = SkippedRows({}, {})
        engine = screened_engine(spark, plan.query, bases, plan.changed, plan.key_proof)
    else:
        skipped, engine = observed_engine(spark, plan.query, bases, plan.changed, plan.key_proof)
    engine.fixpoints.stored.update(fixpoints.stored)
    engine.fixpoints.paths.update(fixpoints.paths)
    state = fixpoint_writer(engine, maintained.root, query, f"REFRESH {consumed.name}")
    with engine, session_conf(spark, INCREMENTAL_REFRESH_CONF):
        key = plan.query.checked_schemas
        remember_compiled_types(key, consumed.compiled_types)
        change, merge = stored_change(maintained, engine, consumed.layout, key)
        measured = measured.with_changes(compiled_types=compiled_types_json(key))

        def skipped_counts() -> dict[str, int]:
            irrelevant.update(skipped.counts(engine))
            return irrelevant

        return incremental_refresh(
            spark,
            context.catalog,
            measured,
            change,
            merge,
            plan.reason,
            started,
            skipped_counts,
            recorder,
            state,
        )


def refresh_fully(
    context: CommandContext,
    consumed: MvMetadata,
    plan: RefreshPlan,
    bases: list[BaseTable],
    started: int,
    recorder: ChangeRecorder | None = None,
) -> MvMetadata:
    """Recompute the view into a new snapshot in the layout its policy and query call for
    (bucketed for a maintainable view under AUTO, ready for incremental refreshes); the
    committed metadata."""
    spark = context.spark
    assert plan.query is not None
    buckets = bucket_count(spark, bases)
    layout = storage_layout(consumed.policy, plan.query.maintainability, buckets)
    measured = consumed.with_changes(stats=consumed.stats.planned(plan.model_ms))
    state = None
    if layout.buckets:  # a DataFrame keeps the plans of the engine's temporary views
        root = plan.query.maintainability.root
        query = query_hash(consumed.query, consumed.query_database)
        key = plan.query.checked_schemas
        with base_states(spark, bases, ()) as engine:
            data = stored_rows(plan.query.maintainability, engine, key)
            state = fixpoint_writer(engine, root, query, f"REFRESH {consumed.name}")
        measured = measured.with_changes(compiled_types=compiled_types_json(key))
    else:
        data = plan.query.data
    with job_step(spark, f"REFRESH {consumed.name}: recompute ({plan.reason})"):
        return full_refresh(
            spark, context.catalog, measured, data, layout, plan.reason, started, recorder, state
        )


def base_states(
    spark: SparkSession,
    bases: list[BaseTable],
    changed: Sequence[ChangedTable],
    root: Node | None = None,
    consolidated: bool = True,
    proof: MetadataKeyProof | None = None,
) -> DeltaEngine:
    """The delta engine over the base tables as this refresh reads them, with the net
    changes of the ``changed`` ones since the view's last refresh (the columns ``root``
    never reads NULL in them), and the unchanged ones read through Spark's cache
    (``apply/hot_inputs.py``). Not ``consolidated``: their logged rows only, no change yet
    (the engine sees no table changed). ``proof``: the plan's join-term proofs, made anew
    when None."""
    consumed = {table.name: table for table in changed}
    sizes = table_bytes(bases)
    single_task = CHANGE_SINGLE_TASK_BYTES.count(spark) if changed else 0
    hot_max = HOT_INPUT_MAX_BYTES.count(spark) if changed and root is not None else 0
    summed = sums_its_change(root)  # then no table's change need be consolidated
    reads = read_columns(root) if root is not None else None
    cache = hot_inputs(spark)
    states = {}
    for base in bases:
        size = sizes.get(base.name, 0)
        table = consumed.get(base.name)
        if table is not None:
            cache.changed(base)
        rows = partial(base.rows, spark)
        if table is None and reads is not None and keeps(base, size, hot_max):
            rows = partial(cache.rows, spark, base, reads.get(base.name, set()), rows)
        state = BaseState(LazyRows(rows), bytes=size)
        if table is not None and base.source is not None:
            read = None if reads is None else reads.get(base.name, set())
            logged = base.source.row_changes(table.consumed_version, base.version, read)
            if table.logged_bytes is not None and table.logged_bytes <= single_task:
                logged = logged.coalesce(1)
            as_logged = summed or base.source.inserts_only(
                table.consumed_version, base.version, read
            )
            state = BaseState(state.rows, None, logged, read, as_logged, size)
            state = state.netted() if consolidated else state
        states[base.name] = state
    if proof is None:
        proof = metadata_key_proof(spark, bases, consumed_versions(changed))
    return delta_engine(spark, states, proof)


def screened_engine(
    spark: SparkSession,
    query: ViewQuery,
    bases: list[BaseTable],
    changed: Sequence[ChangedTable],
    proof: MetadataKeyProof | None = None,
) -> DeltaEngine:
    """The delta engine of an incremental refresh: the base tables with the changes of the
    ``changed`` ones, each scan's change screened by its irrelevance filter; ``proof``: the
    plan's join-term proofs (``base_states``)."""
    return _screened(spark, query, bases, changed, proof, observe=False)[1]


def observed_engine(
    spark: SparkSession,
    query: ViewQuery,
    bases: list[BaseTable],
    changed: Sequence[ChangedTable],
    proof: MetadataKeyProof | None = None,
) -> tuple[SkippedRows, DeltaEngine]:
    """``screened_engine``, with the logged rows of each screened table observed: the
    refresh's first job counts the rows no screen keeps (``SkippedRows``)."""
    return _screened(spark, query, bases, changed, proof, observe=True)


def _screened(
    spark: SparkSession,
    query: ViewQuery,
    bases: list[BaseTable],
    changed: Sequence[ChangedTable],
    proof: MetadataKeyProof | None,
    observe: bool,
) -> tuple[SkippedRows, DeltaEngine]:
    """``screened_engine`` (with ``observe``, ``observed_engine``). The screens need the
    tables' rows only, so each changed table's net change is made once, after them, from
    its logged rows as observed."""
    maintained = query.maintainability
    logged = base_states(spark, bases, changed, maintained.root, consolidated=False, proof=proof)
    screens = irrelevance_screens(maintained, logged, spark, schemas(bases))
    engine = logged.screened(screens)
    skipped = SkippedRows({}, {})
    if observe and maintained.root is not None:
        skipped, engine = SkippedRows.observed(maintained.root, engine)
    tables = {
        name: state if state.logged is None or state.change is not None else state.netted()
        for name, state in engine.tables.items()
    }
    return skipped, engine.with_tables(tables)
