"""The checks that run on a multi-JVM cluster: ``spark.master=local-cluster[2,1,1024]``, a
standalone master and two workers inside the driver's JVM, each worker's executor a JVM of
its own (as on a real cluster; ``local[N]`` runs the tasks in the driver's JVM).

``test_local_cluster.py`` runs this file in a child pytest: a process holds one Spark
context, and the rest of the run shares a ``local[2]`` one. The name has no ``test_`` prefix,
so the run does not collect the file itself. Its ``spark`` fixture replaces conftest's for
the tests here (``db`` and the helpers are conftest's and the differential suites').
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import sparkmv
from conftest import (
    REPO,
    assert_view_equals_query_except_all,
    session_confs,
    spark_examples,
    view_description,
)
from differential import ALWAYS_INCREMENTAL, NO_SHRINK
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from sparkmv.config import STORAGE_PATCH_MIN_ROWS
from test_differential_fleet import Fleet, Tally, check_fleet
from test_local_cluster import (
    EVIDENCE_ENV,
    EXECUTORS,
    MASTER,
    NO_PYTHON_MESSAGE,
    executor_logs,
    unavailable,
)
from view_generator import TABLES, Draw, Step, View, rows_of, storage_confs, writes

REGISTRATION_TIMEOUT_SECONDS = 180.0
"""How long the executors may take to start and register (two JVMs on a busy 2-core host)."""

# A short run on few cores: three JVMs' C2 compiler threads would compete with the work, and
# C1's code is fast enough here (it halves this suite's time on 2 cores).
JIT_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
CLUSTER_CONF = {
    "spark.master": MASTER,
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.extraJavaOptions": JIT_OPTIONS,
    "spark.executor.extraJavaOptions": JIT_OPTIONS,
}


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    """A sparkmv session on the cluster, once both executors have registered."""
    session = sparkmv.session(tmp_path_factory.mktemp("warehouse"), **CLUSTER_CONF)
    try:
        wait_for_executors(session)
        yield session
    finally:
        session.stop()


def executor_ids(spark: SparkSession) -> list[str]:
    """The executors registered with the driver (the driver itself is not one)."""
    ids = spark.sparkContext._jsc.sc().getExecutorIds()
    return [str(ids.apply(i)) for i in range(ids.size())]


def wait_for_executors(spark: SparkSession) -> None:
    """Block until ``EXECUTORS`` executors have registered; the cluster is unavailable here
    (with the executors' own error output as the reason) if they do not in time."""
    deadline = time.monotonic() + REGISTRATION_TIMEOUT_SECONDS
    while len(executor_ids(spark)) < EXECUTORS:
        if time.monotonic() > deadline:
            unavailable(
                f"{MASTER}: {len(executor_ids(spark))} of {EXECUTORS} executors registered "
                f"within {REGISTRATION_TIMEOUT_SECONDS:.0f} s; "
                + executor_logs(Path(os.environ.get("SPARK_HOME", ".")), lines=5)
            )
        time.sleep(0.2)


def pids_of_tasks(spark: SparkSession, tasks: int = 8) -> set[int]:
    """The process ids of the JVMs that ran ``tasks`` tasks (each task asks its own JVM)."""
    pid = F.expr("java_method('java.lang.ProcessHandle', 'current')")  # its toString: the pid
    rows = spark.range(0, tasks, 1, tasks).select(pid.alias("pid")).distinct().collect()
    return {int(row.pid) for row in rows}


def command_line(pid: int) -> str:
    """The command line of process ``pid`` ("" where /proc cannot say)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_executors_are_separate_jvms(spark: SparkSession) -> None:
    """Tasks run in two JVMs that are neither the driver's nor this process: the executors."""
    driver = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    executors = executor_ids(spark)
    pids = pids_of_tasks(spark)
    commands = {pid: command_line(pid) for pid in pids}
    evidence = {"driver_pid": driver, "python_pid": os.getpid(), "executor_ids": executors}
    evidence |= {"task_pids": sorted(pids), "command_lines": commands}
    if os.environ.get(EVIDENCE_ENV):
        Path(os.environ[EVIDENCE_ENV]).write_text(json.dumps(evidence, indent=1))
    assert len(executors) == EXECUTORS, evidence
    assert len(pids) == EXECUTORS and driver not in pids and os.getpid() not in pids, evidence
    for pid, command in commands.items():
        assert not command or "CoarseGrainedExecutorBackend" in command, (pid, command)


def test_executors_run_no_python(spark: SparkSession) -> None:
    """The control for the checks below: the executors' Python (``PYSPARK_PYTHON``) is a stub
    that fails, so a Python UDF fails there, and the checks that pass show that sparkmv
    needs its Python package on the driver only."""
    plus_one = F.udf(lambda value: value + 1, "long")
    with pytest.raises(Exception, match=NO_PYTHON_MESSAGE):
        spark.range(1).select(plus_one("id")).collect()


def load_demo() -> ModuleType:
    """``examples/demo.py`` as a module (its ``STATEMENTS`` and ``run``)."""
    spec = importlib.util.spec_from_file_location("demo", REPO / "examples" / "demo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DEMO_ROWS = [("north", "15.50", 2), ("south", "107.25", 2), ("west", "3.00", 2)]
"""``sales_by_region`` at the demo's end."""


def test_demo_on_the_cluster(
    spark: SparkSession, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo's flow (tables, the view, an insert, REFRESH, SHOW, DESCRIBE, a mistake),
    its refresh incremental; the view then holds the demo's rows and equals its query."""
    with session_confs(spark, ALWAYS_INCREMENTAL):
        load_demo().run(spark)
    output = capsys.readouterr().out
    assert "[MATERIALIZED_VIEW_NOT_FOUND]" in output and "Traceback" not in output, output
    described = view_description(spark, "sales_by_region")
    assert described["Last Refresh Mode"] == "INCREMENTAL", described
    rows = spark.sql("SELECT * FROM sales_by_region ORDER BY region").collect()
    assert [(row.region, str(row.total), row.n) for row in rows] == DEMO_ROWS, output
    assert_view_equals_query_except_all(spark, "sales_by_region")


CLUSTER_VIEWS = [
    View("SELECT a, b + 1 AS b1 FROM r WHERE a IS NULL OR a > 0"),  # filter, project
    View("SELECT r.a, s.c FROM r JOIN s ON r.b = s.b"),  # join
    View(  # MIN/MAX: deleting or updating a group's extreme recomputes the group
        "SELECT s.c, MIN(r.a) AS low, MAX(r.a) AS high, COUNT(*) AS n"
        " FROM r JOIN s ON r.b = s.b GROUP BY s.c"
    ),
    View("SELECT DISTINCT c, d FROM t"),
    View("SELECT b FROM r UNION SELECT CAST(d AS INT) FROM t EXCEPT SELECT b FROM s"),
]
"""Fixed views of the maintained class over ``view_generator``'s tables r, s and t."""
STEPS = 2  # write batches, each followed by a refresh of every view
PATCHED = {STORAGE_PATCH_MIN_ROWS.key: "0"}
"""Every touched bucket patched, with parquet the driver writes and the executors read (the
demo's view, this small, is rewritten by a Spark job instead)."""


def changes_every_way(fleet: Fleet) -> bool:
    """Whether the stream inserts, deletes and updates (hypothesis's simplest stream, which
    it tries first, only inserts)."""
    kinds = {statement.split()[0] for step in fleet.steps for statement in step.writes}
    return {"INSERT", "DELETE", "UPDATE"} <= kinds


@st.composite
def cluster_fleets(draw: Draw) -> Fleet:
    """``CLUSTER_VIEWS`` over random non-empty tables, ``STEPS`` batches of one random write
    to each table (``view_generator.writes``: INSERT, DELETE, UPDATE, MERGE), random
    storage confs with every touched bucket patched."""
    setup = [table.ddl(draw(rows_of(table, min_size=2, max_size=5))) for table in TABLES]
    steps = [Step([draw(writes(table)) for table in TABLES], False) for _ in range(STEPS)]
    return Fleet(setup, CLUSTER_VIEWS, steps, {**draw(storage_confs()), **PATCHED})


@settings(max_examples=spark_examples(1), phases=NO_SHRINK)
@given(fleet=cluster_fleets().filter(changes_every_way))
def test_differential_sample_on_the_cluster(spark: SparkSession, db: str, fleet: Fleet) -> None:
    """Every view equals its query (EXCEPT ALL both ways) after CREATE and after every
    refresh, and every refresh is incremental (``check_fleet``)."""
    tally = Tally()
    check_fleet(spark, db, fleet, tally, oracle=assert_view_equals_query_except_all)
    assert tally.counts["refreshes"] == STEPS * len(CLUSTER_VIEWS), tally.counts
