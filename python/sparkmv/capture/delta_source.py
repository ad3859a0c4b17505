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

from collections.abc import Callable
from typing import Any

from py4j.protocol import Py4JError
from pyspark.sql import SparkSession

from sparkmv import frames
from sparkmv.capture.changelog_source import CHANGES_FROM_VERSION, ChangelogSource, ChangeQuery
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
    (``snapshot_facts``); only its schema is asked of Spark (an analysis, no job)."""
    facts = snapshot_facts(spark, table)
    if isinstance(facts, str):
        return facts
    version, table_id, properties = facts
    query = change_query(properties, _conf_on(spark, CHANGELOG_CONF))
    if isinstance(query, str):
        return query
    schema = frames.sql(spark, f"SELECT * FROM {table.quoted} VERSION AS OF {version}").schema
    vet = _history_vet(spark, table, version)
    return ChangelogSource(spark, table, version, table_id, schema, query, vet)


def snapshot_facts(spark: SparkSession, table: TableName) -> tuple[int, str, dict[str, str]] | str:
    """The version, log id and properties of ``table``'s newest snapshot, or why its log
    could not be read. Read through Delta's JVM objects (``DeltaTable.forName``, its log's
    ``update``): a snapshot's version and metadata come from the log's newest commit and
    checksum files, where ``DESCRIBE DETAIL`` also computes the snapshot's file state (3
    Spark jobs per new version, measured) and ``DESCRIBE HISTORY`` runs one. Delta's internals
    are touched here only."""
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
        return int(snapshot.version()), str(metadata.id()), properties
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


def _history_vet(spark: SparkSession, table: TableName, version: int) -> Callable[[int, int], str]:
    def vet(start: int, end: int) -> str:
        """``history_problem`` of the commits after ``start`` up to ``version`` (a VACUUM
        after ``end`` deletes the files of ``(start, end]`` as well): the newest entries of
        the table's history."""
        entries = frames.sql(
            spark, f"DESCRIBE HISTORY {table.quoted} LIMIT {max(version - start, 1)}"
        ).collect()
        return history_problem(
            [
                (int(row["version"]), str(row["operation"]))
                for row in entries
                if row["version"] > start
            ]
        )

    return vet


def _enabled(properties: dict[str, str], key: str) -> bool:
    return properties.get(key, "").strip().lower() == "true"


def _conf_on(spark: SparkSession, key: str) -> bool:
    return (spark.conf.get(key, "false") or "false").strip().lower() == "true"
