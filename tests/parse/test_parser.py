"""The statement parser alone (no Spark): every clause, comments and case, and bad input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sparkmv.catalog.modes import RefreshMode, RefreshPolicy, RefreshTrigger
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.identifiers import TableName
from sparkmv.parse import parse_statement
from sparkmv.parse.statements import (
    AlterQueryStatement,
    AlterRefreshStatement,
    ColumnSpec,
    CreateStatement,
    DescribeStatement,
    DropStatement,
    ExplainStatement,
    RefreshStatement,
    ShowRefreshesStatement,
    ShowStatement,
)


def test_create_with_every_clause() -> None:
    statement = parse_statement(
        "CREATE OR REPLACE MATERIALIZED VIEW db.v (a COMMENT 'first', `b c`) "
        "TBLPROPERTIES ('k' = 'v', x.y = 1, flag = true) COMMENT 'it''s' "
        "REFRESH INCREMENTAL ON DEMAND AS SELECT a, b FROM t"
    )
    assert statement == CreateStatement(
        name=TableName("v", "db"),
        query="SELECT a, b FROM t",
        or_replace=True,
        columns=(ColumnSpec("a", "first"), ColumnSpec("b c")),
        comment="its",
        properties={"k": "v", "x.y": "1", "flag": "true"},
        refresh=statement.refresh,
    )
    assert statement.refresh.policy is RefreshPolicy.INCREMENTAL
    assert statement.refresh.trigger is RefreshTrigger.ON_DEMAND


def test_query_is_kept_verbatim() -> None:
    query = "WITH x AS (SELECT 1 AS a) -- note\nSELECT a AS `as` FROM x"
    statement = parse_statement(f"create materialized view v as {query}")
    assert isinstance(statement, CreateStatement)
    assert statement.query == query


def test_comments_case_and_whitespace_anywhere() -> None:
    statement = parse_statement(
        "/* lead /* nested */ */ -- line\n  ReFrEsH\tmaterialized /* x */ VIEW\n`my_db`.v FULL ;"
    )
    assert statement == RefreshStatement(TableName("v", "my_db"), RefreshMode.FULL)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("REFRESH MATERIALIZED VIEW v", RefreshStatement(TableName("v"))),
        (
            "REFRESH MATERIALIZED VIEW spark_catalog.d.v INCREMENTAL",
            RefreshStatement(TableName("v", "d"), RefreshMode.INCREMENTAL),
        ),
        ("DROP MATERIALIZED VIEW IF EXISTS v", DropStatement(TableName("v"), if_exists=True)),
        (
            "REFRESH MATERIALIZED VIEW v CASCADE",
            RefreshStatement(TableName("v"), cascade=True),
        ),
        (
            "refresh materialized view d.v full cascade;",
            RefreshStatement(TableName("v", "d"), RefreshMode.FULL, cascade=True),
        ),
        ("DROP MATERIALIZED VIEW v CASCADE", DropStatement(TableName("v"), cascade=True)),
        (
            "DROP MATERIALIZED VIEW IF EXISTS v CASCADE",
            DropStatement(TableName("v"), if_exists=True, cascade=True),
        ),
        ("SHOW MATERIALIZED VIEWS", ShowStatement()),
        ("SHOW MATERIALIZED VIEWS FROM d LIKE 'a*|b'", ShowStatement("d", "a*|b")),
        ("SHOW MATERIALIZED VIEW REFRESHES", ShowRefreshesStatement()),
        (
            "show materialized view refreshes for d.v limit 3;",
            ShowRefreshesStatement(TableName("v", "d"), 3),
        ),
        ("sparkmv_refresh_history()", ShowRefreshesStatement()),
        ("sparkmv_refresh_history('d.v')", ShowRefreshesStatement(TableName("v", "d"))),
        ("DESC MATERIALIZED VIEW EXTENDED v", DescribeStatement(TableName("v"), extended=True)),
        ("DESCRIBE MATERIALIZED VIEW v", DescribeStatement(TableName("v"))),
        (
            "ALTER MATERIALIZED VIEW v AS SELECT 2",
            AlterQueryStatement(TableName("v"), "SELECT 2"),
        ),
        (
            "EXPLAIN FORMATTED REFRESH MATERIALIZED VIEW v",
            ExplainStatement(RefreshStatement(TableName("v")), "FORMATTED"),
        ),
    ],
)
def test_statements(text: str, expected: object) -> None:
    assert parse_statement(text) == expected


def test_alter_set_refresh() -> None:
    statement = parse_statement("ALTER MATERIALIZED VIEW v SET REFRESH FULL ON DEMAND")
    assert isinstance(statement, AlterRefreshStatement)
    assert statement.refresh.policy is RefreshPolicy.FULL
    assert statement.refresh.trigger is RefreshTrigger.ON_DEMAND


@pytest.mark.parametrize(
    ("text", "error_class", "fragment"),
    [
        ("CREATE MATERIALIZED VIEW v", ErrorClass.MATERIALIZED_VIEW_PARSE_ERROR, "AS"),
        ("CREATE MATERIALIZED VIEW v AS", ErrorClass.MATERIALIZED_VIEW_PARSE_ERROR, "missing"),
        (
            "CREATE MATERIALIZED VIEW v PARTITIONED BY (a) AS SELECT 1",
            ErrorClass.MATERIALIZED_VIEW_UNKNOWN_OPTION,
            "PARTITIONED",
        ),
        (
            "CREATE MATERIALIZED VIEW my view AS SELECT 1",
            ErrorClass.MATERIALIZED_VIEW_UNKNOWN_OPTION,
            "part of the name",
        ),
        (
            "CREATE MATERIALIZED VIEW select AS SELECT 1",
            ErrorClass.MATERIALIZED_VIEW_INVALID_IDENTIFIER,
            "reserved word",
        ),
        (
            "CREATE MATERIALIZED VIEW `my view` AS SELECT 1",
            ErrorClass.MATERIALIZED_VIEW_INVALID_IDENTIFIER,
            "letters, digits and underscores",
        ),
        (
            "CREATE MATERIALIZED VIEW v COMMENT 'a' COMMENT 'b' AS SELECT 1",
            ErrorClass.MATERIALIZED_VIEW_DUPLICATE_CLAUSE,
            "COMMENT",
        ),
        (
            "CREATE MATERIALIZED VIEW v REFRESH SOMETIMES AS SELECT 1",
            ErrorClass.MATERIALIZED_VIEW_UNKNOWN_OPTION,
            "SOMETIMES",
        ),
        (
            "CREATE OR REPLACE MATERIALIZED VIEW IF NOT EXISTS v AS SELECT 1",
            ErrorClass.MATERIALIZED_VIEW_PARSE_ERROR,
            "cannot be combined",
        ),
        (
            "CREATE MATERIALIZED VIEW v COMMENT 'x AS SELECT 1",
            ErrorClass.MATERIALIZED_VIEW_PARSE_ERROR,
            "unterminated",
        ),
        ("REFRESH MATERIALIZED VIEW v NOW", ErrorClass.MATERIALIZED_VIEW_PARSE_ERROR, "NOW"),
        (
            "SHOW MATERIALIZED VIEW REFRESHES LIMIT -1",
            ErrorClass.MATERIALIZED_VIEW_INVALID_LIMIT,
            "not -1",
        ),
        (
            "SHOW MATERIALIZED VIEW REFRESHES LIMIT 2.5",
            ErrorClass.MATERIALIZED_VIEW_INVALID_LIMIT,
            "2.5",
        ),
        (
            "SHOW MATERIALIZED VIEW REFRESHES LIMIT",
            ErrorClass.MATERIALIZED_VIEW_INVALID_LIMIT,
            "nothing",
        ),
        ("SHOW MATERIALIZED VIEW REFRESHES v", ErrorClass.MATERIALIZED_VIEW_PARSE_ERROR, "'v'"),
        (
            "sparkmv_refresh_history('v', 'w')",
            ErrorClass.MATERIALIZED_VIEW_HISTORY_ARGUMENTS,
            "got ('v', 'w')",
        ),
        ("sparkmv_refresh_history(v)", ErrorClass.MATERIALIZED_VIEW_HISTORY_ARGUMENTS, "(v)"),
        ("sparkmv_refresh_history('a b')", ErrorClass.MATERIALIZED_VIEW_HISTORY_ARGUMENTS, "a b"),
        ("DROP MATERIALIZED VIEW a.b.c", ErrorClass.MATERIALIZED_VIEW_PARSE_ERROR, "too many"),
        (
            "ALTER MATERIALIZED VIEW v RENAME TO w",
            ErrorClass.MATERIALIZED_VIEW_PARSE_ERROR,
            "SET REFRESH",
        ),
        (
            "ALTER MATERIALIZED VIEW v SET REFRESH",
            ErrorClass.MATERIALIZED_VIEW_PARSE_ERROR,
            "policy",
        ),
    ],
)
def test_bad_input(text: str, error_class: ErrorClass, fragment: str) -> None:
    with pytest.raises(SparkMvError) as raised:
        parse_statement(text)
    assert raised.value.error_class is error_class
    assert fragment in str(raised.value)
    assert str(raised.value).endswith(f"SQLSTATE: {error_class.sql_state}")


_identifier = st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True)


@given(database=_identifier, name=_identifier, query_body=st.text(min_size=1, max_size=40))
def test_any_back_quoted_name_and_query_round_trip(
    database: str, name: str, query_body: str
) -> None:
    query = "SELECT " + query_body.strip().replace("\x00", "") + " x"
    statement = parse_statement(f"CREATE MATERIALIZED VIEW `{database}`.`{name}` AS {query}")
    assert isinstance(statement, CreateStatement)
    assert statement.name == TableName(name, database)
    assert statement.query == query.strip()
