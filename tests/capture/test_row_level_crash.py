"""DELETE, UPDATE and MERGE killed at every injected point of a copy-on-write.

A chain of child processes on one warehouse: each checks the outcome of the previous crash
— the table holds exactly the rows before or after the statement (before the metastore swap:
before; from the swap on: after), the log agrees with the table without a resynchronisation
(a prepared commit is rolled forward), its net changes equal the table's difference, and a
refresh leaves the view equal to its query — then runs the next statement and dies at the
next point. ``make test`` crashes two statements, ``make test-full`` every pairing (``CHAINS``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import FULL_RUN, run_crash_step
from sparkmv.faults import CRASH_EXIT_CODE

STEPS = Path(__file__).with_name("row_level_crash_steps.py")
POINTS = [
    "row_level.after_write",
    "row_level.before_swap",
    "row_level.after_swap",
    "row_level.after_commit",
]
CHAINS = (
    [POINTS[rotation:] + POINTS[:rotation] for rotation in range(len(POINTS))]
    if FULL_RUN
    else [["row_level.before_swap", "row_level.after_swap"]]
)
"""The crash points of each chain, one statement per point: ``make test`` crashes the two
statements on either side of the metastore swap (rolled back, rolled forward); ``make
test-full`` every statement at every point."""


def run_step(warehouse: Path, step: str, crash_at: str | None) -> subprocess.CompletedProcess[str]:
    return run_crash_step([str(STEPS), str(warehouse), step], crash_at)


@pytest.mark.parametrize("points", CHAINS, ids=lambda points: "-".join(p[10:] for p in points))
def test_row_level_writes_recover_from_a_crash_at_every_point(
    tmp_path: Path, points: list[str]
) -> None:
    warehouse = tmp_path / "warehouse"
    for index, point in enumerate(points):
        crashed = run_step(warehouse, f"{'' if index else 'setup+'}{index}:{point}", point)
        assert crashed.returncode == CRASH_EXIT_CODE, crashed.stderr[-3000:]
        if index:
            assert f"CHECKED {index - 1}" in crashed.stdout, crashed.stdout
    last_index = len(points) - 1  # checks the last crash, then runs cleanly
    last = run_step(warehouse, f"{last_index}:none", None)
    assert last.returncode == 0, last.stderr[-3000:]
    assert f"CHECKED {last_index}" in last.stdout and "NOT CRASHED" in last.stdout, last.stdout
