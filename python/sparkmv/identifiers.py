"""Names and literals in Spark SQL text: a catalog identifier, and how sparkmv quotes
identifiers and strings in the SQL it builds."""

from __future__ import annotations

from dataclasses import dataclass

SESSION_CATALOG = "spark_catalog"
"""The name of Spark's session catalog: a table named through it is the table of the same
``db.name``, and is keyed without it."""


@dataclass(frozen=True)
class TableName:
    """A catalog identifier; ``database`` is None until resolved against the session.
    ``catalog``: a DSv2 catalog other than the session's (``spark.sql.catalog.<name>``), whose
    tables are named ``catalog.namespace.name``; None: the session catalog."""

    name: str
    database: str | None = None
    catalog: str | None = None

    @property
    def parts(self) -> list[str]:
        """The identifier's parts: a catalog's namespace may have several."""
        if self.catalog is None:
            return [part for part in (self.database, self.name) if part]
        return [self.catalog, *(self.database or "").split("."), self.name]

    def __str__(self) -> str:
        return ".".join(self.parts)

    @classmethod
    def parse_qualified(cls, qualified: str) -> TableName:
        """``db.name`` or ``catalog.namespace.name`` (as stored in metadata) back into a
        TableName."""
        parts = qualified.split(".")
        if len(parts) >= 3:
            return cls(parts[-1], ".".join(parts[1:-1]), parts[0])
        database, _, name = qualified.rpartition(".")
        return cls(name, database or None)

    @property
    def quoted(self) -> str:
        return ".".join(quote_identifier(part) for part in self.parts)


def quote_identifier(part: str) -> str:
    return "`" + part.replace("`", "``") + "`"


def sql_string(value: str) -> str:
    """``value`` as a Spark SQL string literal (backslash escapes are on by default)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
