"""``ChangelogSource``: a base table's changes as its catalog's changelog tells them.

A DSv2 catalog that implements ``TableCatalog.loadChangelog`` (Spark ≥ 4.2; Delta and Iceberg
do in the field) answers ``SELECT ... FROM t CHANGES FROM VERSION a TO VERSION b`` (both bounds
inclusive) with a row per change: the table's columns, then ``_change_type`` (``insert``,
``delete``, ``update_preimage``, ``update_postimage``), ``_commit_version`` and
``_commit_timestamp`` (and whatever else the connector adds, e.g. its row identity). Read as a
Z-set, an insert and an update's post-image weigh +1, a delete and an update's pre-image −1::

    net(a, b] = Σ_{a < v ≤ b} (inserts_v + post-images_v) − (deletes_v + pre-images_v),
                consolidated (``zset.consolidate``)

so a row changed several times in the range nets out, and whatever the connector chose to
show — an update as a pre/post-image pair or as a delete and an insert, a copy-on-write's
carry-over rows (a row deleted and inserted unchanged) — weighs the same. Spark's own
post-processing of the changelog is therefore not asked for (``deduplicationMode`` ``none``:
it would cost a window over the changes, and it needs a row identity the table may lack).

sparkmv captures nothing for such a table: no change log, no tracking of its writes. Its
version is the one the table reports (``Table.version()``, an integer), read with its schema
when a command starts (``describe``); the command reads the table's rows at that version
(``VERSION AS OF``), so rows and changes agree even when a write commits meanwhile.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from py4j.protocol import Py4JJavaError
from pyspark.errors.exceptions.captured import CapturedException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from sparkmv import frames
from sparkmv.capture.source import ChangeRangeError
from sparkmv.config import CHANGELOG_BRIDGE_CLASS
from sparkmv.identifiers import TableName
from sparkmv.jvm import helper
from sparkmv.zset import WEIGHT, column, consolidate

CHANGE_TYPE = "_change_type"
INSERTED = ("insert", "update_postimage")
DELETED = ("delete", "update_preimage")
READ_OPTIONS = "WITH ('deduplicationMode' = 'none')"
"""No post-processing by Spark: consolidation does what it would (module docstring)."""


@dataclass(frozen=True)
class ChangeQuery:
    """How the change rows of a table's versions ``first`` to ``last`` (both inclusive) are
    asked for in SQL: ``template`` names them ``{table}``, ``{first}`` and ``{last}``. Every
    form answers with the table's columns and ``_change_type`` in the Changelog API's
    vocabulary (in any letter case); ``name`` is how EXPLAIN REFRESH and DESCRIBE say where
    changes come from."""

    name: str
    template: str

    def text(self, table: TableName, start: int, end: int) -> str:
        """The change rows of versions ``(start, end]``, ``start < end``."""
        return self.template.format(table=table.quoted, first=start + 1, last=end)

    def rows_text(self, table: TableName, version: int) -> str:
        """The table's rows at ``version``."""
        return f"SELECT * FROM {table.quoted} VERSION AS OF {version}"


CHANGES_FROM_VERSION = ChangeQuery(
    "its catalog's changelog (CHANGES FROM VERSION)",
    "SELECT * FROM {table} CHANGES FROM VERSION {first} TO VERSION {last} " + READ_OPTIONS,
)


@dataclass(frozen=True)
class ChangelogTable:
    """A table of a DSv2 catalog as ``ChangelogBridge`` describes it: its version, id and
    schema, and ``refusal``: why its catalog offers no changelog of it ("" when it does)."""

    name: TableName
    version: str | None
    table_id: str | None
    schema: StructType | None
    refusal: str

    def source(self, spark: SparkSession) -> ChangelogSource | str:
        """The table's changelog as a change source, or why it cannot be one."""
        if self.refusal:
            return self.refusal
        if self.version is None or not self.version.isdigit() or self.schema is None:
            return f"its catalog numbers its versions as {self.version!r}, not 0, 1, 2, ..."
        return ChangelogSource(spark, self.name, int(self.version), self.table_id, self.schema)


def describe(spark: SparkSession, table: TableName) -> ChangelogTable | None:
    """``table`` as its catalog reports it now (one JVM call); None when it does not exist."""
    session: Any = spark._jsparkSession
    text = helper(spark, CHANGELOG_BRIDGE_CLASS).describe(session, table.quoted)
    if text is None:
        return None
    found = json.loads(text)
    schema = found.get("schema")
    return ChangelogTable(
        table,
        found.get("version"),
        found.get("id"),
        StructType.fromJson(json.loads(schema)) if schema else None,
        found.get("refusal") or "",
    )


class ChangelogSizes(Protocol):
    """A changelog table's bytes as its format's own metadata gives them, without a Spark
    job. The cost model and the view's layout size the table by them, as they size a table
    sparkmv tracks by its listing and its log (``plan/cost.py``)."""

    def table_bytes(self) -> int | None:
        """The bytes of the table's data files at the version read (None: not known)."""
        ...

    def change_bytes(self, start: int, end: int) -> int | None:
        """The bytes of the files the changes of ``(start, end]`` are read from (None: not
        known)."""
        ...


@dataclass
class ChangelogSource:
    """The changelog of one table at ``version``; implements ``source.VersionedChanges``.

    The changes of a range are analyzed once (``_changes``): the refresh plan asks whether the
    range is readable, and the refresh then reads the same DataFrame.
    """

    spark: SparkSession
    table: TableName
    version: int
    table_id: str | None
    schema: StructType
    query: ChangeQuery = CHANGES_FROM_VERSION
    vet: Callable[[int, int], str] | None = None
    """Why the range ``(start, end]`` must not be read although the query would answer
    ("" when it may be): a fact of the source's own log the query does not check."""
    sizes: ChangelogSizes | None = None
    """The table's bytes and its changes', when its format's metadata says."""
    analyzed_rows: DataFrame | None = field(default=None, repr=False)
    """``rows()`` as the source's describer already analyzed it (for the schema), so that a
    command does not analyze the same query twice."""
    _changes: dict[tuple[int, int], DataFrame | str] = field(default_factory=dict, repr=False)

    @property
    def identity(self) -> str:
        """The table's name and id: a table dropped and created again has another id."""
        return f"changelog:{self.table}#{self.table_id or ''}"

    def current_version(self) -> int:
        """The table's version when it was described (``describe``)."""
        return self.version

    def earliest_readable(self) -> int:
        """The smallest ``a`` for which the changelog answers ``(a, version]``: the API has no
        such question, so ranges are asked for (each an analysis, no job; log₂(version) of
        them), assuming that a source which answers ``(a, b]`` answers ``(a + 1, b]``."""
        low, high = 0, self.version
        while low < high:
            middle = (low + high) // 2
            if self.unreadable_reason(middle, self.version):
                low = middle + 1
            else:
                high = middle
        return low

    def unreadable_reason(self, start: int, end: int) -> str:
        """What the source says when asked for ``(start, end]``; "" when it answers."""
        changes = self._read(start, end)
        return changes if isinstance(changes, str) else ""

    def net_changes(self, start: int, end: int) -> DataFrame:
        """``net(start, end]`` (module docstring) as a consolidated Z-set."""
        return consolidate(self.row_changes(start, end))

    def row_changes(self, start: int, end: int, read: set[str] | None = None) -> DataFrame:
        """The change rows of ``(start, end]`` weighted ±1 (module docstring), not
        consolidated; every column is read whatever ``read`` says (the changelog has no
        cheaper answer). Raises ``ChangeRangeError`` when the source cannot answer."""
        changes = self._read(start, end)
        if isinstance(changes, str):
            raise ChangeRangeError(f"{self.table}: {changes}")
        return changes

    def inserts_only(self, start: int, end: int, read: set[str] | None = None) -> bool:
        """Unknown without reading the change rows: False."""
        return False

    def rows(self) -> DataFrame:
        """The table's rows at ``version``."""
        if self.analyzed_rows is None:
            self.analyzed_rows = frames.sql(
                self.spark, self.query.rows_text(self.table, self.version)
            )
        return self.analyzed_rows

    def _read(self, start: int, end: int) -> DataFrame | str:
        """The weighted change rows of ``(start, end]``, or what the source said instead."""
        if (start, end) not in self._changes:
            self._changes[(start, end)] = self._analyzed(start, end)
        return self._changes[(start, end)]

    def _analyzed(self, start: int, end: int) -> DataFrame | str:
        if not 0 <= start <= end <= self.version:
            return f"its versions are 0 to {self.version}, not ({start}, {end}]"
        columns = [column(name) for name in self.schema.fieldNames()]
        if start == end:
            empty = frames.empty(self.spark, self.schema)
            return empty.select(*columns, F.lit(0).cast("long").alias(WEIGHT)).where("false")
        vetoed = self.vet(start, end) if self.vet is not None else ""
        if vetoed:
            return vetoed
        try:
            changes = frames.sql(self.spark, self.query.text(self.table, start, end))
        except (CapturedException, Py4JJavaError) as error:
            return f"{self.query.name} cannot give versions ({start}, {end}]: " + _message(error)
        return changes.select(*columns, _weight(F.col(CHANGE_TYPE)).alias(WEIGHT))


def _weight(change_type: Column) -> Column:
    """+1 for a row the change added, −1 for one it removed (Iceberg spells the types in
    capitals); a change type the Changelog API does not define fails the read rather than
    being misread."""
    spelled = F.lower(change_type)
    return (
        F.when(spelled.isin(*INSERTED), F.lit(1))
        .when(spelled.isin(*DELETED), F.lit(-1))
        .otherwise(F.raise_error(F.concat(F.lit("unknown _change_type: "), change_type)))
        .cast("long")
    )


def _message(error: CapturedException | Py4JJavaError) -> str:
    """The first line of the JVM's message, without Spark's stack trace."""
    if isinstance(error, Py4JJavaError):
        text = str(error.java_exception.getMessage())
    else:
        text = str(error.getMessage() or error)
    return text.strip().splitlines()[0] if text.strip() else type(error).__name__
