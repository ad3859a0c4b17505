"""``MvMetadata``: everything sparkmv knows about one materialized view, and its encoding."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from sparkmv.catalog import properties as keys
from sparkmv.catalog.modes import RefreshMode, RefreshPolicy, RefreshTrigger
from sparkmv.catalog.schedule import Schedule
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.identifiers import TableName

HISTORY_WEIGHT = 0.25
"""The newest measured refresh's weight in its mode's ``ModeHistory``: the means are exact
over a mode's first four refreshes, then exponentially weighted (the last few count most)."""


@dataclass(frozen=True)
class ModeHistory:
    """This view's measured refreshes of one mode: how many, and the means of their durations
    and of the cost model's uncorrected estimates for them (``plan/cost.py``), so that
    ``mean_ms / mean_model_ms`` says how this view's refreshes compare with the model. Both
    means are over the same refreshes, so their ratio compares like with like whatever
    inputs (change sizes) those refreshes had. ``last_refresh``: the view's refresh count
    (``RefreshStats.refreshes``) after the newest of them, so that the model can tell how
    many refreshes of the other mode ran since (0: not known, a history from before)."""

    refreshes: int = 0
    mean_ms: float = 0.0
    mean_model_ms: float = 0.0
    last_refresh: int = 0

    def measured(self, duration_ms: float, model_ms: float, refresh: int = 0) -> ModeHistory:
        """This history and one more refresh, the view's ``refresh``-th, which took
        ``duration_ms`` where the model estimated ``model_ms``: weighted
        ``max(1/n, HISTORY_WEIGHT)`` as the n-th."""
        weight = max(1 / (self.refreshes + 1), HISTORY_WEIGHT)
        return ModeHistory(
            self.refreshes + 1,
            round(self.mean_ms + weight * (duration_ms - self.mean_ms), 1),
            round(self.mean_model_ms + weight * (model_ms - self.mean_model_ms), 1),
            refresh,
        )

    def to_json(self) -> dict[str, object]:
        return {
            "refreshes": self.refreshes,
            "mean_ms": self.mean_ms,
            "mean_model_ms": self.mean_model_ms,
            "last_refresh": self.last_refresh,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, float]) -> ModeHistory:
        return cls(
            int(value["refreshes"]),
            float(value["mean_ms"]),
            float(value["mean_model_ms"]),
            int(value.get("last_refresh", 0)),
        )


@dataclass(frozen=True)
class RefreshStats:
    """Counters kept across refreshes (docs/architecture.md)."""

    refreshes: int = 0
    full_refreshes: int = 0
    incremental_refreshes: int = 0
    rows_inserted: int = 0
    rows_deleted: int = 0
    # per base table: changed rows (as logged) the irrelevance filters dropped
    irrelevant_rows_skipped: Mapping[str, int] = field(default_factory=dict)
    last_mode: str = ""  # a RefreshMode's value
    last_reason: str = ""
    last_refreshed_ms: int = 0
    last_duration_ms: int = 0
    # per mode: this view's measured refreshes against the cost model (``plan/cost.py``)
    cost_history: Mapping[RefreshMode, ModeHistory] = field(default_factory=dict)
    # The cost model's uncorrected estimate of the refresh about to be recorded (``planned``):
    # ``after_*_refresh`` fold it and the measured duration into ``cost_history`` and clear
    # it. 0: nothing to measure (CREATE, a refresh with nothing to do). Never stored.
    planned_model_ms: float = 0.0

    def planned(self, model_ms: float) -> RefreshStats:
        """These counters for a refresh the cost model estimated at ``model_ms`` (uncorrected):
        recording it measures its duration against that estimate."""
        return replace(self, planned_model_ms=model_ms)

    def after_full_refresh(
        self, rows_written: int, rows_replaced: int, reason: str, started_ms: int, finished_ms: int
    ) -> RefreshStats:
        """The counters once a full refresh replaced ``rows_replaced`` rows by ``rows_written``."""
        return replace(
            self._after(
                RefreshMode.FULL, rows_written, rows_replaced, reason, started_ms, finished_ms
            ),
            full_refreshes=self.full_refreshes + 1,
        )

    def after_incremental_refresh(
        self,
        inserted: int,
        deleted: int,
        reason: str,
        started_ms: int,
        finished_ms: int,
        irrelevant: Mapping[str, int] | None = None,
    ) -> RefreshStats:
        """The counters once ΔV inserted and deleted that many visible rows, after the
        irrelevance filters dropped ``irrelevant`` changed rows of each base table."""
        skipped = dict(self.irrelevant_rows_skipped)
        for table, rows in (irrelevant or {}).items():
            skipped[table] = skipped.get(table, 0) + rows
        return replace(
            self._after(
                RefreshMode.INCREMENTAL, inserted, deleted, reason, started_ms, finished_ms
            ),
            incremental_refreshes=self.incremental_refreshes + 1,
            irrelevant_rows_skipped=skipped,
        )

    def _after(
        self,
        mode: RefreshMode,
        inserted: int,
        deleted: int,
        reason: str,
        started_ms: int,
        finished_ms: int,
    ) -> RefreshStats:
        history = dict(self.cost_history)
        if self.planned_model_ms > 0:
            measured = history.get(mode, ModeHistory())
            history[mode] = measured.measured(
                finished_ms - started_ms, self.planned_model_ms, self.refreshes + 1
            )
        return replace(
            self,
            refreshes=self.refreshes + 1,
            rows_inserted=self.rows_inserted + inserted,
            rows_deleted=self.rows_deleted + deleted,
            last_mode=mode.value,
            last_reason=reason,
            last_refreshed_ms=finished_ms,
            last_duration_ms=finished_ms - started_ms,
            cost_history=history,
            planned_model_ms=0.0,
        )


@dataclass(frozen=True)
class StorageLayout:
    """How a view's snapshot stores it (``storage/snapshot.py``).

    ``counted``: one row per distinct value, with its multiplicity (Blakeley §5.1's
    counter) in a hidden column — a DISTINCT view, which shows the values with a positive
    count. ``grouped``: one row per group of an aggregate view, with its state in hidden
    columns (``plan/aggregate_view.py``); ``value_counters``: and beside each group a row per
    distinct value of a DISTINCT aggregate's argument, with its count. Otherwise every copy
    of a row is stored as a row.
    ``buckets`` > 0: rows are spread
    over that many hash buckets, so an incremental refresh rewrites only the buckets its
    change touches; 0: one plain directory (a view that is only refreshed fully).
    """

    counted: bool = False
    buckets: int = 0
    grouped: bool = False
    value_counters: bool = False


PLAIN = StorageLayout()


@dataclass(frozen=True)
class LogPosition:
    """How far a view has consumed a base table's change log: the log (its root, so a table
    re-created under the same name, with a new log, is never read against an old version)
    and the version."""

    log: str
    version: int

    def to_json(self) -> dict[str, object]:
        return {"log": self.log, "version": self.version}

    @classmethod
    def from_json(cls, value: object) -> LogPosition:
        if isinstance(value, dict):
            return cls(str(value["log"]), int(value["version"]))
        return cls("", int(str(value)))  # written before logs were identified


@dataclass(frozen=True)
class MvMetadata:
    name: TableName
    query: str
    query_database: str  # the database unqualified names in the query resolve in
    policy: RefreshPolicy
    trigger: RefreshTrigger
    base_tables: tuple[str, ...]
    columns: tuple[str, ...]
    snapshot: str
    row_count: int
    created_ms: int
    stats: RefreshStats = field(default_factory=RefreshStats)
    consumed_versions: dict[str, LogPosition] = field(default_factory=dict)  # per base table
    layout: StorageLayout = PLAIN
    # stored rows of the snapshot that its mask hides (merge-on-read, ``storage/snapshot.py``)
    masked_rows: int = 0
    # the schemas key the delta rules' types were checked for ("" when not checked)
    checked_schemas: str = ""
    # the types compiled under that key (JSON; "" when none)
    compiled_types: str = ""
    format_version: int = keys.FORMAT_VERSION
    # when the scheduler refreshes it on its own (None: only when asked, or ON COMMIT)
    schedule: Schedule | None = None
    # the token of the commit this metadata was read from ("" before the first commit); not
    # written by ``to_properties``: ``ViewCatalog.commit`` checks it and writes a new one
    commit_token: str = ""

    def with_changes(self, **changes: object) -> MvMetadata:
        return replace(self, **changes)  # type: ignore[arg-type]

    def to_properties(self) -> dict[str, str]:
        s = self.stats
        return keys.encode(
            {
                keys.FORMAT: str(keys.FORMAT_VERSION),  # what this writer may have used
                keys.QUERY: self.query,
                keys.QUERY_DATABASE: self.query_database,
                keys.POLICY: self.policy.value,
                keys.TRIGGER: self.trigger.value,
                # always written: a commit must clear a schedule that ALTER dropped
                keys.SCHEDULE: self.schedule.to_property() if self.schedule else "",
                keys.BASE_TABLES: json.dumps(list(self.base_tables)),
                keys.COLUMNS: json.dumps(list(self.columns)),
                keys.SNAPSHOT: self.snapshot,
                keys.ROW_COUNT: str(self.row_count),
                keys.STORAGE_COUNTED: str(self.layout.counted).lower(),
                keys.STORAGE_BUCKETS: str(self.layout.buckets),
                keys.STORAGE_GROUPED: str(self.layout.grouped).lower(),
                keys.STORAGE_VALUE_COUNTERS: str(self.layout.value_counters).lower(),
                keys.STORAGE_MASKED_ROWS: str(self.masked_rows),
                keys.CREATED_AT: str(self.created_ms),
                keys.REFRESH_COUNT: str(s.refreshes),
                keys.FULL_REFRESH_COUNT: str(s.full_refreshes),
                keys.INCREMENTAL_REFRESH_COUNT: str(s.incremental_refreshes),
                keys.ROWS_INSERTED: str(s.rows_inserted),
                keys.ROWS_DELETED: str(s.rows_deleted),
                keys.IRRELEVANT_ROWS_SKIPPED: json.dumps(
                    dict(s.irrelevant_rows_skipped), sort_keys=True
                ),
                keys.COST_HISTORY: json.dumps(
                    {mode.value: h.to_json() for mode, h in s.cost_history.items()},
                    sort_keys=True,
                ),
                keys.LAST_MODE: s.last_mode,
                keys.LAST_REASON: s.last_reason,
                keys.LAST_REFRESHED_AT: str(s.last_refreshed_ms),
                keys.LAST_DURATION: str(s.last_duration_ms),
                keys.CONSUMED_VERSIONS: json.dumps(
                    {table: p.to_json() for table, p in self.consumed_versions.items()},
                    sort_keys=True,
                ),
                keys.CHECKED_SCHEMAS: self.checked_schemas,
                keys.COMPILED_TYPES: self.compiled_types,
            }
        )

    @classmethod
    def from_properties(cls, name: TableName, properties: Mapping[str, str]) -> MvMetadata:
        values = keys.decode(properties)
        version = int(values[keys.FORMAT])
        if version > keys.FORMAT_VERSION:
            raise SparkMvError(
                ErrorClass.MATERIALIZED_VIEW_UNSUPPORTED_FEATURE,
                feature=f"Materialized view metadata format {version} (of {name})",
                hint=f"This sparkmv reads format {keys.FORMAT_VERSION}; upgrade sparkmv.",
            )

        def number(key: str) -> int:
            return int(values.get(key) or 0)

        return cls(
            name=name,
            query=values[keys.QUERY],
            query_database=values[keys.QUERY_DATABASE],
            policy=RefreshPolicy(values[keys.POLICY]),
            trigger=RefreshTrigger(values[keys.TRIGGER]),
            base_tables=tuple(json.loads(values[keys.BASE_TABLES])),
            columns=tuple(json.loads(values[keys.COLUMNS])),
            snapshot=values[keys.SNAPSHOT],
            row_count=number(keys.ROW_COUNT),
            created_ms=number(keys.CREATED_AT),
            stats=RefreshStats(
                refreshes=number(keys.REFRESH_COUNT),
                full_refreshes=number(keys.FULL_REFRESH_COUNT),
                incremental_refreshes=number(keys.INCREMENTAL_REFRESH_COUNT),
                rows_inserted=number(keys.ROWS_INSERTED),
                rows_deleted=number(keys.ROWS_DELETED),
                irrelevant_rows_skipped=json.loads(
                    values.get(keys.IRRELEVANT_ROWS_SKIPPED) or "{}"
                ),
                last_mode=values.get(keys.LAST_MODE, ""),
                last_reason=values.get(keys.LAST_REASON, ""),
                last_refreshed_ms=number(keys.LAST_REFRESHED_AT),
                last_duration_ms=number(keys.LAST_DURATION),
                cost_history={
                    RefreshMode(mode): ModeHistory.from_json(history)
                    for mode, history in json.loads(values.get(keys.COST_HISTORY) or "{}").items()
                },
            ),
            consumed_versions={
                table: LogPosition.from_json(position)
                for table, position in json.loads(
                    values.get(keys.CONSUMED_VERSIONS) or "{}"
                ).items()
            },
            layout=StorageLayout(
                counted=values.get(keys.STORAGE_COUNTED) == "true",
                buckets=number(keys.STORAGE_BUCKETS),
                grouped=values.get(keys.STORAGE_GROUPED) == "true",
                value_counters=values.get(keys.STORAGE_VALUE_COUNTERS) == "true",
            ),
            masked_rows=number(keys.STORAGE_MASKED_ROWS),
            checked_schemas=values.get(keys.CHECKED_SCHEMAS, ""),
            compiled_types=values.get(keys.COMPILED_TYPES, ""),
            format_version=version,
            schedule=Schedule.from_property(values.get(keys.SCHEDULE, "")),
            commit_token=values.get(keys.COMMIT_TOKEN, ""),
        )
