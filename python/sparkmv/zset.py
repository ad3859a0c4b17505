"""Z-sets as DataFrames (docs/architecture.md): a relation's columns plus an integer weight.

A positive weight is that many inserted copies of the row, a negative one that many deleted
copies; this is Blakeley's multiplicity counter kept as data. The union of two deltas is
``UNION ALL``; consolidation groups by every column, sums the weights and drops zeros, so a
row inserted and deleted within one range disappears while duplicates keep their count.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkmv.identifiers import quote_identifier

WEIGHT = "__sparkmv_weight"
"""The weight column of every Z-set DataFrame."""

EXACT_TYPES = (
    T.BooleanType,
    T.ByteType,
    T.ShortType,
    T.IntegerType,
    T.LongType,
    T.DecimalType,
    T.StringType,
    T.DateType,
    T.TimestampType,
    T.TimestampNTZType,
    T.BinaryType,
)
"""Types whose values Spark finds equal exactly when their representations are: equal values
hash equally (``buckets.bucket_sql``). Floating point is not among them (Spark takes
0.0 = -0.0 and groups every NaN together)."""


def column(name: str) -> Column:
    """The column ``name`` of a DataFrame, quoted so that names with spaces, dots, keywords or
    back-quotes resolve to that column and nothing else."""
    return F.col(quote_identifier(name))


def weighted(rows: DataFrame, weight: int) -> DataFrame:
    """``rows`` as a Z-set in which every row has ``weight``."""
    return rows.withColumn(WEIGHT, F.lit(weight).cast("long"))


def consolidate(zset: DataFrame) -> DataFrame:
    """Group equal rows, sum their weights, drop rows whose weight sums to zero.

    >>> # consolidate({(a, +1), (a, +1), (b, +1), (b, -1)}) == {(a, +2)}
    """
    columns = [column(name) for name in zset.columns if name != WEIGHT]
    summed = zset.groupBy(*columns).agg(F.sum(WEIGHT).alias(WEIGHT))
    return summed.where(F.col(WEIGHT) != 0)


def materialized(zset: DataFrame) -> DataFrame:
    """``zset`` computed now, by a job of its own, and read back from the executors: its plan
    is cut off below it.

    The rules of DISTINCT and GROUP BY inside a query read their input's change twice (the
    rows, and the keys those rows touch), so without this the plan of ``k`` nested set
    operations holds ``2^k`` copies of the plan below them, and Spark's planning time
    grows with it (a chain of eight UNION/EXCEPT over nine tables, from sqllogictest's
    select4, spent minutes planning one refresh). A change is small, so computing it once
    is cheap."""
    return zset.localCheckpoint(eager=True)


def positive_part(zset: DataFrame) -> DataFrame:
    """The inserted rows of a consolidated Z-set (ΔR⁺), as a Z-set."""
    return zset.where(F.col(WEIGHT) > 0)


def negative_part(zset: DataFrame) -> DataFrame:
    """The deleted rows of a consolidated Z-set (ΔR⁻), with positive weights."""
    return zset.where(F.col(WEIGHT) < 0).withColumn(WEIGHT, -F.col(WEIGHT))


def as_bag(zset: DataFrame, weight: str = WEIGHT) -> DataFrame:
    """The rows of a Z-set with positive weights as a bag: each row ``weight`` times, without
    the weight column."""
    copies = F.explode(F.array_repeat(F.lit(True), F.col(weight).cast("int")))
    columns = [column(name) for name in zset.columns if name != weight]
    return zset.select(*columns, copies.alias("__copy")).drop("__copy")
