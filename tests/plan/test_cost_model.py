"""The cost model on its own (no Spark): Hanson's crossover, the tie rule, and how a view's
measured history corrects the estimates (``plan/cost.py``)."""

from __future__ import annotations

import pytest
from sparkmv.catalog.metadata import ModeHistory, MvMetadata, RefreshStats
from sparkmv.parse.statements import RefreshMode, RefreshPolicy, RefreshTrigger, TableName
from sparkmv.plan.cost import (
    FIXED_MS,
    HISTORY_BASE_BYTES,
    TIE_MS,
    estimate_cost,
    size,
)

KB = 1024
GB = 1024**3


def view(row_count: int = 10, history: dict[RefreshMode, ModeHistory] | None = None) -> MvMetadata:
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
        stats=RefreshStats(cost_history=history or {}),
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
        history = history.measured(duration, 50.0)
    assert history == ModeHistory(4, mean_ms=250.0, mean_model_ms=50.0)
    assert history.measured(1250.0, 50.0).mean_ms == pytest.approx(500.0)  # 250 + (1250-250)/4


def test_a_planned_refresh_is_measured_against_its_estimate_once() -> None:
    stats = RefreshStats().planned(320.0)
    after = stats.after_incremental_refresh(1, 0, "why", started_ms=1000, finished_ms=1500)
    assert after.cost_history == {RefreshMode.INCREMENTAL: ModeHistory(1, 500.0, 320.0)}
    assert after.planned_model_ms == 0
    again = after.after_full_refresh(3, 1, "why", started_ms=2000, finished_ms=2100)
    assert again.cost_history == after.cost_history  # nothing planned: nothing measured
    full = after.planned(900.0).after_full_refresh(3, 1, "why", 2000, 2700)
    assert full.cost_history[RefreshMode.FULL] == ModeHistory(1, 700.0, 900.0)
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
