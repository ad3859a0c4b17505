"""Every ``sparkmv.`` table-property key, defined once, and the metadata format version.

Values longer than ``CHUNK_SIZE`` are split into ``key.part.N`` properties (plus
``key.numParts``) because the metastore caps a property value at 4000 characters.
"""

from __future__ import annotations

from collections.abc import Mapping

PREFIX = "sparkmv."
FORMAT_VERSION = 2
"""1: the first; 2: a snapshot may have a mask (``STORAGE_MASKED_ROWS``), which a reader of
format 1 would drop from the view's text on its next commit. A commit writes this version."""
CHUNK_SIZE = 3000

FORMAT = "sparkmv.format_version"  # presence marks a catalog view as a materialized view
QUERY = "sparkmv.query"
QUERY_DATABASE = "sparkmv.query.database"
POLICY = "sparkmv.refresh.policy"
TRIGGER = "sparkmv.refresh.trigger"
# The scheduler's schedule of the view (``catalog/schedule.py: Schedule.to_property``); "" none.
SCHEDULE = "sparkmv.refresh.schedule"
BASE_TABLES = "sparkmv.base_tables"  # JSON list of qualified names
COLUMNS = "sparkmv.columns"  # JSON list of the visible column names
SNAPSHOT = "sparkmv.storage.snapshot"  # path of the data the view currently reads
ROW_COUNT = "sparkmv.storage.row_count"
STORAGE_COUNTED = "sparkmv.storage.counted"  # "true": one row per value with its multiplicity
STORAGE_BUCKETS = "sparkmv.storage.buckets"  # hash buckets of the snapshot (0: unbucketed)
STORAGE_GROUPED = "sparkmv.storage.grouped"  # "true": one row per group with its state
STORAGE_VALUE_COUNTERS = "sparkmv.storage.value_counters"  # "true": and DISTINCT value counters
STORAGE_MASKED_ROWS = "sparkmv.storage.masked_rows"  # stored rows the snapshot's mask hides
CREATED_AT = "sparkmv.created_at_ms"
REFRESH_COUNT = "sparkmv.stats.refreshes"
FULL_REFRESH_COUNT = "sparkmv.stats.full_refreshes"
INCREMENTAL_REFRESH_COUNT = "sparkmv.stats.incremental_refreshes"
ROWS_INSERTED = "sparkmv.stats.rows_inserted"
ROWS_DELETED = "sparkmv.stats.rows_deleted"
IRRELEVANT_ROWS_SKIPPED = "sparkmv.stats.irrelevant_rows_skipped"  # JSON {base table: rows}
# JSON {mode: {refreshes, mean_ms, mean_model_ms, last_refresh}}: this view's measured refreshes of
# each mode against the cost model's uncorrected estimates (``RefreshStats.cost_history``).
COST_HISTORY = "sparkmv.stats.cost_history"
LAST_MODE = "sparkmv.last_refresh.mode"
LAST_REASON = "sparkmv.last_refresh.reason"
LAST_REFRESHED_AT = "sparkmv.last_refresh.at_ms"
LAST_DURATION = "sparkmv.last_refresh.duration_ms"
CONSUMED_VERSIONS = "sparkmv.consumed_versions"  # JSON {base table: {log, version}}
# A fresh random token per commit of the view's entry: a commit names the token it read and the
# catalog update is made only if the entry still carries it (``ViewCatalog.commit``).
COMMIT_TOKEN = "sparkmv.commit_token"
# The schemas (``plan/view_delta.py: schemas_key``) for which the delta rules' column types were
# checked against the query's: a refresh over the same schemas skips the check.
CHECKED_SCHEMAS = "sparkmv.maintenance.checked_schemas"
# What Spark's analyzer said of the view's types under that key (JSON, written by the plan
# stage: ``plan/aggregate_view.py: CompiledTypes``), so that a refresh in a new process need
# not ask it again.
COMPILED_TYPES = "sparkmv.maintenance.compiled_types"

# On base tables (not views): change capture.
TRACKING_LOG = "sparkmv.tracking.log"  # root of the table's change log
TRACKING_DEPENDENTS = "sparkmv.tracking.dependents"  # dependents of older logs (JSON list)


def encode(values: Mapping[str, str]) -> dict[str, str]:
    """Properties for ``values``, long values split into parts."""
    encoded: dict[str, str] = {}
    for key, value in values.items():
        if len(value) <= CHUNK_SIZE:
            encoded[key] = value
            continue
        parts = [value[i : i + CHUNK_SIZE] for i in range(0, len(value), CHUNK_SIZE)]
        encoded[f"{key}.numParts"] = str(len(parts))
        for index, part in enumerate(parts):
            encoded[f"{key}.part.{index}"] = part
    return encoded


def decode(properties: Mapping[str, str]) -> dict[str, str]:
    """The ``sparkmv.`` values of ``properties``, split values joined again."""
    decoded: dict[str, str] = {}
    for key, value in properties.items():
        if not key.startswith(PREFIX) or ".part." in key:
            continue
        if key.endswith(".numParts"):
            base = key[: -len(".numParts")]
            decoded[base] = "".join(properties[f"{base}.part.{i}"] for i in range(int(value)))
        else:
            decoded[key] = value
    return decoded


def user_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """The properties a user set (not sparkmv's, not Spark's own view bookkeeping)."""
    return {
        key: value
        for key, value in properties.items()
        if not key.startswith(PREFIX) and not key.startswith(("view.", "spark.sql.", "transient_"))
    }
