"""A small SQL shell over a sparkmv session: statement splitting, tables, errors, and on a
terminal a progress line while a statement runs (``progress.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from sparkmv.bridge import pyspark_error_loggers
from sparkmv.progress import progress

PROMPT = "sparkmv> "
CONTINUATION = "       > "


def split_statements(text: str) -> list[str]:
    """Split on top-level ``;``, aware of quotes, back-quotes and comments."""
    complete, rest = scan_statements(text)
    return complete + scan_statements(rest + ";")[0]


def scan_statements(text: str) -> tuple[list[str], str]:
    """The ``;``-terminated statements of ``text`` and the raw text after the last one.

    A statement starts at its first character of code (leading comments dropped); pieces
    holding only whitespace and comments are dropped.
    """
    statements: list[str] = []
    start, i, n = 0, 0, len(text)
    code_start: int | None = None
    while i < n:
        if text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif text[i] == ";":
            if code_start is not None:
                statements.append(text[code_start:i].strip())
            start, i, code_start = i + 1, i + 1, None
        else:
            if code_start is None and not text[i].isspace():
                code_start = i
            i = _closing_quote(text, i) if text[i] in "'\"`" else i + 1
    return statements, text[start:]


def _closing_quote(text: str, start: int) -> int:
    quote, i = text[start], start + 1
    while i < len(text):
        if text[i] == "\\" and quote != "`":
            i += 2
        elif text[i] == quote:
            return i + 1
        else:
            i += 1
    return len(text)


def format_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows as an aligned text table with a header, like spark-sql's verbose output."""
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [
        max([len(column), *(len(row[i]) for row in cells)]) for i, column in enumerate(columns)
    ]
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    out = [line, _row(columns, widths), line, *(_row(row, widths) for row in cells), line]
    return "\n".join(out)


def _row(values: Sequence[str], widths: Sequence[int]) -> str:
    return (
        "|"
        + "|".join(f" {value:<{width}} " for value, width in zip(values, widths, strict=True))
        + "|"
    )


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    text = str(value)
    # Multi-line values (a view's query) would break the table's rows.
    return " ".join(text.split()) if "\n" in text else text


def format_error(error: PySparkException) -> str:
    """``Error: [CLASS] message`` (the message already ends with the SQLSTATE)."""
    message = error.getMessage() if error.getCondition() is None else _first_part(error)
    return f"Error: {message}"


def _first_part(error: PySparkException) -> str:
    text = str(getattr(error, "_desc", "") or error)
    return text.split("\n\nJVM stacktrace:")[0].strip()


@dataclass
class Shell:
    spark: SparkSession
    out: TextIO

    @classmethod
    def start(
        cls,
        warehouse: str | None,
        conf: dict[str, str],
        out: TextIO,
        metastore_url: str | None = None,
    ) -> Shell:
        import sparkmv

        for logger in pyspark_error_loggers():  # the shell prints each error itself, once
            logger.disabled = True
        return cls(sparkmv.session(warehouse, metastore_url=metastore_url, **conf), out)

    def stop(self) -> None:
        self.spark.stop()

    def run(self, statement: str) -> bool:
        """Run one statement and print its result; False if it failed. The progress line
        (on a terminal) is blanked before anything is printed."""
        try:
            with progress(self.spark, self.out):
                frame = self.spark.sql(statement)
                rows = frame.collect()
        except PySparkException as error:
            print(format_error(error), file=self.out)
            return False
        if frame.columns:
            print(format_table(frame.columns, rows), file=self.out)
            print(f"{len(rows)} row{'s' if len(rows) != 1 else ''}", file=self.out)
        else:
            print("OK", file=self.out)
        return True

    def run_all(self, statements: Iterable[str]) -> int:
        """Run statements in order, stopping at the first failure; an exit code."""
        for statement in statements:
            if not self.run(statement):
                return 1
        return 0

    def interactive(self, stdin: TextIO) -> int:
        """Read statements ending in ``;`` until EOF or ``exit;``/``quit;``."""
        buffer = ""
        while True:
            self.out.write(CONTINUATION if buffer.strip() else PROMPT)
            self.out.flush()
            line = stdin.readline()
            if not line:
                print(file=self.out)
                return 0
            complete, buffer = scan_statements(buffer + line)
            for statement in complete:
                if statement.lower() in ("exit", "quit"):
                    return 0
                self.run(statement)
