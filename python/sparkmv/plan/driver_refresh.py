"""Which refreshes the driver computes without Spark, and the join changes it computes
while the refresh is planned.

An aggregate view of the shape ``plan/driver_aggregate.py`` maintains is refreshed by the
driver when its change is small and local. Over one table the refresh reads that change
itself. Over a join (``plan/driver_join.py``) the plan computes the change of the
aggregate's input: whether the driver can (every input a term reads is a change, an
unchanged table it decodes, or a table proven to be reached only through its own change) is
known only by doing it, and the cost model's estimate depends on it (no scan, no broadcast
job: ``plan/cost.py``). The refresh then merges that change (``RefreshPlan.driver_change``).

A row view over such a join (``driver_row_join``: its stored rows a join under filters and
projections, a DISTINCT's input for a counted one) gets the same: the plan computes
``Δstored``, and the refresh merges it into the stored rows it hits
(``apply/incremental.py``), placing each row in its bucket with the driver's own
``xxhash64`` (``buckets.row_hashes``). Its stored columns compare and hash at the driver as in
Spark (``driver_join.key_type``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession
from pyspark.sql import types as T
from sqlglot import exp

from sparkmv.analyze.maintainability import Maintainability
from sparkmv.analyze.relational import read_columns
from sparkmv.capture.tracking import BaseTable, schemas
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.plan.aggregate_view import aggregate_view, compiled_types, remember_compiled_types
from sparkmv.plan.driver_aggregate import DriverAggregate, driver_aggregate
from sparkmv.plan.driver_expression import DriverMergeDeclinedError
from sparkmv.plan.driver_join import DriverJoin, DriverTables, compile_join_input, key_type
from sparkmv.plan.driver_predicate import columnar_predicate
from sparkmv.plan.join_keys import JoinKeyProofs
from sparkmv.plan.view_delta import scan_screens, screened_scans

DRIVER_CHANGE_MAX_BYTES = 4 * 1024 * 1024
"""A change whose logged files hold at most this many bytes (per table) may be read by the
driver: a few tens of thousands of rows, summed in Python in tens of milliseconds; a larger
one is summed by Spark."""


def driver_refreshable(
    view: MvMetadata, maintainability: Maintainability, checked_schemas: str, bases: list[BaseTable]
) -> DriverAggregate | None:
    """The view as an aggregate view the driver can refresh by itself
    (``plan/driver_aggregate.py``), when it is one and its types are compiled (under
    ``checked_schemas``); else None."""
    grouped = aggregate_view(maintainability.root)
    remember_compiled_types(checked_schemas, view.compiled_types)
    compiled = compiled_types(checked_schemas)
    tables = schemas(bases)
    if grouped is None or compiled is None or tables is None:
        return None
    return driver_aggregate(grouped, compiled.result_types, tables)


def driver_row_join(maintainability: Maintainability, bases: list[BaseTable]) -> DriverJoin | None:
    """The stored rows of a row view (not an aggregate view) as a join the driver
    evaluates (``compile_join_input``), when they are one and each stored column is of a
    type the driver compares and hashes as Spark does (``key_type``); else None."""
    root = maintainability.root
    tables = schemas(bases)
    if root is None or tables is None or aggregate_view(root) is not None:
        return None
    join = compile_join_input(maintainability.stored, tables)
    if join is None:
        return None
    types = [join.types[output] for output in join.node.outputs]
    return join if all(key_type(t) for t in types) else None


@dataclass(frozen=True)
class DriverChange:
    """A join's change computed by the driver (``join_change_at_driver``): ``rows``, its
    outputs and the weight; ``skipped``, per changed table, the logged rows its
    irrelevance screens drop (``_skipped``: the refresh's counters)."""

    rows: pa.Table
    skipped: Mapping[str, int]


def join_change_at_driver(
    spark: SparkSession,
    join: DriverJoin,
    maintainability: Maintainability,
    consumed: dict[str, int],
    logged: Sequence[int | None],
    bases: list[BaseTable],
) -> DriverChange | None:
    """The change of ``join`` (an aggregate's input, or a row view's stored rows) since the
    ``consumed`` versions of the changed tables (``logged``: their logged bytes), computed
    by the driver; None when it does not compute it (a change too large, an input it does
    not read: ``plan/driver_join.py``)."""
    root = maintainability.root
    if root is None:
        return None
    if any(size is None or size > DRIVER_CHANGE_MAX_BYTES for size in logged):
        return None
    read = read_columns(root)
    by_name = {base.name: base for base in bases}
    reads: dict[str, list[str]] = {}
    for name in join.tables:
        log = by_name[name].log
        if log is None:
            return None
        reads[name] = [f.name for f in log.schema.fields if f.name in read.get(name, ())]
    proofs = JoinKeyProofs(spark, bases, consumed, {n: set(reads[n]) for n in consumed})
    tables = DriverTables(
        spark, by_name, consumed, reads, proofs.only_changed, DRIVER_CHANGE_MAX_BYTES
    )
    try:
        rows = join.change(tables)
    except DriverMergeDeclinedError:
        return None
    return DriverChange(rows, _skipped(spark, maintainability, tables, schemas(bases) or {}))


def _skipped(
    spark: SparkSession,
    maintainability: Maintainability,
    tables: DriverTables,
    table_schemas: Mapping[str, T.StructType],
) -> dict[str, int]:
    """Per changed table every occurrence of which the view screens (``screened_scans``),
    its logged rows that pass none of its irrelevance screens: the count Spark's refresh
    observes (``SkippedRows``), of the logged rows the driver read. A table whose screens
    the driver does not evaluate (``columnar_predicate``) is not counted."""
    root = maintainability.root
    if root is None:
        return {}
    try:
        screens = screened_scans(root, scan_screens(maintainability, spark, table_schemas))
    except ValueError:  # a block over more than scans: its screens need Spark's types
        return {}
    counts = {}
    for table, tests in screens.items():
        if not tables.changed(table):
            continue
        try:
            change = tables.change(table)
        except DriverMergeDeclinedError:  # not read by the driver: not counted
            continue
        types = {f.name: f.dataType for f in table_schemas[table].fields}
        columns = {name: name for name in change.column_names if name in types}
        predicate = columnar_predicate(exp.or_(*tests), columns, types)
        if predicate is None:
            continue
        passed = predicate(change)
        if isinstance(passed, pa.Scalar):
            counts[table] = 0 if passed.as_py() is True else change.num_rows
        else:
            counts[table] = change.num_rows - int(pc.sum(pc.fill_null(passed, False)).as_py() or 0)
    return counts
