"""Tokens of a materialized-view statement header, with their offsets into the text."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

from sparkmv.errors import ErrorClass, SparkMvError


class TokenKind(Enum):
    WORD = "word"  # a bare identifier or keyword
    QUOTED = "quoted identifier"  # `back-quoted`
    STRING = "string"  # 'single' or "double" quoted literal
    NUMBER = "number"
    SYMBOL = "symbol"
    END = "end of statement"


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    text: str  # the value: unquoted, unescaped
    start: int
    end: int

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind is TokenKind.WORD else ""

    def describe(self) -> str:
        if self.kind is TokenKind.END:
            return "end of input"
        if self.kind is TokenKind.QUOTED:
            return f"`{self.text}`"
        if self.kind is TokenKind.STRING:
            return f"'{self.text}'"
        return f"'{self.text}'"


_STRING_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "b": "\b", "Z": "\x1a"}


def tokenize(text: str) -> Iterator[Token]:
    """The tokens of ``text``, skipping whitespace and comments, then an END token.

    Lazy, so that the query after ``AS`` is never tokenized here: it is kept as raw text.
    """
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("--", i):
            newline = text.find("\n", i)
            i = n if newline < 0 else newline + 1
        elif text.startswith("/*", i):
            i = _skip_bracketed_comment(text, i)
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            yield Token(TokenKind.WORD, text[i:j], i, j)
            i = j
        elif c.isdigit():
            j = i
            while j < n and (text[j].isalnum() or text[j] in "._"):
                j += 1
            yield Token(TokenKind.NUMBER, text[i:j], i, j)
            i = j
        elif c == "`":
            value, j = _read_quoted_identifier(text, i)
            yield Token(TokenKind.QUOTED, value, i, j)
            i = j
        elif c in "'\"":
            value, j = _read_string(text, i)
            yield Token(TokenKind.STRING, value, i, j)
            i = j
        else:
            yield Token(TokenKind.SYMBOL, c, i, i + 1)
            i += 1
    yield Token(TokenKind.END, "", n, n)


def _skip_bracketed_comment(text: str, start: int) -> int:
    depth, i = 0, start
    while i < len(text):
        if text.startswith("/*", i):
            depth, i = depth + 1, i + 2
        elif text.startswith("*/", i):
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        else:
            i += 1
    raise _unterminated(text, start, "bracketed comment", "*/")


def _read_quoted_identifier(text: str, start: int) -> tuple[str, int]:
    parts: list[str] = []
    i = start + 1
    while i < len(text):
        if text[i] == "`":
            if text.startswith("``", i):
                parts.append("`")
                i += 2
                continue
            return "".join(parts), i + 1
        parts.append(text[i])
        i += 1
    raise _unterminated(text, start, "back-quoted identifier", "a closing `")


def _read_string(text: str, start: int) -> tuple[str, int]:
    quote = text[start]
    parts: list[str] = []
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            parts.append(_STRING_ESCAPES.get(text[i + 1], text[i + 1]))
            i += 2
        elif c == quote:
            return "".join(parts), i + 1
        else:
            parts.append(c)
            i += 1
    raise _unterminated(text, start, "string literal", f"a closing {quote}")


def _unterminated(text: str, position: int, what: str, closer: str) -> SparkMvError:
    near = text[position : position + 20].strip()
    return SparkMvError(
        ErrorClass.MATERIALIZED_VIEW_PARSE_ERROR,
        position=position,
        near=f"'{near}'",
        detail=f"unterminated {what}",
        expected=closer,
    )
