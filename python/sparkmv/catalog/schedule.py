"""When the scheduler refreshes a view on its own (``SCHEDULE EVERY``, ``TARGET LAG``), as
catalog metadata, and the interval strings those clauses take (docs/sql-reference.md).

A view has at most one schedule: a fixed period (``EVERY``), a freshness target (``TARGET
LAG``: its oldest unconsumed base-table change never older than the lag), or the lag its
readers need (``TARGET LAG DOWNSTREAM``). The scheduler that acts on it runs in ``sparkmv
server`` and ``sparkmv.serve()`` (``commands/scheduler.py``); elsewhere it is only stored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from sparkmv.errors import ErrorClass, SparkMvError

_UNIT_MS = {
    "second": 1000,
    "minute": 60 * 1000,
    "hour": 60 * 60 * 1000,
    "day": 24 * 60 * 60 * 1000,
    "week": 7 * 24 * 60 * 60 * 1000,
}
_ALIASES = {
    "s": "second",
    "sec": "second",
    "secs": "second",
    "seconds": "second",
    "m": "minute",
    "min": "minute",
    "mins": "minute",
    "minutes": "minute",
    "h": "hour",
    "hours": "hour",
    "days": "day",
    "weeks": "week",
}
_PART = re.compile(r"(\d+)\s*([A-Za-z]+)")
_WHOLE = re.compile(r"^\s*(?:interval\s+)?(?:\d+\s*[A-Za-z]+\s*)+$", re.IGNORECASE)


def parse_interval(text: str) -> int:
    """The milliseconds of a Spark interval string such as ``'5 minutes'``, ``'1 hour'``,
    ``'1 hour 30 minutes'`` or ``'interval 30 seconds'`` (units: second, minute, hour, day,
    week, singular or plural; s, sec, m, min, h). Raises ``MATERIALIZED_VIEW_INVALID_INTERVAL``
    for anything else, and for a zero interval: a schedule needs a positive one."""
    if not _WHOLE.match(text):
        raise _invalid(text)
    body = re.sub(r"^\s*interval\s+", "", text, flags=re.IGNORECASE)
    total = 0
    for amount, unit in _PART.findall(body):
        name = _ALIASES.get(unit.lower(), unit.lower())
        if name not in _UNIT_MS:
            raise _invalid(text)
        total += int(amount) * _UNIT_MS[name]
    if total <= 0:
        raise _invalid(text)
    return total


def format_interval(milliseconds: int) -> str:
    """``milliseconds`` as an interval string ``parse_interval`` reads back to the same value,
    largest units first (``5400000`` is ``'1 hour 30 minutes'``); sub-second parts are
    dropped (no interval this module parses has one)."""
    parts = []
    rest = milliseconds // 1000 * 1000
    for unit in ("week", "day", "hour", "minute", "second"):
        amount, rest = divmod(rest, _UNIT_MS[unit])
        if amount:
            parts.append(f"{amount} {unit}{'s' if amount > 1 else ''}")
    return " ".join(parts) or "0 seconds"


def _invalid(text: str) -> SparkMvError:
    return SparkMvError(ErrorClass.MATERIALIZED_VIEW_INVALID_INTERVAL, interval=f"'{text}'")


class ScheduleKind(Enum):
    """How a view's schedule decides when it is due (``commands/schedule_decision.py``)."""

    EVERY = "EVERY"  # a refresh every ``interval_ms`` after the last
    TARGET_LAG = "TARGET LAG"  # its pending changes never older than ``interval_ms``
    DOWNSTREAM = "DOWNSTREAM"  # the smallest lag of the scheduled views that read it


@dataclass(frozen=True)
class Schedule:
    """One view's schedule. Invariant: ``interval_ms`` > 0 unless ``kind`` is DOWNSTREAM,
    where it is 0."""

    kind: ScheduleKind
    interval_ms: int = 0

    def __post_init__(self) -> None:
        assert (self.interval_ms > 0) != (self.kind is ScheduleKind.DOWNSTREAM)

    @property
    def clause(self) -> str:
        """The clause as a statement gives it, its interval canonical."""
        if self.kind is ScheduleKind.EVERY:
            return f"SCHEDULE EVERY '{format_interval(self.interval_ms)}'"
        if self.kind is ScheduleKind.TARGET_LAG:
            return f"TARGET LAG '{format_interval(self.interval_ms)}'"
        return "TARGET LAG DOWNSTREAM"

    def to_property(self) -> str:
        """The catalog property's value: the kind, then the interval in milliseconds."""
        return f"{self.kind.name} {self.interval_ms}"

    @classmethod
    def from_property(cls, value: str) -> Schedule | None:
        """The schedule ``to_property`` wrote; None for an empty value (no schedule)."""
        if not value.strip():
            return None
        kind, interval = value.split()
        return cls(ScheduleKind[kind], int(interval))
