"""The refresh history of materialized views: one record per refresh, kept beside the
catalog under the warehouse (``<warehouse>/_sparkmv_history/<db>/<view>/``).

Each record is one small JSON file, published whole (``fs.publish_text``: a hard link on a
local disk, a conditional put on an object store), named so that names sort by the time the
refresh ended. So a record is written without a Spark job, a metastore call or an append
(an object store has none), whichever process refreshed the view, and a reader never sees
half of one. A refresh writes its record when it has finished, committed or failed: a process
that dies during a refresh leaves no record of it, and never one that claims it succeeded.

Retention (``spark.sparkmv.history.retention``, ``config.HISTORY_RETENTION``): after writing
its record a refresh removes the view's oldest records beyond the newest ``retention``. DROP
MATERIALIZED VIEW removes the view's history with it (``remove``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import Enum

from pyspark.sql import SparkSession

from sparkmv import fs
from sparkmv.config import HISTORY_DIR_NAME
from sparkmv.identifiers import TableName

RECORD_FORMAT = 1
"""The version of a record's JSON; a reader skips records of a newer one."""
SUFFIX = ".json"


class Trigger(Enum):
    """What started a refresh."""

    STATEMENT = "STATEMENT"  # REFRESH MATERIALIZED VIEW v
    CASCADE = "CASCADE"  # REFRESH ... CASCADE of a view that reads it
    ON_COMMIT = "ON COMMIT"  # a write to a base table (``commands/on_commit.py``)
    SCHEDULE = "SCHEDULE"  # a scheduled refresh (none yet: issue 55's part 2)


class Status(Enum):
    """How a refresh ended."""

    SUCCEEDED = "SUCCEEDED"  # committed
    SKIPPED = "SKIPPED"  # nothing was pending
    FAILED = "FAILED"  # nothing committed; ``error_class`` says why


@dataclass(frozen=True)
class RefreshRecord:
    """One refresh of ``view`` (qualified ``db.name``): when (epoch ms), what started it
    (a ``Trigger`` value), how it ended (a ``Status`` value), what it did and what it cost.
    ``estimated_ms``: the cost model's estimate (corrected by the view's history) of the
    mode it ran, None when there was none (nothing pending, an untracked base table).
    ``base_versions``: the version of each base table's change log it consumed. Counts are
    None where unknown (a failed refresh's rows; Spark's listener bus not caught up)."""

    view: str
    started_ms: int
    ended_ms: int
    trigger: str
    status: str
    mode: str | None = None
    reason: str | None = None
    estimated_ms: int | None = None
    rows_inserted: int | None = None
    rows_deleted: int | None = None
    irrelevant_rows: int | None = None
    base_versions: Mapping[str, int] = field(default_factory=dict)
    spark_jobs: int | None = None
    bytes_read: int | None = None
    error_class: str | None = None
    error_message: str | None = None

    def to_json(self) -> str:
        return json.dumps({"format": RECORD_FORMAT, **asdict(self)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> RefreshRecord | None:
        """The record ``text`` holds; None for a format this reader does not know."""
        values = json.loads(text)
        if values.pop("format", 0) > RECORD_FORMAT:
            return None
        names = cls.__dataclass_fields__
        return cls(**{key: value for key, value in values.items() if key in names})


def root(spark: SparkSession) -> str:
    """The directory of every view's history."""
    return fs.warehouse_path(spark, HISTORY_DIR_NAME)


def view_root(spark: SparkSession, name: TableName) -> str:
    """The directory of the history of view ``name`` (resolved)."""
    return fs.warehouse_path(spark, HISTORY_DIR_NAME, name.database or "", name.name)


def append(spark: SparkSession, name: TableName, record: RefreshRecord, retention: int) -> None:
    """Add ``record`` to the history of view ``name`` (resolved), then keep its newest
    ``retention`` records (none are written when ``retention`` is 0)."""
    if retention <= 0:
        return
    directory = view_root(spark, name)
    file = f"{record.ended_ms:013d}-{record.started_ms:013d}-{uuid.uuid4().hex[:8]}{SUFFIX}"
    fs.publish_text(spark, f"{directory}/{file}", record.to_json())
    names = _record_names(spark, directory)
    for old in names[: max(len(names) - retention, 0)]:
        fs.remove(spark, f"{directory}/{old}")


def read(
    spark: SparkSession, name: TableName | None, limit: int | None = None
) -> list[RefreshRecord]:
    """The records of view ``name`` (resolved), or of every view when None, newest first;
    at most ``limit``."""
    if name is not None:
        directories = [view_root(spark, name)]
    else:
        base = root(spark)
        directories = [
            f"{base}/{database}/{view}"
            for database in fs.list_names(spark, base)
            for view in fs.list_names(spark, f"{base}/{database}")
        ]
    files = [
        (file, directory) for directory in directories for file in _record_names(spark, directory)
    ]
    files.sort(reverse=True)
    records: list[RefreshRecord] = []
    for file, directory in files:
        if limit is not None and len(records) >= limit:
            break
        path = f"{directory}/{file}"
        try:
            text = fs.read_text(spark, path)
        except Exception:
            if fs.exists(spark, path):
                raise
            continue  # removed since the listing, by another refresh's retention or a DROP
        record = RefreshRecord.from_json(text)
        if record is not None:
            records.append(record)
    return records


def remove(spark: SparkSession, name: TableName) -> None:
    """Remove the history of view ``name`` (resolved)."""
    fs.remove(spark, view_root(spark, name))


def _record_names(spark: SparkSession, directory: str) -> list[str]:
    """The record files of ``directory``, oldest first (a stray temporary file skipped)."""
    return sorted(
        name
        for name in fs.list_names(spark, directory)
        if name.endswith(SUFFIX) and not fs.is_hidden(name)
    )
