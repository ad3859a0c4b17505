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
from pathlib import Path

import pytest
from conftest import FULL_RUN
from corpora import SHARED_CORPORA, corpus_path, require_corpus
from pg_ivm_runner import Plan, mapping_counts, plan, recorded_counts, run, write_report
from pyspark.sql import SparkSession

CORPUS_ENV = "SPARKMV_PG_IVM_DIR"
FULL_ENV = "SPARKMV_PG_IVM_FULL"
REPORT = Path(__file__).with_name("REPORT.md")
SAMPLE = 3
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
    """A seeded sample of the small mapped sections (the setup ones run anyway)."""
    small = [
        entry.section.key
        for entry in plans
        if not entry.unmapped and not entry.rule.setup and len(entry.section.statements) <= SMALL
    ]
    return set(random.Random(SEED).sample(small, SAMPLE))


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
