"""Reading and committing materialized-view metadata in the session catalog.

Calls go through ``io.sparkmv.catalog.CatalogBridge`` (one metastore round trip each).
A materialized view is a catalog VIEW carrying ``sparkmv.`` properties over a snapshot of
its data (``apply/snapshot.py``): ``SELECT *`` shows only the view's columns, ``SHOW TABLES``
lists it once, and plain Spark without the extension can still read it.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from sparkmv.catalog import properties as keys
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.config import CATALOG_BRIDGE_CLASS
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.parse.statements import TableName


class ViewCatalog:
    """The materialized views of one Spark session's catalog."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        jvm: Any = spark._jvm
        self._bridge = jvm
        for part in CATALOG_BRIDGE_CLASS.split("."):
            self._bridge = getattr(self._bridge, part)
        self._session: Any = spark._jsparkSession

    def resolve(self, name: TableName) -> TableName:
        """``name`` qualified with the current database; names are case-insensitive."""
        database = name.database or self.spark.catalog.currentDatabase()
        return TableName(name.name.lower(), database.lower())

    def properties(self, name: TableName) -> dict[str, str] | None:
        """Properties of the table or view ``name`` (resolved), or None if it does not exist."""
        found = self._bridge.properties(self._session, name.database, name.name)
        return None if found is None else dict(found)

    def find(self, name: TableName) -> MvMetadata | None:
        """The materialized view ``name`` (resolved), None if nothing has that name.

        Raises NOT_A_MATERIALIZED_VIEW when a table or plain view has the name.
        """
        found = self.properties(name)
        if found is None:
            return None
        if keys.FORMAT not in found:
            raise SparkMvError(
                ErrorClass.NOT_A_MATERIALIZED_VIEW,
                name=name,
                kind="table or view",
                hint="use the statements for tables and views on it, or pick another name.",
            )
        return MvMetadata.from_properties(name, found)

    def get(self, name: TableName) -> MvMetadata:
        """The materialized view ``name`` (resolved); raises MATERIALIZED_VIEW_NOT_FOUND."""
        found = self.find(name)
        if found is None:
            raise SparkMvError(ErrorClass.MATERIALIZED_VIEW_NOT_FOUND, name=name)
        return found

    def list(self, database: str) -> list[MvMetadata]:
        """Every materialized view of ``database``, by name."""
        found = self._bridge.propertiesWithKey(self._session, database, keys.FORMAT)
        return [
            MvMetadata.from_properties(TableName(str(name), database), dict(properties))
            for name, properties in sorted(dict(found).items())
        ]

    def commit(self, metadata: MvMetadata, view_text: str) -> None:
        """Point the view at new data and store new metadata in one metastore call."""
        self._bridge.commitView(
            self._session,
            metadata.name.database,
            metadata.name.name,
            view_text,
            metadata.to_properties(),
        )
