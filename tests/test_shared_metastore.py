"""Two processes on one catalog: a Hive metastore on PostgreSQL and one warehouse directory.

Each process (``shared_metastore_worker.py``) has its own JVM and SparkSession; the two run
statements at the same time where the test says so (it sends both their commands before it
reads either answer). A throwaway PostgreSQL server (``postgres.py``) holds the metastore;
the tests skip without PostgreSQL, and fail under ``SPARKMV_REQUIRE_POSTGRES=1`` (CI).
See ``docs/concurrency.md`` and ``docs/metastore.md``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import pytest
from conftest import python_env
from postgres import postgres_server

WORKER = Path(__file__).with_name("shared_metastore_worker.py")
SPARKMV = str(Path(sys.executable).with_name("sparkmv"))
CONCURRENT_COMMIT = "MATERIALIZED_VIEW_CONCURRENT_COMMIT"
TIMEOUT = 600  # seconds for one command (or script) of a worker


class Worker:
    """A child process with a SparkSession on the shared metastore."""

    def __init__(self, warehouse: Path, url: str, log: TextIO) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), str(warehouse), url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env=python_env(),
        )

    def send(self, op: str, **arguments: Any) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        self.process.stdin.flush()

    def answer(self) -> Any:
        """The next answer; a worker that gives none within ``TIMEOUT`` s is killed (a
        deadlock fails the test instead of hanging it)."""
        assert self.process.stdout is not None
        watchdog = threading.Timer(TIMEOUT, self.process.kill)
        watchdog.start()
        try:
            for line in self.process.stdout:
                if line.startswith("@@ "):
                    return json.loads(line[3:])
        finally:
            watchdog.cancel()
        raise RuntimeError(f"worker exited ({self.process.wait()}); see its log")

    def call(self, op: str, **arguments: Any) -> Any:
        self.send(op, **arguments)
        return self.answer()

    def sql(self, sql: str) -> list[list[Any]]:
        """The rows of ``sql``, which must succeed."""
        found = self.call("sql", sql=sql)
        assert "rows" in found, found
        rows: list[list[Any]] = found["rows"]
        return rows

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@dataclass(frozen=True)
class Shared:
    """Two worker processes on one new metastore database and one warehouse directory."""

    a: Worker
    b: Worker
    url: str
    warehouse: Path


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    directory = tmp_path_factory.mktemp("shared")
    warehouse = directory / "wh"
    with postgres_server() as server:
        url = server.create_database("metastore")
        with open(directory / "a.log", "w") as log_a, open(directory / "b.log", "w") as log_b:
            pair = (Worker(warehouse, url, log_a), Worker(warehouse, url, log_b))
            try:
                for worker in pair:  # both started together: the schema is created once
                    assert worker.answer() == {"ready": True}
                yield Shared(*pair, url, warehouse)
            finally:
                for worker in pair:
                    worker.stop()


@pytest.fixture
def workers(shared: Shared) -> tuple[Worker, Worker]:
    return shared.a, shared.b


def rows(found: list[list[Any]]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(row) for row in found)


def at_once(a: Worker, b: Worker, command_a: dict[str, Any], command_b: dict[str, Any]) -> Any:
    """Both commands sent before either answer is read: they run at the same time."""
    a.send(**command_a)
    b.send(**command_b)
    return a.answer(), b.answer()


def test_a_view_created_in_one_process_is_read_refreshed_and_dropped_in_another(
    workers: tuple[Worker, Worker],
) -> None:
    a, b = workers
    a.sql("CREATE TABLE basic (k INT, v INT) USING parquet")
    a.sql("INSERT INTO basic VALUES (1, 10), (2, 20)")
    a.sql("CREATE MATERIALIZED VIEW basic_mv AS SELECT k, SUM(v) AS s FROM basic GROUP BY k")
    assert ["default", "basic_mv"] in [row[:2] for row in b.sql("SHOW MATERIALIZED VIEWS")]
    b.sql("INSERT INTO basic VALUES (1, 5), (3, 7)")
    refreshed = b.sql("REFRESH MATERIALIZED VIEW basic_mv")
    assert refreshed[0][0] == "INCREMENTAL"
    assert rows(a.sql("SELECT * FROM basic_mv")) == Counter({(1, 15): 1, (2, 20): 1, (3, 7): 1})
    b.sql("DROP MATERIALIZED VIEW basic_mv")
    assert a.sql("SHOW MATERIALIZED VIEWS") == []
    assert a.call("sql", sql="SELECT * FROM basic_mv")["class"] == "TABLE_OR_VIEW_NOT_FOUND"


def test_two_refreshes_in_two_processes_apply_each_change_once(
    workers: tuple[Worker, Worker],
) -> None:
    a, b = workers
    a.sql("CREATE TABLE pair (id INT, v INT) USING parquet")
    a.sql("INSERT INTO pair VALUES (0, 0)")
    a.sql("CREATE MATERIALIZED VIEW pair_mv AS SELECT id, v FROM pair WHERE v % 2 = 0")
    query = "SELECT id, v FROM pair WHERE v % 2 = 0"
    for round_ in range(3):
        values = ", ".join(f"({round_ * 10 + i}, {i})" for i in range(10))
        a.sql(f"INSERT INTO pair VALUES {values}")  # five rows of the view
        before = a.call("meta", view="pair_mv")
        refresh = {"op": "sql", "sql": "REFRESH MATERIALIZED VIEW pair_mv"}
        outcomes = at_once(a, b, refresh, refresh)
        done = [found["rows"][0] for found in outcomes if "rows" in found]
        failed = [found for found in outcomes if "rows" not in found]
        assert all(found["class"] == CONCURRENT_COMMIT for found in failed), failed
        # the change applied exactly once: by one refresh; the other found nothing to do
        # (it waited for the first) or failed without committing anything
        assert sorted(row[2] for row in done) == ([0, 5] if len(done) == 2 else [5])
        assert all(row[3] == 0 for row in done)
        after = b.call("meta", view="pair_mv")
        assert after["refreshes"] == before["refreshes"] + 1  # finding nothing is not counted
        assert after["rows_inserted"] == before["rows_inserted"] + 5
        assert after["row_count"] == before["row_count"] + 5
        for worker in (a, b):
            assert rows(worker.sql("SELECT * FROM pair_mv")) == rows(worker.sql(query))


def states(operations: list[tuple[str, int]]) -> list[Counter[tuple[Any, ...]]]:
    """The view's rows after each prefix of ``operations`` (``states[j]``: after j)."""
    table: dict[int, int] = {}
    found = [Counter[tuple[Any, ...]]()]
    for kind, key in operations:
        if kind == "insert":
            table[key] = key * 10
        else:
            del table[key]
        found.append(Counter((k, v) for k, v in table.items() if k % 4 != 1))
    return found


def test_a_refresh_while_another_process_writes_matches_the_versions_it_records(
    workers: tuple[Worker, Worker],
) -> None:
    a, b = workers
    a.sql("CREATE TABLE written (id INT, v INT) USING parquet")
    a.sql("CREATE MATERIALIZED VIEW written_mv AS SELECT id, v FROM written WHERE id % 4 <> 1")
    (start,) = a.call("meta", view="written_mv")["consumed"].values()
    operations: list[tuple[str, int]] = []
    for key in range(1, 13):
        operations.append(("insert", key))
        if key % 3 == 0:
            operations.append(("delete", key - 1))
    writes = [
        {
            "op": "sql",
            "sql": f"INSERT INTO written VALUES ({key}, {key * 10})"
            if kind == "insert"
            else f"DELETE FROM written WHERE id = {key}",
        }
        for kind, key in operations
    ]
    refresh = [
        {"op": "sql", "sql": "REFRESH MATERIALIZED VIEW written_mv"},
        {"op": "sql", "sql": "SELECT * FROM written_mv"},
        {"op": "meta", "view": "written_mv"},
    ]
    refreshed, written = at_once(
        a, b, {"op": "script", "steps": refresh * 4}, {"op": "script", "steps": writes}
    )
    assert all("rows" in found for found in written), written
    expected = states(operations)
    seen = []
    for step in range(0, len(refreshed), 3):
        assert "rows" in refreshed[step], refreshed[step]
        (version,) = refreshed[step + 2]["consumed"].values()
        seen.append(version - start)
        # the view is its query at the versions it records: after exactly those writes
        assert rows(refreshed[step + 1]["rows"]) == expected[version - start], refreshed[: step + 3]
    assert seen == sorted(seen)
    a.sql("REFRESH MATERIALIZED VIEW written_mv")  # catches up, exactly
    (version,) = a.call("meta", view="written_mv")["consumed"].values()
    assert version - start == len(operations)
    assert rows(a.sql("SELECT * FROM written_mv")) == expected[-1]
    assert rows(b.sql("SELECT * FROM written_mv")) == rows(
        b.sql("SELECT id, v FROM written WHERE id % 4 <> 1")
    )


def test_on_commit_writers_to_two_tables_in_two_processes_both_land(
    workers: tuple[Worker, Worker],
) -> None:
    a, b = workers
    a.sql("CREATE TABLE left_side (x INT) USING parquet")
    a.sql("CREATE TABLE right_side (x INT) USING parquet")
    query = "SELECT 'l' AS side, x FROM left_side UNION ALL SELECT 'r' AS side, x FROM right_side"
    a.sql(f"CREATE MATERIALIZED VIEW sides_mv REFRESH INCREMENTAL ON COMMIT AS {query}")

    def writes(table: str) -> dict[str, Any]:
        steps = [{"op": "sql", "sql": f"INSERT INTO {table} VALUES ({i})"} for i in range(6)]
        return {"op": "script", "steps": steps}

    left, right = at_once(a, b, writes("left_side"), writes("right_side"))
    assert all("rows" in found for found in left + right), (left, right)
    expected = Counter({("l", i): 1 for i in range(6)}) + Counter({("r", i): 1 for i in range(6)})
    for worker in (a, b):  # current without a REFRESH: each write maintained the view
        assert rows(worker.sql("SELECT * FROM sides_mv")) == expected
    assert a.call("meta", view="sides_mv")["rows_inserted"] == 12


def test_a_commit_over_a_view_another_process_changed_fails_with_a_serialization_error(
    workers: tuple[Worker, Worker],
) -> None:
    a, b = workers
    a.sql("CREATE TABLE raced (k INT) USING parquet")
    a.sql("CREATE MATERIALIZED VIEW raced_mv AS SELECT k FROM raced")
    a.call("hold", view="raced_mv")  # a commit prepared from what a read now
    b.sql("INSERT INTO raced VALUES (1), (2)")
    b.sql("REFRESH MATERIALIZED VIEW raced_mv")
    failed = a.call("commit_held", view="raced_mv")
    assert failed["class"] == CONCURRENT_COMMIT, failed
    assert "SQLSTATE: 40001" in failed["error"]
    # nothing of it was committed: the other process's refresh stands
    assert rows(a.sql("SELECT * FROM raced_mv")) == Counter({(1,): 1, (2,): 1})
    assert a.call("meta", view="raced_mv")["rows_inserted"] == 2
    a.call("hold", view="raced_mv")  # read afresh, the same commit succeeds
    assert a.call("commit_held", view="raced_mv") == {"committed": True}


def test_the_cli_reads_the_shared_catalog_with_metastore_url(shared: Shared) -> None:
    """``sparkmv sql --metastore-url``: a third process sees, refreshes and drops a view."""
    shared.a.sql("CREATE TABLE by_cli (k INT) USING parquet")
    shared.a.sql("CREATE MATERIALIZED VIEW by_cli_mv AS SELECT k FROM by_cli")
    shared.a.sql("INSERT INTO by_cli VALUES (41), (42)")
    statements = "REFRESH MATERIALIZED VIEW by_cli_mv; SELECT SUM(k) FROM by_cli_mv"
    url = f"{shared.url}?user=postgres"
    done = subprocess.run(
        [SPARKMV, "sql", "--warehouse", str(shared.warehouse), "--metastore-url", url,
         "-e", statements],
        capture_output=True, text=True, env=python_env(), timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "83" in done.stdout, done.stdout
    assert rows(shared.b.sql("SELECT * FROM by_cli_mv")) == Counter({(41,): 1, (42,): 1})
    assert shared.b.call("meta", view="by_cli_mv")["refreshes"] >= 1
