"""The statements sparkmv understands, as plain data (the parser's output)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sparkmv.catalog.modes import RefreshMode, RefreshPolicy, RefreshTrigger
from sparkmv.catalog.schedule import Schedule
from sparkmv.identifiers import TableName


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
    schedule: Schedule | None = None  # SCHEDULE EVERY / TARGET LAG


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
class ShowRefreshesStatement:
    """``SHOW MATERIALIZED VIEW REFRESHES [FOR name] [LIMIT n]``, and the table-valued
    function ``sparkmv_refresh_history([name])``: ``name`` None for every view."""

    name: TableName | None = None
    limit: int | None = None


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
class AlterScheduleStatement:
    """``ALTER MATERIALIZED VIEW v [SET] { SCHEDULE EVERY ... | TARGET LAG ... }``, or
    ``... DROP SCHEDULE`` (``schedule`` None)."""

    name: TableName
    schedule: Schedule | None


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
    | ShowRefreshesStatement
    | DescribeStatement
    | AlterRefreshStatement
    | AlterScheduleStatement
    | AlterQueryStatement
    | ExplainStatement
)
