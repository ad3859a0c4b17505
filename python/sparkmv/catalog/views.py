"""Reading and committing materialized-view metadata in the session catalog.

Calls go through ``io.sparkmv.catalog.CatalogBridge`` (one metastore round trip each).
A materialized view is a catalog VIEW carrying ``sparkmv.`` properties over a snapshot of
its data (``storage/snapshot.py``): ``SELECT *`` shows only the view's columns, ``SHOW TABLES``
lists it once, and plain Spark without the extension can still read it.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from sparkmv import fs
from sparkmv.catalog import metastore
from sparkmv.catalog import properties as keys
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.config import CATALOG_BRIDGE_CLASS
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.identifiers import TableName
from sparkmv.jvm import helper


@dataclass(frozen=True)
class CatalogEntry:
    """One table or view of the catalog, as one metastore lookup returns it."""

    table_type: str  # VIEW, MANAGED or EXTERNAL
    provider: str | None  # parquet, orc, hive, ... (None for views)
    location: str | None  # the data directory of a table
    properties: dict[str, str]
    schema: StructType
    comment: str | None
    partition_columns: tuple[str, ...] = ()

    @property
    def is_materialized_view(self) -> bool:
        return keys.FORMAT in self.properties

    def column_comments(self) -> dict[str, str | None]:
        """Column comment by lower-cased column name."""
        return {f.name.lower(): f.metadata.get("comment") for f in self.schema.fields}


class ViewCatalog:
    """The materialized views of one Spark session's catalog."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._bridge = helper(spark, CATALOG_BRIDGE_CLASS)
        self._session: Any = spark._jsparkSession
        self._bases_seen: dict[TableName, list[str]] = {}  # per view: its last refresh's bases

    def data_locations(self, table: TableName) -> list[tuple[dict[str, str | None] | None, str]]:
        """Where ``table``'s data lives: ``[(None, location)]`` if it is unpartitioned, else
        ``(partition spec, location)`` per partition, as the metastore records them."""
        units = json.loads(self._bridge.dataLocations(self._session, table.database, table.name))
        return [(spec, location) for spec, location in units]

    def swap_locations(
        self,
        table: TableName,
        units: list[tuple[dict[str, str] | None, str]],
        empty_location: str,
    ) -> None:
        """Point data units at new locations in one metastore call (the commit point of a
        copy-on-write); partitions that do not exist yet start over ``empty_location``."""
        self._bridge.swapLocations(
            self._session, table.database, table.name, json.dumps(units), empty_location
        )

    def alter_properties(
        self, table: TableName, values: dict[str, str], unset: tuple[str, ...] = ()
    ) -> None:
        """Set ``values`` on ``table`` (resolved) and remove the ``unset`` keys, in one
        metastore call (no statement to parse and analyse)."""
        self._bridge.alterProperties(
            self._session, table.database, table.name, json.dumps(values), json.dumps(unset)
        )

    def drop_view(self, name: TableName) -> None:
        """Drop the catalog entry of the view ``name`` (resolved), uncached, in one call."""
        self._bridge.dropView(self._session, name.database, name.name)

    def resolve(self, name: TableName) -> TableName:
        """``name`` qualified with the current database; names are case-insensitive."""
        database = name.database or self.spark.catalog.currentDatabase()
        return TableName(name.name.lower(), database.lower())

    def entry(self, name: TableName) -> CatalogEntry | None:
        """The table or view ``name`` (resolved), or None if the session catalog has no such
        table (a table of another catalog is never its)."""
        if name.catalog is not None:
            return None
        text = self._bridge.table(self._session, name.database, name.name)
        return None if text is None else entry_from_description(json.loads(text))

    def entries(self, names: list[TableName]) -> dict[TableName, CatalogEntry | None]:
        """``entry`` of each of ``names`` (resolved), in one metastore call per database."""
        session_names = [name for name in names if name.catalog is None]
        pairs = json.dumps([[name.database, name.name] for name in session_names])
        found = json.loads(self._bridge.tables(self._session, pairs)) if session_names else {}
        described = (
            None if name.catalog else found.get(f"{name.database}.{name.name}") for name in names
        )
        return {
            name: None if value is None else entry_from_description(value)
            for name, value in zip(names, described, strict=True)
        }

    def refresh_facts(self, name: TableName) -> RefreshFacts:
        """What a refresh of the materialized view ``name`` (resolved here) reads from the
        catalog, in one JVM call (``RefreshFacts``). Raises as ``get`` does.

        The base tables this catalog saw at the view's last refresh are looked up with the
        view itself: one metastore call instead of two when they share its database. Only a
        hint: tables the view lists now and the hint missed are looked up after it."""
        found = json.loads(
            self._bridge.refreshFacts(
                self._session,
                name.database,
                name.name,
                keys.BASE_TABLES,
                keys.TRACKING_LOG,
                json.dumps(self._bases_seen.get(name, [])),
            )
        )
        view = TableName(name.name.lower(), found["database"])
        described = found["view"]
        entry = None if described is None else entry_from_description(described)
        checked = _existing(view, _materialized_view(view, entry))
        metadata = MvMetadata.from_properties(view, checked.properties)
        bases = {
            TableName.parse_qualified(qualified): (
                None if value is None else entry_from_description(value)
            )
            for qualified, value in found["bases"].items()
        }
        files = {location: fs.statuses(listed) for location, listed in found["files"].items()}
        self._bases_seen[name] = list(found["bases"])
        return RefreshFacts(metadata, bases, files, checked)

    def find_entry(self, name: TableName) -> CatalogEntry | None:
        """The materialized view ``name`` (resolved) as a catalog entry; None if nothing has
        that name. Raises NOT_A_MATERIALIZED_VIEW when a table or plain view has it."""
        return _materialized_view(name, self.entry(name))

    def get_entry(self, name: TableName) -> CatalogEntry:
        """Like ``find_entry``; raises MATERIALIZED_VIEW_NOT_FOUND when nothing has the name."""
        return _existing(name, self.find_entry(name))

    def find(self, name: TableName) -> MvMetadata | None:
        """The materialized view ``name`` (resolved), None if nothing has that name."""
        found = self.find_entry(name)
        return None if found is None else MvMetadata.from_properties(name, found.properties)

    def get(self, name: TableName) -> MvMetadata:
        """The materialized view ``name`` (resolved); raises MATERIALIZED_VIEW_NOT_FOUND."""
        return MvMetadata.from_properties(name, self.get_entry(name).properties)

    def list(self, database: str) -> list[MvMetadata]:
        """Every materialized view of ``database``, by name."""
        found = json.loads(self._bridge.propertiesWithKey(self._session, database, keys.FORMAT))
        return [
            MvMetadata.from_properties(TableName(name, database), properties)
            for name, properties in sorted(found.items())
        ]

    def commit(self, metadata: MvMetadata, view_text: str) -> MvMetadata:
        """Point the view at new data and store new metadata in one metastore call: a
        compare-and-set on the entry's commit token. The update is made only if the entry
        still carries ``metadata.commit_token`` (the token of the commit it was read from),
        and writes a fresh one; otherwise nothing is changed and
        MATERIALIZED_VIEW_CONCURRENT_COMMIT is raised. On a shared metastore the check and
        the update run under the view's commit lock (``catalog/metastore.py``), so no other
        process's commit comes between them. Returns ``metadata`` with the new token."""
        token = uuid.uuid4().hex
        properties = {**metadata.to_properties(), keys.COMMIT_TOKEN: token}
        with metastore.commit_lock(self.spark, metadata.name):
            found = self._bridge.commitView(
                self._session,
                metadata.name.database,
                metadata.name.name,
                view_text,
                json.dumps(properties),
                keys.COMMIT_TOKEN,
                metadata.commit_token,
            )
        if found is not None:
            raise SparkMvError(
                ErrorClass.MATERIALIZED_VIEW_CONCURRENT_COMMIT,
                name=metadata.name,
                expected=metadata.commit_token or "(none)",
                found=str(found) or "(none)",
            )
        return metadata.with_changes(commit_token=token)


@dataclass(frozen=True)
class RefreshFacts:
    """What a refresh reads from the catalog before it reads any data, gathered by one JVM
    call (``ViewCatalog.refresh_facts``): the view, its base tables' entries (None: no such
    table), the data files of each unpartitioned tracked one, by its location, and the
    view's own catalog entry (its change log, if other views read it)."""

    view: MvMetadata
    bases: dict[TableName, CatalogEntry | None]
    files: dict[str, list[fs.FileStatus]]
    entry: CatalogEntry


def _materialized_view(name: TableName, found: CatalogEntry | None) -> CatalogEntry | None:
    """``found``, the catalog entry of ``name`` or None; raises NOT_A_MATERIALIZED_VIEW
    when it is a table or a plain view."""
    if found is not None and not found.is_materialized_view:
        kind = "view" if found.table_type == "VIEW" else "table"
        raise SparkMvError(
            ErrorClass.NOT_A_MATERIALIZED_VIEW,
            name=name,
            kind=kind,
            hint=f"use the statements for {kind}s on it, or pick another name.",
        )
    return found


def _existing(name: TableName, found: CatalogEntry | None) -> CatalogEntry:
    """``found``, the catalog entry of ``name``; raises MATERIALIZED_VIEW_NOT_FOUND when
    it is None."""
    if found is None:
        raise SparkMvError(ErrorClass.MATERIALIZED_VIEW_NOT_FOUND, name=name)
    return found


def entry_from_description(found: dict[str, Any]) -> CatalogEntry:
    """A catalog entry from ``CatalogBridge``'s description of a table or view."""
    return CatalogEntry(
        table_type=found["tableType"],
        provider=found["provider"],
        location=found["location"],
        properties=found["properties"],
        schema=StructType.fromJson(json.loads(found["schema"])),
        comment=found["comment"],
        partition_columns=tuple(found["partitionColumns"]),
    )
