"""A small SQL shell over a sparkmv session: statement splitting, tables, errors."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from sparkmv.bridge import pyspark_error_loggers

PROMPT = "sparkmv> "
CONTINUATION = "       > "


def split_statements(text: str) -> list[str]:
    """Split on top-level ``;``, aware of quotes, back-quotes and comments."""
    statements: list[str] = []
    current: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"`":
            end = _closing_quote(text, i)
            current.append(text[i:end])
            i = end
        elif text.startswith("--", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            current.append(text[i:end])
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            current.append(text[i:end])
            i = end
        elif c == ";":
            statements.append("".join(current))
            current = []
            i += 1
        else:
            current.append(c)
            i += 1
    statements.append("".join(current))
    return [s.strip() for s in statements if _has_code(s)]


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


def _has_code(statement: str) -> bool:
    lines = [line.split("--", 1)[0].strip() for line in statement.splitlines()]
    return any(lines)


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
    def start(cls, warehouse: str | None, conf: dict[str, str], out: TextIO) -> Shell:
        import sparkmv

        for logger in pyspark_error_loggers():  # the shell prints each error itself, once
            logger.disabled = True
        return cls(sparkmv.session(warehouse, **conf), out)

    def stop(self) -> None:
        self.spark.stop()

    def run(self, statement: str) -> bool:
        """Run one statement and print its result; False if it failed."""
        try:
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
            self.out.write(CONTINUATION if buffer else PROMPT)
            self.out.flush()
            line = stdin.readline()
            if not line:
                print(file=self.out)
                return 0
            buffer += line
            if ";" not in line:
                continue
            *complete, rest = (buffer + "\n").rsplit(";", 1)
            buffer = rest.strip()
            for statement in split_statements(complete[0] if complete else ""):
                if statement.lower() in ("exit", "quit"):
                    return 0
                self.run(statement)
