"""The query of a materialized view: one SELECT, its base tables, its DataFrame.

The text is parsed by sqlglot in the Spark dialect to check that it is exactly one query
and to find the tables it reads; Spark itself then analyzes it (unknown tables and columns
get Spark's own errors). The query runs against the database that was current when the
view was created, as a Spark view would.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import sqlglot
from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp
from sqlglot.errors import ParseError

from sparkmv import frames
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.identifiers import SESSION_CATALOG


@dataclass(frozen=True)
class ParsedQuery:
    text: str
    tree: exp.Expr | None  # None when sqlglot cannot read a query that Spark can
    base_tables: tuple[str, ...]


def parse_query(text: str, database: str) -> ParsedQuery:
    """Check that ``text`` is one query; find the tables it reads (qualified with ``database``).

    Raises MULTIPLE_STATEMENTS or QUERY_NOT_SELECT. A query sqlglot cannot parse is left to
    Spark to judge (``tree`` None, no base tables known).
    """
    try:
        trees = [tree for tree in sqlglot.parse(text, read="spark") if tree is not None]
    except ParseError:
        return ParsedQuery(text.strip().rstrip(";").strip(), None, ())
    if len(trees) > 1:
        raise SparkMvError(ErrorClass.MATERIALIZED_VIEW_MULTIPLE_STATEMENTS, count=len(trees))
    if not trees or not isinstance(trees[0], (exp.Query, exp.Values)):
        found = type(trees[0]).__name__.upper() if trees else "an empty statement"
        raise SparkMvError(ErrorClass.MATERIALIZED_VIEW_QUERY_NOT_SELECT, found=found)
    return ParsedQuery(text.strip().rstrip(";").strip(), trees[0], _base_tables(trees[0], database))


def _base_tables(tree: exp.Expr, database: str) -> tuple[str, ...]:
    cte_names = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    tables: set[str] = set()
    for table in tree.find_all(exp.Table):
        name = table.name.lower()
        if not name or (not table.db and name in cte_names):
            continue
        tables.add(table_key(table, database))
    return tuple(sorted(tables))


def table_key(table: exp.Table, database: str) -> str:
    """How a view names the base table ``table`` (its unqualified name resolved in
    ``database``): ``db.name`` in the session catalog, ``catalog.namespace.name`` in another
    DSv2 catalog (read through Spark's changelog, ``capture/changelog_source.py``); lower
    case, as Spark's names are case-insensitive."""
    name = f"{(table.db or database).lower()}.{table.name.lower()}"
    catalog = table.catalog.lower()
    return name if not catalog or catalog == SESSION_CATALOG else f"{catalog}.{name}"


def query_dataframe(spark: SparkSession, text: str, database: str) -> DataFrame:
    """The analyzed DataFrame of ``text``, its unqualified names resolved in ``database``."""
    return frames.sql_in(spark, text, database)


@contextmanager
def current_database(spark: SparkSession, database: str) -> Iterator[None]:
    """Temporarily switch the session's current database.

    The caller's statement is blocked on this one, so the switch is not observable by it.
    """
    previous = spark.catalog.currentDatabase()
    if previous == database:
        yield
        return
    spark.catalog.setCurrentDatabase(database)
    try:
        yield
    finally:
        spark.catalog.setCurrentDatabase(previous)
