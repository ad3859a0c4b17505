"""pg_ivm's regression suite (sql/*.sql with expected/*.out) run against sparkmv with ON
COMMIT views; ``pg_ivm_runner.py`` documents the method, ``pg_ivm_mapping.py`` the mapping.

`make test` runs the sections the pg_ivm files always need plus a seeded sample of the small
ones; `make pg-ivm` (``SPARKMV_PG_IVM_FULL=1``) runs every mapped section and rewrites
REPORT.md. Both fail when a mapped section fails (other than a listed xfail) and when the
mapping's counts differ from REPORT.md's: a newly mapped or unmapped section is an explicit
edit of the report.
"""

from __future__ import annotations

import os
import random
import time
from decimal import Decimal
from pathlib import Path

import pytest
from conftest import FULL_RUN
from corpora import SHARED_CORPORA, corpus_path, require_corpus
from pg_ivm_runner import (
    Plan,
    mapping_counts,
    normalized_value,
    parse_create_immv,
    plan,
    recorded_counts,
    run,
    translate,
    write_report,
)
from pyspark.sql import SparkSession

CORPUS_ENV = "SPARKMV_PG_IVM_DIR"
FULL_ENV = "SPARKMV_PG_IVM_FULL"
REPORT = Path(__file__).with_name("REPORT.md")
SAMPLE = {"create_immv": 1, "refresh_immv": 1, "pg_ivm": 3, "outer_join": 1}  # sections
SMALL = 30  # statements: a sampled section stays under a minute or so
SEED = random.randrange(2**31) if FULL_RUN else 20251126


@pytest.fixture
def plans() -> list[Plan]:
    corpus = require_corpus(
        corpus_path(CORPUS_ENV, SHARED_CORPORA / "pg_ivm"), "pg_ivm", CORPUS_ENV
    )
    return plan(corpus)


def test_the_mapping_counts_are_the_recorded_ones(plans: list[Plan]) -> None:
    assert mapping_counts(plans) == recorded_counts(REPORT)["mapping"]


def sample(plans: list[Plan]) -> set[str]:
    """A seeded sample of each file's small mapped sections (its setup sections run anyway)."""
    rng = random.Random(SEED)
    chosen: set[str] = set()
    for file, size in SAMPLE.items():
        small = [
            entry.section.key
            for entry in plans
            if entry.section.file == file
            and not (entry.unmapped or entry.rule.setup or entry.rule.xfail)
            and len(entry.section.statements) <= SMALL
        ]
        chosen.update(rng.sample(small, size))
    return chosen


def test_pg_ivm_sections_pass(spark: SparkSession, plans: list[Plan]) -> None:
    full = os.environ.get(FULL_ENV) == "1"
    selected = {entry.section.key for entry in plans} if full else sample(plans)
    started = time.monotonic()
    outcomes = run(spark, plans, selected)
    if full:
        write_report(REPORT, plans, outcomes, time.monotonic() - started)
    ran = [outcome for outcome in outcomes if outcome.status not in ("unmapped", "not-run")]
    failed = [f"{o.key}: {o.failures}" for o in ran if o.status == "failed"]
    assert not failed, f"seed {SEED}\n" + "\n".join(failed)
    assert {o.key for o in ran} >= selected - {o.key for o in outcomes if o.status == "unmapped"}


def test_values_compare_as_psql_prints_them() -> None:
    """PostgreSQL's NUMERIC AVG against Spark's DOUBLE; NULL against psql's empty cell."""
    assert normalized_value(33.333333333333336) == normalized_value(Decimal("33.3333333333333333"))
    assert normalized_value(20.0) == normalized_value("20.0000000000000000") == "20"
    assert normalized_value(None) == "" and normalized_value(True) == "t"
    assert normalized_value(Decimal("1.5")) != normalized_value(1.25)


def test_create_immv_becomes_an_on_commit_view_definition() -> None:
    name, columns, query = parse_create_immv(
        "SELECT pgivm.create_immv(' mv2 ( x  ) ', 'SELECT * FROM t WHERE i%2 = 0');"
    )
    assert (name, columns, query) == ("mv2", ["x"], "SELECT * FROM t WHERE i%2 = 0")
    spark_sql = translate("SELECT i, SUM(j), COUNT(*), AVG(j) FROM a GROUP BY i", True)
    assert spark_sql == (
        "SELECT i, SUM(j) AS sum, COUNT(*) AS count, AVG(j) AS avg FROM a GROUP BY i"
    )
