"""What every command gets: the session and its catalog of materialized views."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from sparkmv.catalog.views import ViewCatalog

Rows = list[tuple[Any, ...]]
"""Result rows, in the order of the command's RESULT_SCHEMA."""


@dataclass(frozen=True)
class CommandContext:
    spark: SparkSession
    catalog: ViewCatalog

    @classmethod
    def of(cls, spark: SparkSession) -> CommandContext:
        return cls(spark, ViewCatalog(spark))
