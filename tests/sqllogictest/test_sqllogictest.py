"""A seeded sample of SQLite's sqllogictest select1-5 run as materialized views.

``runner.py`` (beside this file) does the work and documents the method; ``make sqllogictest``
runs every query record. Here a few records per file run in the session's Spark, each file's
in fresh databases that are dropped afterwards. No view may differ from its query run afresh
(or from the file's expected result where the plain query matches it), and no REFRESH may
fail.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from conftest import FULL_RUN
from corpora import require_corpus
from pyspark.sql import SparkSession
from runner import (
    CORPUS_ENV,
    FILES,
    Expected,
    Group,
    Outcome,
    Query,
    Selection,
    Statement,
    Summary,
    chunks,
    corpus_dir,
    format_rows,
    judge_view,
    load_plan,
    overlapping_parts,
    parse_script,
    print_ledger,
    provenance,
    record_part,
    result_values,
    run,
)

# Query records per file: each costs a CREATE, two REFRESHes, a plain run and a read (about
# 5-10 s on this machine), each table the sample reads a CREATE TABLE and an INSERT, and each
# table it changes five more captured writes. select4/select5 queries join up to 9/64 tables:
# only those joining a few tables are sampled here.
# `make test` samples 11 records; `make test-full` four times as many, at a random seed.
SAMPLED = {"select1": 2, "select2": 1, "select3": 1, "select4": 1, "select5": 1}
SAMPLE = {name: count * (4 if FULL_RUN else 1) for name, count in SAMPLED.items()}
MAX_TABLES = {"select4": 2, "select5": 4}
SEED = random.randrange(2**31) if FULL_RUN else 20240611


@pytest.fixture
def corpus() -> Path:
    """The sqllogictest corpus directory; without it the test is skipped (locally) or fails
    (with ``SPARKMV_REQUIRE_CORPORA=1``)."""
    return require_corpus(corpus_dir(), "sqllogictest", CORPUS_ENV)


@pytest.mark.usefixtures("corpus")
def test_sqllogictest_sample_as_views(spark: SparkSession) -> None:
    summary = Summary()
    for name in FILES:
        selection = Selection(
            files=[name], sample=SAMPLE[name], seed=SEED, max_tables=MAX_TABLES.get(name)
        )
        summary.merge(run(spark, selection, database_prefix=f"slt{os.getpid()}", cleanup=True))
    report = summary.report()
    print(report)
    counts = summary.counts
    assert counts["queries"] == sum(SAMPLE.values()), report
    assert counts["view-wrong"] == 0, f"seed {SEED}\n{report}"
    assert counts["view-error"] == 0, f"seed {SEED}\n{report}"
    assert counts["plain-correct"] > 0, report
    assert counts["view-correct"] >= 0.8 * counts["plain-correct"], report


def test_result_checks_reproduce_sqlite(corpus: Path) -> None:
    """Formatting, sort modes and hashing, applied to SQLite's own answers, match the files."""
    rng = random.Random(SEED)
    for name in FILES:
        script = parse_script(corpus / f"{name}.test")
        queries = [record for record in script.records if isinstance(record, Query)]
        chosen = {id(query) for query in rng.sample(queries, 60)}
        database = sqlite3.connect(":memory:")
        for record in script.records:
            if isinstance(record, Statement):
                database.execute(record.sql)
            elif id(record) in chosen:
                rows = database.execute(record.sql).fetchall()
                values = result_values(format_rows(rows, record.types), record.sort)
                assert record.expected.matches(values), f"{name}.test:{record.line}"


def test_load_plan_ends_at_the_files_rows() -> None:
    rows: dict[str, list[tuple[object, ...]]] = {
        "t": [(1, None), (2, "x"), (1, None), (3, "y"), (4, "z"), (5, "w"), (1, None)],
        "u": [(1,)],
        "empty": [],
        "static": [(7, 7)],
    }
    plan = load_plan(rows, {"t", "u", "empty"}, random.Random(3))
    assert plan.initial["static"] == [(7, 7)]
    final = {name: Counter(initial) for name, initial in plan.initial.items()}
    for batch in plan.batches:
        assert any(write.kind == "delete" for write in batch)
        for write in batch:
            if write.kind == "insert":
                final[write.table].update(write.rows)
            else:
                for row in write.rows:
                    del final[write.table][row]
    assert final == {name: Counter(table_rows) for name, table_rows in rows.items()}


def test_select5_chunks_read_one_set_of_tables() -> None:
    """select5's chunks are runs of records over one set of tables (any order, any
    spelling); other files' chunks only have a size."""
    sqls = [
        "SELECT x1 FROM t1, t2 WHERE a1 = b2",
        "SELECT x1 FROM t2, t1 WHERE b2 = a1",
        "SELECT x1 FROM t1, t3 WHERE a1 = b3",
        "SELECT x1 FROM t1, t3 WHERE a1 = b3 AND a1 = 2",
        "SELECT x1 FROM t1, t3 WHERE a1 = b3 AND a1 = 3",
    ]
    for file, sizes in (("select5", [2, 2, 1]), ("select4", [2, 2, 1])):
        queries = [
            Query(file, line, "I", "nosort", None, sql, Expected.parse([]))
            for line, sql in enumerate(sqls)
        ]
        group = Group(file, 1, {}, {}, queries)
        found = chunks(group, 2)
        assert [len(chunk) for _, chunk in found] == sizes
        assert [start for start, _ in found] == [0, 2, 4]
    assert [len(chunk) for _, chunk in chunks(Group("select5", 1, {}, {}, queries), 9)] == [2, 3]
    assert [len(chunk) for _, chunk in chunks(Group("select4", 1, {}, {}, queries), 9)] == [5]


def test_a_view_that_differs_from_its_query_is_wrong() -> None:
    query = Query("f", 1, "IR", "nosort", None, "SELECT ...", Expected.parse(["1", "2.000"] * 2))
    outcome = Outcome("f", 1, "nosort", "SELECT ...", plain="correct")
    assert judge_view(query, outcome, [(1, 2.0), (1, 2.0)], [(1, 2.0), (1, 2)]) == "correct"
    assert judge_view(query, outcome, [(1, 2.0), (1, 2.0)], [(1, 2.0)]) == "wrong"
    assert "only in plain (1): (1, 2.0)" in outcome.detail
    assert judge_view(query, outcome, [(1, 2.0), (1, 2.0)], [(1, 2.0), (1, 2.5)]) == "wrong"
    outcome.plain = "wrong"  # a dialect difference: the view only has to match the query
    assert judge_view(query, outcome, [(5, None)], [(5, None)]) == "correct"
    assert judge_view(query, outcome, [(5, None)], [(5, 0.0)]) == "wrong"


def test_recorded_parts_merge_into_the_ledger(
    tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A part keeps every count but only the outcomes worth reading; the ledger adds the
    parts up, says what each ran on and what is not covered, and fails on a wrong view."""
    ledger = tmp_path / "ledger"
    for number, view in ((1, "correct"), (2, "wrong")):
        summary = Summary()
        for line in (10 * number, 10 * number + 1):
            outcome = Outcome("select1", line, "rowsort", "SELECT 1", plain="correct")
            outcome.view = view if line % 10 == 0 else "correct"
            summary.add(outcome)
        record_part(summary, ledger / f"part{number}.json", provenance(["--files", "select1"]))
    part = json.loads((ledger / "part2.json").read_text())
    assert part["counts"]["queries"] == 2 and len(part["outcomes"]) == 1  # the wrong one
    assert part["provenance"]["command"] == "runner.py --files select1"

    assert print_ledger(ledger, corpus) == 1  # coverage is counted against the corpus's files
    printed = capsys.readouterr().out
    assert "SLT queries 4" in printed and "SLT view-wrong 1" in printed
    assert "SLT covered select1 4 of 1000" in printed
    assert "part part1.json: 2 queries" in printed


def test_parts_that_share_a_record_are_reported(tmp_path: Path) -> None:
    """Shards may be split later (2/8 = 2/16 + 10/16); a part that repeats another's
    records is reported, whatever the shard counts."""
    for name, command in (
        ("a", "--files select4 --shard 2/8"),
        ("b", "--files select4 --shard 10/16"),  # inside a: overlaps
        ("c", "--files select4 --shard 3/16"),  # in 3/8: none of a's
        ("d", "--files select5 --shard 2/8"),  # another file
        ("e", "--files select4,select5 --shard 1/8"),  # 1/8 of both: none of a's, d's
        ("f", "--files select5 --records 1-3 --shard 2/2"),  # record 2 (index 1): d's
        ("g", "--files select5 --records 4-9"),  # indices 3-8: none of d's (1, 9, …)
    ):
        record_part(Summary(), tmp_path / f"{name}.json", provenance(command.split()))
    parts = sorted(tmp_path.glob("*.json"))
    totals = {"select4": 2832, "select5": 732}
    # e's select5 records have the indices 0, 8, …: one of g's
    expected = [("a.json", "b.json"), ("d.json", "f.json"), ("e.json", "g.json")]
    assert overlapping_parts(parts, totals) == expected
    # With 2831 select4 records, e's select5 records are 1, 9, …: d's (2/8 of select5 alone).
    totals = {"select4": 2831, "select5": 732}
    expected = [("a.json", "b.json"), ("d.json", "e.json"), ("d.json", "f.json")]
    expected.append(("e.json", "f.json"))
    assert overlapping_parts(parts, totals) == expected
