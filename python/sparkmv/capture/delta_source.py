"""Delta Lake base tables as a change source, read from the table's own log.

A Delta table is written by whatever session, process or cluster writes its path; none of
them needs sparkmv, because every commit is in the table's ``_delta_log`` and Delta reads its
changes back in SQL. sparkmv captures nothing for it: a refresh reads the changes of the
commits since the version the view consumed, in one of two forms (``ChangelogSource`` weighs
both the same way, so an update given as a pre/post-image pair or as a delete and an insert
nets out alike):

- Spark's changelog (``CHANGES FROM VERSION a TO VERSION b``), where the table has row
  tracking (``delta.enableRowTracking``) and the session turned Delta's changelog on
  (``spark.databricks.delta.changelogV2.enabled``);
- otherwise Delta's Change Data Feed (``table_changes('t', a, b)``), where the table has
  ``delta.enableChangeDataFeed``.

A table with neither is refreshed fully, and the reason names the property to set. Compaction
(``OPTIMIZE``) commits change no data, and both forms give no row for them.

The version read is the table's latest (its log's newest snapshot) when a command starts,
and its rows are read ``VERSION AS OF`` it, so rows and changes agree while writers commit
meanwhile. The table's id in the Delta log (its metadata's ``id``) is part of the
source's identity: a table dropped and created again under its name is never read against
the versions of the old one. A range that a ``VACUUM`` ran in may lack the change files of
its versions, and one that crosses a schema change cannot be read as rows of the schema the
view was defined over: both are refused (FULL, with the reason), never read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from py4j.protocol import Py4JError
from pyspark.sql import SparkSession

from sparkmv import frames, fs
from sparkmv.capture.changelog_source import CHANGES_FROM_VERSION, ChangelogSource, ChangeQuery
from sparkmv.config import DELTA_LOG_FILES_READ
from sparkmv.identifiers import TableName

DELTA_PROVIDER = "delta"
ROW_TRACKING_PROPERTY = "delta.enableRowTracking"
CHANGE_DATA_FEED_PROPERTY = "delta.enableChangeDataFeed"
CHANGELOG_CONF = "spark.databricks.delta.changelogV2.enabled"
"""Delta's own conf: its catalog answers Spark's CHANGES FROM VERSION only when it is on."""

CHANGE_DATA_FEED = ChangeQuery(
    "its Delta Change Data Feed (table_changes)",
    "SELECT * FROM table_changes('{table}', {first}, {last})",
)
SPARK_CHANGELOG = ChangeQuery(
    "its Delta changelog over row tracking (CHANGES FROM VERSION)", CHANGES_FROM_VERSION.template
)

DATA_LOSING_OPERATIONS = ("VACUUM START", "VACUUM END")
"""History operations after which the change files of earlier versions may be gone."""
SCHEMA_CHANGING_OPERATIONS = (
    "ADD COLUMNS",
    "CHANGE COLUMN",
    "REPLACE COLUMNS",
    "RENAME COLUMN",
    "DROP COLUMNS",
    "CREATE OR REPLACE TABLE",
    "REPLACE TABLE",
    "REPLACE TABLE AS SELECT",
    "CREATE OR REPLACE TABLE AS SELECT",
)


def is_delta(provider: str | None) -> bool:
    return (provider or "").lower() == DELTA_PROVIDER


def describe(spark: SparkSession, table: TableName) -> ChangelogSource | str:
    """``table`` (a Delta table) as a change source at its latest version, or why its changes
    cannot be read. Its version, id and properties come from its log's newest snapshot
    (``snapshot_facts``); its rows are analyzed by Spark, for the schema (no job), and kept
    for the command to read."""
    facts = snapshot_facts(spark, table)
    if isinstance(facts, str):
        return facts
    query = change_query(facts.properties, _conf_on(spark, CHANGELOG_CONF))
    if isinstance(query, str):
        return query
    version = facts.version
    rows = frames.sql(spark, query.rows_text(table, version))
    log = DeltaLogFiles(spark, table, facts.log_path, version, query is CHANGE_DATA_FEED)
    return ChangelogSource(
        spark, table, version, facts.table_id, rows.schema, query, log.problem, log, rows
    )


@dataclass(frozen=True)
class SnapshotFacts:
    """What a refresh needs of a Delta table's newest snapshot."""

    version: int
    table_id: str
    properties: dict[str, str]
    log_path: str


def snapshot_facts(spark: SparkSession, table: TableName) -> SnapshotFacts | str:
    """The version, log id, properties and log directory of ``table``'s newest snapshot, or
    why its log could not be read. Read through Delta's JVM objects (``DeltaTable.forName``,
    its log's ``update``): a snapshot's version and metadata come from the log's newest
    commit and checksum files, where ``DESCRIBE DETAIL`` also computes the snapshot's file
    state (3 Spark jobs per new version, measured). Delta's internals are touched here only;
    its log's files are read as Delta writes them (``DeltaLogFiles``)."""
    jvm: Any = spark._jvm
    session: Any = spark._jsparkSession
    try:
        log = jvm.io.delta.tables.DeltaTable.forName(session, table.quoted).deltaLog()
        snapshot = log.update(False, jvm.scala.Option.empty(), jvm.scala.Option.empty())
        metadata = snapshot.metadata()
        configuration = metadata.configuration()
        properties = {
            key: str(configuration.apply(key))
            for key in (ROW_TRACKING_PROPERTY, CHANGE_DATA_FEED_PROPERTY)
            if configuration.contains(key)
        }
        log_path = str(log.logPath().toString())
        return SnapshotFacts(int(snapshot.version()), str(metadata.id()), properties, log_path)
    except Py4JError as error:  # a Delta release whose internals differ: read nothing wrong
        return f"its Delta log could not be read ({str(error).strip().splitlines()[0]})"


def change_query(properties: dict[str, str], changelog_enabled: bool) -> ChangeQuery | str:
    """The form a Delta table's changes are read in (module docstring), or why there is none."""
    if changelog_enabled and _enabled(properties, ROW_TRACKING_PROPERTY):
        return SPARK_CHANGELOG
    if _enabled(properties, CHANGE_DATA_FEED_PROPERTY):
        return CHANGE_DATA_FEED
    return (
        "this Delta table keeps no change records: set its property"
        f" {CHANGE_DATA_FEED_PROPERTY} = true (ALTER TABLE ... SET TBLPROPERTIES), or"
        f" {ROW_TRACKING_PROPERTY} = true with the session conf {CHANGELOG_CONF} = true;"
        " the changes written after that are read incrementally"
    )


def history_problem(operations: list[tuple[int, str]]) -> str:
    """Why commits ``operations`` (version, operation) must not be read as changes ("" when
    they may be): a VACUUM may have deleted their change files, a schema change alters the
    rows' shape."""
    for version, operation in sorted(operations):
        if operation in DATA_LOSING_OPERATIONS:
            return (
                f"{operation} ran at Delta version {version}, so the change files of the"
                " versions before it may be gone"
            )
        if operation in SCHEMA_CHANGING_OPERATIONS:
            return f"the Delta table's schema changed at version {version} ({operation})"
    return ""


@dataclass(frozen=True)
class DeltaCommit:
    """One commit of a Delta log as a refresh reads it: its operation (``commitInfo``) and
    the bytes of the files its change rows are read from (None: an action without a size).
    The Change Data Feed reads a commit's ``cdc`` files where it wrote some, else its added
    and removed data files; Spark's changelog over row tracking reads the latter. Files of a
    commit that changes no data (``dataChange`` false: OPTIMIZE) give no rows."""

    version: int
    operation: str
    change_bytes: int | None

    @classmethod
    def parse(cls, version: int, text: str, reads_cdc: bool) -> DeltaCommit:
        """The commit file ``text`` (one JSON action per line) of ``version``."""
        operation = ""
        data: list[int | None] = []
        cdc: list[int | None] = []
        for line in text.splitlines():
            if not line.strip():
                continue
            action: dict[str, Any] = json.loads(line)
            if "commitInfo" in action:
                operation = str(action["commitInfo"].get("operation") or "")
            for kind in ("add", "remove"):
                file = action.get(kind)
                if file is not None and file.get("dataChange", True):
                    data.append(file.get("size"))
            if "cdc" in action:
                cdc.append(action["cdc"].get("size"))
        read = cdc if reads_cdc and cdc else data
        return cls(version, operation, None if None in read else sum(s or 0 for s in read))


@dataclass
class DeltaLogFiles:
    """A Delta table's log read as metadata through Hadoop's ``FileSystem`` (no Spark job):
    the commit files after a view's version up to ``version``, one round trip for all of
    them, and the checksum file of ``version`` (``tableSizeBytes``). It vets a range
    (``problem``) and sizes the table and its changes (``changelog_source.ChangelogSizes``).

    A commit file that is not where the log's layout puts it (a log whose commits its catalog
    keeps elsewhere, or cleaned up by log retention) is not guessed at, nor are more commits
    read than ``DELTA_LOG_FILES_READ``: the range is then vetted from ``DESCRIBE HISTORY``
    (one Spark job), and its change is not sized."""

    spark: SparkSession
    table: TableName
    log_path: str
    version: int
    reads_cdc: bool
    _read: dict[int, list[DeltaCommit] | None] = field(default_factory=dict, repr=False)
    _checksum: dict[str, Any] | None = field(default=None, repr=False)

    def problem(self, start: int, end: int) -> str:
        """``history_problem`` of the commits after ``start`` up to ``version`` (a VACUUM
        after ``end`` deletes the files of ``(start, end]`` as well)."""
        commits = self._commits(start)
        if commits is None:
            return history_problem(self._history(start))
        return history_problem([(commit.version, commit.operation) for commit in commits])

    def change_bytes(self, start: int, end: int) -> int | None:
        commits = self._commits(start)
        if commits is None:
            return None
        sizes = [commit.change_bytes for commit in commits if commit.version <= end]
        return None if None in sizes else sum(size or 0 for size in sizes)

    def table_bytes(self) -> int | None:
        if self._checksum is None:
            text = fs.read_texts(self.spark, [self._file(self.version, "crc")])[0]
            self._checksum = json.loads(text) if text else {}
        size = self._checksum.get("tableSizeBytes")
        return int(size) if size is not None else None

    def _commits(self, start: int) -> list[DeltaCommit] | None:
        """The commits of ``(start, version]``; None when one of their files is missing, or
        when they are more than ``DELTA_LOG_FILES_READ`` (the driver reads them one by one)."""
        if start not in self._read:
            versions = range(start + 1, self.version + 1)
            if len(versions) > DELTA_LOG_FILES_READ.count(self.spark):
                self._read[start] = None
                return None
            texts = fs.read_texts(self.spark, [self._file(v, "json") for v in versions])
            self._read[start] = (
                None
                if None in texts
                else [
                    DeltaCommit.parse(v, text or "", self.reads_cdc)
                    for v, text in zip(versions, texts, strict=True)
                ]
            )
        return self._read[start]

    def _file(self, version: int, suffix: str) -> str:
        return f"{self.log_path.rstrip('/')}/{version:020d}.{suffix}"

    def _history(self, start: int) -> list[tuple[int, str]]:
        """The (version, operation) of the commits after ``start`` from ``DESCRIBE HISTORY``
        (its newest entries)."""
        entries = frames.sql(
            self.spark, f"DESCRIBE HISTORY {self.table.quoted} LIMIT {max(self.version - start, 1)}"
        ).collect()
        return [
            (int(row["version"]), str(row["operation"]))
            for row in entries
            if row["version"] > start
        ]


def _enabled(properties: dict[str, str], key: str) -> bool:
    return properties.get(key, "").strip().lower() == "true"


def _conf_on(spark: SparkSession, key: str) -> bool:
    return (spark.conf.get(key, "false") or "false").strip().lower() == "true"
