"""The statements sparkmv understands, as plain data (the parser's output)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class RefreshPolicy(Enum):
    """How a refresh is computed (docs/sql-reference.md)."""

    AUTO = "AUTO"  # incremental when possible and cheaper, full otherwise
    INCREMENTAL = "INCREMENTAL"  # refused at CREATE when the query cannot be maintained
    FULL = "FULL"  # always recompute


class RefreshTrigger(Enum):
    """When a refresh happens (docs/sql-reference.md)."""

    ON_DEMAND = "ON DEMAND"  # deferred: on REFRESH MATERIALIZED VIEW
    ON_COMMIT = "ON COMMIT"  # immediate: inside every captured write to a base table


class RefreshMode(Enum):
    """The mode asked for by ``REFRESH MATERIALIZED VIEW v [FULL | INCREMENTAL]``."""

    FULL = "FULL"
    INCREMENTAL = "INCREMENTAL"


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


@dataclass(frozen=True)
class ColumnSpec:
    name: str
    comment: str | None = None


@dataclass(frozen=True)
class RefreshClause:
    policy: RefreshPolicy | None = None
    trigger: RefreshTrigger | None = None


@dataclass(frozen=True)
class CreateStatement:
    name: TableName
    query: str
    or_replace: bool = False
    if_not_exists: bool = False
    columns: tuple[ColumnSpec, ...] = ()
    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    refresh: RefreshClause = RefreshClause()


@dataclass(frozen=True)
class RefreshStatement:
    name: TableName
    mode: RefreshMode | None = None
    cascade: bool = False  # refresh the materialized views it reads first


@dataclass(frozen=True)
class DropStatement:
    name: TableName
    if_exists: bool = False
    cascade: bool = False  # drop the materialized views that read it too


@dataclass(frozen=True)
class ShowStatement:
    database: str | None = None
    pattern: str | None = None


@dataclass(frozen=True)
class DescribeStatement:
    name: TableName
    extended: bool = False


@dataclass(frozen=True)
class AlterRefreshStatement:
    """``ALTER MATERIALIZED VIEW v SET REFRESH ...``"""

    name: TableName
    refresh: RefreshClause


@dataclass(frozen=True)
class AlterQueryStatement:
    """``ALTER MATERIALIZED VIEW v AS query``"""

    name: TableName
    query: str


@dataclass(frozen=True)
class ExplainStatement:
    statement: Statement
    mode: str = "SIMPLE"


Statement = (
    CreateStatement
    | RefreshStatement
    | DropStatement
    | ShowStatement
    | DescribeStatement
    | AlterRefreshStatement
    | AlterQueryStatement
    | ExplainStatement
)
