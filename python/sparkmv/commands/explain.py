"""EXPLAIN [mode] <materialized view statement>: what the statement would do, without doing it."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession

from sparkmv.analyze.maintainability import Maintainability
from sparkmv.analyze.relational import Scan, walk
from sparkmv.apply.fixpoints import query_hash, recursive_nodes, stored_fixpoints
from sparkmv.apply.incremental import describe_storage_plan
from sparkmv.catalog.modes import RefreshMode
from sparkmv.commands import create, refresh
from sparkmv.commands.context import CommandContext, Rows
from sparkmv.config import IRRELEVANCE_FILTERS_CONF
from sparkmv.delta.engine import DeltaEngine
from sparkmv.parse.statements import (
    AlterQueryStatement,
    AlterRefreshStatement,
    AlterScheduleStatement,
    CreateStatement,
    DescribeStatement,
    DropStatement,
    ExplainStatement,
    RefreshStatement,
    ShowRefreshesStatement,
    ShowStatement,
)
from sparkmv.plan.aggregate_view import aggregate_view
from sparkmv.plan.key_proofs import MetadataKeyProof
from sparkmv.plan.refresh_plan import change_source, plan_refresh
from sparkmv.plan.view_delta import delta_terms, filters_enabled, stored_change

RESULT_SCHEMA = "plan STRING"

STATEMENT_NAMES: dict[type, str] = {
    DropStatement: "DROP MATERIALIZED VIEW",
    ShowStatement: "SHOW MATERIALIZED VIEWS",
    ShowRefreshesStatement: "SHOW MATERIALIZED VIEW REFRESHES",
    DescribeStatement: "DESCRIBE MATERIALIZED VIEW",
    AlterRefreshStatement: "ALTER MATERIALIZED VIEW ... SET REFRESH",
    AlterScheduleStatement: "ALTER MATERIALIZED VIEW ... SCHEDULE",
    AlterQueryStatement: "ALTER MATERIALIZED VIEW ... AS",
    ExplainStatement: "EXPLAIN",
}


def run(context: CommandContext, statement: ExplainStatement) -> Rows:
    inner = statement.statement
    if isinstance(inner, RefreshStatement):
        text = _explain_refresh(context, inner, statement.mode)
    elif isinstance(inner, CreateStatement):
        text = _explain_create(context, inner, statement.mode)
    else:
        text = (
            f"== sparkmv ==\nExecute {STATEMENT_NAMES[type(inner)]} (catalog only, no data is read)"
        )
    return [(text,)]


def _explain_refresh(context: CommandContext, statement: RefreshStatement, mode: str) -> str:
    view = context.catalog.get(context.catalog.resolve(statement.name))
    bases = context.peek_tracking(view.base_tables)
    plan = plan_refresh(context.spark, view, statement.mode, bases)
    lines = [
        "== Refresh Plan ==",
        f"Materialized view: {view.name}",
        f"Mode: {plan.mode.value}",
        f"Reason: {plan.reason}",
        f"Base tables: {', '.join(view.base_tables)}",
    ]
    # sparkmv's own change log is the default source; any other is named
    lines.extend(
        f"Change source of {base.name}: {change_source(base)}" for base in bases if base.log is None
    )
    if plan.cost is not None:
        lines.append(f"Cost: {plan.cost.summary()}")
    if plan.nothing_pending:
        lines.append("Record the refresh in the catalog; no data is read.")
        return "\n".join(lines)
    query = plan.query
    assert query is not None
    if plan.mode is RefreshMode.FULL:
        lines.append("Recompute the query into a new snapshot, then switch the view to it.")
        return "\n".join(lines) + "\n\n" + spark_plan(query.data, mode)
    read_from_changelog = {base.name for base in bases if base.changelog is not None}
    for table in plan.changed:
        kind = "changelog" if table.name in read_from_changelog else "change log"
        lines.append(
            f"Changed: {table.name} ({kind} versions {table.consumed_version} to "
            f"{table.current_version})"
        )
    maintained = query.maintainability
    target = "ΔV"
    if maintained.counted:
        target = "Δcounters"
    elif view.layout.grouped:
        target = "Δstate"
    recursive = recursive_nodes(maintained.root)
    fixpoints = stored_fixpoints(
        context.spark, view.snapshot, query_hash(view.query, view.query_database), maintained.root
    )
    with refresh.screened_engine(
        context.spark, query, bases, plan.changed, plan.key_proof
    ) as engine:
        if fixpoints is not None:
            engine.fixpoints.stored.update(fixpoints.stored)
        lines.extend(_irrelevance_filters(context.spark, maintained, engine))
        lines.append("Delta terms (Z-sets; X_old = X − ΔX; Δ of DISTINCT via counters):")
        lines.append(f"  {target} = {delta_terms(maintained, engine)}")
        lines.extend(f"  {proof}" for proof in proofs_used(engine))
        # Spark's plan of ΔV names the change log's files, which differ between any two
        # refreshes; the delta terms are the plan, and EXPLAIN EXTENDED (or FORMATTED, ...)
        # adds Spark's.
        simple = mode.lower() == "simple"
        if recursive:
            names = ", ".join(node.ref.name for node in recursive)
            stored = "stored" if fixpoints is not None else "missing: the refresh is FULL"
            lines.append(
                f"  R_new = R_old + ΔR of {names}, stored with the new snapshot (the fixpoint"
                f" as of the last refresh is {stored})"
            )
        change = None
        if not simple and fixpoints is not None:
            change = stored_change(maintained, engine, view.layout)[0]
    buckets = view.layout.buckets
    lines.append(
        f"Apply to the buckets ΔV touches (of {buckets} hash bucket{'s' if buckets != 1 else ''}"
        + (", counted" if view.layout.counted else "")
        + (", one row per group" if view.layout.grouped else "")
        + "); link the others into a new snapshot, then switch the view to it."
    )
    lines.append(describe_storage_plan(context.spark, view))
    grouped = aggregate_view(maintained.root)
    if grouped is not None and any(c.function in ("min", "max") for c in grouped.aggregate.calls):
        lines.append(
            "Groups whose MIN/MAX may have been deleted are recomputed from the query's input"
            " restricted to them."
        )
    if change is None:
        return "\n".join(lines)
    return "\n".join(lines) + "\n\n" + spark_plan(change, mode)


def proofs_used(engine: DeltaEngine) -> list[str]:
    """The proofs behind the terms' ``Δ⁺X`` / ``Δ⁻X`` (``plan/key_proofs.py``), one line each."""
    proof = engine.proofs
    return list(proof.proven) if isinstance(proof, MetadataKeyProof) else []


def _irrelevance_filters(
    spark: SparkSession, maintained: Maintainability, engine: DeltaEngine
) -> list[str]:
    """Each scan's compiled irrelevance filter: ``ΔR' = σ[test](ΔR)`` (Blakeley §4)."""
    assert maintained.root is not None
    scans = [node for node in walk(maintained.root) if isinstance(node, Scan)]
    lines = [
        f"  {engine.describe(scan)} = σ[{engine.screens[scan].sql(dialect='spark')}]"
        f"({engine.describe(scan)[:-1]})"
        for scan in scans
        if scan in engine.screens
    ]
    if not lines and not filters_enabled(spark):
        return [f"Irrelevance filters: off ({IRRELEVANCE_FILTERS_CONF} is false)"]
    if not lines:
        return ["Irrelevance filters: none (no predicate of the view rules out a changed row)"]
    return ["Irrelevance filters (changed rows failing them cannot affect the view):", *lines]


def _explain_create(context: CommandContext, statement: CreateStatement, mode: str) -> str:
    plan = create.plan_create(context, statement)
    name = context.catalog.resolve(statement.name)
    if plan is None:
        return f"== Create Plan ==\nMaterialized view: {name}\n{name} exists: nothing to do"
    maintainability = plan.maintainability
    lines = [
        "== Create Plan ==",
        f"Materialized view: {plan.name}" + (" (replacing it)" if plan.replaces else ""),
        f"Refresh policy: {plan.policy.value}",
        f"Refresh trigger: {plan.trigger.value}",
        f"Base tables: {', '.join(plan.query.base_tables)}",
        f"Incremental maintenance: {'yes' if maintainability.incremental else 'no'}"
        + ("" if maintainability.incremental else f" ({maintainability.reason})"),
        "Materialize the query into the first snapshot, then create the catalog view over it.",
    ]
    return "\n".join(lines) + "\n\n" + spark_plan(plan.data, mode)


def spark_plan(data: DataFrame, mode: str) -> str:
    """Spark's own EXPLAIN text of ``data`` in the given mode."""
    jvm: Any = data.sparkSession._jvm
    explain_mode = jvm.org.apache.spark.sql.execution.ExplainMode.fromString(mode.lower())
    return str(data._jdf.queryExecution().explainString(explain_mode)).rstrip()
