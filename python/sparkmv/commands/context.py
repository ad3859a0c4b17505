"""What every command gets: the session and its catalog of materialized views."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from sparkmv.capture.tracking import Tracking
from sparkmv.catalog.views import ViewCatalog
from sparkmv.parse.statements import TableName

Rows = list[tuple[Any, ...]]
"""Result rows, in the order of the command's RESULT_SCHEMA."""


@dataclass(frozen=True)
class CommandContext:
    spark: SparkSession
    catalog: ViewCatalog
    tracking: Tracking

    @classmethod
    def of(cls, spark: SparkSession) -> CommandContext:
        catalog = ViewCatalog(spark)
        return cls(spark, catalog, Tracking(spark, catalog))

    def start_tracking(self, view: TableName, base_tables: tuple[str, ...]) -> dict[str, int]:
        """Track every base table of ``view``; the change-log version of each tracked one.

        Called before the view reads its base tables, so no write after the read is missed.
        """
        versions = {}
        for qualified in base_tables:
            state = self.tracking.start(TableName.parse_qualified(qualified), view)
            if state.log is not None:
                versions[qualified] = state.log.current_version()
        return versions

    def stop_tracking(self, view: TableName, base_tables: tuple[str, ...]) -> None:
        for qualified in base_tables:
            self.tracking.stop(TableName.parse_qualified(qualified), view)
