"""What every command gets: the session and its catalog of materialized views."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from sparkmv.capture.tracking import Tracking
from sparkmv.catalog.metadata import LogPosition
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

    def start_tracking(
        self, view: TableName, base_tables: tuple[str, ...]
    ) -> tuple[dict[str, LogPosition], list[str]]:
        """Track every base table of ``view``: the log position of each tracked one, and
        the changes the logs had missed (each log is first reconciled with its table).

        Called before the view reads its base tables, so no write after the read is missed.
        """
        positions, missed = {}, []
        for qualified in base_tables:
            table = TableName.parse_qualified(qualified)
            state = self.tracking.start(table, view)
            if state.log is None:
                continue
            reason = state.log.reconcile(self.tracking.files(table))
            if reason:
                missed.append(f"base table {qualified}: {reason}")
            positions[qualified] = LogPosition(state.log.root, state.log.current_version())
        return positions, missed

    def compact_logs(self, base_tables: tuple[str, ...]) -> None:
        """Retention: drop the log versions every dependent view has consumed."""
        for qualified in base_tables:
            table = TableName.parse_qualified(qualified)
            entry = self.catalog.entry(table)
            log = self.tracking.state_of(table, entry).log
            if log is None:
                continue
            versions = []
            for dependent in self.tracking.dependents(entry):
                view = self.catalog.find(dependent)
                if view is None:
                    continue  # dropped without stopping tracking: it reads nothing any more
                position = view.consumed_versions.get(qualified)
                versions.append(position.version if position and position.log == log.root else 0)
            if versions:
                log.compact(min(versions))

    def stop_tracking(self, view: TableName, base_tables: tuple[str, ...]) -> None:
        for qualified in base_tables:
            self.tracking.stop(TableName.parse_qualified(qualified), view)
