"""Irrelevance filters: refresh after a large, mostly irrelevant change (issue: irrelevance).

A change of which 99% provably cannot affect the view should refresh about as fast as a change
of only the 1% that can (Blakeley et al. 1986, §4): the refresh drops each base table's
irrelevant changed rows before the joins. The script builds, in its own database, ``fact``
(parquet, ``FILES`` files, default 2M rows; columns as in bench/refresh.py, ``flag`` uniform in
0..99), a copy ``fact_rel`` of it and ``dim`` (1,000 rows, ``region = k1 % 20``), and two
selective join views:

- direct: ``SELECT f.id, f.amount, d.name FROM fact f JOIN dim d ON f.k1 = d.k1
  WHERE f.flag < 1`` (1% of the fact rows). Spark's optimizer pushes ``flag < 1`` through the
  join and the change's consolidation into the change-log scan by itself, so here the filters
  save nothing and cost their own fixed price (their analysis on the driver, and the job that
  counts ``irrelevant_rows``): expect filters off ≈ on, or a little faster;
- implied: the same join ``WHERE f.flag <= d.region AND d.region < 1`` (0.05% of the fact
  rows). Only the filters derive ``flag <= 0`` for a changed ``fact`` row (Spark infers no
  inequality across a join); without them the whole change is read, consolidated (a shuffle)
  and joined.

Each view is created four times, so that all copies have consumed the same versions:

- ``*_on`` over ``fact``: refreshed with the filters on (the default);
- ``*_off`` over ``fact``: refreshed with ``spark.sparkmv.irrelevanceFilters.enabled=false``
  (set just before its refresh, restored just after);
- ``*_rel`` over ``fact_rel``: filters on, but its table only ever receives the rows of each
  change that pass the filter (``flag <= 0``): the time to beat;
- ``*_full`` over ``fact``: ``REFRESH ... FULL`` (recompute over all of ``fact``), for scale.

Each INSERT round adds N new rows to ``fact`` (default 1M; fresh ids after the load and the
earlier rounds) whose ``flag`` is 0 for ``id % 100 = 0`` (1%, relevant) and 1..99 otherwise
(99%, provably irrelevant), and the same relevant rows to ``fact_rel``; then the eight
refreshes, their order reversed every other round. Each DELETE round then deletes
``id % 100 = r`` (r = 1, 2, ...) from ``fact`` (1% of the rows, spread over every file, by
copy-on-write; the deleted inserted rows all have flag >= 1, and 1% of the loaded ones have
flag 0) and only the relevant ones among them (``... AND flag < 1``) from ``fact_rel``, and
refreshes again. The writes are not timed (capture's cost is bench/capture.py's subject).

Printed per phase, view and case: the changed base rows of one round, the ``irrelevant_rows``
the refresh reported (the changed rows its filters dropped), the median refresh time over the
rounds and the part of it during which a Spark job ran, the median number of Spark jobs, the
mode, Δview, and the check: after each phase every view is compared with its query as a
multiset (``EXCEPT ALL`` both ways, and the counts), OK or WRONG. Then the ratios "filters on /
relevant only" (should be close to 1), "filters off / filters on" and "full / filters on". The
filters ``EXPLAIN REFRESH`` shows for each view are printed as well. A tiny copy of the whole
run goes first, unprinted, so that JVM warm-up does not land in the first measurement.

``python bench/irrelevance.py [fact_rows] [delta_rows] [rounds]`` (defaults 2M, 1M, 3).
Not a test: nothing is asserted.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field

from common import Timed, bench_session, mismatch, print_header, refresh
from pyspark.sql import SparkSession

FILES = 12
RELEVANT_EVERY = 100  # 1 changed row in 100 is relevant (id % 100 = 0 inserted, flag 0)
WARM_UP = (20_000, 10_000)  # fact rows, delta rows
FILTERS_CONF = "spark.sparkmv.irrelevanceFilters.enabled"

# Deterministic pseudo-random columns of fact row ``id`` (the load: flag uniform in 0..99).
FACT_COLUMNS = (
    "id",
    "CAST(pmod(hash(id, 1), 1000) AS INT) AS k1",
    "CAST(pmod(hash(id, 2), 100) AS INT) AS k2",
    "CAST(pmod(hash(id, 3), 10000000) / 100 AS DECIMAL(12,2)) AS amount",
    "CAST(pmod(hash(id, 4), 100) AS INT) AS flag",
    "concat('note-', CAST(pmod(hash(id, 5), 100000) AS STRING)) AS note",
)
# The inserted rows: flag 0 (passes the views' filters) exactly when id % 100 = 0.
DELTA_COLUMNS = tuple(
    f"CAST(IF(id % {RELEVANT_EVERY} = 0, 0, 1 + pmod(hash(id, 4), 99)) AS INT) AS flag"
    if column.endswith(" AS flag")
    else column
    for column in FACT_COLUMNS
)
JOIN = "SELECT f.id, f.amount, d.name FROM {fact} f JOIN dim d ON f.k1 = d.k1"
VIEWS = {  # label: (view name prefix, query with {fact} for the fact table)
    "direct": ("d", f"{JOIN} WHERE f.flag < 1"),
    "implied": ("i", f"{JOIN} WHERE f.flag <= d.region AND d.region < 1"),
}


@dataclass(frozen=True)
class Case:
    label: str
    suffix: str  # of the view's name
    table: str  # the fact table the view reads
    filters: bool = True  # irrelevance filters on during its refresh
    full: bool = False  # REFRESH ... FULL

    def view(self, prefix: str) -> str:
        return f"{prefix}_{self.suffix}"

    def statement(self, prefix: str) -> str:
        return f"REFRESH MATERIALIZED VIEW {self.view(prefix)}{' FULL' if self.full else ''}"


CASES = (
    Case("filters on", "on", "fact"),
    Case("filters off", "off", "fact", filters=False),
    Case("relevant-only delta", "rel", "fact_rel"),
    Case("full refresh", "full", "fact", full=True),
)
PHASES = ("INSERT", "DELETE")


@dataclass
class Phase:
    changed: dict[str, list[int]] = field(default_factory=dict)  # rows per round, per table
    timed: dict[tuple[str, str], Timed] = field(default_factory=dict)  # (view, case)
    wrong: dict[tuple[str, str], str | None] = field(default_factory=dict)  # mismatches


@dataclass
class Result:
    fact_rows: int
    delta_rows: int
    rounds: int
    explain: dict[str, list[str]] = field(default_factory=dict)  # the Δ lines, per view
    phases: dict[str, Phase] = field(default_factory=lambda: {name: Phase() for name in PHASES})


def refresh_with_filters(spark: SparkSession, statement: str, filters: bool, into: Timed) -> None:
    """One refresh with the irrelevance filters on or off (restored to on afterwards)."""
    spark.conf.set(FILTERS_CONF, str(filters).lower())
    try:
        refresh(spark, statement, into)
    finally:
        spark.conf.set(FILTERS_CONF, "true")


def load(spark: SparkSession, rows: int) -> None:
    fact = spark.range(rows).selectExpr(*FACT_COLUMNS).repartition(FILES)
    for table in ("fact", "fact_rel"):  # the same rows
        fact.write.format("parquet").saveAsTable(table)
    spark.range(1000).selectExpr(
        "CAST(id AS INT) AS k1", "concat('name-', id) AS name", "CAST(id % 20 AS INT) AS region"
    ).coalesce(1).write.format("parquet").saveAsTable("dim")
    for prefix, query in VIEWS.values():
        for case in CASES:
            body = query.format(fact=case.table)
            spark.sql(f"CREATE MATERIALIZED VIEW {case.view(prefix)} AS {body}")


def insert(spark: SparkSession, result: Result, round_: int) -> None:
    """``delta_rows`` new rows into ``fact``, the relevant ones among them into ``fact_rel``."""
    start = result.fact_rows + round_ * result.delta_rows
    end = start + result.delta_rows
    rows = f"SELECT {', '.join(DELTA_COLUMNS)} FROM range({start}, {end})"
    spark.sql(f"INSERT INTO fact {rows}")
    spark.sql(f"INSERT INTO fact_rel {rows} WHERE id % {RELEVANT_EVERY} = 0")
    changed = result.phases["INSERT"].changed
    changed.setdefault("fact", []).append(result.delta_rows)
    relevant = range(start + (-start % RELEVANT_EVERY), end, RELEVANT_EVERY)
    changed.setdefault("fact_rel", []).append(len(relevant))


def delete(spark: SparkSession, result: Result, round_: int) -> None:
    """The rows with ``id % 100 = 1 + round_`` from ``fact``, the relevant ones among them
    (``flag < 1``) from ``fact_rel``."""
    where = f"id % {RELEVANT_EVERY} = {1 + round_}"
    changed = result.phases["DELETE"].changed
    for table, condition in (("fact", where), ("fact_rel", f"{where} AND flag < 1")):
        affected = spark.sql(f"DELETE FROM {table} WHERE {condition}").collect()[0][0]
        changed.setdefault(table, []).append(int(affected))


def explain(spark: SparkSession, result: Result) -> None:
    """The irrelevance filters and delta terms ``EXPLAIN REFRESH`` shows for each view."""
    for label, (prefix, _) in VIEWS.items():
        statement = f"EXPLAIN REFRESH MATERIALIZED VIEW {CASES[0].view(prefix)}"
        lines = str(spark.sql(statement).collect()[0][0]).splitlines()
        result.explain[label] = [line.strip() for line in lines if line.lstrip().startswith("Δ")]


def run(spark: SparkSession, result: Result, database: str) -> Result:
    spark.sql(f"CREATE DATABASE {database}")
    spark.sql(f"USE {database}")
    try:
        load(spark, result.fact_rows)
        refreshes = [
            (label, prefix, case) for label, (prefix, _) in VIEWS.items() for case in CASES
        ]
        for name, write in (("INSERT", insert), ("DELETE", delete)):
            phase = result.phases[name]
            for round_ in range(result.rounds):
                write(spark, result, round_)
                if not result.explain:
                    explain(spark, result)
                for label, prefix, case in refreshes[:: 1 if round_ % 2 == 0 else -1]:
                    into = phase.timed.setdefault((label, case.label), Timed())
                    refresh_with_filters(spark, case.statement(prefix), case.filters, into)
            for label, prefix, case in refreshes:
                query = VIEWS[label][1].format(fact=case.table)
                phase.wrong[label, case.label] = mismatch(spark, case.view(prefix), query)
    finally:  # drop everything: the disk is shared
        for prefix, _ in VIEWS.values():
            for case in CASES:
                spark.sql(f"DROP MATERIALIZED VIEW IF EXISTS {case.view(prefix)}")
        for table in ("fact", "fact_rel", "dim"):
            spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql("USE default")
        spark.sql(f"DROP DATABASE {database}")
    return result


def report(result: Result) -> None:
    print(
        f"\nfact: {result.fact_rows:,} rows loaded ({FILES} files), dim: 1,000 rows; "
        f"{result.rounds} INSERT rounds of {result.delta_rows:,} rows (1% relevant), then "
        f"{result.rounds} DELETE rounds of 1% of fact; medians over the rounds"
    )
    for label, (prefix, query) in VIEWS.items():
        print(f"\n{label}: {query.format(fact='fact')}")
        print(f"  EXPLAIN REFRESH MATERIALIZED VIEW {CASES[0].view(prefix)}:")
        for line in result.explain[label]:
            print(f"    {line}")
    header = (
        f"{'phase':<7} {'view':<8} {'case':<20} {'Δ base rows':>12} {'irrelevant':>11} "
        f"{'seconds':>8} {'in jobs':>8} {'jobs':>5}  {'mode':<11} {'Δview':>13} check"
    )
    print()
    print_header(header)
    for name, phase in result.phases.items():
        for label in VIEWS:
            for case in CASES:
                timed = phase.timed[label, case.label]
                changed = statistics.median(phase.changed[case.table])
                print(
                    f"{name:<7} {label:<8} {case.label:<20} {changed:>12,.0f} "
                    f"{statistics.median(timed.irrelevant):>11,.0f} {timed.median:8.2f} "
                    f"{statistics.median(timed.in_jobs):8.2f} "
                    f"{statistics.median(timed.jobs):5.0f}  {timed.mode:<11} "
                    f"{timed.changes[-1]:>13} "
                    f"{'WRONG' if phase.wrong[label, case.label] else 'OK'}"
                )
    print(
        "  Δ base rows: changed rows of the view's fact table per round; irrelevant: the\n"
        "  irrelevant_rows the refresh reported; in jobs: the part of the time during which\n"
        "  a Spark job ran (the rest is driver work); jobs: Spark jobs launched; Δview:\n"
        "  rows_inserted/rows_deleted the refresh reported (last round)"
    )
    for name, phase in result.phases.items():
        for (label, case_label), wrong in phase.wrong.items():
            if wrong:
                print(f"  WRONG after the {name} rounds ({label}, {case_label}): {wrong}")
        for (label, case_label), timed in phase.timed.items():
            for mode, reason in zip(timed.modes, timed.reasons, strict=True):
                if mode != "INCREMENTAL" and case_label != CASES[-1].label:
                    print(f"  {name} {label} {case_label} refreshed {mode}: {reason}")

    print()
    for name, phase in result.phases.items():
        for label in VIEWS:
            on, off, relevant, full = (phase.timed[label, case.label].median for case in CASES)
            print(
                f"{name} {label:<8} filters on / relevant only {on / relevant:5.2f}x, "
                f"filters off / filters on {off / on:5.2f}x, full / filters on {full / on:5.2f}x"
            )


def main() -> None:
    fact_rows = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
    delta_rows = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as warehouse:
        spark = bench_session(warehouse)
        # warm-up: JIT, codegen, metastore connections; not printed
        run(spark, Result(*WARM_UP, 1), "bench_irrelevance_warm_up")
        result = run(spark, Result(fact_rows, delta_rows, rounds), "bench_irrelevance")
        report(result)
        spark.stop()
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
