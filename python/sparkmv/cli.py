"""The ``sparkmv`` command: ``sparkmv sql [-e STATEMENTS | -f FILE]`` and ``sparkmv jar``."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from sparkmv.jar import JarBuildError, jar_path
from sparkmv.shell import Shell, split_statements


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sparkmv", description="Incremental materialized views for Apache Spark."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    sql = commands.add_parser("sql", help="a SQL shell with the sparkmv extension")
    source = sql.add_mutually_exclusive_group()
    source.add_argument("-e", dest="statements", help="run these ;-separated statements")
    source.add_argument("-f", dest="file", type=Path, help="run the statements in FILE")
    sql.add_argument(
        "--warehouse", default=None, help="warehouse and catalog directory (./spark-warehouse)"
    )
    sql.add_argument(
        "--conf",
        action="append",
        default=[],
        type=conf_pair,
        metavar="KEY=VALUE",
        help="Spark configuration",
    )
    commands.add_parser("jar", help="print the path of the extension jar (building it if needed)")
    args = parser.parse_args(argv)

    if args.command == "jar":
        try:
            print(jar_path())
        except JarBuildError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        return 0
    return _run_sql(args, sys.stdin, sys.stdout)


def conf_pair(text: str) -> tuple[str, str]:
    """A ``--conf KEY=VALUE`` option as ``(key, value)`` (an argparse ``type``)."""
    key, equals, value = text.partition("=")
    if not equals or not key:
        raise argparse.ArgumentTypeError(f"takes KEY=VALUE, got {text!r}")
    return key, value


def _run_sql(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    conf = dict(args.conf)
    logging.getLogger("py4j").setLevel(logging.ERROR)
    shell = Shell.start(args.warehouse, conf, stdout)
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
