"""pg_ivm's regression scripts as data: ``sql/<name>.sql`` split into statements and grouped
into sections, each statement paired with what ``expected/<name>.out`` says psql printed for it.

A *section* is what a ``-- title`` comment line heads (up to the next one): pg_ivm's scripts
are written that way, one tested behaviour per titled block (``---`` comments are sub-notes
inside a block). Statements before the first title form the section ``(preamble)``.

The ``.out`` file is psql's echo of the script (statements and comments, blank lines dropped)
followed, after each statement, by its output: a result table (header, ``---+---`` separator,
rows, ``(N rows)``), or ``ERROR:  message`` (with NOTICE/DETAIL/HINT/LINE lines around it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

FILES = ("create_immv", "refresh_immv", "pg_ivm", "outer_join")
PREAMBLE = "(preamble)"
SEPARATOR = re.compile(r"^-+(\+-+)*$")
ROW_COUNT = re.compile(r"^\((\d+) rows?\)$")
META_COMMAND = "\\"


@dataclass(frozen=True)
class Output:
    """What psql printed for one statement: an error, a result table, or nothing."""

    error: str | None = None
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    is_table: bool = False


@dataclass(frozen=True)
class Statement:
    """One statement of a script (a psql meta-command counts as one), as written."""

    file: str
    line: int
    text: str
    expected: Output = field(default_factory=Output)

    @property
    def where(self) -> str:
        return f"{self.file}.sql:{self.line}"


@dataclass
class Section:
    """A titled block of a script: the statements from its ``-- title`` line to the next."""

    file: str
    line: int
    title: str
    statements: list[Statement] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.file}: {self.title}"


def read_sections(corpus: Path, name: str) -> list[Section]:
    """The sections of ``sql/<name>.sql``, each statement with its expected output."""
    sections = split_sections(name, (corpus / "sql" / f"{name}.sql").read_text())
    statements = [statement for section in sections for statement in section.statements]
    outputs = expected_outputs(statements, (corpus / "expected" / f"{name}.out").read_text())
    paired = iter(outputs)
    for section in sections:
        section.statements = [
            Statement(s.file, s.line, s.text, next(paired)) for s in section.statements
        ]
    return sections


def split_sections(name: str, script: str) -> list[Section]:
    """``script`` as sections of statements (without their expected outputs)."""
    sections = [Section(name, 1, PREAMBLE)]
    pending: list[str] = []
    start = 0
    scanner = _Scanner()
    for number, line in enumerate(script.splitlines(), start=1):
        if not pending:
            stripped = line.strip()
            if not stripped:
                continue
            if stripped.startswith("-- "):
                sections.append(Section(name, number, stripped[3:].strip()))
                continue
            if stripped.startswith("--"):
                continue
            if stripped.startswith(META_COMMAND):
                sections[-1].statements.append(Statement(name, number, stripped))
                continue
            start = number
        pending.append(line)
        if scanner.ends_statement(line):
            text = "\n".join(pending).strip()
            sections[-1].statements.append(Statement(name, start, text))
            pending = []
    if pending:
        raise ValueError(f"{name}.sql: unterminated statement at line {start}")
    return [section for section in sections if section.statements or section.title != PREAMBLE]


class _Scanner:
    """Tracks quotes across lines: a statement ends at a ``;`` outside '...', "..." and
    $$...$$ and before a ``--`` comment."""

    def __init__(self) -> None:
        self.quote: str | None = None

    def ends_statement(self, line: str) -> bool:
        ended = False
        index = 0
        while index < len(line):
            char = line[index]
            if self.quote is not None:
                if line.startswith(self.quote, index):
                    index += len(self.quote)
                    self.quote = None
                    continue
            elif line.startswith("$$", index):
                self.quote = "$$"
                index += 2
                continue
            elif char in "'\"":
                self.quote = char
            elif line.startswith("--", index):
                break
            elif char == ";":
                ended = True
            elif not char.isspace():
                ended = False
            index += 1
        return ended and self.quote is None


def expected_outputs(statements: list[Statement], out: str) -> list[Output]:
    """Each statement's output in ``out``: the lines between its echo and the next one's."""
    lines = [line.rstrip() for line in out.splitlines()]
    spans: list[tuple[int, int]] = []
    position = 0
    for statement in statements:
        begin, position = _find_echo(lines, position, statement)
        spans.append((begin, position))
    outputs = []
    for index, (_, end) in enumerate(spans):
        following = spans[index + 1][0] if index + 1 < len(spans) else len(lines)
        outputs.append(parse_output(lines[end:following]))
    return outputs


def _find_echo(lines: list[str], position: int, statement: Statement) -> tuple[int, int]:
    """Where ``statement``'s echo starts at or after ``position``, and the line after it."""
    wanted = [line.rstrip() for line in statement.text.splitlines() if line.strip()]
    for begin in range(position, len(lines)):
        if lines[begin] != wanted[0]:
            continue
        at = begin + 1
        for line in wanted[1:]:
            while at < len(lines) and not lines[at].strip():
                at += 1
            if at >= len(lines) or lines[at] != line:
                break
            at += 1
        else:
            return begin, at
    raise ValueError(f"{statement.where}: its echo is not in the expected output")


def parse_output(lines: list[str]) -> Output:
    """One statement's output lines (echoed comments of the next statement included)."""
    for line in lines:
        if line.startswith("ERROR:"):
            return Output(error=line.removeprefix("ERROR:").strip())
    for index, line in enumerate(lines):
        if index > 0 and SEPARATOR.match(line):
            columns = tuple(cell.strip() for cell in lines[index - 1].split("|"))
            rows = []
            for row in lines[index + 1 :]:
                if ROW_COUNT.match(row):
                    break
                rows.append(tuple(cell.strip() for cell in row.split("|")))
            return Output(columns=columns, rows=tuple(rows), is_table=True)
    return Output()
