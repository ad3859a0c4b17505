"""Randomized differential tests in fleets: many random views over one set of tables and one
stream of writes.

A fleet is ``FLEET_SIZE`` views drawn from the classes of ``test_differential_spj`` and
``test_differential_aggregates`` (SPJ, DISTINCT, UNION/INTERSECT/EXCEPT, derived tables,
WITH, aggregates), created over three small tables with NULLs and duplicates, then a stream
of INSERT / DELETE / UPDATE / MERGE batches to any of the tables, each followed by a refresh
of every view. After CREATE and after every refresh every view must equal its query run
afresh (docs/development.md), and every refresh must be incremental. The storage confs (buckets,
patching, compaction) are drawn per fleet.

One (view, stream) pair is a *case*. A fleet shares the set-up and the writes among its
views, so a long run checks thousands of cases in a few hours (about 5 s a case on 2 cores,
a third of what a single-view scenario costs). `make test` runs two fleets; long runs
go in parts, recorded like the sqllogictest ledger::

    make differential-part SEED=7 EXAMPLES=20   # 20 fleets, hypothesis seed 7
    make differential-ledger                    # the recorded parts, summed

A part is recorded (``SPARKMV_FLEET_RECORD``: its JSON file) only when every fleet passed;
a failure is reported by pytest with the fleet's whole script.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import REPO, assert_view_matches_query, session_confs, spark_examples
from differential import ALWAYS_INCREMENTAL, NO_SHRINK, example_database, refresh
from hypothesis import given, note, seed, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from view_generator import (
    TABLES,
    Draw,
    Step,
    View,
    aggregate_views,
    batches,
    rows_of,
    storage_confs,
)
from view_generator import views as spj_views

FLEET_SIZE = 12
EXAMPLES = int(os.environ.get("SPARKMV_FLEET_EXAMPLES") or spark_examples(2))
"""Fleets per run. Hypothesis always tries the simplest example first (twelve copies of
``SELECT a FROM r``, one insert), so one example alone would check next to nothing: `make
test` runs that one and one drawn fleet."""
SEED = os.environ.get("SPARKMV_FLEET_SEED")
RECORD = os.environ.get("SPARKMV_FLEET_RECORD")


@dataclass
class Fleet:
    """The tables with their first rows, the views, the stream of write batches."""

    setup: list[str]
    views: list[View]
    steps: list[Step]
    storage: dict[str, str] = field(default_factory=dict)

    def script(self) -> str:
        """The whole fleet as a SQL script (printed on failure: it reproduces the case)."""
        lines = [f"SET {key} = {value};" for key, value in self.storage.items()]
        lines += [s + ";" for s in self.setup]
        lines += [view.create(f"v{i}") + ";" for i, view in enumerate(self.views)]
        for step in self.steps:
            lines += [w + ";" for w in step.writes]
            lines += [f"REFRESH MATERIALIZED VIEW v{i};" for i in range(len(self.views))]
        return "\n".join(lines)


@st.composite
def fleets(draw: Draw) -> Fleet:
    setup = [table.ddl(draw(rows_of(table, max_size=5))) for table in TABLES]
    drawn = st.one_of(spj_views(), spj_views(), aggregate_views())
    views = [draw(drawn) for _ in range(FLEET_SIZE)]
    steps = [Step(draw(batches()), False) for _ in range(draw(st.integers(1, 3)))]
    return Fleet(setup, views, steps, draw(storage_confs()))


@dataclass
class Tally:
    """What a run checked: fleets, cases (a view under its stream), refreshes."""

    counts: Counter[str] = field(default_factory=Counter)
    started: str = field(default_factory=lambda: time.strftime("%Y-%m-%d %H:%M:%S %Z"))
    # The code the run started with (a commit made while it runs is not what it checked).
    commit: str = field(default_factory=lambda: _git("rev-parse", "HEAD"))
    uncommitted_python_changes: bool = field(
        default_factory=lambda: bool(_git("status", "--porcelain", "--", "python"))
    )


def _git(*arguments: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), *arguments], capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture(scope="module")
def tally() -> Iterator[Tally]:
    found = Tally()
    yield found
    if RECORD and found.counts["fleets"] == EXAMPLES:
        record(found, Path(RECORD))


Oracle = Callable[[SparkSession, str], None]
"""Asserts that a view (by name) equals its query run afresh."""


def check_fleet(
    spark: SparkSession,
    db: str,
    fleet: Fleet,
    tally: Tally,
    oracle: Oracle = assert_view_matches_query,
) -> None:
    """Create the fleet's views, run its stream; every view must pass ``oracle`` after CREATE
    and after every refresh, and every refresh must be incremental."""
    note(fleet.script())
    names = [f"v{i}" for i in range(len(fleet.views))]
    # Every refresh must be incremental: the cost model may not pick FULL here.
    confs = {**fleet.storage, **ALWAYS_INCREMENTAL}
    with example_database(spark, db), session_confs(spark, confs):
        for statement in fleet.setup:
            spark.sql(statement)
        for name, view in zip(names, fleet.views, strict=True):
            spark.sql(view.create(name))
            oracle(spark, name)
        for number, step in enumerate(fleet.steps, 1):
            for statement in step.writes:
                spark.sql(statement)
            for name in names:
                mode, reason = refresh(spark, name)
                assert mode == "INCREMENTAL", f"step {number}, {name}: {reason}"
                oracle(spark, name)
                tally.counts["refreshes"] += 1
    tally.counts["fleets"] += 1
    tally.counts["cases"] += len(names)


def _seeded(test: object) -> object:
    return seed(int(SEED))(test) if SEED is not None else test


@_seeded
@settings(max_examples=EXAMPLES, phases=NO_SHRINK, derandomize=SEED is None)
@given(fleet=fleets())
def test_every_view_of_a_fleet_matches_its_query_after_every_refresh(
    spark: SparkSession, db: str, fleet: Fleet, tally: Tally
) -> None:
    check_fleet(spark, db, fleet, tally)


# ---- the ledger of long runs ----------------------------------------------------------------


def record(tally: Tally, path: Path) -> None:
    """Write the run's counts with what it ran: seed, examples, commit, times."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "counts": dict(tally.counts),
        "provenance": {
            "seed": SEED,
            "examples": EXAMPLES,
            "fleet_size": FLEET_SIZE,
            "commit": tally.commit,
            "uncommitted_python_changes": tally.uncommitted_python_changes,
            "started": tally.started,
            "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        },
    }
    path.write_text(json.dumps(data, indent=1) + "\n")


def print_ledger(directory: Path) -> None:
    """The recorded parts, summed (a part is recorded only when all its fleets passed; one
    file per seed, so no fleet is counted twice)."""
    total: Counter[str] = Counter()
    seeds = []
    for part in sorted(directory.glob("*.json")):
        data = json.loads(part.read_text())
        total.update(data["counts"])
        seeds.append(str(data["provenance"]["seed"]))
    print(f"parts: {len(seeds)} (seeds {', '.join(seeds)})")
    for name in ("fleets", "cases", "refreshes"):
        print(f"FLEET {name} {total[name]}")


if __name__ == "__main__":
    print_ledger(REPO / "tests" / "differential_ledger")
