"""A small recursive-descent parser for the materialized-view statements (docs/sql-reference.md).

Grammar (keywords case-insensitive, comments anywhere)::

    CREATE [OR REPLACE] MATERIALIZED VIEW [IF NOT EXISTS] name
        [ ( col [COMMENT 'c'] [, ...] ) ]
        { COMMENT 'c' | TBLPROPERTIES ( 'k' = 'v' [, ...] ) | REFRESH refresh_spec
          | schedule_spec } ...
        AS query
    REFRESH MATERIALIZED VIEW name [ FULL | INCREMENTAL ] [ CASCADE ]
    DROP MATERIALIZED VIEW [ IF EXISTS ] name [ CASCADE ]
    SHOW MATERIALIZED VIEWS [ { FROM | IN } db ] [ LIKE 'pattern' ]
    SHOW MATERIALIZED VIEW REFRESHES [ FOR name ] [ LIMIT n ]
    sparkmv_refresh_history ( [ 'name' ] )    (the table-valued function's call, from the shim)
    { DESCRIBE | DESC } MATERIALIZED VIEW [ EXTENDED ] name
    ALTER MATERIALIZED VIEW name
        { SET REFRESH refresh_spec | [SET] schedule_spec | DROP SCHEDULE | AS query }
    EXPLAIN [ EXTENDED | FORMATTED | CODEGEN | COST | LOGICAL ] statement
    refresh_spec := [ AUTO | INCREMENTAL | FULL ] [ ON DEMAND | ON COMMIT ]
    schedule_spec := SCHEDULE EVERY 'interval' | TARGET LAG { 'interval' | DOWNSTREAM }
    interval := a Spark interval string: '30 seconds', '5 minutes', '1 hour 30 minutes'
    name := [ [spark_catalog .] db . ] identifier

The query after ``AS`` is kept verbatim; ``analyze.query`` checks it.
"""

from __future__ import annotations

import re

from sparkmv.catalog.modes import RefreshMode, RefreshPolicy, RefreshTrigger
from sparkmv.catalog.schedule import Schedule, ScheduleKind, parse_interval
from sparkmv.config import REFRESH_HISTORY_FUNCTION
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.identifiers import TableName, quote_identifier
from sparkmv.parse.lexer import Token, TokenKind, tokenize
from sparkmv.parse.statements import (
    AlterQueryStatement,
    AlterRefreshStatement,
    AlterScheduleStatement,
    ColumnSpec,
    CreateStatement,
    DescribeStatement,
    DropStatement,
    ExplainStatement,
    RefreshClause,
    RefreshStatement,
    ShowRefreshesStatement,
    ShowStatement,
    Statement,
)

SESSION_CATALOG = "spark_catalog"
QUERY_STARTS = ("SELECT", "WITH", "VALUES", "FROM", "TABLE")
EXPLAIN_MODES = ("EXTENDED", "FORMATTED", "CODEGEN", "COST", "LOGICAL")

# SQL:2016 reserved words that Spark (ANSI mode) refuses as bare identifiers.
RESERVED_WORDS = frozenset(
    (
        "ALL",
        "AND",
        "ANY",
        "AS",
        "AUTHORIZATION",
        "BOTH",
        "CASE",
        "CAST",
        "CHECK",
        "COLLATE",
        "COLUMN",
        "CONSTRAINT",
        "CREATE",
        "CROSS",
        "CURRENT_DATE",
        "CURRENT_TIME",
        "CURRENT_TIMESTAMP",
        "CURRENT_USER",
        "DISTINCT",
        "ELSE",
        "END",
        "EXCEPT",
        "FALSE",
        "FETCH",
        "FOR",
        "FOREIGN",
        "FROM",
        "FULL",
        "GRANT",
        "GROUP",
        "HAVING",
        "IN",
        "INNER",
        "INTERSECT",
        "INTO",
        "IS",
        "JOIN",
        "LATERAL",
        "LEADING",
        "LEFT",
        "NATURAL",
        "NOT",
        "NULL",
        "OFFSET",
        "ON",
        "ONLY",
        "OR",
        "ORDER",
        "OUTER",
        "OVERLAPS",
        "PRIMARY",
        "REFERENCES",
        "RIGHT",
        "SELECT",
        "SESSION_USER",
        "SOME",
        "TABLE",
        "THEN",
        "TIME",
        "TO",
        "TRAILING",
        "UNION",
        "UNIQUE",
        "UNKNOWN",
        "USER",
        "USING",
        "WHEN",
        "WHERE",
        "WITH",
    )
)

_CATALOG_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def near_text(text: str, position: int) -> str:
    """Up to 20 characters at ``position``, quoted, for error messages."""
    near = text[position : position + 20].strip()
    return f"'{near}'" if near else "end of input"


def parse_statement(text: str) -> Statement:
    """Parse one materialized-view statement; raises ``SparkMvError`` on malformed input."""
    parser = _Parser(text)
    statement = parser.statement()
    parser.expect_end()
    return statement


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.source = tokenize(text)
        self.tokens: list[Token] = []  # read so far
        self.pos = 0

    # -- token helpers -------------------------------------------------------------------

    def lookahead(self, offset: int) -> Token:
        while len(self.tokens) <= self.pos + offset:
            if self.tokens and self.tokens[-1].kind is TokenKind.END:
                return self.tokens[-1]
            self.tokens.append(next(self.source))
        return self.tokens[self.pos + offset]

    @property
    def token(self) -> Token:
        return self.lookahead(0)

    def peek_word(self, *words: str) -> bool:
        return self.token.upper in words

    def accept(self, *words: str) -> bool:
        """Consume the keyword sequence ``words`` if it is next."""
        if all(self.lookahead(i).upper == word for i, word in enumerate(words)):
            self.pos += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        for word in words:
            if not self.accept(word):
                raise self.error(f"unexpected {self.token.describe()}", word)

    def accept_symbol(self, symbol: str) -> bool:
        if self.token.kind is TokenKind.SYMBOL and self.token.text == symbol:
            self.pos += 1
            return True
        return False

    def expect_symbol(self, symbol: str) -> None:
        if not self.accept_symbol(symbol):
            raise self.error(f"unexpected {self.token.describe()}", f"'{symbol}'")

    def expect_end(self) -> None:
        self.accept_symbol(";")
        if self.token.kind is not TokenKind.END:
            raise self.error(f"unexpected {self.token.describe()}", "end of statement")

    def error(self, detail: str, expected: str) -> SparkMvError:
        token = self.token
        return SparkMvError(
            ErrorClass.MATERIALIZED_VIEW_PARSE_ERROR,
            position=token.start,
            near=near_text(self.text, token.start),
            detail=detail,
            expected=expected,
        )

    # -- statements ----------------------------------------------------------------------

    def statement(self) -> Statement:
        if self.accept("EXPLAIN"):
            mode = "SIMPLE"
            for candidate in EXPLAIN_MODES:
                if self.accept(candidate):
                    mode = candidate
                    break
            return ExplainStatement(self.statement(), mode)
        if self.accept("CREATE"):
            return self.create()
        if self.accept("REFRESH", "MATERIALIZED", "VIEW"):
            return self.refresh()
        if self.accept("DROP", "MATERIALIZED", "VIEW"):
            if_exists = self.accept("IF", "EXISTS")
            name = self.table_name()
            return DropStatement(name, if_exists, cascade=self.accept("CASCADE"))
        if self.accept("SHOW", "MATERIALIZED", "VIEWS"):
            return self.show()
        if self.accept("SHOW", "MATERIALIZED", "VIEW", "REFRESHES"):
            return self.show_refreshes()
        if self.accept(REFRESH_HISTORY_FUNCTION.upper()):
            return self.history_function()
        if self.accept("DESCRIBE", "MATERIALIZED", "VIEW") or self.accept(
            "DESC", "MATERIALIZED", "VIEW"
        ):
            extended = self.accept("EXTENDED")
            return DescribeStatement(self.table_name(), extended)
        if self.accept("ALTER", "MATERIALIZED", "VIEW"):
            return self.alter()
        raise self.error(
            f"unexpected {self.token.describe()}",
            "CREATE, REFRESH, DROP, ALTER, DESCRIBE or SHOW MATERIALIZED VIEW(S)",
        )

    def create(self) -> CreateStatement:
        or_replace = self.accept("OR", "REPLACE")
        self.expect("MATERIALIZED", "VIEW")
        if_not_exists = self.accept("IF", "NOT", "EXISTS")
        if or_replace and if_not_exists:
            raise self.error("OR REPLACE and IF NOT EXISTS cannot be combined", "one of them")
        name = self.table_name()
        columns = self.column_list() if self.token.text == "(" else ()
        comment: str | None = None
        properties: dict[str, str] | None = None
        refresh: RefreshClause | None = None
        schedule: Schedule | None = None
        first_clause = True
        while not self.peek_word("AS"):
            if self.accept("COMMENT"):
                self.once(comment, "COMMENT")
                comment = self.string()
            elif self.accept("TBLPROPERTIES"):
                self.once(properties, "TBLPROPERTIES")
                properties = self.property_list()
            elif self.accept("REFRESH"):
                self.once(refresh, "REFRESH")
                refresh = self.refresh_clause()
            elif self.peek_word("SCHEDULE", "TARGET"):
                if schedule is not None:
                    raise self.schedule_conflict(schedule)
                schedule = self.schedule_clause()
            else:
                raise self.option_error(right_after_name=first_clause and not columns)
            first_clause = False
        self.expect("AS")
        return CreateStatement(
            name=name,
            query=self.query_text(),
            or_replace=or_replace,
            if_not_exists=if_not_exists,
            columns=columns,
            comment=comment,
            properties=properties or {},
            refresh=refresh or RefreshClause(),
            schedule=schedule,
        )

    def refresh(self) -> RefreshStatement:
        name = self.table_name()
        mode = None
        if self.accept("FULL"):
            mode = RefreshMode.FULL
        elif self.accept("INCREMENTAL"):
            mode = RefreshMode.INCREMENTAL
        cascade = self.accept("CASCADE")
        if self.token.kind is not TokenKind.END and self.token.text != ";":
            expected = "CASCADE or end" if mode is not None else "FULL, INCREMENTAL, CASCADE or end"
            raise self.error(f"unexpected {self.token.describe()}", expected)
        return RefreshStatement(name, mode, cascade)

    def show(self) -> ShowStatement:
        database = None
        if self.accept("FROM") or self.accept("IN"):
            database = self.identifier("database name")
        pattern = None
        if self.accept("LIKE"):
            pattern = self.string()
        return ShowStatement(database, pattern)

    def show_refreshes(self) -> ShowRefreshesStatement:
        name = self.table_name() if self.accept("FOR") else None
        limit = None
        if self.accept("LIMIT"):
            token = self.token
            if token.kind is not TokenKind.NUMBER or not token.text.isdigit():
                found = self.text[token.start :].strip().rstrip(";").strip()
                raise SparkMvError(
                    ErrorClass.MATERIALIZED_VIEW_INVALID_LIMIT, found=found or "nothing"
                )
            self.pos += 1
            limit = int(token.text)
        return ShowRefreshesStatement(name, limit)

    def history_function(self) -> ShowRefreshesStatement:
        """The call ``sparkmv_refresh_history(...)`` with its arguments as Spark prints them:
        none, or one string literal naming the view."""
        arguments = self.text[self.token.start :].strip()
        refused = SparkMvError(ErrorClass.MATERIALIZED_VIEW_HISTORY_ARGUMENTS, found=arguments)
        if not self.accept_symbol("("):
            raise refused
        if self.accept_symbol(")"):
            return ShowRefreshesStatement()
        token = self.token
        if token.kind is not TokenKind.STRING:
            raise refused
        self.pos += 1
        if not self.accept_symbol(")") or self.token.kind is not TokenKind.END:
            raise refused
        inner = _Parser(token.text)
        name = inner.table_name()
        if inner.token.kind is not TokenKind.END:
            raise refused
        return ShowRefreshesStatement(name)

    def alter(self) -> Statement:
        name = self.table_name()
        if self.accept("SET", "REFRESH"):
            clause = self.refresh_clause()
            if clause.policy is None and clause.trigger is None:
                raise self.error(
                    "SET REFRESH needs a policy or a trigger",
                    "AUTO, INCREMENTAL, FULL, ON DEMAND or ON COMMIT",
                )
            return AlterRefreshStatement(name, clause)
        if self.accept("DROP", "SCHEDULE"):
            return AlterScheduleStatement(name, None)
        set_given = self.accept("SET")
        if self.peek_word("SCHEDULE", "TARGET"):
            return AlterScheduleStatement(name, self.schedule_clause())
        if not set_given and self.accept("AS"):
            return AlterQueryStatement(name, self.query_text())
        raise self.error(
            f"unexpected {self.token.describe()}",
            "SET REFRESH, SET SCHEDULE EVERY, SET TARGET LAG, DROP SCHEDULE or AS",
        )

    # -- clauses -------------------------------------------------------------------------

    def once(self, seen: object, clause: str) -> None:
        if seen is not None:
            raise SparkMvError(ErrorClass.MATERIALIZED_VIEW_DUPLICATE_CLAUSE, clause=clause)

    def option_error(self, right_after_name: bool) -> SparkMvError:
        if self.token.upper in QUERY_STARTS or self.token.text == "(":
            return self.error(f"the query starts at {self.token.describe()}", "AS before the query")
        if self.token.kind is TokenKind.WORD:
            hint = (
                f" If {self.token.text} is part of the name, the name cannot contain spaces; "
                "use underscores."
                if right_after_name
                else ""
            )
            return SparkMvError(
                ErrorClass.MATERIALIZED_VIEW_UNKNOWN_OPTION,
                option=self.token.text.upper(),
                valid="COMMENT, TBLPROPERTIES, REFRESH, SCHEDULE EVERY, TARGET LAG, then AS query",
                hint=hint,
            )
        return self.error(
            f"unexpected {self.token.describe()}",
            "COMMENT, TBLPROPERTIES, REFRESH, SCHEDULE EVERY, TARGET LAG or AS",
        )

    def refresh_clause(self) -> RefreshClause:
        policy = None
        for candidate in RefreshPolicy:
            if self.accept(candidate.value):
                policy = candidate
                break
        trigger = None
        if self.accept("ON"):
            if self.accept("DEMAND"):
                trigger = RefreshTrigger.ON_DEMAND
            elif self.accept("COMMIT"):
                trigger = RefreshTrigger.ON_COMMIT
            else:
                raise self.error(f"unexpected {self.token.describe()}", "DEMAND or COMMIT")
        elif self.token.kind is TokenKind.WORD and not self.peek_word(
            "AS", "COMMENT", "TBLPROPERTIES", "SCHEDULE", "TARGET"
        ):
            raise SparkMvError(
                ErrorClass.MATERIALIZED_VIEW_UNKNOWN_OPTION,
                option=f"REFRESH {self.token.text.upper()}",
                valid="REFRESH [AUTO | INCREMENTAL | FULL] [ON DEMAND | ON COMMIT]",
                hint="",
            )
        return RefreshClause(policy, trigger)

    def schedule_clause(self) -> Schedule:
        """``SCHEDULE EVERY 'interval'`` or ``TARGET LAG { 'interval' | DOWNSTREAM }``, the
        interval checked for its syntax here (its minimum is a session conf, checked by the
        command)."""
        if self.accept("SCHEDULE"):
            self.expect("EVERY")
            return Schedule(ScheduleKind.EVERY, self.interval())
        self.expect("TARGET", "LAG")
        if self.accept("DOWNSTREAM"):
            return Schedule(ScheduleKind.DOWNSTREAM)
        return Schedule(ScheduleKind.TARGET_LAG, self.interval())

    def interval(self) -> int:
        """An interval string's milliseconds (``parse_interval``)."""
        if self.token.kind is not TokenKind.STRING:
            raise self.error(
                f"unexpected {self.token.describe()}", "an interval string such as '5 minutes'"
            )
        return parse_interval(self.string())

    def schedule_conflict(self, seen: Schedule) -> SparkMvError:
        if self.peek_word("SCHEDULE") == (seen.kind is ScheduleKind.EVERY):
            clause = "SCHEDULE" if seen.kind is ScheduleKind.EVERY else "TARGET LAG"
            return SparkMvError(ErrorClass.MATERIALIZED_VIEW_DUPLICATE_CLAUSE, clause=clause)
        return SparkMvError(ErrorClass.MATERIALIZED_VIEW_CONFLICTING_SCHEDULE)

    def column_list(self) -> tuple[ColumnSpec, ...]:
        self.expect_symbol("(")
        columns = [self.column()]
        while self.accept_symbol(","):
            columns.append(self.column())
        self.expect_symbol(")")
        return tuple(columns)

    def column(self) -> ColumnSpec:
        name = self.identifier("column name")
        comment = self.string() if self.accept("COMMENT") else None
        return ColumnSpec(name, comment)

    def property_list(self) -> dict[str, str]:
        self.expect_symbol("(")
        properties: dict[str, str] = {}
        while True:
            key = self.property_key()
            self.accept_symbol("=")
            properties[key] = self.property_value()
            if not self.accept_symbol(","):
                break
        self.expect_symbol(")")
        return properties

    def property_key(self) -> str:
        if self.token.kind is TokenKind.STRING:
            return self.string()
        parts = [self.identifier("property key")]
        while self.accept_symbol("."):
            parts.append(self.identifier("property key"))
        return ".".join(parts)

    def property_value(self) -> str:
        token = self.token
        if token.kind in (TokenKind.STRING, TokenKind.NUMBER) or token.upper in ("TRUE", "FALSE"):
            self.pos += 1
            return token.text
        raise self.error(f"unexpected {token.describe()}", "a string, number or boolean value")

    def string(self) -> str:
        """A string literal; adjacent literals concatenate, as in Spark ('a' 'b' = 'ab')."""
        if self.token.kind is not TokenKind.STRING:
            raise self.error(f"unexpected {self.token.describe()}", "a quoted string")
        parts = []
        while self.token.kind is TokenKind.STRING:
            parts.append(self.token.text)
            self.pos += 1
        return "".join(parts)

    def query_text(self) -> str:
        """The rest of the statement, verbatim; nothing after it is parsed."""
        query = self.text[self.token.start :].strip()
        if not query:
            raise self.error("the query is missing", "a SELECT query after AS")
        self.tokens[self.pos :] = [Token(TokenKind.END, "", len(self.text), len(self.text))]
        return query

    # -- identifiers ---------------------------------------------------------------------

    def table_name(self) -> TableName:
        parts = [self.identifier("materialized view name")]
        while self.accept_symbol("."):
            parts.append(self.identifier("materialized view name"))
        if len(parts) == 3 and parts[0].lower() == SESSION_CATALOG:
            parts = parts[1:]
        if len(parts) > 2:
            raise self.error(
                f"{'.'.join(parts)} has too many name parts",
                "name, db.name or spark_catalog.db.name",
            )
        for part in parts:
            if not _CATALOG_NAME.match(part):
                raise SparkMvError(
                    ErrorClass.MATERIALIZED_VIEW_INVALID_IDENTIFIER,
                    identifier=quote_identifier(part),
                    what="name for the session catalog",
                    detail="names may contain only letters, digits and underscores",
                    hint=f"Choose another name, e.g. {re.sub(r'[^A-Za-z0-9_]', '_', part)}.",
                )
        return TableName(parts[-1], parts[0] if len(parts) == 2 else None)

    def identifier(self, what: str) -> str:
        token = self.token
        if token.kind is TokenKind.QUOTED:
            self.pos += 1
            return token.text
        if token.kind is TokenKind.WORD:
            if token.upper in RESERVED_WORDS:
                raise SparkMvError(
                    ErrorClass.MATERIALIZED_VIEW_INVALID_IDENTIFIER,
                    identifier=token.text,
                    what=what,
                    detail="it is a reserved word",
                    hint=f"Enclose it in back-quotes (`{token.text}`) or choose another name.",
                )
            self.pos += 1
            return token.text
        raise self.error(f"unexpected {token.describe()}", what)
