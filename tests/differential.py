"""What the randomized differential tests share: a database per example, and a stream of
write batches each followed by a refresh whose mode and reason a check inspects."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from conftest import assert_view_matches_query, session_confs
from hypothesis import Phase, currently_in_test_context
from hypothesis import note as hypothesis_note
from pyspark.sql import SparkSession
from sparkmv.config import REFRESH_COST_BASED_CONF
from view_generator import Scenario, Step

NO_SHRINK = [Phase.explicit, Phase.reuse, Phase.generate]  # shrinking Spark runs takes hours
_examples = itertools.count()


def note(text: str) -> None:
    """Hypothesis's ``note`` (shown with a failing example) inside a hypothesis test; printed
    outside one (pytest shows a failing test's output), where ``note`` would raise."""
    if currently_in_test_context():
        hypothesis_note(text)
    else:
        print(text)


@contextmanager
def example_database(spark: SparkSession, db: str) -> Iterator[str]:
    """A fresh current database for one example; dropped if the example passes."""
    name = f"{db}_{next(_examples)}"
    spark.sql(f"CREATE DATABASE {name}")
    spark.sql(f"USE {name}")
    yield name
    spark.sql(f"USE {db}")
    spark.sql(f"DROP DATABASE {name} CASCADE")


def refresh(spark: SparkSession, view: str) -> tuple[str, str]:
    row = spark.sql(f"REFRESH MATERIALIZED VIEW {view}").collect()[0]
    return str(row.mode), str(row.reason)


def run_stream(spark: SparkSession, steps: list[Step], check: Callable[[str, str], None]) -> None:
    """Each step's writes, then a refresh of v (and sometimes a second one with no change);
    ``check`` gets the mode and reason of every refresh."""
    for number, step in enumerate(steps, 1):
        for statement in step.writes:
            spark.sql(statement)
        for _ in range(2 if step.refresh_again else 1):
            mode, reason = refresh(spark, "v")
            note(f"step {number}: {mode} ({reason})")
            check(mode, reason)


MAINTAINABLE = "the query is incrementally maintainable"
NO_CHANGE = "no base table changed since the last refresh"  # the refresh had nothing to do


def refresh_checked(spark: SparkSession, view: str) -> tuple[str, str]:
    """``refresh`` of ``view``, which must then equal its query run afresh."""
    mode, reason = refresh(spark, view)
    assert_view_matches_query(spark, view)
    return mode, reason


def refresh_each_incrementally(spark: SparkSession, views: Iterable[str], label: str) -> None:
    """Refresh every view of ``views``: each must refresh incrementally (or find nothing
    changed) and then equal its query run afresh."""
    for name in views:
        mode, reason = refresh(spark, name)
        note(f"{label}, {name}: {mode} ({reason})")
        assert mode == "INCREMENTAL", reason
        assert reason in (MAINTAINABLE, NO_CHANGE)
        assert_view_matches_query(spark, name)


# Session confs under which a view of the class refreshes INCREMENTAL whenever its logs allow:
# AUTO's cost-based choice off (it picks FULL when it estimates a change cheaper to recompute,
# which for views this small can be any change).
ALWAYS_INCREMENTAL = {REFRESH_COST_BASED_CONF: "false"}


def check_scenario(spark: SparkSession, db: str, scenario: Scenario, incremental: bool) -> None:
    """The oracle over a whole scenario: the view equals its query after CREATE and after
    every refresh, and (``incremental``) every refresh is incremental, with AUTO's cost-based
    choice off (``ALWAYS_INCREMENTAL``)."""
    extra = ALWAYS_INCREMENTAL if incremental else {}
    note("".join(f"SET {key} = {value};\n" for key, value in extra.items()) + scenario.script())
    confs = {**scenario.storage, **extra}
    with example_database(spark, db), session_confs(spark, confs):
        for statement in scenario.setup:
            spark.sql(statement)
        spark.sql(scenario.view.create("v"))
        assert_view_matches_query(spark, "v")

        def check(mode: str, reason: str) -> None:
            assert_view_matches_query(spark, "v")
            if incremental:
                assert mode == "INCREMENTAL", reason

        run_stream(spark, scenario.steps, check)
