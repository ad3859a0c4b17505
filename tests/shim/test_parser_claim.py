"""The shim's parser: claims materialized-view statements, hands everything else to Spark."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession


def kind_of(spark: SparkSession, text: str) -> str | None:
    jvm: Any = spark._jvm
    found = jvm.io.sparkmv.parser.MvStatementKind.of(text)
    return str(found.get()) if found.isDefined() else None


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("CREATE MATERIALIZED VIEW v AS SELECT 1", "CREATE"),
        ("create or replace materialized view v as select 1", "CREATE"),
        ("-- comment\nCREATE\n\tMATERIALIZED   VIEW v AS SELECT 1", "CREATE"),
        ("/* a /* nested */ comment */ REFRESH /* x */ MATERIALIZED VIEW v", "REFRESH"),
        ("Drop Materialized View IF EXISTS v", "DROP"),
        ("ALTER MATERIALIZED VIEW v SET REFRESH FULL", "ALTER"),
        ("DESC MATERIALIZED VIEW v", "DESCRIBE"),
        ("describe materialized view extended v", "DESCRIBE"),
        ("SHOW MATERIALIZED VIEWS", "SHOW"),
        ("EXPLAIN REFRESH MATERIALIZED VIEW v", "EXPLAIN"),
        ("explain formatted create materialized view v as select 1", "EXPLAIN"),
        ("SELECT 'CREATE MATERIALIZED VIEW v AS SELECT 1'", None),
        ("-- CREATE MATERIALIZED VIEW v\nSELECT 1", None),
        ("CREATE VIEW v AS SELECT 1", None),
        ("CREATE TABLE materialized (view INT)", None),
        ("SHOW VIEWS", None),
        ("EXPLAIN SELECT 1", None),
        ("REFRESH TABLE t", None),
        ("", None),
    ],
)
def test_statement_kind(spark: SparkSession, text: str, kind: str | None) -> None:
    assert kind_of(spark, text) == kind


def test_other_statements_are_untouched(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE t (a INT) USING parquet")
    spark.sql("INSERT INTO t VALUES (1), (2)")
    assert spark.sql("SELECT 'CREATE MATERIALIZED VIEW' AS s").collect()[0].s == (
        "CREATE MATERIALIZED VIEW"
    )
    spark.sql("CREATE VIEW plain AS SELECT a FROM t")
    assert spark.table("plain").count() == 2
    plan = spark.sql("EXPLAIN SELECT a FROM t").collect()[0].plan
    assert "Physical Plan" in plan


def test_parameters_reach_spark(spark: SparkSession) -> None:
    """parsePlanWithParameters is delegated with its parameters, named and positional."""
    assert spark.sql("SELECT :x + 1 AS y", args={"x": 41}).collect()[0].y == 42
    assert spark.sql("SELECT ? * 2 AS y", args=[21]).collect()[0].y == 42


def test_result_schema_is_declared_at_parse_time(spark: SparkSession) -> None:
    """Parsing alone yields the command and its output; nothing runs (the view is unknown)."""
    jvm_session: Any = spark._jsparkSession
    plan = jvm_session.sessionState().sqlParser().parsePlan("REFRESH MATERIALIZED VIEW nope")
    assert plan.getClass().getSimpleName() == "RefreshMaterializedViewCommand"
    assert plan.schema().simpleString() == (
        "struct<mode:string,reason:string,rows_inserted:bigint,rows_deleted:bigint,"
        "irrelevant_rows:bigint,"
        "duration_ms:bigint>"
    )
