"""``sparkmv server`` with real clients: beeline over JDBC and a Spark Connect client, each a
process of its own, as users run them.

One server serves the module (a JVM start costs seconds): the two clients run their
lifecycles at the same time, each in a database of its own with the same table and view
names (a statement resolved in the wrong session would meet the other client's objects); the
last test stops the server with SIGINT and reads both views from a new ``sparkmv sql``
process over the same warehouse. Every view is checked against its query (EXCEPT ALL both
ways, through the client that made it, and again after the restart).

The server listens on its default address (loopback) and requires credentials (a password
file for JDBC, a token for Spark Connect): clients with wrong ones are refused first, before
the lifecycles run, which then find nothing of the refused statements.
"""

from __future__ import annotations

import csv
import ipaddress
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyspark
import pytest
from conftest import python_env
from sparkmv.bridge import RunningCalls
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.server import CONNECT, THRIFT, announcements, is_loopback
from test_cli import SPARKMV, tables

SPARK_HOME = Path(pyspark.__file__).resolve().parent
BEELINE = SPARK_HOME / "bin" / "beeline"
START_TIMEOUT = 240
CLIENT_TIMEOUT = 300
STOP_TIMEOUT = 60
REQUIRE_ENV = "SPARKMV_REQUIRE_SERVER_CLIENTS"
"""Set to 1 (CI does, in .ci/run) to fail, not skip, when beeline or the Spark Connect
client's dependencies (``pip install -e 'python[server]'``) are missing."""

QUERY = "SELECT region, count(*) AS n, sum(amount) AS total FROM sales GROUP BY region"
ORACLE = (
    f"SELECT (SELECT count(*) FROM (SELECT * FROM by_region EXCEPT ALL {QUERY})) AS extra_rows, "
    f"(SELECT count(*) FROM ({QUERY} EXCEPT ALL SELECT * FROM by_region)) AS missing_rows"
)
"""The correctness oracle as SQL: rows of the view its query lacks, and the reverse."""

JDBC_SCRIPT = f"""
CREATE DATABASE jdbc_db;
USE jdbc_db;
CREATE TABLE sales (id INT, region STRING, amount INT) USING parquet;
INSERT INTO sales VALUES (1, 'north', 10), (2, 'south', 20), (3, 'north', 5);
CREATE MATERIALIZED VIEW by_region REFRESH INCREMENTAL AS {QUERY};
INSERT INTO sales VALUES (4, 'south', 7), (5, 'east', 1);
DELETE FROM sales WHERE id = 3;
REFRESH MATERIALIZED VIEW by_region;
SELECT region AS v_region, n AS v_n, total AS v_total FROM by_region ORDER BY region;
{ORACLE};
DESCRIBE MATERIALIZED VIEW EXTENDED by_region;
SELECT view AS h_view, trigger AS h_trigger, status AS h_status, mode AS h_mode
  FROM sparkmv_refresh_history('by_region') WHERE status = 'SUCCEEDED';
SHOW MATERIALIZED VIEW REFRESHES FOR by_region LIMIT 1;
REFRESH MATERIALIZED VIEW no_such_view;
"""
JDBC_ROWS = [["east", "1", "1"], ["north", "1", "10"], ["south", "2", "27"]]
USER, PASSWORD, TOKEN = "alice", "s3cret:with-colon", "connect-token-3f9a"
REFUSED_JDBC_TABLE, REFUSED_CONNECT_TABLE = "refused_jdbc", "refused_connect"
JDBC_STANDARD_ERROR_SCRIPT = """
SET spark.sql.error.messageFormat=STANDARD;
REFRESH MATERIALIZED VIEW default.no_such_view;
"""

CONNECT_CLIENT = f"""
import json
import sys
import time

from pyspark.sql import SparkSession

spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()


def rows(statement):
    return [list(row) for row in spark.sql(statement).collect()]


found = {{"started": time.time()}}
found["default_tables"] = rows("SHOW TABLES IN default")
for statement in [
    "CREATE DATABASE connect_db",
    "USE connect_db",
    "CREATE TABLE sales (id INT, region STRING, amount INT) USING parquet",
    "INSERT INTO sales VALUES (1, 'west', 3), (2, 'west', 4), (3, 'north', 100)",
    "CREATE MATERIALIZED VIEW by_region AS {QUERY}",
    "INSERT INTO sales VALUES (4, 'north', 1)",
]:
    spark.sql(statement).collect()
found["refresh"] = rows("REFRESH MATERIALIZED VIEW by_region INCREMENTAL")
found["describe"] = {{r[0]: r[1] for r in rows("DESCRIBE MATERIALIZED VIEW EXTENDED by_region")}}
# Another session of this client writes; this session's next statements must see the write.
other = SparkSession.builder.remote(sys.argv[1]).create()
other.sql("INSERT INTO connect_db.sales VALUES (5, 'west', 10)").collect()
other.stop()
found["full_refresh"] = rows("REFRESH MATERIALIZED VIEW by_region FULL")
found["view"] = rows("SELECT * FROM by_region ORDER BY region")
found["oracle"] = rows({ORACLE!r})[0]
found["show"] = rows("SHOW MATERIALIZED VIEWS")
found["history"] = rows(
    "SELECT view, trigger, status, mode FROM sparkmv_refresh_history('by_region') ORDER BY started"
)
found["show_refreshes"] = rows("SHOW MATERIALIZED VIEW REFRESHES FOR by_region LIMIT 1")
try:
    spark.sql("REFRESH MATERIALIZED VIEW no_such_view").collect()
except Exception as error:
    found["error"] = {{
        "text": str(error),
        "condition": error.getCondition(),
        "sql_state": error.getSqlState(),
        "parameters": error.getMessageParameters(),
        "message": error.getMessage(),
    }}
found["ended"] = time.time()
print("RESULT " + json.dumps(found, default=str))
spark.stop()
"""
CONNECT_ROWS = [["north", 2, 101], ["west", 3, 17]]

REFUSED_CONNECT_CLIENT = f"""
import json
import sys

from pyspark.sql import SparkSession

found = {{}}
try:
    spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
    spark.sql("CREATE TABLE default.{REFUSED_CONNECT_TABLE} (a INT) USING parquet").collect()
    found["ran"] = True
except Exception as error:
    found["type"] = type(error).__name__
    found["text"] = str(error)
print("RESULT " + json.dumps(found))
"""


def test_a_stopping_server_refuses_new_statements_but_lets_running_ones_finish() -> None:
    calls = RunningCalls()
    refused: list[ErrorClass] = []

    def new_statement() -> None:
        try:
            with calls.call():
                pass
        except SparkMvError as error:
            refused.append(error.error_class)

    with calls.call():
        calls.refuse_new(True)
        with calls.call():  # a nested call (the handler called back by its own statement)
            assert calls.count == 2
        other = threading.Thread(target=new_statement)
        other.start()
        other.join()
        assert refused == [ErrorClass.SERVER_SHUTTING_DOWN]
        assert not calls.wait_until_idle(0.2, cut_short=lambda: False)
        assert not calls.wait_until_idle(60, cut_short=lambda: True)  # a second Ctrl-C
    assert calls.wait_until_idle(0, cut_short=lambda: False)
    calls.refuse_new(False)
    new_statement()
    assert refused == [ErrorClass.SERVER_SHUTTING_DOWN]


def require(missing: str | None) -> None:
    """Skip when a client is missing here, fail when ``REQUIRE_ENV`` asks for every one."""
    if missing is None:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{missing}; {REQUIRE_ENV}=1 requires it", pytrace=False)
    pytest.skip(missing)


def connect_client_missing() -> str | None:
    hint = "pip install -e 'python[server]'"
    try:
        # importing pyspark.sql.connect checks its packages too; where the main module is no
        # script (pytest-xdist's workers) a failed check exits instead of raising
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies()
    except ImportError as error:
        return f"the Spark Connect client cannot run ({error}): {hint}"
    except SystemExit:
        return f"the Spark Connect client's packages are missing (pandas, pyarrow, grpc): {hint}"
    return None


def beeline_missing() -> str | None:
    return None if BEELINE.is_file() else f"no beeline at {BEELINE}"


def free_ports(count: int) -> list[int]:
    """Ports nothing listens on now (the OS's choice; the server binds them moments later)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass
class Server:
    process: subprocess.Popen[str]
    warehouse: Path
    thrift_port: int
    connect_port: int
    stderr: Path
    lines: queue.Queue[str] = field(default_factory=queue.Queue)

    def read_stdout(self) -> None:
        """Forward the server's stdout lines to ``lines`` (a thread: readline blocks)."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, wanted: str, timeout: float) -> list[str]:
        """The stdout lines up to one starting with ``wanted``; fails if the server ends or
        the time runs out first."""
        seen: list[str] = []
        deadline = time.monotonic() + timeout
        while not any(line.startswith(wanted) for line in seen):
            try:
                seen.append(self.lines.get(timeout=max(0.1, deadline - time.monotonic())))
            except queue.Empty:
                pytest.fail(f"no {wanted!r} after {timeout} s: {seen}\n{self.log()}")
        return seen

    def log(self) -> str:
        return "--- server stderr (last lines) ---\n" + "\n".join(
            self.stderr.read_text().splitlines()[-40:]
        )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``sparkmv server`` on free ports over a fresh warehouse, on its default address,
    requiring credentials, ready for clients."""
    root = tmp_path_factory.mktemp("server")
    thrift_port, connect_port = free_ports(2)
    stderr = root / "stderr"
    password_file = root / "passwords"
    password_file.write_text(f"# JDBC users\nbob:other\n{USER}:{PASSWORD}\n")
    token_file = root / "token"
    token_file.write_text(f"{TOKEN}\n")
    with stderr.open("w") as err:
        process = subprocess.Popen(
            [
                str(SPARKMV),
                "server",
                "--warehouse",
                str(root / "warehouse"),
                "--thrift-port",
                str(thrift_port),
                "--connect-port",
                str(connect_port),
                "--password-file",
                str(password_file),
                "--token-file",
                str(token_file),
                "--conf",
                "spark.sql.shuffle.partitions=2",
                "--conf",
                "spark.default.parallelism=2",
            ],
            cwd=root,
            env=python_env(),
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,  # its own group: a hung server is killed with its JVM
        )
    running = Server(process, root / "warehouse", thrift_port, connect_port, stderr)
    threading.Thread(target=running.read_stdout, daemon=True).start()
    try:
        said = running.wait_for("sparkmv: Spark Connect server on", START_TIMEOUT)
        assert (
            f"sparkmv: JDBC (Thrift) server on jdbc:hive2://localhost:{thrift_port} "
            "(user name and password required)"
        ) in said
        assert said[-1] == (
            f"sparkmv: Spark Connect server on sc://localhost:{connect_port} "
            "(token required: sc://host:port/;token=...)"
        )
        yield running
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@dataclass
class ClientRun:
    stdout: str
    stderr: str
    returncode: int
    started: float
    ended: float

    def __str__(self) -> str:
        return (
            f"exit code {self.returncode}\n--- stdout ---\n{self.stdout}\n"
            f"--- stderr ---\n{self.stderr}"
        )


@dataclass
class ClientRuns:
    jdbc: ClientRun
    connect: ClientRun
    jdbc_standard_error: ClientRun  # Spark's JSON error format


@dataclass
class RefusedRuns:
    jdbc_wrong_password: ClientRun
    connect_wrong_token: ClientRun
    connect_no_token: ClientRun


def beeline_command(server: Server, script: str, *credentials: str) -> list[str]:
    return [
        str(BEELINE),
        "-u",
        f"jdbc:hive2://localhost:{server.thrift_port}",
        *credentials,
        "--silent=true",
        "--outputformat=csv2",
        "-e",
        script,
    ]


def client_env() -> dict[str, str]:
    env = {**python_env(), "SPARK_HOME": str(SPARK_HOME)}
    env.pop("SPARK_CONNECT_AUTHENTICATE_TOKEN", None)  # the client would send it
    return env


def run_clients(commands: dict[str, list[str]], root: Path) -> dict[str, ClientRun]:
    """The clients of ``commands``, started together, once all have finished."""
    env = client_env()
    started = {
        name: (time.time(), client(command, root / name, env)) for name, command in commands.items()
    }
    return {name: finish(*run, root / name) for name, run in started.items()}


@pytest.fixture(scope="module")
def refused_runs(server: Server, tmp_path_factory: pytest.TempPathFactory) -> RefusedRuns:
    """Clients with wrong credentials or none, each trying to create a table, all at once."""
    require(beeline_missing())
    require(connect_client_missing())
    connect_url = f"sc://localhost:{server.connect_port}"
    create = f"CREATE TABLE default.{REFUSED_JDBC_TABLE} (a INT) USING parquet"
    runs = run_clients(
        {
            "jdbc_wrong_password": beeline_command(server, create, "-n", USER, "-p", "wrong"),
            "connect_wrong_token": [
                sys.executable,
                "-c",
                REFUSED_CONNECT_CLIENT,
                f"{connect_url}/;token=wrong-token",
            ],
            "connect_no_token": [sys.executable, "-c", REFUSED_CONNECT_CLIENT, connect_url],
        },
        tmp_path_factory.mktemp("refused"),
    )
    return RefusedRuns(**runs)


@pytest.fixture(scope="module")
def client_runs(
    server: Server, refused_runs: RefusedRuns, tmp_path_factory: pytest.TempPathFactory
) -> ClientRuns:
    """beeline and a Spark Connect client with the right credentials, started together once
    the refused clients have finished, each running its lifecycle; and beeline asking for
    Spark's JSON error format."""
    connect_url = f"sc://localhost:{server.connect_port}/;token={TOKEN}"
    runs = run_clients(
        {
            "jdbc": beeline_command(server, JDBC_SCRIPT, "-n", USER, "-p", PASSWORD),
            "connect": [sys.executable, "-c", CONNECT_CLIENT, connect_url],
            "jdbc_standard_error": beeline_command(
                server, JDBC_STANDARD_ERROR_SCRIPT, "-n", USER, "-p", PASSWORD
            ),
        },
        tmp_path_factory.mktemp("clients"),
    )
    return ClientRuns(**runs)


def client(command: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """A client process with its output in files (no pipe fills while the other runs)."""
    with open(f"{log}.out", "w") as out, open(f"{log}.err", "w") as err:
        return subprocess.Popen(
            command, env=env, stdout=out, stderr=err, text=True, start_new_session=True
        )


def finish(started: float, process: subprocess.Popen[str], log: Path) -> ClientRun:
    try:
        process.wait(timeout=CLIENT_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return ClientRun(
        Path(f"{log}.out").read_text(),
        Path(f"{log}.err").read_text(),
        process.returncode,
        started,
        time.time(),
    )


def csv_results(stdout: str) -> dict[str, list[list[str]]]:
    """beeline's csv2 results by header line (each query here names its columns apart)."""
    results: dict[str, list[list[str]]] = {}
    current: list[list[str]] | None = None
    for row in csv.reader(stdout.splitlines()):
        header = ",".join(row)
        if header in HEADERS:
            current = results.setdefault(header, [])
        elif current is not None and row:
            current.append(row)
    return results


REFRESH_HEADER = "mode,reason,rows_inserted,rows_deleted,irrelevant_rows,duration_ms"
HISTORY_HEADER = (
    "view,started,ended,duration_ms,trigger,status,mode,reason,estimated_ms,rows_inserted,"
    "rows_deleted,irrelevant_rows,base_versions,spark_jobs,bytes_read,error_class,error_message"
)
HEADERS = {
    REFRESH_HEADER,
    HISTORY_HEADER,
    "h_view,h_trigger,h_status,h_mode",
    "v_region,v_n,v_total",
    "extra_rows,missing_rows",
    "col_name,data_type,comment",
}


def assert_no_stack(text: str) -> None:
    """A client's error output holds no JVM stack trace."""
    assert "\tat " not in text and "JVM stacktrace" not in text and "Caused by" not in text, text


def test_beeline_runs_the_lifecycle_and_gets_clean_errors(client_runs: ClientRuns) -> None:
    run = client_runs.jdbc
    results = csv_results(run.stdout)
    assert results[REFRESH_HEADER][0][0] == "INCREMENTAL", run
    assert results["v_region,v_n,v_total"] == JDBC_ROWS, run
    assert results["extra_rows,missing_rows"] == [["0", "0"]], run
    described = {row[0]: row[1] for row in results["col_name,data_type,comment"]}
    assert described["Name"] == "jdbc_db.by_region", run
    assert described["Last Refresh Mode"] == "INCREMENTAL", run
    assert described["Refresh Policy"] == "INCREMENTAL", run
    # The refresh history, through the table-valued function and SHOW.
    history = [["jdbc_db.by_region", "STATEMENT", "SUCCEEDED", "INCREMENTAL"]]
    assert results["h_view,h_trigger,h_status,h_mode"] == history, run
    (newest,) = results[HISTORY_HEADER]
    assert newest[0] == "jdbc_db.by_region" and newest[5:7] == ["SUCCEEDED", "INCREMENTAL"], run
    # The last statement fails, and beeline stops there with the Spark error, clean.
    assert run.returncode != 0, run
    assert "[MATERIALIZED_VIEW_NOT_FOUND] " in run.stderr, run
    assert "jdbc_db.no_such_view cannot be found" in run.stderr, run
    assert "SQLSTATE: 42P01 (state=42P01,code=0)" in run.stderr, run
    assert_no_stack(run.stderr)


def connect_result(run: ClientRun) -> dict[str, Any]:
    """What the Spark Connect client found (its last output line)."""
    marked = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    assert run.returncode == 0 and marked, run
    found: dict[str, Any] = json.loads(marked[-1].removeprefix("RESULT "))
    return found


def test_spark_connect_runs_the_lifecycle_and_gets_clean_errors(client_runs: ClientRuns) -> None:
    found = connect_result(client_runs.connect)
    assert found["refresh"][0][0] == "INCREMENTAL", found
    assert found["full_refresh"][0][0] == "FULL", found  # over another session's write
    assert found["view"] == CONNECT_ROWS, found
    assert found["oracle"] == [0, 0], found
    described = found["describe"]
    assert described["Name"] == "connect_db.by_region", found
    assert described["Last Refresh Mode"] == "INCREMENTAL", found
    assert found["history"] == [
        ["connect_db.by_region", "STATEMENT", "SUCCEEDED", "INCREMENTAL"],
        ["connect_db.by_region", "STATEMENT", "SUCCEEDED", "FULL"],
    ], found
    (newest,) = found["show_refreshes"]
    assert newest[0] == "connect_db.by_region" and newest[6] == "FULL", found
    # SHOW without a database lists the client's current one.
    assert [row[:4] for row in found["show"]] == [
        ["connect_db", "by_region", "AUTO", "ON DEMAND"]
    ], found
    error = found["error"]
    assert error["condition"] == "MATERIALIZED_VIEW_NOT_FOUND", error
    assert error["sql_state"] == "42P01", error
    assert error["text"].startswith("[MATERIALIZED_VIEW_NOT_FOUND] The materialized view "), error
    assert error["text"].endswith("SQLSTATE: 42P01"), error
    assert error["parameters"] == {"name": "connect_db.no_such_view"}, error
    assert error["message"] == error["text"], error
    assert_no_stack(error["text"])


def test_two_clients_at_once(client_runs: ClientRuns) -> None:
    """Both lifecycles ran on the server at the same time, each in its own session."""
    jdbc, connect = client_runs.jdbc, client_runs.connect
    found = connect_result(connect)
    assert found["started"] < jdbc.ended and jdbc.started < found["ended"], (jdbc, found)
    assert csv_results(jdbc.stdout)["v_region,v_n,v_total"] == JDBC_ROWS, jdbc
    assert found["view"] == CONNECT_ROWS, found


def listening_addresses(port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The local addresses of the sockets listening on TCP ``port`` (Linux's /proc/net)."""
    found: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for table, size in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, port_hex = fields[1].split(":")
            if fields[3] != "0A" or int(port_hex, 16) != port:  # 0A: LISTEN
                continue
            # the address in 32-bit words, each in the host's (little-endian) byte order
            raw = b"".join(bytes.fromhex(address[i : i + 8])[::-1] for i in range(0, size * 2, 8))
            found.append(ipaddress.ip_address(raw))
    return found


def loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def test_both_servers_listen_on_loopback_by_default(server: Server) -> None:
    if not os.path.exists("/proc/net/tcp"):
        pytest.skip("no /proc/net/tcp to read the listening sockets from")
    for port in (server.thrift_port, server.connect_port):
        addresses = listening_addresses(port)
        assert addresses, f"nothing listens on port {port}"
        assert all(loopback(address) for address in addresses), (port, addresses)


def test_wrong_credentials_are_refused_and_nothing_runs(
    refused_runs: RefusedRuns, client_runs: ClientRuns
) -> None:
    jdbc = refused_runs.jdbc_wrong_password
    assert jdbc.returncode != 0, jdbc
    assert "Error validating the login" in jdbc.stderr, jdbc
    assert_no_stack(jdbc.stderr)
    for run, said in (
        (refused_runs.connect_wrong_token, "Invalid authentication token"),
        (refused_runs.connect_no_token, "No authentication token provided"),
    ):
        found = connect_result(run)
        assert "ran" not in found, found
        assert found["type"] == "SparkConnectGrpcException", found
        assert "StatusCode.UNAUTHENTICATED" in found["text"] and said in found["text"], found
    # The lifecycle clients, with the right credentials, ran afterwards and found no table.
    assert connect_result(client_runs.connect)["default_tables"] == [], client_runs.connect


def test_jdbc_errors_in_sparks_json_format(client_runs: ClientRuns) -> None:
    """With spark.sql.error.messageFormat=STANDARD the JDBC server renders a sparkmv error as
    it renders Spark's: class, template (from Spark's registry), SQLSTATE and parameters."""
    run = client_runs.jdbc_standard_error
    assert run.returncode != 0, run
    start = run.stderr.index("{")
    rendered, _ = json.JSONDecoder().raw_decode(run.stderr[start:])
    assert rendered["errorClass"] == "MATERIALIZED_VIEW_NOT_FOUND", run
    assert rendered["sqlState"] == "42P01", run
    assert rendered["messageParameters"] == {"name": "default.no_such_view"}, run
    assert rendered["messageTemplate"].startswith("The materialized view <name> cannot"), run


def test_servers_off_loopback_without_credentials_are_announced_with_a_warning() -> None:
    assert is_loopback("localhost") and is_loopback("127.0.0.1") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("no-such-host.invalid")
    running = [(THRIFT, "jdbc:hive2://0.0.0.0:1", True), (CONNECT, "sc://0.0.0.0:2", False)]
    lines = announcements("0.0.0.0", running)
    assert lines[:2] == [
        "JDBC (Thrift) server on jdbc:hive2://0.0.0.0:1 (user name and password required)",
        "Spark Connect server on sc://0.0.0.0:2",
    ]
    assert lines[2:] == [
        "warning: the Spark Connect server listens on 0.0.0.0 without authentication: anyone "
        "who reaches it runs any statement as this application (--token-file requires "
        "credentials)"
    ]
    assert len(announcements("localhost", running)) == 2  # loopback: no warning


def test_an_empty_token_file_stops_the_server_before_spark_starts(tmp_path: Path) -> None:
    empty = tmp_path / "token"
    empty.write_text("\n")
    completed = subprocess.run(
        [str(SPARKMV), "server", "--token-file", str(empty)],
        cwd=tmp_path,
        env=python_env(),
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT,
        check=False,
    )
    assert completed.returncode == 1, completed
    assert completed.stderr.startswith("Error: [SERVER_CREDENTIALS_UNUSABLE] The token file "), (
        completed
    )
    assert "its first line is empty" in completed.stderr, completed
    assert not (tmp_path / "spark-warehouse").exists(), completed


def test_sigint_stops_the_server_and_the_views_persist(
    server: Server, client_runs: ClientRuns, tmp_path: Path
) -> None:
    server.process.send_signal(signal.SIGINT)
    try:
        server.process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the server did not stop within {STOP_TIMEOUT} s\n{server.log()}")
    assert server.process.returncode == 0, server.log()
    said = server.wait_for("sparkmv: stopped", 5)
    assert "sparkmv: stopping" in said, said

    statements = ";".join(
        f"USE {database}; SELECT * FROM by_region ORDER BY region; {ORACLE}"
        for database in ("jdbc_db", "connect_db")
    )
    after = subprocess.run(
        [str(SPARKMV), "sql", "--warehouse", str(server.warehouse), "-e", statements],
        cwd=tmp_path,
        env=python_env(),
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT,
        check=False,
    )
    assert after.returncode == 0, after
    printed = tables(after.stdout)
    assert [rows for _, rows in printed] == [
        JDBC_ROWS,
        [["0", "0"]],
        [[region, str(n), str(total)] for region, n, total in CONNECT_ROWS],
        [["0", "0"]],
    ], after.stdout
