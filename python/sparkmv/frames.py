"""DataFrame operations in one py4j round trip each (the shim's ``FrameBridge``).

Through PySpark's API each of them costs several, counted here with the releases of the JVM
objects Python drops afterwards: ``spark.sql`` 8 (it converts an empty argument list), a
parquet read with a schema about 20 (a reader, its schema and options, the path list element
by element), ``selectExpr`` 6 and every ``F.expr`` 4. An incremental refresh makes dozens
of these calls; here each costs one round trip, and the release of the one DataFrame it
returns. Lists cross as JSON, the way ``CatalogBridge`` takes them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from sparkmv.config import FRAME_BRIDGE_CLASS
from sparkmv.jvm import StaticMethods, helper


def bridge(spark: SparkSession) -> StaticMethods:
    """The shim's ``FrameBridge`` of ``spark``'s context."""
    return helper(spark, FRAME_BRIDGE_CLASS)


def sql(spark: SparkSession, text: str) -> DataFrame:
    """``spark.sql(text)``, analyzed (errors surface here, as there); an observation in a
    temporary view it reads completes when an action runs it (``FrameBridge.sql``)."""
    session: Any = spark._jsparkSession
    return DataFrame(bridge(spark).sql(session, text), spark)


def sql_in(spark: SparkSession, text: str, database: str) -> DataFrame:
    """``sql`` analyzed with ``database`` as the current database (switched back after)."""
    session: Any = spark._jsparkSession
    return DataFrame(bridge(spark).sqlIn(session, text, database), spark)


@dataclass(frozen=True)
class ParquetRead:
    """Parquet files, directories or globs (``paths``) read with ``schema``: nothing is
    inferred, nothing listed beyond them; partition directories below ``base_path`` add
    their columns. ``select``: a SQL select list the rows are then turned into."""

    schema: T.StructType
    paths: tuple[str, ...]
    base_path: str | None = None
    select: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "schema": self.schema.json(),
            "paths": list(self.paths),
            "basePath": self.base_path,
            "select": None if self.select is None else list(self.select),
        }


def read_parquet(
    spark: SparkSession,
    schema: T.StructType,
    paths: Sequence[str],
    base_path: str | None = None,
) -> DataFrame:
    """The rows of one ``ParquetRead``."""
    return read_parquets(spark, [ParquetRead(schema, tuple(paths), base_path)])


def read_parquets(spark: SparkSession, reads: Sequence[ParquetRead]) -> DataFrame:
    """The rows of ``reads`` (at least one), united by column name."""
    session: Any = spark._jsparkSession
    listed = json.dumps([read.to_json() for read in reads])
    return DataFrame(bridge(spark).readParquet(session, listed), spark)


def write_parquet(
    frame: DataFrame, path: str, mode: str = "errorifexists", partition_by: Sequence[str] = ()
) -> None:
    """``frame.write.mode(mode).partitionBy(*partition_by).parquet(path)``, in one round
    trip (PySpark's writer costs about seven)."""
    bridge(frame.sparkSession).writeParquet(frame._jdf, path, mode, json.dumps(list(partition_by)))


def empty(spark: SparkSession, schema: T.StructType) -> DataFrame:
    """No rows, with ``schema``."""
    session: Any = spark._jsparkSession
    return DataFrame(bridge(spark).empty(session, schema.json()), spark)


def select(frame: DataFrame, items: Sequence[str], where: str | None = None) -> DataFrame:
    """``frame``'s rows that pass ``where`` (Spark SQL; None: all) as the SQL select list
    ``items`` (``frame.where(where).selectExpr(*items)``)."""
    spark = frame.sparkSession
    selected = bridge(spark).select(frame._jdf, where, json.dumps(list(items)))
    return DataFrame(selected, spark)


def where_in(frame: DataFrame, expression: str, values: Sequence[int]) -> DataFrame:
    """``frame``'s rows whose ``expression`` (Spark SQL, a BIGINT) is one of ``values``:
    ``WHERE expression IN (values…)``, built as the hash set Spark's optimizer makes of a
    long ``IN`` list, without parsing and analyzing a literal per value."""
    spark = frame.sparkSession
    return DataFrame(bridge(spark).whereIn(frame._jdf, expression, json.dumps(list(values))), spark)


def repartition(frame: DataFrame, columns: Sequence[str]) -> DataFrame:
    """``frame.repartition(*columns)`` (hash-partitioned by those columns)."""
    spark = frame.sparkSession
    return DataFrame(bridge(spark).repartition(frame._jdf, json.dumps(list(columns))), spark)


def drop_temp_views(spark: SparkSession, names: Sequence[str]) -> None:
    """Drop the temporary views ``names`` through the session catalog: PySpark's
    ``spark.catalog.dropTempView`` also uncaches each view's plan, which may be a cached
    input's (``apply/hot_inputs.py``)."""
    session: Any = spark._jsparkSession
    bridge(spark).dropTempViews(session, json.dumps(list(names)))


def schema(frame: DataFrame) -> T.StructType:
    """``frame.schema``, in one round trip (PySpark's costs three the first time it is asked
    of a DataFrame, then none: prefer it for a DataFrame whose schema is asked again)."""
    parsed = T._parse_datatype_json_string(str(bridge(frame.sparkSession).schemaJson(frame._jdf)))
    assert isinstance(parsed, T.StructType)
    return parsed


def cached_bytes(frame: DataFrame) -> int:
    """The bytes ``frame``'s cached column batches take, in memory or spilled to disk, as far
    as an action has computed them (0: not cached)."""
    return int(bridge(frame.sparkSession).cachedBytes(frame._jdf))


def deterministic(frame: DataFrame) -> bool:
    """Whether ``frame``'s analyzed plan is deterministic."""
    return bool(bridge(frame.sparkSession).deterministic(frame._jdf))
