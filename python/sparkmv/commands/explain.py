"""EXPLAIN [mode] <materialized view statement>: what the statement would do, without doing it."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame

from sparkmv.analyze.maintainability import analyze_maintainability
from sparkmv.analyze.query import parse_query, query_dataframe
from sparkmv.commands import refresh
from sparkmv.commands.context import CommandContext, Rows
from sparkmv.parse.statements import (
    CreateStatement,
    ExplainStatement,
    RefreshPolicy,
    RefreshStatement,
)
from sparkmv.plan.refresh_plan import FULL, check_policy

RESULT_SCHEMA = "plan STRING"


def run(context: CommandContext, statement: ExplainStatement) -> Rows:
    inner = statement.statement
    if isinstance(inner, RefreshStatement):
        text = _explain_refresh(context, inner, statement.mode)
    elif isinstance(inner, CreateStatement):
        text = _explain_create(context, inner, statement.mode)
    else:
        text = f"== sparkmv ==\nExecute {type(inner).__name__} on the catalog (no data is read)"
    return [(text,)]


def _explain_refresh(context: CommandContext, statement: RefreshStatement, mode: str) -> str:
    view = context.catalog.get(context.catalog.resolve(statement.name))
    plan = refresh.refresh_plan(view, statement.mode)
    data = query_dataframe(context.spark, view.query, view.query_database)
    lines = [
        "== Refresh Plan ==",
        f"Materialized view: {view.name}",
        f"Mode: {plan.mode}",
        f"Reason: {plan.reason}",
        f"Base tables: {', '.join(view.base_tables)}",
    ]
    if plan.mode == FULL:
        lines.append("Recompute the query into a new snapshot, then switch the view to it.")
    return "\n".join(lines) + "\n\n" + spark_plan(data, mode)


def _explain_create(context: CommandContext, statement: CreateStatement, mode: str) -> str:
    name = context.catalog.resolve(statement.name)
    database = context.spark.catalog.currentDatabase()
    query = parse_query(statement.query, database)
    data = query_dataframe(context.spark, query.text, database)
    policy = statement.refresh.policy or RefreshPolicy.AUTO
    maintainability = analyze_maintainability(query)
    check_policy(name, policy, maintainability)
    lines = [
        "== Create Plan ==",
        f"Materialized view: {name}",
        f"Refresh policy: {policy.value}",
        f"Base tables: {', '.join(query.base_tables)}",
        f"Incremental maintenance: {'yes' if maintainability.incremental else 'no'}"
        + ("" if maintainability.incremental else f" ({maintainability.reason})"),
        "Materialize the query into the first snapshot, then create the catalog view over it.",
    ]
    return "\n".join(lines) + "\n\n" + spark_plan(data, mode)


def spark_plan(data: DataFrame, mode: str) -> str:
    """Spark's own EXPLAIN text of ``data`` in the given mode."""
    jvm: Any = data.sparkSession._jvm
    explain_mode = jvm.org.apache.spark.sql.execution.ExplainMode.fromString(mode.lower())
    return str(data._jdf.queryExecution().explainString(explain_mode)).rstrip()
