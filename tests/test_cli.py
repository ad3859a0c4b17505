"""The ``sparkmv`` command run as a user runs it: a separate process, its output and exit code.

Each ``sparkmv sql`` run starts a JVM (seconds), so the runs are few, each covers several
cases, and the independent ones start together (``cli_runs``) so their start-ups overlap.
"""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import python_env
from sparkmv.shell import Shell, split_statements

SPARKMV = Path(sys.executable).parent / "sparkmv"
TIMEOUT = 300

MAIN_STATEMENTS = (
    "CREATE TABLE t (a INT) USING parquet; INSERT INTO t VALUES (1),(2); "
    "CREATE MATERIALIZED VIEW v AS SELECT a FROM t; INSERT INTO t VALUES (3); "
    "REFRESH MATERIALIZED VIEW v; SELECT * FROM v ORDER BY a"
)

SCRIPT = """\
-- A script with comments; semicolons in comments and strings are not statement ends.
CREATE TABLE t (a INT, s STRING) USING parquet;
/* a block comment; over
   two lines */
INSERT INTO t VALUES (1, 'semi;colon'), (2, 'plain');
CREATE MATERIALIZED VIEW v AS
  SELECT a, s FROM t  -- only some rows; not 'x;y'
  WHERE s <> 'x;y';
INSERT INTO t VALUES (3, 'x;y'), (4, 'four');
REFRESH MATERIALIZED VIEW v;
SELECT * FROM v ORDER BY a;   -- trailing comment
SHOW MATERIALIZED VIEWS;
REFRESH MATERIALIZED VIEW nope;
SELECT 'not reached' AS marker;
"""

INTERACTIVE_INPUT = """\
CREATE TABLE t (a INT, s STRING)
  USING parquet;
INSERT INTO t VALUES (1, 'one'), (2, 'two');
CREATE MATERIALIZED VIEW v AS
  SELECT a, s
  FROM t
  WHERE a > 1;
REFRESH MATERIALIZED VIEW missing;
SELECT a, s
FROM v
ORDER BY a;
exit;
SELECT 'after exit' AS marker;
"""

PROMPT = "sparkmv> "
CONTINUATION = "       > "
REFRESH_COLUMNS = [
    "mode",
    "reason",
    "rows_inserted",
    "rows_deleted",
    "irrelevant_rows",
    "duration_ms",
]
# A log4j line as Spark prints them: "26/01/31 12:00:00 WARN Utils: ..."
JVM_LOG_LINE = re.compile(
    r"^\d{2}/\d{2}/\d{2} \d{2}:\d{2}:\d{2} (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ", re.MULTILINE
)


@dataclass
class Run:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def __str__(self) -> str:
        return (
            f"$ {' '.join(self.args)}\nexit code {self.returncode}\n"
            f"--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}"
        )


Table = tuple[list[str], list[list[str]]]


def tables(text: str) -> list[Table]:
    """The ``+---+`` tables the shell printed, in order: (header, rows) of cell texts."""
    found: list[Table] = []
    block: list[str] = []
    for raw in [*text.splitlines(), ""]:
        line = raw
        while line.startswith((PROMPT, CONTINUATION)):
            line = line[len(PROMPT) :]
        if line.startswith(("+", "|")):
            block.append(line)
            continue
        if block:
            cells = [
                [c.strip() for c in row.strip()[1:-1].split("|")] for row in block if row[0] == "|"
            ]
            found.append((cells[0], cells[1:]))
            block = []
    return found


def assert_clean(run: Run) -> None:
    """No traceback, no py4j text, no JVM log lines reach the user."""
    assert "Traceback" not in run.output, run
    assert "py4j" not in run.output.lower(), run
    assert "Py4JJavaError" not in run.output, run
    assert not JVM_LOG_LINE.search(run.output), run
    assert "log4j profile" not in run.output, run


def start(args: list[str], cwd: Path, log_dir: Path, stdin: Path | None) -> subprocess.Popen[str]:
    """Start ``sparkmv`` with output to files (no pipes to fill while other runs are awaited)."""
    with (
        (log_dir / "stdout").open("w") as out,
        (log_dir / "stderr").open("w") as err,
        (stdin or Path(os.devnull)).open() as source,
    ):
        return subprocess.Popen(
            [str(SPARKMV), *args],
            cwd=cwd,
            env=python_env(),
            stdin=source,
            stdout=out,
            stderr=err,
            text=True,
            start_new_session=True,  # so a hung run can be killed together with its JVM
        )


def finish(process: subprocess.Popen[str], deadline: float, log_dir: Path) -> Run:
    timed_out = ""
    try:
        process.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        timed_out = f"\n(killed after {TIMEOUT} s)"
    return Run(
        [str(part) for part in process.args],
        process.returncode,
        (log_dir / "stdout").read_text(),
        (log_dir / "stderr").read_text() + timed_out,
    )


@pytest.fixture(scope="module")
def cli_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli")
    (root / "cwd").mkdir()
    return root


@pytest.fixture(scope="module")
def cli_runs(cli_root: Path) -> dict[str, Run]:
    """The ``sparkmv sql`` runs of this module, started together; each has its own warehouse."""
    script = cli_root / "script.sql"
    script.write_text(SCRIPT)
    stdin = cli_root / "stdin.sql"
    stdin.write_text(INTERACTIVE_INPUT)
    plans = {
        "e": (["-e", MAIN_STATEMENTS], None),
        "f": (["-f", str(script)], None),
        "interactive": ([], stdin),
    }
    started = {}
    for name, (args, source) in plans.items():
        log_dir = cli_root / name
        log_dir.mkdir()
        command = ["sql", "--warehouse", str(cli_root / f"warehouse-{name}"), *args]
        started[name] = start(command, cli_root / "cwd", log_dir, source)
    deadline = time.monotonic() + TIMEOUT
    return {name: finish(process, deadline, cli_root / name) for name, process in started.items()}


def test_statements_from_command_line(cli_runs: dict[str, Run]) -> None:
    run = cli_runs["e"]
    assert run.returncode == 0, run
    assert_clean(run)
    printed = tables(run.stdout)
    assert len(printed) == 2, run
    refresh_header, refresh_rows = printed[0]
    assert refresh_header == REFRESH_COLUMNS, run
    assert len(refresh_rows) == 1 and refresh_rows[0][0] == "INCREMENTAL", run
    assert refresh_rows[0][2] == "1", run  # rows_inserted: the one new row
    assert printed[1] == (["a"], [["1"], ["2"], ["3"]]), run
    assert "3 rows" in run.stdout, run
    # CREATE TABLE, two INSERTs, CREATE MATERIALIZED VIEW.
    assert run.stdout.count("OK\n") == 4, run


def test_statements_from_file_stop_at_first_error(cli_runs: dict[str, Run]) -> None:
    run = cli_runs["f"]
    assert run.returncode == 1, run
    assert_clean(run)
    printed = tables(run.stdout)
    assert [header for header, _ in printed] == [
        REFRESH_COLUMNS,
        ["a", "s"],
        [
            "namespace",
            "viewName",
            "refresh_policy",
            "refresh_trigger",
            "last_refreshed",
            "schedule",
            "next_refresh",
            "current_lag_seconds",
        ],
    ], run
    assert printed[0][1][0][0] == "INCREMENTAL", run
    assert printed[1][1] == [["1", "semi;colon"], ["2", "plain"], ["4", "four"]], run
    assert [row[:2] for row in printed[2][1]] == [["default", "v"]], run
    errors = [line for line in run.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, run
    assert errors[0].startswith("Error: [MATERIALIZED_VIEW_NOT_FOUND]"), run
    assert "nope" in errors[0], run
    assert errors[0].endswith("SQLSTATE: 42P01"), run
    assert "not reached" not in run.output, run  # the run stops at the first failure


def test_interactive(cli_runs: dict[str, Run]) -> None:
    run = cli_runs["interactive"]
    assert run.returncode == 0, run
    assert_clean(run)
    assert run.stdout.startswith(PROMPT), run
    assert run.stdout.count(PROMPT) >= 6, run  # one per statement, and before each result
    assert CONTINUATION in run.stdout, run  # multi-line statements get continuation prompts
    # An error does not end an interactive session.
    errors = [line for line in run.stdout.splitlines() if "Error:" in line]
    assert len(errors) == 1, run
    assert "[MATERIALIZED_VIEW_NOT_FOUND]" in errors[0], run
    assert errors[0].endswith("SQLSTATE: 42P01"), run
    assert tables(run.stdout)[-1] == (["a", "s"], [["2", "two"]]), run
    assert "after exit" not in run.output, run  # `exit;` ends the session


def test_working_directory_stays_empty(cli_runs: dict[str, Run], cli_root: Path) -> None:
    """The catalog (metastore_db, derby.log) and tables belong under --warehouse, not the cwd."""
    assert sorted(path.name for path in (cli_root / "cwd").iterdir()) == []
    for name in cli_runs:
        assert (cli_root / f"warehouse-{name}" / "metastore_db").is_dir()


def test_jar_prints_an_existing_jar() -> None:
    completed = subprocess.run(
        [str(SPARKMV), "jar"],
        env=python_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    output = f"stdout:\n{completed.stdout}\nstderr:\n{completed.stderr}"
    assert completed.returncode == 0, output
    lines = completed.stdout.splitlines()
    assert len(lines) == 1, output
    jar = Path(lines[0])
    assert jar.is_absolute() and jar.suffix == ".jar" and jar.is_file(), output


def test_version_names_sparkmv_and_spark() -> None:
    completed = subprocess.run(
        [str(SPARKMV), "--version"],
        env=python_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert re.fullmatch(r"sparkmv \d+\.\d+\.\d+ \(Spark 4\.\d+\.\d+\)\n", completed.stdout)


@pytest.mark.parametrize("command", ["sql", "server", "jar"])
def test_every_subcommand_has_help(command: str) -> None:
    completed = subprocess.run(
        [str(SPARKMV), command, "--help"],
        env=python_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith(f"usage: sparkmv {command}"), completed.stdout


class _Result:
    columns: ClassVar[list[str]] = []

    def collect(self) -> list[Any]:
        return []


class _RecordingSession:
    """Stands in for a SparkSession: records the statements the shell sends."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    def sql(self, statement: str) -> _Result:
        self.statements.append(statement)
        return _Result()


def _interactive_statements(text: str) -> list[str]:
    session = _RecordingSession()
    shell = Shell(session, io.StringIO())  # type: ignore[arg-type]
    assert shell.interactive(io.StringIO(text)) == 0
    return session.statements


def test_interactive_splits_statements_across_lines() -> None:
    text = "SELECT 1\n  AS one;\nSELECT 2; SELECT 3;\nexit;\nSELECT 4;\n"
    assert _interactive_statements(text) == ["SELECT 1\n  AS one", "SELECT 2", "SELECT 3"]


def test_split_statements() -> None:
    """Leading comments are dropped, later ones kept; quoted ';' are not statement ends."""
    text = "-- c; x\nSELECT 'a;b' AS s; /* d; e */ SELECT `x;y` FROM t -- f; g\n;\n-- end; z\n"
    assert split_statements(text) == [
        "SELECT 'a;b' AS s",
        "SELECT `x;y` FROM t -- f; g",
    ]


def test_split_statements_drops_block_comment_only_segments() -> None:
    assert split_statements("SELECT 1 AS one; /* trailing comment */") == ["SELECT 1 AS one"]


def test_interactive_semicolon_in_string() -> None:
    text = "INSERT INTO t\n  VALUES (1, 'x;y'),\n  (2, 'z');\n"
    assert _interactive_statements(text) == ["INSERT INTO t\n  VALUES (1, 'x;y'),\n  (2, 'z')"]


def test_interactive_semicolon_in_comment() -> None:
    text = "SELECT 1; -- done; really\nSELECT 2;\n"
    assert _interactive_statements(text) == ["SELECT 1", "SELECT 2"]


def test_interactive_statement_continued_after_semicolon() -> None:
    text = "SELECT 1; SELECT a\nFROM VALUES (2) AS v(a);\n"
    assert _interactive_statements(text) == ["SELECT 1", "SELECT a\nFROM VALUES (2) AS v(a)"]
