"""The cost model on its own (no Spark): Hanson's crossover, the tie rule, and how a view's
measured history corrects the estimates (``plan/cost.py``)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import sqlglot
from sparkmv.analyze.relational import Aggregate, Distinct, Filter, Join, Project, Scan
from sparkmv.catalog.metadata import ModeHistory, MvMetadata, RefreshStats
from sparkmv.catalog.modes import RefreshMode, RefreshPolicy, RefreshTrigger
from sparkmv.identifiers import TableName
from sparkmv.plan.cost import (
    FIXED_MS,
    HISTORY_BASE_BYTES,
    STALE_HALF_LIFE,
    STEP_MS,
    TIE_MS,
    confidence,
    estimate_cost,
    extra_joins,
    joined_bytes,
    size,
    steps_apart,
)

KB = 1024
GB = 1024**3


def view(
    row_count: int = 10,
    history: dict[RefreshMode, ModeHistory] | None = None,
    refreshes: int = 0,
) -> MvMetadata:
    return MvMetadata(
        name=TableName("v", "db"),
        query="SELECT k, count(*) AS n FROM t GROUP BY k",
        query_database="db",
        policy=RefreshPolicy.AUTO,
        trigger=RefreshTrigger.ON_DEMAND,
        base_tables=("db.t",),
        columns=("k", "n"),
        snapshot="file:/w/_sparkmv/db/v/snapshot-1",
        row_count=row_count,
        created_ms=1,
        stats=RefreshStats(refreshes=refreshes, cost_history=history or {}),
    )


def test_a_tiny_change_of_a_tiny_table_is_incremental() -> None:
    """Both estimates are the fixed part; within ``TIE_MS`` incremental wins, even for a
    change as large as the table."""
    for change in (100, 4 * KB, 8 * KB):
        estimate = estimate_cost(view(), 8 * KB, change)
        assert estimate.cheaper() is RefreshMode.INCREMENTAL
        assert estimate.choice() == "incremental: estimated 0.3 s vs full 0.3 s"


@pytest.mark.parametrize(
    ("share", "mode"),
    [(0.001, RefreshMode.INCREMENTAL), (0.05, RefreshMode.INCREMENTAL), (0.2, RefreshMode.FULL)],
)
def test_with_no_history_a_change_of_about_a_tenth_of_the_base_breaks_even(
    share: float, mode: RefreshMode
) -> None:
    """Hanson §4: incremental cost follows the change, full cost the base tables."""
    estimate = estimate_cost(view(), GB, int(share * GB))
    assert estimate.cheaper() is mode
    assert estimate.choice().startswith(mode.value.lower() + ": estimated ")


def test_a_change_as_large_as_the_table_is_full_once_the_table_is_a_few_megabytes() -> None:
    base = 4 * 1024 * KB
    estimate = estimate_cost(view(), base, base // 2)
    assert estimate.cheaper() is RefreshMode.FULL
    assert estimate.incremental is not None
    assert estimate.incremental.estimated_ms >= estimate.full.estimated_ms + TIE_MS


def test_without_a_change_size_only_full_is_estimated() -> None:
    estimate = estimate_cost(view(row_count=1000), GB)
    assert estimate.incremental is None
    assert estimate.cheaper() is RefreshMode.FULL
    assert estimate.model_ms(RefreshMode.INCREMENTAL) == 0
    assert estimate.model_ms(RefreshMode.FULL) == estimate.full.model_ms > FIXED_MS


def test_the_measured_history_shifts_the_choice_of_a_large_view() -> None:
    """A 5 % change is incremental by default; after incremental refreshes measured at four
    times the model's estimate (and full ones as estimated), it is full."""
    base, change = 10 * GB, GB // 2
    assert estimate_cost(view(), base, change).cheaper() is RefreshMode.INCREMENTAL
    slow = {
        RefreshMode.INCREMENTAL: ModeHistory(3, mean_ms=4000.0, mean_model_ms=1000.0),
        RefreshMode.FULL: ModeHistory(1, mean_ms=2000.0, mean_model_ms=2000.0),
    }
    estimate = estimate_cost(view(history=slow), base, change)
    assert estimate.history_weight > 0.99
    assert estimate.cheaper() is RefreshMode.FULL
    assert estimate.incremental is not None
    assert estimate.incremental.model_ms == estimate_cost(view(), base, change).model_ms(
        RefreshMode.INCREMENTAL
    )  # what the refresh is measured against stays the model's


def test_a_small_views_history_barely_counts() -> None:
    """Below ``HISTORY_BASE_BYTES`` durations are mostly fixed cost; the defaults decide."""
    slow = {RefreshMode.INCREMENTAL: ModeHistory(5, mean_ms=30000.0, mean_model_ms=300.0)}
    estimate = estimate_cost(view(history=slow), 8 * KB, 4 * KB)
    assert estimate.history_weight < 0.001
    assert estimate.cheaper() is RefreshMode.INCREMENTAL
    assert estimate.choice() == "incremental: estimated 0.3 s vs full 0.3 s"
    half = estimate_cost(view(), int(HISTORY_BASE_BYTES), 0)
    assert half.history_weight == pytest.approx(0.5)


def test_the_history_means_are_exact_then_exponentially_weighted() -> None:
    history = ModeHistory()
    for duration in (100.0, 200.0, 300.0, 400.0):
        history = history.measured(duration, 50.0, 7)
    assert history == ModeHistory(4, mean_ms=250.0, mean_model_ms=50.0, last_refresh=7)
    assert history.measured(1250.0, 50.0).mean_ms == pytest.approx(500.0)  # 250 + (1250-250)/4


def test_a_planned_refresh_is_measured_against_its_estimate_once() -> None:
    stats = RefreshStats().planned(320.0)
    after = stats.after_incremental_refresh(1, 0, "why", started_ms=1000, finished_ms=1500)
    assert after.cost_history == {RefreshMode.INCREMENTAL: ModeHistory(1, 500.0, 320.0, 1)}
    assert after.planned_model_ms == 0
    again = after.after_full_refresh(3, 1, "why", started_ms=2000, finished_ms=2100)
    assert again.cost_history == after.cost_history  # nothing planned: nothing measured
    full = after.planned(900.0).after_full_refresh(3, 1, "why", 2000, 2700)
    assert full.cost_history[RefreshMode.FULL] == ModeHistory(1, 700.0, 900.0, 2)
    assert full.last_mode == "FULL"


def test_estimates_print_in_seconds_and_binary_units() -> None:
    estimate = estimate_cost(view(row_count=6), 3 * KB + 512, 1000)
    assert estimate.summary() == (
        "incremental 0.3 s (1000 B of changes), full 0.3 s (3.5 KiB of base tables, 6 view rows);"
        " history weight 0%"
    )
    assert [size(n) for n in (0, 1023, 1024, 5 * 1024**2, 3 * GB, 2048 * GB)] == [
        "0 B",
        "1023 B",
        "1.0 KiB",
        "5.0 MiB",
        "3.0 GiB",
        "2.0 TiB",
    ]


def test_one_slow_refresh_does_not_decide_alone() -> None:
    """A process's first refresh pays the JVM's warm-up: measured at 40 times the model, it
    counts a third, and a 0.1 % change of a large view stays incremental; confirmed by three
    refreshes, it decides."""
    base, change = GB, 1024 * KB
    cold = {RefreshMode.INCREMENTAL: ModeHistory(1, 16_000.0, 400.0, last_refresh=1)}
    assert confidence(cold[RefreshMode.INCREMENTAL], 1) == pytest.approx(1 / 3)
    assert estimate_cost(view(history=cold, refreshes=1), base, change).cheaper() is (
        RefreshMode.INCREMENTAL
    )
    confirmed = {
        RefreshMode.INCREMENTAL: replace(cold[RefreshMode.INCREMENTAL], refreshes=3, last_refresh=3)
    }
    assert estimate_cost(view(history=confirmed, refreshes=3), base, change).cheaper() is (
        RefreshMode.FULL
    )


def test_a_modes_history_fades_while_the_other_mode_runs() -> None:
    """After incremental refreshes measured far slower than the model, AUTO refreshes
    fully; each full refresh halves the slow history's weight every ``STALE_HALF_LIFE``, so
    AUTO tries incremental again and measures it anew, instead of never."""
    base, change = GB, 1024 * KB
    slow = ModeHistory(3, mean_ms=400_000.0, mean_model_ms=400.0, last_refresh=3)
    refreshes, chosen = 3, RefreshMode.FULL
    while chosen is RefreshMode.FULL and refreshes < 100:
        refreshes += 1
        history = {RefreshMode.INCREMENTAL: slow}
        chosen = estimate_cost(view(history=history, refreshes=refreshes), base, change).cheaper()
    assert chosen is RefreshMode.INCREMENTAL
    assert 4 < refreshes < 40
    assert confidence(slow, 3 + STALE_HALF_LIFE) == pytest.approx(0.5)
    assert confidence(replace(slow, last_refresh=0), 50) == 1.0  # a history from before


def test_a_join_change_is_estimated_with_the_inputs_it_joins() -> None:
    """Each changed input's term scans the join's other inputs (Hanson §4): a view of
    ``fact ⋈ dim`` after a change to ``fact`` reads ``dim``; after a change to both, each
    term reads the other, about the whole base."""
    fact = Scan("db.fact", ("k", "x"), ("k", "x"), "f")
    dim = Scan("db.dim", ("k2", "y"), ("k2", "y"), "d")
    joined = Join((fact, dim), sqlglot.parse_one("k = k2"))
    root = Aggregate(joined, (), (), (), ())
    sizes = {"db.fact": 900 * 1024 * KB, "db.dim": 100 * 1024 * KB}
    assert joined_bytes(root, sizes, {"db.fact"}) == sizes["db.dim"]
    assert joined_bytes(root, sizes, {"db.fact", "db.dim"}) == sum(sizes.values())
    assert joined_bytes(fact, sizes, {"db.fact"}) == 0  # no join: the change alone
    third = Scan("db.other", ("k3",), ("k3",), "o")
    chain = Join((fact, dim, third), sqlglot.parse_one("k = k2 AND k2 = k3"))
    sizes["db.other"] = 10 * KB
    # fact and dim changed: their core is the two, and `other` joins their change once
    assert joined_bytes(chain, sizes, {"db.fact", "db.dim"}) == sum(sizes.values())
    fact_only = estimate_cost(view(), sum(sizes.values()), 1024 * KB)
    both = estimate_cost(view(), sum(sizes.values()), 1024 * KB, sum(sizes.values()))
    assert fact_only.cheaper() is RefreshMode.INCREMENTAL
    assert both.cheaper() is RefreshMode.FULL
    assert "1000.0 MiB joined" in both.summary()


def test_a_from_list_under_a_where_is_estimated_as_the_join_the_rules_run() -> None:
    """``FROM c, o, l WHERE …`` (TPC-H Q3): the rules join along the WHERE's conjuncts, and
    with all three changed ``l`` (the largest; without it ``c`` and ``o`` stay connected) is
    scanned once, by ``Δ(c ⋈ o) ⋈ l_old``, not by the terms of ``Δc`` and ``Δo`` each."""
    c = Scan("db.c", ("ck",), ("ck",), "c")
    o = Scan("db.o", ("ok", "ock"), ("ok", "ock"), "o")
    line = Scan("db.l", ("lok",), ("lok",), "l")
    listed = Filter(Join((c, o, line), None), sqlglot.parse_one("ck = ock AND lok = ok"))
    sizes = {"db.c": 1 * KB, "db.o": 10 * KB, "db.l": 100 * KB}
    everything = set(sizes)
    # Δ(c ⋈ o) scans o and c once each, then l once; Δl's term scans c and o
    assert joined_bytes(listed, sizes, everything) == (10 + 1 + 100 + 11) * KB
    unconnected = Join((c, o, line), None)  # a true cross product: every term scans all
    assert joined_bytes(unconnected, sizes, everything) == (110 + 101 + 11) * KB
    # Δc ⋈ o_old, c ⋈ Δo, Δ(c ⋈ o) ⋈ l_old, and c ⋈ o ⋈ Δl: five joins, the query's two
    assert extra_joins(listed, sizes, everything) == 3
    assert extra_joins(listed, sizes, {"db.l"}) == 0  # Δl ⋈ c ⋈ o: the query's own joins
    assert extra_joins(listed, sizes, {"db.c", "db.l"}) == 2  # two terms of two joins


def test_a_tie_goes_to_full_when_the_incremental_terms_scan_about_the_base() -> None:
    """TPC-H Q12 at SF 1 (``lineitem ⋈ orders``, both changed, 2 view rows): the terms read
    the base tables, the estimates tie, and the full refresh (one join) measured 1.5 s
    against 2.3 s. Below ``HISTORY_BASE_BYTES`` a tie stays incremental."""
    large = int(HISTORY_BASE_BYTES * 8)
    tie = estimate_cost(view(row_count=2), large, 100 * KB, large)
    assert tie.incremental is not None
    assert abs(tie.incremental.estimated_ms - tie.full.estimated_ms) < TIE_MS
    assert tie.cheaper() is RefreshMode.FULL
    assert tie.choice().startswith("full: estimated ")
    fact_only = estimate_cost(view(row_count=2), large, 100 * KB, large // 10)
    assert fact_only.cheaper() is RefreshMode.INCREMENTAL
    small = int(HISTORY_BASE_BYTES / 8)
    assert estimate_cost(view(), small, KB, small).cheaper() is RefreshMode.INCREMENTAL


def test_changes_computed_apart_add_a_step_each() -> None:
    """A DISTINCT below a join is computed apart (its counters, before and after); the
    view's own top aggregate, under its select list, is not; nothing counts when the change
    does not reach it."""
    fact = Scan("db.fact", ("k", "x"), ("k", "x"), "f")
    dim = Scan("db.dim", ("k2", "y"), ("k2", "y"), "d")
    keys = Distinct(dim)
    joined = Join((fact, keys), sqlglot.parse_one("k = k2"))
    root = Project(Aggregate(joined, (), (), (), ()), (), ())
    assert steps_apart(root, {"db.dim"}) == 1
    assert steps_apart(root, {"db.fact"}) == 0
    assert steps_apart(Distinct(fact), {"db.fact"}) == 0
    flat = estimate_cost(view(), 10 * KB, KB)
    stepped = estimate_cost(view(), 10 * KB, KB, steps=3)
    assert stepped.incremental is not None and flat.incremental is not None
    assert stepped.incremental.model_ms == flat.incremental.model_ms + 3 * STEP_MS


def test_extra_joins_count_in_proportion_to_the_base_tables_scale() -> None:
    """Joins beyond the query's own: over kilobytes they cost next to nothing and the
    refresh stays incremental; over a gigabyte each is a step, and fifteen of them (a
    many-way join whose inputs all changed) tip the choice to FULL."""
    small = estimate_cost(view(), 10 * KB, KB, 10 * KB, joins=15)
    flat_small = estimate_cost(view(), 10 * KB, KB, 10 * KB)
    assert small.model_ms(RefreshMode.INCREMENTAL) < (
        flat_small.model_ms(RefreshMode.INCREMENTAL) + 0.01 * STEP_MS
    )
    assert small.cheaper() is RefreshMode.INCREMENTAL
    joined = 9 * GB // 10
    flat = estimate_cost(view(), GB, 100 * KB, joined)
    large = estimate_cost(view(), GB, 100 * KB, joined, joins=15)
    assert large.model_ms(RefreshMode.INCREMENTAL) == pytest.approx(
        flat.model_ms(RefreshMode.INCREMENTAL) + 15 * STEP_MS, rel=0.01
    )
    assert flat.cheaper() is RefreshMode.INCREMENTAL
    assert large.cheaper() is RefreshMode.FULL
