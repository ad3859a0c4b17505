"""Bad input gets a Spark-style error (class, SQLSTATE; no traceback) and changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_view_matches_query, multiset
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

SETUP = [
    "CREATE TABLE t (a INT, b STRING) USING parquet",
    "CREATE TABLE j (a INT) USING json",  # its writes are not captured
    "INSERT INTO t VALUES (1, 'x'), (2, NULL)",
    "CREATE VIEW plain AS SELECT a FROM t",
    # LIMIT keeps mv outside incremental maintenance: the INCREMENTAL cases below refuse it.
    "CREATE MATERIALIZED VIEW mv AS SELECT a, b FROM t LIMIT 1000",
]

SPARK_VIEW_COMMANDS_ON_MV = [
    "DROP VIEW mv",
    "DROP VIEW IF EXISTS mv",
    "DROP TABLE mv",
    "ALTER VIEW mv AS SELECT 1 AS a, 'b' AS b",
    "CREATE OR REPLACE VIEW mv AS SELECT 1 AS a",
    "ALTER VIEW mv RENAME TO mv2",
    "ALTER VIEW mv SET TBLPROPERTIES ('team' = 'ops')",
    "ALTER VIEW mv UNSET TBLPROPERTIES IF EXISTS ('team')",
    "ALTER VIEW mv WITH SCHEMA EVOLUTION",
]

CASES = [
    # (statement, error class, SQLSTATE)
    ("CREATE MATERIALIZED VIEW mv AS SELECT 1", "MATERIALIZED_VIEW_ALREADY_EXISTS", "42P07"),
    ("CREATE MATERIALIZED VIEW t AS SELECT 1", "MATERIALIZED_VIEW_ALREADY_EXISTS", "42P07"),
    ("CREATE OR REPLACE MATERIALIZED VIEW t AS SELECT 1", "NOT_A_MATERIALIZED_VIEW", "42809"),
    ("CREATE OR REPLACE MATERIALIZED VIEW plain AS SELECT 1", "NOT_A_MATERIALIZED_VIEW", "42809"),
    ("REFRESH MATERIALIZED VIEW nope", "MATERIALIZED_VIEW_NOT_FOUND", "42P01"),
    ("REFRESH MATERIALIZED VIEW t", "NOT_A_MATERIALIZED_VIEW", "42809"),
    ("DROP MATERIALIZED VIEW nope", "MATERIALIZED_VIEW_NOT_FOUND", "42P01"),
    ("DROP MATERIALIZED VIEW plain", "NOT_A_MATERIALIZED_VIEW", "42809"),
    ("DESCRIBE MATERIALIZED VIEW nope", "MATERIALIZED_VIEW_NOT_FOUND", "42P01"),
    ("ALTER MATERIALIZED VIEW nope SET REFRESH FULL", "MATERIALIZED_VIEW_NOT_FOUND", "42P01"),
    ("CREATE MATERIALIZED VIEW x", "MATERIALIZED_VIEW_PARSE_ERROR", "42601"),
    ("CREATE MATERIALIZED VIEW x AS", "MATERIALIZED_VIEW_PARSE_ERROR", "42601"),
    ("REFRESH MATERIALIZED VIEW mv SOON", "MATERIALIZED_VIEW_PARSE_ERROR", "42601"),
    (
        "CREATE MATERIALIZED VIEW x COMMENT 'open AS SELECT 1",
        "MATERIALIZED_VIEW_PARSE_ERROR",
        "42601",
    ),
    ("CREATE MATERIALIZED VIEW x AS SELECT * FROM missing", "TABLE_OR_VIEW_NOT_FOUND", "42P01"),
    (
        "CREATE MATERIALIZED VIEW x AS SELECT nope FROM t",
        "UNRESOLVED_COLUMN.WITH_SUGGESTION",
        "42703",
    ),
    ("CREATE MATERIALIZED VIEW x AS SELEC 1", "PARSE_SYNTAX_ERROR", "42601"),
    (
        "CREATE MATERIALIZED VIEW x PARTITIONED BY (a) AS SELECT a FROM t",
        "MATERIALIZED_VIEW_UNKNOWN_OPTION",
        "42601",
    ),
    (
        "CREATE MATERIALIZED VIEW x REFRESH NEVER AS SELECT 1",
        "MATERIALIZED_VIEW_UNKNOWN_OPTION",
        "42601",
    ),
    (
        "CREATE MATERIALIZED VIEW x COMMENT 'a' COMMENT 'b' AS SELECT 1",
        "MATERIALIZED_VIEW_DUPLICATE_CLAUSE",
        "42601",
    ),
    (
        "CREATE MATERIALIZED VIEW select AS SELECT 1",
        "MATERIALIZED_VIEW_INVALID_IDENTIFIER",
        "42602",
    ),
    (
        "CREATE MATERIALIZED VIEW `my view` AS SELECT 1",
        "MATERIALIZED_VIEW_INVALID_IDENTIFIER",
        "42602",
    ),
    ("CREATE MATERIALIZED VIEW my view AS SELECT 1", "MATERIALIZED_VIEW_UNKNOWN_OPTION", "42601"),
    (
        "CREATE MATERIALIZED VIEW x AS SELECT 1; SELECT 2",
        "MATERIALIZED_VIEW_MULTIPLE_STATEMENTS",
        "42601",
    ),
    (
        "CREATE MATERIALIZED VIEW x AS INSERT INTO t VALUES (3, 'z')",
        "MATERIALIZED_VIEW_QUERY_NOT_SELECT",
        "42601",
    ),
    (
        "CREATE MATERIALIZED VIEW x (p, q) AS SELECT a FROM t",
        "MATERIALIZED_VIEW_COLUMN_COUNT_MISMATCH",
        "21S01",
    ),
    (
        "CREATE MATERIALIZED VIEW x AS SELECT a, a FROM t",
        "MATERIALIZED_VIEW_DUPLICATE_COLUMN",
        "42711",
    ),
    (
        "CREATE MATERIALIZED VIEW x TBLPROPERTIES ('sparkmv.query' = 'x') AS SELECT 1",
        "MATERIALIZED_VIEW_RESERVED_PROPERTY",
        "42000",
    ),
    (
        "CREATE MATERIALIZED VIEW x REFRESH INCREMENTAL AS SELECT a FROM t LIMIT 1",
        "MATERIALIZED_VIEW_NOT_INCREMENTAL",
        "0A000",
    ),
    ("REFRESH MATERIALIZED VIEW mv INCREMENTAL", "MATERIALIZED_VIEW_NOT_INCREMENTAL", "0A000"),
    (
        "ALTER MATERIALIZED VIEW mv SET REFRESH INCREMENTAL",
        "MATERIALIZED_VIEW_NOT_INCREMENTAL",
        "0A000",
    ),
    (
        "CREATE MATERIALIZED VIEW x REFRESH ON COMMIT AS SELECT a FROM j",
        "MATERIALIZED_VIEW_ON_COMMIT_NOT_CAPTURED",
        "0A000",
    ),
    ("SHOW MATERIALIZED VIEWS IN no_such_db", "SCHEMA_NOT_FOUND", "42704"),
    # Spark's own view commands would orphan a materialized view's rows and change logs.
    *(
        (statement, "MATERIALIZED_VIEW_WRONG_COMMAND", "42809")
        for statement in SPARK_VIEW_COMMANDS_ON_MV
    ),
]


def state(spark: SparkSession, db: str, warehouse: Path) -> tuple[object, ...]:
    """Everything a failed statement must leave untouched."""
    tables = sorted(r.tableName for r in spark.sql("SHOW TABLES").collect())
    views = sorted(tuple(r) for r in spark.sql("SHOW MATERIALIZED VIEWS").collect())
    storage = warehouse / "_sparkmv" / db
    files = (
        sorted(str(p.relative_to(storage)) for p in storage.rglob("*")) if storage.exists() else []
    )
    return tables, views, files, multiset(spark.table("mv")), multiset(spark.table("t"))


@pytest.fixture
def prepared(spark: SparkSession, db: str) -> Path:
    for statement in SETUP:
        spark.sql(statement)
    warehouse = spark.conf.get("spark.sql.warehouse.dir")
    assert warehouse is not None
    return Path(warehouse.removeprefix("file:"))


def test_every_error_is_spark_style_and_changes_nothing(
    spark: SparkSession, db: str, prepared: Path
) -> None:
    before = state(spark, db, prepared)
    failures = []
    for statement, error_class, sql_state in CASES:
        try:
            spark.sql(statement).collect()
        except PySparkException as error:
            text = str(error)
            checks = {
                "class": error.getCondition() == error_class,
                "sqlstate": error.getSqlState() == sql_state,
                "message names class": f"[{error_class}]" in text,
                "no traceback": "Traceback" not in text and "py4j" not in text.lower(),
                "no JVM frames": "\tat " not in text,
            }
            if not all(checks.values()):
                failures.append(
                    (statement, error.getCondition(), error.getSqlState(), checks, text)
                )
        else:
            failures.append((statement, "no error raised"))
        if state(spark, db, prepared) != before:
            failures.append((statement, "changed the catalog, the data or the storage"))
    assert not failures, "\n".join(map(str, failures))
    assert_view_matches_query(spark, "mv")


def test_spark_view_commands_still_work_on_plain_and_temporary_views(
    spark: SparkSession, db: str, prepared: Path
) -> None:
    """The guard refuses only materialized views' entries: a plain view, and a temporary view
    named like a materialized view (it shadows the entry), take every command as before."""
    for statement in SPARK_VIEW_COMMANDS_ON_MV:
        if not statement.startswith("DROP") and "RENAME" not in statement:
            spark.sql(statement.replace("mv", "plain")).collect()
    spark.sql("ALTER VIEW plain RENAME TO plain2")
    spark.sql("DROP VIEW plain2")
    spark.sql("CREATE TEMPORARY VIEW mv AS SELECT 7 AS a")
    spark.sql("DROP VIEW mv")  # the temporary one
    assert [row.viewName for row in spark.sql("SHOW MATERIALIZED VIEWS").collect()] == ["mv"]
    assert_view_matches_query(spark, "mv")


def test_drop_if_exists_and_create_if_not_exists_are_quiet(spark: SparkSession, db: str) -> None:
    spark.sql("DROP MATERIALIZED VIEW IF EXISTS nope")
    spark.sql("CREATE TABLE t (a INT) USING parquet")
    spark.sql("CREATE MATERIALIZED VIEW IF NOT EXISTS t AS SELECT 1 AS one")
    assert spark.sql("SHOW MATERIALIZED VIEWS").count() == 0
