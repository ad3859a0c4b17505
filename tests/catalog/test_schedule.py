"""Schedules as catalog metadata, and the interval strings their clauses take (no Spark)."""

from __future__ import annotations

import pytest
from sparkmv.catalog.schedule import Schedule, ScheduleKind, format_interval, parse_interval
from sparkmv.errors import ErrorClass, SparkMvError


@pytest.mark.parametrize(
    ("text", "milliseconds"),
    [
        ("30 seconds", 30_000),
        ("1 second", 1_000),
        ("5 minutes", 300_000),
        ("5 MINUTES", 300_000),
        ("1 hour", 3_600_000),
        ("1 hour 30 minutes", 5_400_000),
        ("interval 2 days", 172_800_000),
        ("1 week", 604_800_000),
        ("10min", 600_000),
        ("  90 s ", 90_000),
    ],
)
def test_intervals_parse(text: str, milliseconds: int) -> None:
    assert parse_interval(text) == milliseconds


@pytest.mark.parametrize(
    "text", ["", "5", "minutes", "5 fortnights", "0 minutes", "-5 minutes", "5.5 minutes", "soon"]
)
def test_bad_intervals_are_refused(text: str) -> None:
    with pytest.raises(SparkMvError) as raised:
        parse_interval(text)
    assert raised.value.error_class is ErrorClass.MATERIALIZED_VIEW_INVALID_INTERVAL
    assert f"'{text}'" in raised.value.message


@pytest.mark.parametrize("milliseconds", [1_000, 60_000, 5_400_000, 90_061_000, 604_800_000])
def test_formatted_intervals_parse_back(milliseconds: int) -> None:
    assert parse_interval(format_interval(milliseconds)) == milliseconds


def test_schedules_round_trip_through_their_property() -> None:
    for schedule in (
        Schedule(ScheduleKind.EVERY, 300_000),
        Schedule(ScheduleKind.TARGET_LAG, 600_000),
        Schedule(ScheduleKind.DOWNSTREAM),
    ):
        assert Schedule.from_property(schedule.to_property()) == schedule
    assert Schedule.from_property("") is None


def test_clauses_read_as_statements_give_them() -> None:
    assert Schedule(ScheduleKind.EVERY, 300_000).clause == "SCHEDULE EVERY '5 minutes'"
    assert Schedule(ScheduleKind.TARGET_LAG, 5_400_000).clause == "TARGET LAG '1 hour 30 minutes'"
    assert Schedule(ScheduleKind.DOWNSTREAM).clause == "TARGET LAG DOWNSTREAM"
