"""A throwaway PostgreSQL server on localhost, for the shared-metastore tests.

``initdb`` into a temporary directory, ``pg_ctl start`` on a free port, one database per
caller, ``pg_ctl stop`` at the end. PostgreSQL refuses to run as root: as root the server runs
as the ``postgres`` user (Debian's package creates it), which then owns the directory.

Without PostgreSQL's server programs or its JDBC driver the tests skip, saying why; with
``SPARKMV_REQUIRE_POSTGRES=1`` (``.ci/run`` sets it, after installing Debian's
``postgresql`` and ``libpostgresql-jdbc-java``) they fail instead: a CI run must not pass
without having run them.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest
from sparkmv.config import POSTGRES_JDBC_JAR, POSTGRES_JDBC_JAR_ENV

REQUIRE_ENV = "SPARKMV_REQUIRE_POSTGRES"
USER = "postgres"


def unavailable(reason: str) -> NoReturn:
    """Skip, or fail when ``REQUIRE_ENV`` is set."""
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{reason}\n({REQUIRE_ENV} is set, so this fails instead of skipping)")
    pytest.skip(reason)


def server_programs() -> Path | None:
    """The directory of ``initdb``, ``pg_ctl`` and ``psql`` (Debian's, newest first)."""
    for directory in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if all((Path(directory) / name).is_file() for name in ("initdb", "pg_ctl", "psql")):
            return Path(directory)
    found = shutil.which("pg_ctl")
    return Path(found).parent if found and shutil.which("initdb") else None


@dataclass(frozen=True)
class Server:
    programs: Path
    directory: Path
    port: int
    run_as: list[str]  # the prefix that runs a program as the server's owner

    def run(self, program: str, *arguments: str) -> str:
        done = subprocess.run(
            [*self.run_as, str(self.programs / program), *arguments],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if done.returncode != 0:
            command = " ".join([program, *arguments])
            raise RuntimeError(f"{command} failed:\n{done.stdout}{done.stderr}")
        return done.stdout

    def create_database(self, name: str) -> str:
        """A new database's JDBC URL (user ``postgres``, no password: trust on localhost)."""
        self.run("psql", "-h", "localhost", "-p", str(self.port), "-U", USER, "-d", "postgres",
                 "-c", f"CREATE DATABASE {name}")  # fmt: skip
        return f"jdbc:postgresql://localhost:{self.port}/{name}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def postgres_server() -> Iterator[Server]:
    """A started server, stopped (and its files removed) at the end."""
    programs = server_programs()
    if programs is None:
        unavailable("PostgreSQL's server programs (initdb, pg_ctl) are not installed")
    jar = os.environ.get(POSTGRES_JDBC_JAR_ENV) or POSTGRES_JDBC_JAR
    if not Path(jar).is_file():
        unavailable(f"the PostgreSQL JDBC driver is not at {jar} (libpostgresql-jdbc-java)")
    run_as: list[str] = []
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam(USER)
        except KeyError:
            unavailable(f"running as root, and there is no {USER} user to run PostgreSQL as")
        run_as = ["runuser", "-u", USER, "--"]
    directory = Path(tempfile.mkdtemp(prefix="sparkmv-pg-"))
    if run_as:
        os.chown(directory, owner.pw_uid, owner.pw_gid)
    server = Server(programs, directory, _free_port(), run_as)
    data = str(directory / "data")
    try:
        server.run("initdb", "-D", data, "-A", "trust", "-U", USER, "--no-sync")
        options = f"-p {server.port} -k {directory} -c listen_addresses=localhost -c fsync=off"
        server.run("pg_ctl", "-D", data, "-o", options, "-l", str(directory / "log"), "-w", "start")
        try:
            yield server
        finally:
            server.run("pg_ctl", "-D", data, "-m", "fast", "-w", "stop")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
