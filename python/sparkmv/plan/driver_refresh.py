"""Which refreshes the driver computes without Spark, and the join changes it computes
while the refresh is planned.

An aggregate view of the shape ``plan/driver_aggregate.py`` maintains is refreshed by the
driver when its change is small and local. Over one table the refresh reads that change
itself. Over a join (``plan/driver_join.py``) the plan computes the change of the
aggregate's input: whether the driver can (every input a term reads is a change, an
unchanged table it decodes, or a table proven to be reached only through its own change) is
known only by doing it, and the cost model's estimate depends on it (no scan, no broadcast
job: ``plan/cost.py``). The refresh then merges that change (``RefreshPlan.driver_change``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql import SparkSession

from sparkmv.analyze.maintainability import Maintainability
from sparkmv.analyze.relational import read_columns
from sparkmv.capture.tracking import BaseTable, schemas
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.plan.aggregate_view import aggregate_view, compiled_types, remember_compiled_types
from sparkmv.plan.driver_aggregate import DriverAggregate, driver_aggregate
from sparkmv.plan.driver_expression import DriverMergeDeclinedError
from sparkmv.plan.driver_join import DriverTables
from sparkmv.plan.join_keys import JoinKeyProofs

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


def join_change_at_driver(
    spark: SparkSession,
    driver: DriverAggregate,
    maintainability: Maintainability,
    consumed: dict[str, int],
    logged: Sequence[int | None],
    bases: list[BaseTable],
) -> pa.Table | None:
    """The change of ``driver``'s join input since the ``consumed`` versions of the changed
    tables (``logged``: their logged bytes), computed by the driver; None when it does not
    compute it (a change too large, an input it does not read: ``plan/driver_join.py``)."""
    join = driver.join
    root = maintainability.root
    if join is None or root is None:
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
        return join.change(tables)
    except DriverMergeDeclinedError:
        return None
