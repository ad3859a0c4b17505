"""Where incremental refresh stops paying: full vs incremental vs AUTO by change size (issue 23).

Three views, each created three times with the same statement (policy AUTO) so that the copies
always consume the same base-table versions:

- TPC-H Q1 (one table: ``lineitem``) and Q3 (``customer ⋈ orders ⋈ lineitem``), their query text,
  data (DuckDB's ``tpch`` extension, cached in ``bench/.data/``) and load taken from
  ``bench/tpch.py``;
- filter-project over the synthetic ``fact`` table of ``bench/refresh.py`` (its columns, file
  count and view text).

The change size is swept over 0.01 %, 0.1 %, 1 %, 10 % and 50 % of the fact rows, in that order,
each size one change (``--rounds``: that many) applied to the same tables:

- TPC-H: TPC-H's refresh functions (``tpch.rf1``/``tpch.rf2``) on that share of the orders,
  counted when the change starts: RF1 inserts copies of that many orders spread at random, with
  their lineitems, under new keys above every key there is; RF2 deletes as many other orders
  spread at random (orders that were there before RF1) with their lineitems. Orders have 1–7
  lineitems, 4 on average, so about the same share of ``lineitem`` changes.
- fact: that many new rows (new ids, ``refresh.FACT_COLUMNS``) inserted, as many of the rows that
  were there before deleted, spread at random (by copy-on-write, over every file).

"At random" is seeded (``--seed``) and deterministic: the rows with the smallest
``xxhash64(key, seed, round, purpose)``, exactly as many as asked. The writes are not timed as
refreshes (that is capture's cost); their seconds are in the JSON.

After each change every view's three copies are refreshed, in an order that changes by turns
(``ORDERS``): ``REFRESH MATERIALIZED VIEW v_inc INCREMENTAL`` (forced incremental), ``REFRESH
MATERIALIZED VIEW v_full FULL`` (forced full) and ``REFRESH MATERIALIZED VIEW v_auto`` (policy
AUTO: whatever the product picks, reported with its reason). Each is measured by
``common.refresh``: wall time, Spark jobs, py4j round trips, the mode and reason it reported. A
forced refresh that reports another mode than it was asked for is flagged (and its case is not
judged). Then each copy is compared with the view's query as a multiset (``common.mismatch``).
The forced incremental refresh always runs before AUTO's: the first incremental refresh of a
change compiles a dozen or more classes of generated code (Spark's codegen cache; a full
refresh's plan is the same from change to change and compiles next to none), and a second
incremental refresh of the same change reuses them. So the forced incremental time is what a
view refreshed alone pays, and an incremental AUTO refresh's time is lower by that compile.

The cheaper mode of a case (a view at a change size) is the forced refresh with the lower
(median) time; within ``TIE`` (10 %) of each other it is a tie and either choice is right. The
table shows, per case, the three times, AUTO's mode, whether it picked the cheaper mode, the
incremental refresh's Spark jobs and py4j round trips, and the check; below it, how often AUTO
picked the cheaper mode (Databricks' Enzyme reports 87.5 % on TPC-DI), AUTO's reasons and
anything wrong. The results are written to ``<out>/crossover.json`` and charted in
``<out>/crossover.svg`` (one panel per view: seconds by change size, log x axis; full,
incremental and AUTO, AUTO's mode marked at each point). A small copy of the
fact part (20,000 rows, one change size) goes first, unprinted, and on each data set one change
of the first size (``--warm-up-rounds``) is applied and refreshed, unrecorded, before the sweep:
the first refreshes of each kind in a process run slow (JVM warm-up of their code paths), and
would otherwise land in the first measurement. With one change per size a single sample
decides which mode is cheaper, and on a shared machine samples of one refresh can differ by 2x:
``--rounds 3`` takes medians (three times as long).

``python bench/crossover.py [--sf 0.1] [--fact-rows 1000000] [--sizes 0.01 0.1 1 10 50]
[--rounds 1] [--seed 5] [--warm-up-rounds 1] [--out bench/results]``. With the defaults 6 minutes
on a quiet 2-core machine, 10-13 on a busy one. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path

import sparkmv
from common import Py4jCalls, Timed, bench_session, mismatch, print_header, refresh
from pyspark.sql import SparkSession
from refresh import FACT_COLUMNS, FILES, VIEWS
from tpch import TABLES, SfResult, Writes, generate, read_query, rf1, rf2, scalar, sf_name
from tpch import load as load_tpch

SIZES = (0.01, 0.1, 1.0, 10.0, 50.0)  # percent of the fact rows
DEFAULT_SF = 0.1
DEFAULT_FACT_ROWS = 1_000_000
SEED = 5
TIE = 0.10  # forced times within 10 % of each other: either mode is the cheaper one
WARM_UP_FACT_ROWS = 20_000
WARM_UP_SIZES = (1.0,)
WARM_UP_ROUNDS = 1  # per data set, before the sweep: a change of the first size, not recorded
RESULTS_DIR = Path(__file__).resolve().parent / "results"

FULL = "FULL"
INCREMENTAL = "INCREMENTAL"
# the three copies of a view: how each is refreshed, and the mode a forced refresh must report
STATEMENTS = {
    "inc": "REFRESH MATERIALIZED VIEW {} INCREMENTAL",
    "full": "REFRESH MATERIALIZED VIEW {} FULL",
    "auto": "REFRESH MATERIALIZED VIEW {}",
}
FORCED = {"inc": INCREMENTAL, "full": FULL}
SUFFIXES = tuple(STATEMENTS)
# the order of the three refreshes after a change, by turns: the forced incremental one always
# before AUTO's, as the first incremental refresh of a change compiles the generated code that a
# later copy's refresh of the same change reuses (Spark's codegen cache); see the docstring
ORDERS = (("inc", "full", "auto"), ("full", "inc", "auto"), ("inc", "auto", "full"))


@dataclass(frozen=True)
class View:
    label: str
    prefix: str
    query: str

    def name(self, suffix: str) -> str:
        return f"{self.prefix}_{suffix}"


Changed = dict[str, list[int]]  # per table: [rows deleted, rows inserted]


@dataclass
class Case:
    """One view at one change size: its three refreshes (per copy suffix) and the checks."""

    view: str
    percent: float
    changed: list[Changed] = field(default_factory=list)  # per round
    timed: dict[str, Timed] = field(default_factory=lambda: {s: Timed() for s in SUFFIXES})
    errors: dict[str, str] = field(default_factory=dict)  # per suffix, a refresh that failed
    wrong: dict[str, str] = field(default_factory=dict)  # per suffix, a copy not its query

    @property
    def stale(self) -> bool:
        """Whether only copies whose refresh failed differ from the query (they keep their old
        contents: expected)."""
        return bool(self.wrong) and set(self.wrong) <= set(self.errors)

    def seconds(self, suffix: str) -> float:
        return self.timed[suffix].median if self.timed[suffix].samples else math.nan

    @property
    def unexpected(self) -> list[str]:
        """The forced refreshes that reported another mode than the one asked for."""
        return [
            f"{suffix}: {mode} ({reason})"
            for suffix, wanted in FORCED.items()
            for mode, reason in zip(
                self.timed[suffix].modes, self.timed[suffix].reasons, strict=True
            )
            if mode != wanted
        ]

    @property
    def cheaper(self) -> str | None:
        """FULL, INCREMENTAL or "tie" by the forced refreshes' times; None: not judged (a forced
        refresh failed or did not run in the mode asked for)."""
        if any(suffix in self.errors for suffix in FORCED) or self.unexpected:
            return None
        full, incremental = self.seconds("full"), self.seconds("inc")
        if max(full, incremental) <= (1 + TIE) * min(full, incremental):
            return "tie"
        return FULL if full < incremental else INCREMENTAL

    @property
    def auto_mode(self) -> str:
        return "ERROR" if "auto" in self.errors else self.timed["auto"].mode

    @property
    def auto_right(self) -> bool | None:
        """Whether AUTO picked the cheaper mode (every round); None when the case is not judged."""
        cheaper = self.cheaper
        if cheaper is None:
            return None
        if "auto" in self.errors:
            return False
        return cheaper == "tie" or set(self.timed["auto"].modes) == {cheaper}


class TpchData:
    """TPC-H's eight tables at one SF (bench/tpch.py's data and load), views Q1 and Q3."""

    name = "tpch"

    def __init__(self, sf: float, data: Path, seed: int) -> None:
        self.sf, self.data, self.seed = sf, data, seed
        self.views = [
            View(f"TPC-H Q{query.number}", f"q{query.number}", query.body)
            for query in (read_query(1), read_query(3))
        ]
        self.tables = TABLES
        self.fact = "lineitem"
        self.round = 0
        self.writes = Writes()
        self.phases: dict[str, float] = {}
        self.rows: dict[str, int] = {}

    @property
    def description(self) -> str:
        return f"SF {sf_name(self.sf)}: " + ", ".join(
            f"{table} {self.rows[table]:,}" for table in ("orders", "lineitem")
        )

    def load(self, spark: SparkSession) -> None:
        result = SfResult(self.sf)
        load_tpch(spark, self.data, result)
        self.rows = result.rows

    def change(self, spark: SparkSession, percent: float) -> Changed:
        """RF1 + RF2 on ``percent`` % of the orders (spread at random), with their lineitems."""
        before = Writes(dict(self.writes.inserted), dict(self.writes.deleted))
        orders = max(round(percent / 100 * scalar(spark, "SELECT count(*) FROM orders")), 1)
        offset = scalar(spark, "SELECT max(o_orderkey) FROM orders") + 1  # new keys: above all
        rf1(spark, self._sample(spark, orders, "copy", offset), offset, self.writes)
        rf2(spark, self._sample(spark, orders, "delete", offset), self.writes)  # not the copies
        self.round += 1
        return {
            table: [
                self.writes.deleted[table] - before.deleted.get(table, 0),
                self.writes.inserted[table] - before.inserted.get(table, 0),
            ]
            for table in ("orders", "lineitem")
        }

    def _sample(
        self, spark: SparkSession, count: int, purpose: str, below: int
    ) -> Callable[[str], str]:
        """The ``count`` orders with keys below ``below`` and the smallest hash of key, seed,
        round and ``purpose``, as a condition on an order-key column."""

        def hashed(key: str) -> str:
            return f"xxhash64({key}, {self.seed}, {self.round}, '{purpose}')"

        bound = scalar(
            spark,
            f"SELECT max(h) FROM (SELECT {hashed('o_orderkey')} AS h FROM orders "
            f"WHERE o_orderkey < {below} ORDER BY h LIMIT {count})",
        )
        return lambda key: f"{key} < {below} AND {hashed(key)} <= {bound}"


class FactData:
    """bench/refresh.py's synthetic fact table and its filter-project view."""

    name = "fact"

    def __init__(self, rows: int, seed: int) -> None:
        self.rows, self.seed = rows, seed
        prefix, query = VIEWS["filter-project"]
        self.views = [View("filter-project", prefix, query)]
        self.tables = ("fact",)
        self.fact = "fact"
        self.round = 0
        self.next_id = rows
        self.seconds: dict[str, list[float]] = {}
        self.phases: dict[str, float] = {}

    @property
    def description(self) -> str:
        return f"fact {self.rows:,} rows"

    def load(self, spark: SparkSession) -> None:
        spark.range(self.rows).selectExpr(*FACT_COLUMNS).repartition(FILES).write.format(
            "parquet"
        ).saveAsTable("fact")

    def _time(self, spark: SparkSession, kind: str, statement: str) -> int:
        started = time.perf_counter()
        rows = spark.sql(statement).collect()
        self.seconds.setdefault(kind, []).append(time.perf_counter() - started)
        return int(rows[0][0]) if rows else 0

    def change(self, spark: SparkSession, percent: float) -> Changed:
        """Insert ``percent`` % new rows, delete as many of the old ones, spread at random."""
        count = max(round(percent / 100 * scalar(spark, "SELECT count(*) FROM fact")), 1)
        start = self.next_id
        self._time(
            spark,
            "INSERT fact",
            f"INSERT INTO fact SELECT {', '.join(FACT_COLUMNS)} "
            f"FROM range({start}, {start + count})",
        )
        self.next_id += count
        hashed = f"xxhash64(id, {self.seed}, {self.round}, 'delete')"
        bound = scalar(
            spark,
            f"SELECT max(h) FROM (SELECT {hashed} AS h FROM fact WHERE id < {start} "
            f"ORDER BY h LIMIT {count})",
        )
        deleted = self._time(
            spark, "DELETE fact", f"DELETE FROM fact WHERE id < {start} AND {hashed} <= {bound}"
        )
        self.round += 1
        return {"fact": [deleted, count]}


Data = TpchData | FactData


def run_data(
    spark: SparkSession,
    calls: Py4jCalls,
    data: Data,
    sizes: list[float],
    rounds: int,
    database: str,
    warm_up_rounds: int = 0,
) -> list[Case]:
    """Load ``data``, create three copies of each of its views, sweep the change sizes (after
    ``warm_up_rounds`` changes of the first size whose refreshes are not recorded)."""
    spark.sql(f"CREATE DATABASE {database}")
    spark.sql(f"USE {database}")
    phases = data.phases  # seconds per phase, for the budget

    def timed(phase: str, started: float) -> None:
        phases[phase] = phases.get(phase, 0.0) + time.perf_counter() - started

    try:
        started = time.perf_counter()
        data.load(spark)
        timed("load", started)
        started = time.perf_counter()
        for view in data.views:
            for suffix in SUFFIXES:
                spark.sql(f"CREATE MATERIALIZED VIEW {view.name(suffix)} AS {view.query}")
        timed("create", started)
        started = time.perf_counter()
        for _ in range(warm_up_rounds):  # the first refreshes of each kind run slow: JVM warm-up
            data.change(spark, sizes[0])
            for view in data.views:
                for suffix in SUFFIXES:
                    statement = STATEMENTS[suffix].format(view.name(suffix))
                    try:
                        refresh(spark, statement, Timed(), calls)
                    except Exception as error:
                        print(f"warm-up: {statement} failed: {str(error)[:500]}")
        timed("warm-up", started)
        cases = []
        changes = 0
        for percent in sizes:
            by_view = {view.label: Case(view.label, percent) for view in data.views}
            for _ in range(rounds):
                started = time.perf_counter()
                changed = data.change(spark, percent)
                timed("change", started)
                started = time.perf_counter()
                order = ORDERS[changes % len(ORDERS)]
                changes += 1
                for view in data.views:
                    case = by_view[view.label]
                    case.changed.append(changed)
                    for suffix in order:
                        statement = STATEMENTS[suffix].format(view.name(suffix))
                        try:
                            refresh(spark, statement, case.timed[suffix], calls)
                        except Exception as error:  # report it, go on with the other copies
                            case.errors[suffix] = f"{statement}: {str(error)[:500]}"
                timed("refresh", started)
            started = time.perf_counter()
            for view in data.views:
                by_view[view.label].wrong = check(spark, view)
            timed("check", started)
            cases.extend(by_view.values())
        return cases
    finally:  # drop everything: the next data set needs the disk
        spark.catalog.dropTempView("expected")
        for view in data.views:
            for suffix in SUFFIXES:
                spark.sql(f"DROP MATERIALIZED VIEW IF EXISTS {view.name(suffix)}")
        for table in data.tables:
            spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql("USE default")
        spark.sql(f"DROP DATABASE {database}")


def check(spark: SparkSession, view: View) -> dict[str, str]:
    """Each copy of ``view`` against its query (run once, cached): what differs, by suffix."""
    expected = spark.sql(view.query).cache()
    expected.createOrReplaceTempView("expected")
    try:
        found = {
            suffix: mismatch(spark, view.name(suffix), "SELECT * FROM expected")
            for suffix in SUFFIXES
        }
        return {suffix: text for suffix, text in found.items() if text is not None}
    finally:
        expected.unpersist()


def yes_no(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "NO"


def seconds_cell(case: Case, suffix: str) -> str:
    return "error" if suffix in case.errors else f"{case.seconds(suffix):.2f}"


def fact_change(case: Case, data: dict[str, Data]) -> str:
    """The fact table's rows deleted/inserted by the case's (last) change."""
    table = next(d.fact for d in data.values() if any(v.label == case.view for v in d.views))
    deleted, inserted = case.changed[-1][table]
    return f"-{deleted:,}/+{inserted:,}"


def report(cases: list[Case], data: dict[str, Data], rounds: int) -> str:
    """Print the table and the notes under it; the closing summary line."""
    print(
        f"\nrefresh after deleting and inserting a share of the fact rows (lineitem: with their "
        f"orders); {'median of ' + str(rounds) + ' changes' if rounds > 1 else 'one change'} "
        "per size"
    )
    header = (
        f"{'view':<15} {'change':>7} {'fact Δ (-/+)':>17} {'full s':>7} {'incr s':>7} "
        f"{'AUTO s':>7}  {'AUTO mode':<12} {'cheaper':<11} {'AUTO ok':<7} {'jobs i':>6} "
        f"{'py4j i':>6}  check"
    )
    print_header(header)
    for case in cases:
        incremental = case.timed["inc"]
        jobs = f"{statistics.median(incremental.jobs):g}" if incremental.jobs else "-"
        calls = f"{statistics.median(incremental.calls):.0f}" if incremental.calls else "-"
        flags = "stale" if case.stale else "WRONG" if case.wrong else "OK"
        if case.unexpected:
            flags += " mode!"
        if case.errors:
            flags += " error!"
        print(
            f"{case.view:<15} {case.percent:>6g}% {fact_change(case, data):>17} "
            f"{seconds_cell(case, 'full'):>7} {seconds_cell(case, 'inc'):>7} "
            f"{seconds_cell(case, 'auto'):>7}  {case.auto_mode:<12} {case.cheaper or '-':<11} "
            f"{yes_no(case.auto_right):<7} {jobs:>6} {calls:>6}  {flags}"
        )
    print(
        "  fact Δ: rows deleted/inserted of lineitem (TPC-H) or fact, changes of every table "
        "below;\n"
        f"  cheaper: the forced refresh with the lower time (tie: within {TIE:.0%}, either is "
        "right); jobs i / py4j i: Spark jobs and"
    )
    print(
        "  py4j round trips of the forced incremental refresh; check: all three copies vs the "
        "query (mode!: a forced refresh"
    )
    print(
        "  reported another mode; error!: a refresh failed; stale: only copies whose refresh "
        "failed differ); AUTO s, when incremental,"
    )
    print(
        "  reuses the generated code the forced incremental refresh of the same change compiled "
        "(it runs first)"
    )
    for case in cases:
        for suffix, found in case.wrong.items():
            failed = " (its refresh failed)" if suffix in case.errors else ""
            print(f"  WRONG {case.view} at {case.percent:g} %: {found}{failed}")
        for found in case.unexpected:
            print(f"  MODE {case.view} at {case.percent:g} %: {found}")
        for suffix, error in case.errors.items():
            print(f"  ERROR {case.view} at {case.percent:g} % ({suffix}): {error}")
    for percent in dict.fromkeys(case.percent for case in cases):
        changed = {
            table: counts
            for case in cases
            if case.percent == percent
            for table, counts in case.changed[-1].items()
        }
        print(
            f"  change {percent:g} %: "
            + ", ".join(f"{table} -{d:,}/+{i:,}" for table, (d, i) in changed.items())
        )
    reasons = sorted(
        {
            (mode, reason)
            for case in cases
            for mode, reason in zip(
                case.timed["auto"].modes, case.timed["auto"].reasons, strict=True
            )
        }
    )
    for mode, reason in reasons:
        print(f"  AUTO {mode}: {reason}")

    judged = [case for case in cases if case.auto_right is not None]
    right = sum(bool(case.auto_right) for case in judged)
    ties = sum(case.cheaper == "tie" for case in judged)
    summary = (
        f"AUTO picked the cheaper mode in {right} of {len(judged)} cases "
        f"({100 * right / len(judged) if judged else 0:.1f} %)"
    )
    print(f"\n{summary}")
    print(
        f"  ({ties} ties within {TIE:.0%}; {len(cases) - len(judged)} cases not judged; "
        "Databricks' Enzyme reports 87.5 % on TPC-DI)"
    )
    timed = [case for case in judged if "auto" not in case.errors]
    if timed:
        total = {suffix: sum(case.seconds(suffix) for case in timed) for suffix in SUFFIXES}
        best = sum(min(case.seconds("full"), case.seconds("inc")) for case in timed)
        print(
            f"  refresh seconds over those cases: AUTO {total['auto']:.1f}, always full "
            f"{total['full']:.1f}, always incremental {total['inc']:.1f}, the cheaper each "
            f"time {best:.1f}"
        )
    return summary


def chart(cases: list[Case], data: dict[str, Data], path: Path, title: str) -> None:
    """One panel per view: seconds by change size (log x) for full, incremental and AUTO; AUTO's
    mode marked at each point (a red ring: not the cheaper mode)."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    labels = list(dict.fromkeys(case.view for case in cases))
    figure = Figure(figsize=(5 * len(labels), 4.6), layout="constrained")
    axes = figure.subplots(1, len(labels), squeeze=False)[0]
    markers = {INCREMENTAL: "o", FULL: "s"}
    for ax, label in zip(axes, labels, strict=True):
        own = [case for case in cases if case.view == label]
        x = [case.percent for case in own]
        ax.plot(x, [case.seconds("full") for case in own], color="tab:blue", label="full")
        ax.plot(x, [case.seconds("inc") for case in own], color="tab:orange", label="incremental")
        ax.plot(x, [case.seconds("auto") for case in own], color="tab:green", ls="--", label="AUTO")
        for case in own:
            mode = case.auto_mode
            y = case.seconds("auto")
            ax.plot(
                case.percent,
                y,
                marker=markers.get(mode, "X"),
                color="tab:green",
                markersize=8,
                ls="none",
            )
            ax.annotate(
                {INCREMENTAL: "inc", FULL: "full"}.get(mode, mode),
                (case.percent, y),
                textcoords="offset points",
                xytext=(0, 8),
                ha="center",
                fontsize=8,
                color="tab:green",
            )
            if case.auto_right is False:
                ax.plot(
                    case.percent, y, marker="o", markersize=15, mfc="none", mec="red", ls="none"
                )
        ax.set_xscale("log")
        ax.set_xticks(x, [f"{percent:g} %" for percent in x])
        ax.minorticks_off()
        measured = [case.seconds(suffix) for case in own for suffix in SUFFIXES]
        ax.set_ylim(0, 1.15 * max([y for y in measured if not math.isnan(y)], default=1.0))
        ax.set_xlabel("change (share of the fact rows deleted, as many inserted)")
        ax.set_ylabel("refresh seconds")
        source = next(d for d in data.values() if any(v.label == label for v in d.views))
        ax.set_title(f"{label} ({source.description})", fontsize=10)
        ax.grid(True, alpha=0.3)
    axes[0].legend(
        handles=[
            *axes[0].get_lines()[:3],
            Line2D([], [], marker="o", color="tab:green", ls="none", label="AUTO: incremental"),
            Line2D([], [], marker="s", color="tab:green", ls="none", label="AUTO: full"),
            Line2D(
                [], [], marker="o", mfc="none", mec="red", ls="none", label="AUTO not the cheaper"
            ),
        ],
        fontsize=8,
    )
    figure.suptitle(title, fontsize=11)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, metadata={"Date": None} if path.suffix == ".svg" else None)


def git(*arguments: str) -> str:
    """What ``git <arguments>`` prints in this repository ("" when it cannot run)."""
    try:
        return subprocess.run(
            ["git", *arguments],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def timed_json(timed: Timed) -> dict[str, object]:
    found: dict[str, object] = {f.name: getattr(timed, f.name) for f in fields(timed)}
    found["call_kinds"] = [dict(kinds) for kinds in timed.call_kinds]
    return found


def write_json(
    path: Path, cases: list[Case], data: dict[str, Data], args: argparse.Namespace, extra: dict
) -> None:
    payload = {
        "commit": git("rev-parse", "HEAD"),
        "package": str(Path(sparkmv.__file__).parent),  # the sparkmv that ran
        "package_changes": git("status", "--porcelain", "--", str(Path(sparkmv.__file__).parent)),
        "arguments": vars(args) | {"out": str(args.out)},
        "tie": TIE,
        "data": {name: d.description for name, d in data.items()},
        "phase_seconds": {name: d.phases for name, d in data.items()},
        "writes_seconds": {
            name: d.writes.seconds if isinstance(d, TpchData) else d.seconds
            for name, d in data.items()
        },
        **extra,
        "cases": [
            {
                "view": case.view,
                "change_percent": case.percent,
                "changed": case.changed,
                "seconds": {
                    suffix: None if math.isnan(case.seconds(suffix)) else case.seconds(suffix)
                    for suffix in SUFFIXES
                },
                "auto_mode": case.auto_mode,
                "cheaper": case.cheaper,
                "auto_picked_cheaper": case.auto_right,
                "unexpected_modes": case.unexpected,
                "errors": case.errors,
                "wrong": case.wrong,
                "refreshes": {
                    {"inc": "incremental", "full": "full", "auto": "auto"}[suffix]: timed_json(
                        timed
                    )
                    for suffix, timed in case.timed.items()
                },
            }
            for case in cases
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1) + "\n")


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sf", type=float, default=DEFAULT_SF, help="TPC-H scale factor")
    parser.add_argument("--fact-rows", type=int, default=DEFAULT_FACT_ROWS)
    parser.add_argument(
        "--sizes", type=float, nargs="+", default=list(SIZES), help="change sizes, in %%"
    )
    parser.add_argument("--rounds", type=int, default=1, help="changes per size (medians)")
    parser.add_argument("--seed", type=int, default=SEED, help="of the random changes")
    parser.add_argument(
        "--warm-up-rounds",
        type=int,
        default=WARM_UP_ROUNDS,
        help="unrecorded changes of the first size per data set",
    )
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="for the svg and json")
    return parser.parse_args()


def main() -> None:
    args = arguments()
    started = time.perf_counter()
    path = generate(args.sf)[0]  # DuckDB before Spark starts (cached in bench/.data/)
    data: dict[str, Data] = {
        "tpch": TpchData(args.sf, path, args.seed),
        "fact": FactData(args.fact_rows, args.seed),
    }
    cases = []
    with tempfile.TemporaryDirectory() as warehouse:
        spark = bench_session(warehouse)
        calls = Py4jCalls(spark)
        # warm-up: JIT, codegen, metastore connections, every statement kind; not printed
        warm_up = FactData(WARM_UP_FACT_ROWS, args.seed)
        run_data(spark, calls, warm_up, list(WARM_UP_SIZES), 1, "bench_crossover_warm_up")
        for name, source in data.items():
            cases += run_data(
                spark,
                calls,
                source,
                args.sizes,
                args.rounds,
                f"bench_crossover_{name}",
                args.warm_up_rounds,
            )
        spark.stop()
    for source in data.values():
        print(
            f"{source.description}; seconds: "
            + ", ".join(f"{phase} {spent:.0f}" for phase, spent in source.phases.items())
        )
    summary = report(cases, data, args.rounds)
    total = time.perf_counter() - started
    title = (
        f"REFRESH by change size: full vs incremental vs AUTO (TPC-H SF {sf_name(args.sf)}, "
        f"{args.fact_rows:,} fact rows)"
    )
    out: Path = args.out
    chart(cases, data, out / "crossover.svg", title)
    write_json(
        out / "crossover.json", cases, data, args, {"summary": summary, "total_seconds": total}
    )
    print(f"\nwrote {out / 'crossover.svg'} and {out / 'crossover.json'}")
    print(f"total {total:.0f} s")


if __name__ == "__main__":
    main()
