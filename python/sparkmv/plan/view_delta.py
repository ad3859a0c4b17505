"""What a refresh computes for a maintained view: its stored rows (full) or their change
(incremental), from the delta rules, and whether the rules can stand in for the query.

The storage holds the rows of ``Maintainability.stored``: the view's rows, or under a top
``DISTINCT`` the rows of its input with their multiplicity (``StorageLayout.counted``). The
change applied to it is therefore ``Δstored`` — for a DISTINCT view the counters absorb it
and the visible change follows from them (``apply/incremental.py``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from sqlglot import exp

from sparkmv import frames
from sparkmv.analyze.maintainability import (
    Maintainability,
    analyze_maintainability,
    not_maintainable,
)
from sparkmv.analyze.query import ParsedQuery
from sparkmv.analyze.relational import (
    Node,
    NotMaintainableError,
    Recursive,
    RecursiveRef,
    Scan,
    walk,
)
from sparkmv.catalog.metadata import StorageLayout
from sparkmv.catalog.views import ViewCatalog
from sparkmv.config import IRRELEVANCE_FILTERS_CONF, ansi_mode, conf_flag
from sparkmv.delta.aggregate import distinct_arguments
from sparkmv.delta.engine import BaseState, DeltaEngine, LazyRows, Version, sql_expression
from sparkmv.delta.relation import Relation, consolidated_sql, renamed_sql
from sparkmv.delta.rules import delta_engine
from sparkmv.filter.irrelevance import irrelevance_filters
from sparkmv.identifiers import TableName
from sparkmv.observations import Metrics, observe
from sparkmv.plan.aggregate_view import aggregate_view, group_merge
from sparkmv.plan.merge import Merge, row_merge
from sparkmv.storage.stored_columns import storage_columns
from sparkmv.zset import WEIGHT, as_bag


def maintainability_of(
    spark: SparkSession, query: ParsedQuery, database: str, data: DataFrame
) -> Maintainability:
    """``analyze_maintainability``, then a check that the delta rules' evaluation of the IR
    has the query's column types (sqlglot reads the query, Spark runs the rules)."""
    tables, columns = base_table_columns(spark, query.base_tables)
    found = analyze_maintainability(query, database, data, columns)
    if not found.incremental or found.root is None:
        return found
    for field in data.schema.fields:
        if "map<" in field.dataType.simpleString():
            return Maintainability(
                False, f"column {field.name} holds a MAP, and maps cannot be compared"
            )
    states = {table: BaseState(rows) for table, rows in tables.items()}
    with delta_engine(spark, states) as engine:
        try:  # analysis only: a recursive CTE's fixpoint is not iterated for its types
            evaluated = engine.analyzing().evaluate(found.root, Version.NEW).schema
        except NotMaintainableError as error:  # e.g. a SUM over DOUBLE, known from its type
            return not_maintainable(str(error))
    expected = [field.dataType for field in data.schema.fields]
    actual = [field.dataType for field in evaluated.fields if field.name != WEIGHT]
    if expected != actual:
        return Maintainability(
            False,
            "the delta rules would compute other column types than the query "
            f"({_types(actual)} instead of {_types(expected)})",
        )
    return found


def base_table_columns(
    spark: SparkSession, base_tables: tuple[str, ...]
) -> tuple[dict[str, DataFrame | str], dict[str, tuple[str, ...]]]:
    """Per base table, what the type check reads (its name; a DataFrame of it when the
    catalog has no table of that name, e.g. a temporary view) and its column names, from
    one metastore call."""
    names = [TableName.parse_qualified(table) for table in base_tables]
    entries = ViewCatalog(spark).entries(names) if names else {}
    rows: dict[str, DataFrame | str] = {}
    columns: dict[str, tuple[str, ...]] = {}
    for table, name in zip(base_tables, names, strict=True):
        entry = entries[name]
        if entry is None:
            frame = spark.table(table)
            rows[table], columns[table] = frame, tuple(frame.columns)
        elif entry.schema.fields:
            rows[table], columns[table] = table, tuple(entry.schema.fieldNames())
        else:  # a format that keeps its schema in its own log (Delta): Spark resolves it
            rows[table], columns[table] = table, tuple(spark.table(table).columns)
    return rows, columns


def schemas_key(
    spark: SparkSession, query: str, database: str, schemas: Mapping[str, T.StructType]
) -> str:
    """What the outcome of ``maintainability_of`` depends on besides the IR: the query's
    text and database (they fix its column types given the tables'), the base tables'
    schemas (by table) and ANSI mode (it decides which sums the rules can maintain). A view
    remembers the key its check passed for, so a refresh with the same key needs neither
    the check nor Spark's analysis of the query."""
    facts = [
        ansi_mode(spark),
        query,
        database,
        sorted((table, schema.json()) for table, schema in schemas.items()),
    ]
    return hashlib.sha256(json.dumps(facts).encode("utf-8")).hexdigest()


def checked_maintainability(
    query: ParsedQuery, database: str, schemas: Mapping[str, T.StructType]
) -> Maintainability:
    """``maintainability_of`` for a view whose check passed for these ``schemas`` (same
    ``schemas_key``): the analysis alone, which only needs the tables' column names. The
    type check would build the whole query's DataFrame over the base tables again, and
    Spark's plan, analyzed over the same schemas, is the one that passed."""
    columns = {table: tuple(schema.fieldNames()) for table, schema in schemas.items()}
    return analyze_maintainability(query, database, None, columns, check_plan=False)


def _types(types: list[T.DataType]) -> str:
    return ", ".join(t.simpleString() for t in types)


def stored_rows(
    maintained: Maintainability, engine: DeltaEngine, compiled_key: str = ""
) -> DataFrame:
    """The rows a full refresh stores: visible columns (and the counter when counted; the
    groups' state for an aggregate view, whose types are then compiled under
    ``compiled_key``, the view's ``schemas_key``, as ``stored_change`` reads them).

    A value over the base tables as they are now has a positive weight on every row (scans
    weigh 1, joins multiply, DISTINCT and aggregates give 1): a bag row is stored once per
    unit of weight.
    """
    grouped = aggregate_view(maintained.root)
    if grouped is not None:
        return replace(grouped, compiled_key=compiled_key).stored_rows(engine)
    stored = maintained.stored
    rows = _storage_named(engine, engine.value(stored, Version.NEW), stored.outputs)
    if maintained.counted:
        return _frame(engine, consolidated_sql(rows, storage_columns(len(stored.outputs))))
    return as_bag(rows.frame)


def stored_change(
    maintained: Maintainability, engine: DeltaEngine, layout: StorageLayout, compiled_key: str = ""
) -> tuple[DataFrame, Merge]:
    """The change of the stored rows, and how it merges into them: ``Δstored`` in storage
    columns, consolidated — or, for an aggregate view, the state of the changed groups.
    ``compiled_key``: the view's ``schemas_key``, under which an aggregate view's types are
    cached (``aggregate_view.CompiledTypes``)."""
    grouped = aggregate_view(maintained.root)
    if grouped is not None:
        grouped = replace(grouped, compiled_key=compiled_key)
        return grouped.state_change(engine), group_merge(grouped, engine)
    stored = maintained.stored
    change = _storage_named(engine, engine.change(stored), stored.outputs)
    consolidated = _frame(engine, consolidated_sql(change, storage_columns(len(stored.outputs))))
    return consolidated, row_merge(layout, consolidated.schema)


def _frame(engine: DeltaEngine, sql: str) -> DataFrame:
    """The DataFrame of a query over ``engine``'s relations (``DeltaEngine.query(sql).frame``,
    in one py4j round trip)."""
    return frames.sql(engine.views.spark, sql)


def _storage_named(engine: DeltaEngine, zset: Relation, outputs: tuple[str, ...]) -> Relation:
    return engine.query(renamed_sql(zset, outputs, tuple(storage_columns(len(outputs)))))


def delta_terms(maintained: Maintainability, engine: DeltaEngine) -> str:
    """``Δstored`` in the rules' algebra (EXPLAIN): for an aggregate view, the change of its
    input, whose state is added to the stored groups' state."""
    grouped = aggregate_view(maintained.root)
    if grouped is not None:
        calls = ", ".join(call.label() for call in grouped.aggregate.calls)
        change = engine.describe(grouped.aggregate.child)
        terms = f"γ[{calls}]({change})"
        if distinct_arguments(grouped.aggregate):
            # a distinct value is in its group while its counter is positive
            terms += f"\n  Δvalue counters = γ[Σw by group, DISTINCT value]({change})"
    else:
        terms = engine.describe(maintained.stored)
    # the subtrees several parents read (a subquery's or an outer join's rewrite), by name
    return terms + "".join(f"\n  {definition}" for definition in engine.definitions())


def filters_enabled(spark: SparkSession) -> bool:
    return conf_flag(spark, IRRELEVANCE_FILTERS_CONF)


def irrelevance_screens(
    maintained: Maintainability,
    engine: DeltaEngine,
    spark: SparkSession,
    schemas: Mapping[str, T.StructType] | None = None,
) -> dict[Scan, exp.Expr]:
    """Per scan of the view's IR, the irrelevance filter on its change (Blakeley §4; none
    when ``IRRELEVANCE_FILTERS_CONF`` is "false"). Analysis only: no Spark job.
    ``schemas``: base tables' schemas already known (as tracking read them), which their
    scans' column types are taken from."""

    def leaf_types(node: Node) -> dict[str, T.DataType]:
        if isinstance(node, Scan):  # no plan to analyze
            rows = engine.tables[node.table].rows
            # A known schema saves asking the JVM for the DataFrame's (and reading it).
            known = (schemas or {}).get(node.table)
            if known is None and isinstance(rows, LazyRows):
                rows = rows.frame
            if known is None and isinstance(rows, DataFrame):
                known = rows.schema
            if known is not None:
                return _scan_types(node, known)
        typing = engine.analyzing() if recursive_below(node) else engine  # no fixpoint run
        schema = typing.evaluate(node, Version.NEW).schema
        return {field.name: field.dataType for field in schema.fields if field.name != WEIGHT}

    return _screens(maintained, spark, leaf_types)


def scan_screens(
    maintained: Maintainability, spark: SparkSession, schemas: Mapping[str, T.StructType]
) -> dict[Scan, exp.Expr]:
    """``irrelevance_screens`` of a view whose blocks' leaves are all scans of tables in
    ``schemas`` (an SPJ view): no delta engine needed."""

    def leaf_types(node: Node) -> dict[str, T.DataType]:
        if not isinstance(node, Scan):
            raise ValueError(f"a block's leaf {type(node).__name__} is not a scan")
        return _scan_types(node, schemas[node.table])

    return _screens(maintained, spark, leaf_types)


def _screens(
    maintained: Maintainability,
    spark: SparkSession,
    leaf_types: Callable[[Node], Mapping[str, T.DataType]],
) -> dict[Scan, exp.Expr]:
    if maintained.root is None or not filters_enabled(spark):
        return {}
    # Without ANSI mode integer arithmetic wraps around, and ``x + 1 < y`` is not linear.
    ansi = ansi_mode(spark) == "true"
    return irrelevance_filters(maintained.root, leaf_types, exact_arithmetic=ansi)


def _scan_types(scan: Scan, schema: T.StructType) -> dict[str, T.DataType]:
    """The types of ``scan``'s outputs, its table's schema being ``schema``."""
    types = {field.name: field.dataType for field in schema.fields}
    return {o: types[c] for c, o in zip(scan.columns, scan.outputs, strict=True)}


def screened_scans(root: Node, screens: Mapping[Scan, exp.Expr]) -> dict[str, list[exp.Expr]]:
    """Per base table every occurrence of which in ``root`` is screened, the ``screens``
    (per scan): a logged row of it that passes none of them cannot affect the view (it is
    skipped)."""
    found: dict[str, list[exp.Expr]] = {}
    unscreened: set[str] = set()
    for node in walk(root):
        if isinstance(node, Scan):
            screen = screens.get(node)
            if screen is None:
                unscreened.add(node.table)  # this occurrence keeps every row
            else:
                found.setdefault(node.table, []).append(screen)
    return {table: tests for table, tests in found.items() if table not in unscreened}


def _skipped_sql(tests: list[exp.Expr]) -> str:
    """Whether a logged row passes none of ``tests`` (an unknown outcome passes)."""
    return f"NOT coalesce({sql_expression(exp.or_(*tests))}, FALSE)"


@dataclass(frozen=True)
class SkippedRows:
    """Counts, per base table, of the logged changed rows no occurrence of the table in the
    view keeps (rows as logged: an update is two), observed while the refresh's first job
    reads the changes: no job of its own (``observed``)."""

    observations: dict[str, Metrics]
    screens: dict[str, list[exp.Expr]]

    @classmethod
    def observed(cls, root: Node, engine: DeltaEngine) -> tuple[SkippedRows, DeltaEngine]:
        """The counts to observe, and ``engine`` with each screened table's logged rows
        observed (its change, when already made, made again from them)."""
        screens = screened_scans(root, engine.screens)
        observations: dict[str, Metrics] = {}
        tables = dict(engine.tables)
        for index, (table, tests) in enumerate(sorted(screens.items())):
            state = tables[table]
            if state.logged is None:
                continue
            counted = f"coalesce(sum(CAST({_skipped_sql(tests)} AS BIGINT)), 0)"
            logged, metrics = observe(
                state.logged, f"sparkmv_skipped_{index}", {"skipped": counted}
            )
            # A change made from the logged rows is made again from them as observed: the
            # observation must be in the plan the refresh runs.
            observed = replace(state, logged=logged)
            tables[table] = observed if state.change is None else state.netted(logged)
            observations[table] = metrics
        return cls(observations, screens), engine.with_tables(tables)

    def counts(self, engine: DeltaEngine) -> dict[str, int]:
        """The counts, once the changes were read; a count whose observation got no metrics
        (Spark pruned the plan that read the change) is counted by a job instead."""
        counts: dict[str, int] = {}
        for table, metrics in self.observations.items():
            found = metrics.get()
            if found is None:
                found = {"skipped": _count_skipped(engine, table, self.screens[table])}
            counts[table] = found["skipped"]
        return counts


def _count_skipped(engine: DeltaEngine, table: str, tests: list[exp.Expr]) -> int:
    logged = engine.tables[table].logged
    assert logged is not None
    return int(logged.where(_skipped_sql(tests)).count())


def recursive_below(node: Node) -> bool:
    """Whether ``node`` is or reads a recursive CTE (or its reference)."""
    return any(isinstance(below, (Recursive, RecursiveRef)) for below in walk(node))
