"""The ``sparkmv`` command: ``sparkmv sql [-e STATEMENTS | -f FILE]``, ``sparkmv server`` and
``sparkmv jar``."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from sparkmv.config import (
    CONNECT_PORT,
    SERVER_APPLICATION_CONF,
    SERVER_HOST,
    THRIFT_PORT,
)
from sparkmv.errors import SparkMvError
from sparkmv.jar import JarBuildError, jar_path
from sparkmv.shell import Shell, split_statements


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sparkmv", description="Incremental materialized views for Apache Spark."
    )
    parser.add_argument("--version", action="version", version=version())
    commands = parser.add_subparsers(dest="command", required=True)
    sql = commands.add_parser("sql", help="a SQL shell with the sparkmv extension")
    source = sql.add_mutually_exclusive_group()
    source.add_argument("-e", dest="statements", help="run these ;-separated statements")
    source.add_argument("-f", dest="file", type=Path, help="run the statements in FILE")
    _session_options(sql)
    server = commands.add_parser(
        "server",
        help="JDBC (Thrift) and Spark Connect servers with the sparkmv extension",
        description="Serve JDBC (beeline, BI tools) and Spark Connect clients from one Spark "
        "driver with the sparkmv extension, until Ctrl-C or SIGTERM.",
    )
    server.add_argument(
        "--thrift-port",
        type=port_number,
        default=THRIFT_PORT,
        metavar="PORT",
        help=f"JDBC (Thrift) server port ({THRIFT_PORT}; 0: no JDBC server)",
    )
    server.add_argument(
        "--connect-port",
        type=port_number,
        default=CONNECT_PORT,
        metavar="PORT",
        help=f"Spark Connect server port ({CONNECT_PORT}; 0: no Spark Connect server)",
    )
    server.add_argument(
        "--host",
        type=host_name,
        default=SERVER_HOST,
        help=f"address both servers listen on ({SERVER_HOST}: this machine only; 0.0.0.0: "
        "every IPv4 interface)",
    )
    token = server.add_mutually_exclusive_group()
    token.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help="Spark Connect clients must pass the token on this file's first line "
        "(sc://host:port/;token=TOKEN)",
    )
    token.add_argument(
        "--token",
        help="the same, with the token itself (visible to other users in the process list)",
    )
    server.add_argument(
        "--password-file",
        type=Path,
        metavar="FILE",
        help="JDBC clients must log in with a user name and password listed in FILE, one "
        "user:password per line (read at every login; keep it readable by this user only)",
    )
    _session_options(server)
    commands.add_parser("jar", help="print the path of the extension jar (building it if needed)")
    args = parser.parse_args(argv)

    if args.command == "jar":
        try:
            print(jar_path())
        except JarBuildError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        return 0
    if args.command == "server":
        if not args.thrift_port and not args.connect_port:
            parser.error("server: --thrift-port and --connect-port are both 0: nothing to serve")
        return _run_server(args)
    return _run_sql(args, sys.stdin, sys.stdout)


def version() -> str:
    """``sparkmv X (Spark Y)``: this package's version and the Spark it runs on."""
    import pyspark

    from sparkmv import __version__

    return f"sparkmv {__version__} (Spark {pyspark.__version__})"


def _session_options(command: argparse.ArgumentParser) -> None:
    """The options of a command that starts a sparkmv session."""
    command.add_argument(
        "--warehouse", default=None, help="warehouse and catalog directory (./spark-warehouse)"
    )
    command.add_argument(
        "--metastore-url",
        default=None,
        metavar="JDBC_URL",
        help="keep the catalog in a Hive metastore on PostgreSQL, which several processes can "
        "share (jdbc:postgresql://host:port/db?user=...&password=...; default: embedded "
        "Derby under the warehouse, one process)",
    )
    command.add_argument(
        "--conf",
        action="append",
        default=[],
        type=conf_pair,
        metavar="KEY=VALUE",
        help="Spark configuration",
    )


def conf_pair(text: str) -> tuple[str, str]:
    """A ``--conf KEY=VALUE`` option as ``(key, value)`` (an argparse ``type``)."""
    key, equals, value = text.partition("=")
    if not equals or not key:
        raise argparse.ArgumentTypeError(f"takes KEY=VALUE, got {text!r}")
    return key, value


def host_name(text: str) -> str:
    """A host name or address to listen on (an argparse ``type``)."""
    if not text.strip() or any(character.isspace() for character in text):
        raise argparse.ArgumentTypeError(f"takes a host name or address, got {text!r}")
    return text


def port_number(text: str) -> int:
    """A TCP port, 0 to 65535 (an argparse ``type``)."""
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"takes a port number 0-65535, got {text!r}")
    return int(text)


def _run_server(args: argparse.Namespace) -> int:
    """Serve until SIGINT or SIGTERM; exit code 0 after a clean stop, 1 if a server could
    not start."""
    import sparkmv
    from sparkmv.server import driver_alive, read_token_file, serve

    logging.getLogger("py4j").setLevel(logging.ERROR)
    try:
        token = args.token if args.token_file is None else read_token_file(args.token_file)
    except SparkMvError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    try:
        spark = sparkmv.session(
            args.warehouse,
            metastore_url=args.metastore_url,
            **{**SERVER_APPLICATION_CONF, **dict(args.conf)},
        )
    except KeyboardInterrupt:  # Ctrl-C while Spark starts: nothing to stop yet
        return 130
    try:
        serve(
            spark,
            args.thrift_port,
            args.connect_port,
            host=args.host,
            token=token,
            password_file=args.password_file,
            out=sys.stdout,
        )
    except SparkMvError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    finally:
        if driver_alive(spark):
            spark.stop()
    return 0


def _run_sql(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    conf = dict(args.conf)  # on a terminal the shell shows its own progress line (progress.py)
    logging.getLogger("py4j").setLevel(logging.ERROR)
    shell = Shell.start(args.warehouse, conf, stdout, args.metastore_url)
    try:
        if args.statements is not None:
            return shell.run_all(split_statements(args.statements))
        if args.file is not None:
            return shell.run_all(split_statements(args.file.read_text()))
        return shell.interactive(stdin)
    finally:
        shell.stop()


if __name__ == "__main__":
    sys.exit(main())
