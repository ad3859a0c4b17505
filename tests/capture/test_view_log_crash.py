"""A refresh of a view that another view reads, killed around its commit.

``u``'s data commit (the catalog) and its change-log commit (the manifest) are separate
writes; the log commit is prepared before the catalog commit and published after it
(``capture/view_log.py``). Killed after preparing (before the catalog commit), ``u`` is as
before and the prepared commit must not be published; killed after the catalog commit
(before the manifest), ``u`` is as after and the next reader must publish it. Either way
``d`` (over ``u``) then refreshes incrementally and equals its query: the change was neither
missed nor applied twice. A chain of child processes on one warehouse
(``view_log_crash_steps.py``), each checking the previous one's crash.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import run_crash_step
from sparkmv.faults import CRASH_EXIT_CODE

STEPS = Path(__file__).with_name("view_log_crash_steps.py")
POINTS = ["view_log.after_prepare", "refresh.after_commit"]


def run_step(warehouse: Path, step: str, crash_at: str | None) -> subprocess.CompletedProcess[str]:
    return run_crash_step([str(STEPS), str(warehouse), step], crash_at)


def test_a_view_log_commit_recovers_from_a_crash_before_and_after_the_view_commit(
    tmp_path: Path,
) -> None:
    warehouse = tmp_path / "warehouse"
    for index, point in enumerate(POINTS):
        crashed = run_step(warehouse, f"{'' if index else 'setup+'}{index}", point)
        assert crashed.returncode == CRASH_EXIT_CODE, crashed.stderr[-3000:]
        if index:
            assert f"CHECKED before {index}" in crashed.stdout, crashed.stdout
    last = run_step(warehouse, "final", None)
    assert last.returncode == 0, last.stderr[-3000:]
    assert "CHECKED before final" in last.stdout and "NOT CRASHED" in last.stdout, last.stdout
