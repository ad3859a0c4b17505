"""The SCHEDULE EVERY and TARGET LAG clauses of CREATE and ALTER (no Spark)."""

from __future__ import annotations

import pytest
from sparkmv.catalog.modes import RefreshTrigger
from sparkmv.catalog.schedule import Schedule, ScheduleKind
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.identifiers import TableName
from sparkmv.parse import parse_statement
from sparkmv.parse.statements import AlterQueryStatement, AlterScheduleStatement, CreateStatement

EVERY_5 = Schedule(ScheduleKind.EVERY, 300_000)
LAG_10 = Schedule(ScheduleKind.TARGET_LAG, 600_000)
DOWNSTREAM = Schedule(ScheduleKind.DOWNSTREAM)


@pytest.mark.parametrize(
    ("clause", "schedule"),
    [
        ("SCHEDULE EVERY '5 minutes'", EVERY_5),
        ("target lag '10 minutes'", LAG_10),
        ("TARGET LAG DOWNSTREAM", DOWNSTREAM),
    ],
)
def test_create_takes_a_schedule(clause: str, schedule: Schedule) -> None:
    statement = parse_statement(
        f"CREATE MATERIALIZED VIEW v REFRESH ON DEMAND {clause} COMMENT 'c' AS SELECT 1"
    )
    assert isinstance(statement, CreateStatement)
    assert statement.schedule == schedule
    assert statement.refresh.trigger is RefreshTrigger.ON_DEMAND
    assert statement.comment == "c"


def test_create_without_a_schedule_has_none() -> None:
    statement = parse_statement("CREATE MATERIALIZED VIEW v AS SELECT 1")
    assert isinstance(statement, CreateStatement)
    assert statement.schedule is None


@pytest.mark.parametrize(
    ("text", "schedule"),
    [
        ("ALTER MATERIALIZED VIEW db.v SET SCHEDULE EVERY '5 minutes'", EVERY_5),
        ("ALTER MATERIALIZED VIEW db.v SCHEDULE EVERY '5 minutes'", EVERY_5),
        ("ALTER MATERIALIZED VIEW db.v SET TARGET LAG '10 minutes'", LAG_10),
        ("ALTER MATERIALIZED VIEW db.v TARGET LAG DOWNSTREAM", DOWNSTREAM),
        ("ALTER MATERIALIZED VIEW db.v DROP SCHEDULE", None),
    ],
)
def test_alter_sets_or_drops_the_schedule(text: str, schedule: Schedule | None) -> None:
    assert parse_statement(text) == AlterScheduleStatement(TableName("v", "db"), schedule)


def test_alter_as_is_still_a_new_query() -> None:
    assert parse_statement("ALTER MATERIALIZED VIEW v AS SELECT 2") == AlterQueryStatement(
        TableName("v"), "SELECT 2"
    )


@pytest.mark.parametrize(
    ("text", "error_class", "fragment"),
    [
        (
            "CREATE MATERIALIZED VIEW v SCHEDULE EVERY '5 fortnights' AS SELECT 1",
            ErrorClass.MATERIALIZED_VIEW_INVALID_INTERVAL,
            "'5 fortnights'",
        ),
        (
            "ALTER MATERIALIZED VIEW v SET TARGET LAG 'soon'",
            ErrorClass.MATERIALIZED_VIEW_INVALID_INTERVAL,
            "'soon'",
        ),
        (
            "CREATE MATERIALIZED VIEW v SCHEDULE EVERY 5 AS SELECT 1",
            ErrorClass.MATERIALIZED_VIEW_PARSE_ERROR,
            "interval string",
        ),
        (
            "CREATE MATERIALIZED VIEW v SCHEDULE '5 minutes' AS SELECT 1",
            ErrorClass.MATERIALIZED_VIEW_PARSE_ERROR,
            "EVERY",
        ),
        (
            "CREATE MATERIALIZED VIEW v SCHEDULE EVERY '5 minutes' TARGET LAG '5 minutes' "
            "AS SELECT 1",
            ErrorClass.MATERIALIZED_VIEW_CONFLICTING_SCHEDULE,
            "not both",
        ),
        (
            "CREATE MATERIALIZED VIEW v TARGET LAG DOWNSTREAM TARGET LAG '1 hour' AS SELECT 1",
            ErrorClass.MATERIALIZED_VIEW_DUPLICATE_CLAUSE,
            "TARGET LAG",
        ),
        (
            "ALTER MATERIALIZED VIEW v SET AS SELECT 1",
            ErrorClass.MATERIALIZED_VIEW_PARSE_ERROR,
            "DROP SCHEDULE",
        ),
    ],
)
def test_bad_schedules_are_refused(text: str, error_class: ErrorClass, fragment: str) -> None:
    with pytest.raises(SparkMvError) as raised:
        parse_statement(text)
    assert raised.value.error_class is error_class
    assert fragment in raised.value.message
