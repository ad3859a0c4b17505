"""Parse stage: statement text → statement objects (``statements.py``).

The header of each statement is read by a small hand-written parser (``parser.py`` over the
tokens of ``lexer.py``); the query of CREATE/ALTER ... AS is kept as raw text and checked by
sqlglot in the Spark dialect (``analyze/query.py``).
"""

from sparkmv.parse.parser import parse_statement

__all__ = ["parse_statement"]
