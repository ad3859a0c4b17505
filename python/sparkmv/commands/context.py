"""What every command gets: the session and its catalog of materialized views."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import SparkSession

from sparkmv import fs
from sparkmv.capture import changelog_source, delta_source, iceberg_source, table_locks
from sparkmv.capture.change_log import ChangeLog
from sparkmv.capture.tracking import BaseTable, TableTracking, Tracking, untracked_reason
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.catalog.views import CatalogEntry, RefreshFacts, ViewCatalog
from sparkmv.fs import FileStatus
from sparkmv.identifiers import SESSION_CATALOG, TableName

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
        self, view: TableName, base_tables: tuple[str, ...], facts: RefreshFacts | None = None
    ) -> list[BaseTable]:
        """Track every base table of ``view``; each table's log is first reconciled with
        its files, and a log that had missed changes says so in ``problem``. ``facts``: the
        base tables' entries and files as a refresh just gathered them (else looked up).

        Called before the view reads its base tables, so no write after the read is missed.
        """
        tables = [TableName.parse_qualified(qualified) for qualified in base_tables]
        # Under the tables' locks (``capture/table_locks.py``): no write of them is between
        # its listing of their files and its log's commit while they are listed and their
        # logs reconciled.
        with table_locks.holding([table for table in tables if table.catalog is None]):
            entries = facts.bases if facts is not None else self.catalog.entries(tables)
            listed = facts.files if facts is not None else {}
            logs = self.tracking.listed_logs(entries.get(table) for table in tables)

            def start(table: TableName, again: bool) -> TableTracking:
                if again:
                    return self.tracking.start(table, view, self.catalog.entry(table))
                return self.tracking.start(table, view, entries.get(table), logs)

            return [
                self._base_table(qualified, start, reconcile=True, listed=listed)
                for qualified in base_tables
            ]

    def peek_tracking(self, base_tables: tuple[str, ...]) -> list[BaseTable]:
        """``start_tracking`` without side effects (EXPLAIN): nothing is started, reconciled
        or written; a log that missed changes is only reported."""
        return [
            self._base_table(qualified, lambda t, _: self.tracking.state(t), reconcile=False)
            for qualified in base_tables
        ]

    def _base_table(
        self,
        qualified: str,
        tracking: Callable[[TableName, bool], TableTracking],
        reconcile: bool,
        listed: Mapping[str, list[FileStatus]] | None = None,
    ) -> BaseTable:
        """``qualified`` as ``tracking`` finds it (``listed``: data files listed already,
        by location; ``tracking(table, True)``: its entry read again)."""
        table = TableName.parse_qualified(qualified)
        state = tracking(table, False)
        log = state.log
        if log is None:
            return self._untracked(qualified, table, state)
        files = self.tracking.files(table, state.entry, listed)
        if reconcile and listed and log.verify(files):
            # listed before the table's lock was taken: a write may have committed since
            state = tracking(table, True)
            log = state.log
            if log is None:
                return self._untracked(qualified, table, state)
            files = self.tracking.files(table, state.entry)
        missed = log.reconcile(files) if reconcile else log.verify(files)
        problem = f"base table {qualified}: {missed}" if missed else ""
        if missed and state.entry is not None and state.entry.is_materialized_view:
            problem = (
                f"materialized view {qualified} changed without logging its change (it was"
                " replaced, or refreshed by a process that did not log it)"
            )
        return BaseTable(qualified, log, log.current_version(), files, problem, state.entry)

    def _untracked(self, qualified: str, table: TableName, state: TableTracking) -> BaseTable:
        """``qualified``, which sparkmv does not track (``state`` says why): read through its
        catalog's changelog when it offers one (a table of another catalog, or a session
        table of a format sparkmv does not track), else untracked, with both reasons."""
        reason = state.untracked_reason
        if table.catalog is not None:
            reason = "sparkmv tracks parquet tables of the session catalog only"
        elif (
            state.entry is None
            or state.entry.table_type == "VIEW"
            or not untracked_reason(state.entry)
        ):
            return BaseTable(qualified, None, 0, None, reason, state.entry)
        if state.entry is not None and delta_source.is_delta(state.entry.provider):
            return self._of_format(qualified, delta_source.describe(self.spark, table), state)
        if iceberg_source.is_iceberg(self.spark, table):
            return self._of_format(qualified, iceberg_source.describe(self.spark, table), state)
        described = changelog_source.describe(
            self.spark, replace(table, catalog=table.catalog or SESSION_CATALOG)
        )
        if described is None:
            return BaseTable(qualified, None, 0, None, "it does not exist")
        source = described.source(self.spark)
        if isinstance(source, str):
            return BaseTable(qualified, None, 0, None, f"{reason}, and {source}", state.entry)
        return BaseTable(qualified, None, source.version, None, "", state.entry, source)

    @staticmethod
    def _of_format(
        qualified: str, found: changelog_source.ChangelogSource | str, state: TableTracking
    ) -> BaseTable:
        """A base table of a format whose own log keeps its changes (Delta, Iceberg): read
        from there (``found``), or untracked for the reason ``found`` gives."""
        if isinstance(found, str):
            return BaseTable(qualified, None, 0, None, found, state.entry)
        return BaseTable(qualified, None, found.version, None, "", state.entry, found)

    def compact_logs(self, bases: list[BaseTable], committed: MvMetadata) -> None:
        """Retention: drop the log versions every dependent view has consumed; ``bases``
        as the calling command started tracking them, ``committed`` the metadata it just
        committed (neither looked up again: a view that became a dependent since then
        consumed at least the versions this command read, so it needs none of the dropped).

        The log can only shrink when no dependent still stands at its earliest retained
        version, so the dependents are read until the first one that does: when many views
        over one table are refreshed in turn, each refresh but the last stops early (the
        lookups per refresh stay about constant instead of growing with the dependents). Each
        dependent is looked up once, however many of the base tables it reads. The logs are
        listed together, after any earlier compaction's removals ended (``ChangeLog.compact``
        decides on that listing).
        """
        views: dict[TableName, MvMetadata | None] = {committed.name: committed}
        tracked = [(base, base.log) for base in bases if base.log is not None]
        fs.wait_for_removals()
        ChangeLog.list_together([log for _, log in tracked])
        for base, log in tracked:
            through = self._consumed_by_all(base.name, log, base.entry, views)
            if through is not None:
                log.compact(through)

    def _consumed_by_all(
        self,
        qualified: str,
        log: ChangeLog,
        entry: CatalogEntry | None,
        views: dict[TableName, MvMetadata | None],
    ) -> int | None:
        """The newest version of ``log`` every dependent of ``qualified`` has consumed, or
        None when that is not past the log's earliest retained version (nothing to drop);
        ``views``: the dependents' metadata looked up so far (added to)."""
        earliest = log.earliest_readable()
        through: int | None = None
        for dependent in self.tracking.dependents(entry, log):
            if dependent not in views:
                views[dependent] = self.catalog.find(dependent)
            view = views[dependent]
            if view is None:
                continue  # dropped without stopping tracking: it reads nothing any more
            position = view.consumed_versions.get(qualified)
            version = position.version if position and position.log == log.root else 0
            if version <= earliest:
                return None
            through = version if through is None else min(through, version)
        return through

    def stop_tracking(self, view: TableName, base_tables: tuple[str, ...]) -> None:
        for qualified in base_tables:
            self.tracking.stop(TableName.parse_qualified(qualified), view)
