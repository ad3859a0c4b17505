"""sparkmv on a multi-JVM cluster (issue 26): the demo and a seeded differential sample with
``spark.master=local-cluster[2,1,1024]``, whose executors are JVMs of their own, as on a
real cluster: what a task needs must reach it by Spark's means (the jar through
``spark.jars``, files through the shared file system), never through the driver's memory.

The checks are in ``cluster_suite.py``, run here by a child pytest (this run's Spark context
is ``local[2]``, and a process has one). local-cluster's workers start each executor from
``$SPARK_HOME`` (the class path is its ``jars/``) and keep its files and logs in
``$SPARK_HOME/work``. pyspark's wheel is a Spark home, but a run would leave ``work/`` inside
the venv, so the child gets a Spark home of its own: a temporary directory of links to the
wheel's entries. Nothing else is set up; no network.

Where executors cannot start here, the checks skip, saying why, unless
``SPARKMV_REQUIRE_LOCAL_CLUSTER`` is set (``.ci/run`` sets it): then they fail.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pyspark
import pytest
from conftest import REPO, python_env

MASTER = "local-cluster[2,1,1024]"
EXECUTORS = 2
REQUIRE_ENV = "SPARKMV_REQUIRE_LOCAL_CLUSTER"
EVIDENCE_ENV = "SPARKMV_LOCAL_CLUSTER_EVIDENCE"
"""Where ``cluster_suite.py`` writes what it saw of the JVMs (a JSON file)."""
SUITE = Path(__file__).with_name("cluster_suite.py")
NO_PYTHON_MESSAGE = "no Python on the executors: sparkmv runs its Python in the driver only"
CHECKS = (
    "test_executors_are_separate_jvms",
    "test_executors_run_no_python",
    "test_demo_on_the_cluster",
    "test_differential_sample_on_the_cluster",
)
TIMEOUT = 900  # seconds; about 90 s on an idle 2-core host


def unavailable(reason: str) -> NoReturn:
    """The cluster cannot run here: skip, or fail when ``REQUIRE_ENV`` is set (CI must not
    pass without having run the checks)."""
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{reason}\n({REQUIRE_ENV} is set, so this fails instead of skipping)")
    pytest.skip(reason)


def no_python(path: Path) -> Path:
    """The executors' Python: a program that fails, saying ``NO_PYTHON_MESSAGE``, should an
    executor start a Python worker."""
    path.write_text(f'#!/bin/sh\necho "{NO_PYTHON_MESSAGE}" >&2\nexit 97\n')
    path.chmod(0o755)
    return path


def spark_home(directory: Path) -> Path:
    """A Spark home of links to pyspark's entries (``bin``, ``jars``, ``python``, ...), whose
    ``work/`` is the workers' own."""
    wheel = Path(pyspark.__file__).resolve().parent
    if not (wheel / "jars").is_dir():
        unavailable(f"pyspark at {wheel} has no jars/ to start executors from")
    directory.mkdir(parents=True)
    for entry in wheel.iterdir():
        if entry.name != "work":
            (directory / entry.name).symlink_to(entry)
    return directory


@dataclass
class SuiteRun:
    """The child pytest's outcome per check, its output and what it saw of the JVMs."""

    outcomes: dict[str, tuple[str, str]]  # check -> (passed/failed/skipped, message)
    output: str
    evidence: dict[str, Any]

    def report(self, check: str) -> str:
        outcome, message = self.outcomes.get(check, ("missing", ""))
        return f"{check}: {outcome}\n{message}\n--- child pytest ---\n{self.output}"


def outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """Each test case of a JUnit XML report: its outcome and failure or skip message."""
    found: dict[str, tuple[str, str]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            element = case.find(tag)
            if element is not None:
                outcome = "skipped" if tag == "skipped" else "failed"
                message = f"{element.get('message', '')}\n{element.text or ''}"
                break
        found[case.get("name", "")] = (outcome, message)
    return found


def executor_logs(home: Path, executors: int = 2, lines: int = 30) -> str:
    """The last ``lines`` of the stderr of the ``executors`` executors started last (a worker
    starts another whenever one exits, so a failing start leaves many): why they failed."""
    logs = sorted((home / "work").glob("app-*/*/stderr"), key=lambda path: path.stat().st_mtime)
    return f"{len(logs)} executors started; the last ones' stderr:\n" + "\n".join(
        f"--- {path} ---\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        for path in logs[-executors:]
    )


def run_group(command: list[str], env: dict[str, str]) -> tuple[int | None, str, str]:
    """Run ``command`` in a process group of its own, which is killed whole (the child's
    driver and executor JVMs too) if it outlives ``TIMEOUT`` or this run is interrupted;
    the exit code (None: killed) and the output."""
    child = subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = child.communicate(timeout=TIMEOUT)
        return child.returncode, stdout, stderr
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        stdout, stderr = child.communicate()
        return None, stdout, f"{stderr}\nkilled after {TIMEOUT} s"
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()


@pytest.fixture(scope="module")
def suite_run(tmp_path_factory: pytest.TempPathFactory) -> SuiteRun:
    root = tmp_path_factory.mktemp("local_cluster")
    home = spark_home(root / "spark-home")
    junit, evidence = root / "results.xml", root / "evidence.json"
    env = python_env()
    env["SPARK_HOME"] = str(home)
    env["PYSPARK_PYTHON"] = str(no_python(root / "no-python"))
    env[EVIDENCE_ENV] = str(evidence)
    command = [sys.executable, "-m", "pytest", str(SUITE), "-q", f"--junitxml={junit}"]
    started = time.monotonic()
    code, stdout, stderr = run_group(command, env)
    seconds = time.monotonic() - started
    output = (
        f"$ {' '.join(command)}\nexit code {code} after {seconds:.0f} s\n"
        f"{stdout}\n{stderr[-20000:]}"
    )
    if code != 0:
        output += "\n--- executors' stderr ---\n" + executor_logs(home)
    assert junit.is_file(), output
    seen = json.loads(evidence.read_text()) if evidence.is_file() else {}
    return SuiteRun(outcomes(junit), output, seen)


@pytest.mark.parametrize("check", CHECKS)
def test_on_local_cluster(suite_run: SuiteRun, check: str) -> None:
    """Each check of ``cluster_suite.py`` ran on the cluster and passed."""
    outcome, message = suite_run.outcomes.get(check, ("missing", ""))
    if outcome == "skipped":
        unavailable(message.strip())
    assert outcome == "passed", suite_run.report(check)


def test_tasks_ran_in_executor_jvms(suite_run: SuiteRun) -> None:
    """What the child saw: two executors, whose tasks ran in two processes that were neither
    the driver's JVM nor the Python driver."""
    if suite_run.outcomes.get(CHECKS[0], ("",))[0] == "skipped":
        unavailable(suite_run.outcomes[CHECKS[0]][1].strip())
    seen = suite_run.evidence
    assert len(seen.get("executor_ids", [])) == EXECUTORS, suite_run.report(CHECKS[0])
    pids = set(seen["task_pids"])
    assert len(pids) == EXECUTORS, seen
    assert not pids & {seen["driver_pid"], seen["python_pid"], os.getpid()}, seen
