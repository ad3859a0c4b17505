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
from collections.abc import Mapping
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from sparkmv.analyze.maintainability import (
    Maintainability,
    analyze_maintainability,
    not_maintainable,
)
from sparkmv.analyze.query import ParsedQuery
from sparkmv.analyze.relational import Node, NotMaintainableError, Scan, walk
from sparkmv.apply.aggregate import group_merge
from sparkmv.apply.incremental import Merge, row_merge
from sparkmv.apply.snapshot import storage_columns
from sparkmv.catalog.metadata import StorageLayout
from sparkmv.config import ANSI_CONF, IRRELEVANCE_FILTERS_CONF
from sparkmv.delta.aggregate import distinct_arguments
from sparkmv.delta.engine import BaseState, DeltaEngine, Version, spark_expression, with_outputs
from sparkmv.delta.rules import delta_engine
from sparkmv.filter.irrelevance import irrelevance_filters
from sparkmv.plan.aggregate_view import aggregate_view
from sparkmv.zset import WEIGHT, as_bag, consolidate


def maintainability_of(
    spark: SparkSession, query: ParsedQuery, database: str, data: DataFrame
) -> Maintainability:
    """``analyze_maintainability``, then a check that the delta rules' evaluation of the IR
    has the query's column types (sqlglot reads the query, Spark runs the rules)."""
    tables = {table: spark.table(table) for table in query.base_tables}
    columns = {table: tuple(frame.columns) for table, frame in tables.items()}
    found = analyze_maintainability(query, database, data, columns)
    if not found.incremental or found.root is None:
        return found
    for field in data.schema.fields:
        if "map<" in field.dataType.simpleString():
            return Maintainability(
                False, f"column {field.name} holds a MAP, and maps cannot be compared"
            )
    engine = delta_engine({table: BaseState(frame) for table, frame in tables.items()})
    try:
        evaluated = engine.evaluate(found.root, Version.NEW)
    except NotMaintainableError as error:  # e.g. a SUM over DOUBLE, known from its type
        return not_maintainable(str(error))
    expected = [field.dataType for field in data.schema.fields]
    actual = [field.dataType for field in evaluated.schema.fields if field.name != WEIGHT]
    if expected != actual:
        return Maintainability(
            False,
            "the delta rules would compute other column types than the query "
            f"({_types(actual)} instead of {_types(expected)})",
        )
    return found


def schemas_key(spark: SparkSession, data: DataFrame, schemas: Mapping[str, T.StructType]) -> str:
    """What the outcome of ``maintainability_of`` depends on besides the query's text: the
    query's column types, the base tables' schemas (by table) and ANSI mode (it decides
    which sums the rules can maintain). A view remembers the key its check passed for."""
    facts = [
        spark.conf.get(ANSI_CONF, "true"),
        data.schema.json(),
        sorted((table, schema.json()) for table, schema in schemas.items()),
    ]
    return hashlib.sha256(json.dumps(facts).encode("utf-8")).hexdigest()


def checked_maintainability(
    query: ParsedQuery, database: str, data: DataFrame, schemas: Mapping[str, T.StructType]
) -> Maintainability:
    """``maintainability_of`` for a view whose check passed for these ``schemas`` (same
    ``schemas_key``): the analysis alone, which only needs the tables' column names. The
    type check would build the whole query's DataFrame over the base tables again."""
    columns = {table: tuple(schema.fieldNames()) for table, schema in schemas.items()}
    return analyze_maintainability(query, database, data, columns)


def _types(types: list[T.DataType]) -> str:
    return ", ".join(t.simpleString() for t in types)


def stored_rows(maintained: Maintainability, engine: DeltaEngine) -> DataFrame:
    """The rows a full refresh stores: visible columns (and the counter when counted; the
    groups' state for an aggregate view).

    A value over the base tables as they are now has a positive weight on every row (scans
    weigh 1, joins multiply, DISTINCT and aggregates give 1): a bag row is stored once per
    unit of weight.
    """
    grouped = aggregate_view(maintained.root)
    if grouped is not None:
        return grouped.stored_rows(engine)
    stored = maintained.stored
    rows = _storage_named(engine.evaluate(stored, Version.NEW), stored.outputs)
    if maintained.counted:
        return consolidate(rows)
    return as_bag(rows)


def stored_change(
    maintained: Maintainability, engine: DeltaEngine, layout: StorageLayout
) -> tuple[DataFrame, Merge]:
    """The change of the stored rows, and how it merges into them: ``Δstored`` in storage
    columns, consolidated — or, for an aggregate view, the state of the changed groups."""
    grouped = aggregate_view(maintained.root)
    if grouped is not None:
        return grouped.state_change(engine), group_merge(grouped, engine)
    stored = maintained.stored
    change = consolidate(_storage_named(engine.delta(stored), stored.outputs))
    return change, row_merge(layout, change)


def _storage_named(zset: DataFrame, outputs: tuple[str, ...]) -> DataFrame:
    return with_outputs(zset, outputs, tuple(storage_columns(len(outputs))))


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
        return terms
    return engine.describe(maintained.stored)


def filters_enabled(spark: SparkSession) -> bool:
    return spark.conf.get(IRRELEVANCE_FILTERS_CONF, "true") != "false"


def irrelevance_screens(
    maintained: Maintainability, engine: DeltaEngine, spark: SparkSession
) -> dict[Scan, exp.Expr]:
    """Per scan of the view's IR, the irrelevance filter on its change (Blakeley §4; none
    when ``IRRELEVANCE_FILTERS_CONF`` is "false"). Analysis only: no Spark job."""
    if maintained.root is None or not filters_enabled(spark):
        return {}
    # Without ANSI mode integer arithmetic wraps around, and ``x + 1 < y`` is not linear.
    ansi = spark.conf.get(ANSI_CONF, "true") == "true"

    def leaf_types(node: Node) -> dict[str, T.DataType]:
        schema = engine.evaluate(node, Version.NEW).schema
        return {field.name: field.dataType for field in schema.fields if field.name != WEIGHT}

    return irrelevance_filters(maintained.root, leaf_types, exact_arithmetic=ansi)


def skipped_rows(root: Node, engine: DeltaEngine) -> dict[str, int]:
    """How many logged changed rows no occurrence of their table in ``root`` keeps (rows
    as logged: an update is two); one Spark job over the changes' files, none without
    screens."""
    screens: dict[str, list[exp.Expr]] = {}
    unscreened: set[str] = set()
    for node in walk(root):
        if isinstance(node, Scan):
            screen = engine.screens.get(node)
            if screen is None:
                unscreened.add(node.table)  # this occurrence keeps every row
            else:
                screens.setdefault(node.table, []).append(screen)
    counts = [
        logged.where(~F.coalesce(spark_expression(exp.or_(*tests)), F.lit(False))).select(
            F.lit(table).alias("table"), F.count(F.lit(1)).alias("skipped")
        )
        for table, tests in screens.items()
        if (logged := engine.tables[table].logged) is not None and table not in unscreened
    ]
    if not counts:
        return {}
    return {str(row[0]): int(row[1]) for row in reduce(DataFrame.union, counts).collect()}
