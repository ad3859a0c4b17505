"""pg_ivm's regression suite run against sparkmv with ON COMMIT views.

Each section of ``sql/*.sql`` (``pg_ivm_script``) whose statements all map
(``pg_ivm_mapping``) runs in one Spark database shared by the file's sections, in order:

- ``pgivm.create_immv('name(cols)', 'query')`` becomes ``CREATE MATERIALIZED VIEW name (cols)
  REFRESH INCREMENTAL ON COMMIT AS query`` (the query translated by sqlglot, postgres →
  spark; unaliased aggregates named as PostgreSQL names them, ``sum``, ``count``, ...). A view
  sparkmv cannot maintain incrementally is created ``REFRESH AUTO ON COMMIT`` instead, and the
  report says so and why. Its row count is checked against create_immv's result.
- After every captured write (INSERT/UPDATE/DELETE/TRUNCATE, and the writes that emulate a
  ROLLBACK) every ON COMMIT view must equal its query run afresh (the oracle of
  ``tests/conftest.py``, docs/development.md), and each refresh the write caused must have been
  INCREMENTAL for a view of policy INCREMENTAL.
- Every SELECT is compared with the rows the expected file shows for it, as multisets after
  normalizing values (numbers to 9 decimals, NULL as empty, booleans t/f; pg_ivm's hidden
  ``__ivm_*`` columns dropped). Order is not compared: PostgreSQL sorts NULLs last, Spark
  first, and ties differently.
- A statement the expected file shows failing must fail in Spark too, except a create_immv
  that pg_ivm refuses (a pg_ivm restriction): sparkmv may accept it, and then the view must
  equal its query; the report lists both answers.
- Transactions are emulated (Spark has none): before a table's first write after a BEGIN or
  SAVEPOINT it is copied to a snapshot table; ROLLBACK [TO] drops the views and tables
  created since and writes the snapshots back with INSERT OVERWRITE (a captured write, so the
  surviving ON COMMIT views are maintained and checked again).
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import sqlglot
from pg_ivm_mapping import SECTION_RULES, Kind, Override, Rule, SectionRule, statement_rule
from pg_ivm_script import FILES, Output, Section, Statement, read_sections
from pyspark.sql import SparkSession
from sparkmv.bridge import quiet_pyspark_error_logs
from sqlglot import exp

HIDDEN_COLUMN_PREFIX = "__ivm_"
NOT_INCREMENTAL = "MATERIALIZED_VIEW_NOT_INCREMENTAL"
DECIMALS = 9
_snapshot_ids = itertools.count()


class StepError(Exception):
    """A check of one statement failed (the message says which and how)."""


@dataclass
class SectionOutcome:
    """What running (or not running) one section found."""

    key: str
    file: str
    line: int
    title: str
    status: str = "passed"  # passed | failed | unmapped | xfail | not-run
    reason: str = ""  # why unmapped, or the xfail's repro
    failures: list[str] = field(default_factory=list)
    checks: Counter[str] = field(default_factory=Counter)
    incremental_views: list[str] = field(default_factory=list)
    full_views: list[str] = field(default_factory=list)  # "name: why" (AUTO, not INCREMENTAL)
    refusals: list[str] = field(default_factory=list)  # pg_ivm refuses: what sparkmv did
    refusal_answers: Counter[str] = field(default_factory=Counter)  # sparkmv's, by kind


@dataclass
class Savepoint:
    """A BEGIN or SAVEPOINT: what was created since, and the tables' contents before their
    first write since (snapshot table names)."""

    name: str
    created: list[str] = field(default_factory=list)
    snapshots: dict[str, str] = field(default_factory=dict)


@dataclass
class MaterializedView:
    name: str
    on_commit: bool
    incremental: bool
    query: str
    refreshes: tuple[int, int] = (0, 0)  # (full, incremental) as last seen


class Database:
    """One Spark database standing in for one script's PostgreSQL database."""

    def __init__(self, spark: SparkSession, name: str) -> None:
        self.spark = spark
        self.name = name
        self.tables: set[str] = set()
        self.views: set[str] = set()
        self.matviews: dict[str, MaterializedView] = {}
        self.savepoints: list[Savepoint] = []
        self.outcome: SectionOutcome | None = None
        self.last_error = ""  # why sparkmv refused the last view
        self.not_incremental = ""  # why sparkmv refused INCREMENTAL for the last AUTO view

    # -- running statements --------------------------------------------------------------

    def run(self, section: Section, rule: SectionRule, execute: bool) -> SectionOutcome:
        """Run ``section`` (only its transaction control when not ``execute``)."""
        outcome = SectionOutcome(section.key, section.file, section.line, section.title)
        self.outcome = outcome
        for statement in section.statements:
            mapped = statement_rule(statement.file, statement.line, statement.text)
            if not execute:
                if mapped.kind in TRANSACTION_KINDS:
                    self.transaction(mapped.kind, statement)
                continue
            try:
                self.statement(statement, mapped)
            except StepError as failure:
                outcome.failures.append(f"{statement.where}: {failure}")
            except Exception as error:  # an unexpected error of Spark or of the runner
                outcome.failures.append(f"{statement.where}: {type(error).__name__}: {error}")
        if outcome.failures:
            outcome.status = "xfail" if rule.xfail else "failed"
        elif rule.xfail:
            outcome.status = "failed"
            outcome.failures.append(f"expected to fail ({rule.xfail}) but passed")
        return outcome

    def statement(self, statement: Statement, mapped: Rule | Override) -> None:
        """Do what ``mapped`` says ``statement`` becomes."""
        kind = mapped.kind
        if kind in TRANSACTION_KINDS:
            self.transaction(kind, statement)
        elif kind is Kind.NOOP:
            pass
        elif kind is Kind.SKIP:
            self.count(f"skipped: {mapped.reason}")
        elif isinstance(mapped, Override):
            for index, sql in enumerate(mapped.sql, start=1):
                compare = mapped.compare and index == len(mapped.sql)
                self.sql_statement(statement, sql, compare)
        elif kind is Kind.CREATE_IMMV:
            self.create_immv(statement)
        elif kind is Kind.REFRESH_IMMV:
            self.refresh_immv(statement)
        elif kind is Kind.IS_MATCH:
            self.is_match(statement)
        elif kind is Kind.DROP:
            self.drop(statement)
        elif kind is Kind.PLAIN_MATVIEW:
            self.plain_matview(statement)
        elif kind is Kind.CREATE_TABLE:
            self.sql_statement(statement, create_table_sql(statement.text))
        elif kind is Kind.WRITE:
            self.sql_statement(statement, self.with_insert_columns(translate(statement.text)))
        elif kind is Kind.SQL:
            self.sql_statement(statement, translate(statement.text))
        else:
            raise StepError(f"{kind} cannot run")

    def sql_statement(self, statement: Statement, sql: str, compare: bool = True) -> None:
        """Run ``sql``; compare its rows or its failure with the expected output (its rows
        only if ``compare``)."""
        written = written_table(sql)
        if written is not None:
            self.before_write(written)
        expected = statement.expected
        try:
            with quiet_pyspark_error_logs():
                rows = self.spark.sql(sql).collect()
        except Exception as error:
            if expected.error is None:
                raise StepError(f"{sql!r} failed: {first_line(error)}") from None
            self.count("errors matched")
            return
        if expected.error is not None:
            raise StepError(f"{sql!r} succeeded; PostgreSQL: ERROR: {expected.error}")
        created = created_object(sql)
        if created is not None:
            self.created(created[1], is_view=created[0] == "view")
        trigger = re.match(r"ALTER MATERIALIZED VIEW (\w+) SET REFRESH ON (\w+)", sql)
        if trigger is not None:
            self.matviews[trigger.group(1)].on_commit = trigger.group(2) == "COMMIT"
        if written is not None:
            self.after_write(statement)
        elif compare and expected.is_table:
            compare_rows(expected, [tuple(row) for row in rows])
            self.count("results matched")

    def with_insert_columns(self, sql: str) -> str:
        """``INSERT INTO t VALUES`` with fewer values than ``t`` has columns: PostgreSQL fills
        the last ones with NULL, Spark does so only for a column list that leaves them out."""
        tree = sqlglot.parse_one(sql, read="spark")
        values = tree.expression if isinstance(tree, exp.Insert) else None
        if not isinstance(tree.this, exp.Table) or not isinstance(values, exp.Values):
            return sql
        arity = len(values.expressions[0].expressions)
        columns = self.spark.table(tree.this.name).columns
        if arity >= len(columns):
            return sql
        return sql.replace(
            f"INSERT INTO {tree.this.name} ",
            f"INSERT INTO {tree.this.name} ({', '.join(columns[:arity])}) ",
            1,
        )

    def create_immv(self, statement: Statement) -> None:
        name, columns, query = parse_create_immv(statement.text)
        expected = statement.expected
        if not re.match(r"\s*(SELECT|WITH)\b", query, re.IGNORECASE):
            if expected.error is None:
                raise StepError("create_immv of a non-SELECT succeeded in PostgreSQL")
            self.outcome_refusal(statement, "has nothing to create (not a query)")
            return
        try:
            spark_query = translate(query, pg_column_names=True)
        except sqlglot.errors.ParseError as error:
            raise StepError(f"sqlglot cannot translate {query!r}: {error}") from None
        view = self.create_view(name, columns, spark_query)
        if expected.error is not None:
            self.refusal(statement, name, view)
            return
        if view is None:
            raise StepError(f"sparkmv refused {spark_query!r}: {self.last_error}")
        assert self.outcome is not None
        if view.incremental:
            self.outcome.incremental_views.append(name)
        else:
            self.outcome.full_views.append(f"{name}: {self.not_incremental}")
        rows = self.check_view(view, statement)
        if expected.is_table and int(expected.rows[0][0]) != rows:
            raise StepError(f"{name} has {rows} rows; create_immv said {expected.rows[0][0]}")

    def create_view(self, name: str, columns: list[str], query: str) -> MaterializedView | None:
        """``name`` as an ON COMMIT view: INCREMENTAL if sparkmv accepts it, else AUTO (the
        outcome says why); None (``last_error`` says why) if sparkmv refuses the query."""
        if columns:
            with quiet_pyspark_error_logs():
                names = self.spark.sql(query).columns
            columns = columns + names[len(columns) :]
        listed = f"({', '.join(columns)}) " if columns else ""
        for policy in ("INCREMENTAL", "AUTO"):
            sql = f"CREATE MATERIALIZED VIEW {name} {listed}REFRESH {policy} ON COMMIT AS {query}"
            try:
                with quiet_pyspark_error_logs():
                    self.spark.sql(sql)
            except Exception as error:
                self.last_error = first_line(error)
                if policy == "INCREMENTAL" and NOT_INCREMENTAL in self.last_error:
                    self.not_incremental = self.last_error
                    continue
                return None
            view = MaterializedView(name, True, policy == "INCREMENTAL", query)
            self.matviews[name] = view
            self.created(name)
            return view
        return None

    def refusal(self, statement: Statement, name: str, view: MaterializedView | None) -> None:
        """pg_ivm refused the view: record what sparkmv did (a created view must be right;
        it is dropped again, as the IMMV does not exist in PostgreSQL)."""
        if view is None:
            if "TABLE_OR_VIEW_NOT_FOUND" in self.last_error:  # the run's fault, not sparkmv's
                raise StepError(f"the query reads a missing table: {self.last_error}")
            self.outcome_refusal(statement, "refuses too", self.last_error)
            return
        self.check_view(view, statement)
        if view.incremental:
            self.outcome_refusal(statement, "maintains it INCREMENTAL")
        else:
            self.outcome_refusal(statement, "maintains it AUTO", self.not_incremental)
        self.drop_matview(name)

    def outcome_refusal(self, statement: Statement, answer: str, detail: str = "") -> None:
        """pg_ivm refused ``statement``'s view; sparkmv's ``answer`` (and why)."""
        assert self.outcome is not None
        pg = statement.expected.error or ""
        said = f"{answer}: {detail}" if detail else answer
        self.outcome.refusals.append(f"{statement.where}: pg_ivm: {pg} — sparkmv {said}")
        self.outcome.refusal_answers[answer] += 1
        self.count("refusals compared")

    def refresh_immv(self, statement: Statement) -> None:
        match = re.search(r"refresh_immv\('([^']*)'", statement.text)
        assert match is not None
        name = match.group(1).removeprefix("public.")
        try:
            with quiet_pyspark_error_logs():
                self.spark.sql(f"REFRESH MATERIALIZED VIEW {name}")
        except Exception as error:
            if statement.expected.error is None:
                raise StepError(f"REFRESH {name} failed: {first_line(error)}") from None
            self.count("errors matched")
            return
        if statement.expected.error is not None:
            raise StepError(f"REFRESH {name} succeeded; pg_ivm: {statement.expected.error}")
        view = self.matviews[name]
        if not view.on_commit:  # refresh_immv(name, true) turns immediate maintenance on
            self.spark.sql(f"ALTER MATERIALIZED VIEW {name} SET REFRESH ON COMMIT")
            view.on_commit = True
        rows = self.check_view(view, statement)
        if int(statement.expected.rows[0][0]) != rows:
            raise StepError(f"{name} has {rows} rows; refresh_immv said {statement.expected.rows}")

    def is_match(self, statement: Statement) -> None:
        """pg_ivm's is_match(): 'OK' when mv and v hold the same rows (as multisets)."""
        view, plain = (self.rows(f"SELECT * FROM {name}") for name in ("mv", "v"))
        answer = "OK" if view == plain else "NG"
        if (answer,) != statement.expected.rows[0]:
            raise StepError(f"is_match: mv {sorted(view.items(), key=str)} vs v {plain}")
        self.count("is_match checks")

    def plain_matview(self, statement: Statement) -> None:
        """PostgreSQL's own (non-IMMV) materialized view: a sparkmv ON DEMAND view."""
        match = re.match(r"CREATE MATERIALIZED VIEW (\w+) AS (.*);$", statement.text, re.DOTALL)
        assert match is not None
        name, query = match.group(1), translate(match.group(2))
        self.spark.sql(f"CREATE MATERIALIZED VIEW {name} AS {query}")
        self.matviews[name] = MaterializedView(name, False, False, query)
        self.created(name)

    def drop(self, statement: Statement) -> None:
        match = re.match(r"DROP (TABLE|VIEW) (\w+)( CASCADE)?;", statement.text, re.IGNORECASE)
        assert match is not None, statement.text
        name, cascade = match.group(2), match.group(3) is not None
        if statement.expected.error is not None:
            self.sql_statement(statement, f"DROP TABLE {name}")  # must fail too
            return
        if cascade and name not in self.matviews and name not in self.views:
            for dependent in self.dependents(name):
                self.drop_object(dependent)
        self.drop_object(name)

    def dependents(self, table: str) -> list[str]:
        """The views and materialized views whose query reads ``table`` (by name)."""
        word = re.compile(rf"\b{re.escape(table)}\b", re.IGNORECASE)
        found = [name for name, view in self.matviews.items() if word.search(view.query)]
        for name in sorted(self.views):
            text = self.spark.sql(f"SHOW CREATE TABLE {name}").first()
            if text is not None and word.search(str(text[0])):
                found.append(name)
        return found

    def drop_object(self, name: str) -> None:
        if name in self.matviews:
            self.drop_matview(name)
        elif name in self.views:
            self.spark.sql(f"DROP VIEW {name}")
            self.views.discard(name)
        else:
            self.spark.sql(f"DROP TABLE {name}")
            self.tables.discard(name)
        self.forget(name)

    def drop_matview(self, name: str) -> None:
        self.spark.sql(f"DROP MATERIALIZED VIEW {name}")
        del self.matviews[name]
        self.forget(name)

    # -- checks ----------------------------------------------------------------------------

    def rows(self, sql: str) -> Counter[tuple[str, ...]]:
        with quiet_pyspark_error_logs():
            return Counter(normalized(tuple(row)) for row in self.spark.sql(sql).collect())

    def check_view(self, view: MaterializedView, statement: Statement) -> int:
        """``view`` equals its query run afresh (the oracle); its number of rows."""
        stored = self.rows(f"SELECT * FROM {view.name}")
        fresh = self.rows(view.query)
        if stored != fresh:
            raise StepError(
                f"{view.name} differs from its query: only in the view "
                f"{sorted((stored - fresh).elements())}, only in the query "
                f"{sorted((fresh - stored).elements())}"
            )
        self.count("oracle checks")
        view.refreshes = self.refresh_counts(view.name)[:2]
        return sum(stored.values())

    def refresh_counts(self, name: str) -> tuple[int, int, str]:
        """(full, incremental) refreshes of ``name`` so far, and the last one's reason."""
        described = {
            str(row.col_name): str(row.data_type)
            for row in self.spark.sql(f"DESCRIBE MATERIALIZED VIEW EXTENDED {name}").collect()
        }
        return (
            int(described["Full Refreshes"]),
            int(described["Incremental Refreshes"]),
            described.get("Last Refresh Reason", ""),
        )

    def after_write(self, statement: Statement) -> None:
        """Every ON COMMIT view equals its query; each refresh of a view of policy
        INCREMENTAL the write caused was incremental."""
        for view in list(self.matviews.values()):
            if not view.on_commit:
                continue
            before = view.refreshes
            full, incremental, reason = self.refresh_counts(view.name)
            self.check_view(view, statement)
            if view.incremental and full > before[0]:
                raise StepError(f"{view.name}'s ON COMMIT refresh was FULL: {reason}")
            if incremental > before[1]:
                self.count("incremental refreshes")
            if full > before[0]:
                self.count("full refreshes")

    def count(self, check: str) -> None:
        assert self.outcome is not None
        self.outcome.checks[check] += 1

    # -- transactions ----------------------------------------------------------------------

    def transaction(self, kind: Kind, statement: Statement) -> None:
        name = statement.text.rstrip(";").split()[-1]
        if kind is Kind.BEGIN:
            if not self.savepoints:  # PostgreSQL only warns about a BEGIN inside one
                self.savepoints.append(Savepoint("(transaction)"))
        elif kind is Kind.SAVEPOINT:
            self.savepoints.append(Savepoint(name))
        elif kind is Kind.RELEASE:
            while self.savepoints:
                released = self.savepoints.pop()
                self.savepoints[-1].created.extend(released.created)
                self.drop_unused_snapshots(released)
                if released.name == name:
                    break
        elif kind is Kind.ROLLBACK_TO:
            while self.savepoints[-1].name != name:
                self.roll_back(self.savepoints.pop(), statement)
            self.roll_back(self.savepoints[-1], statement)
            self.savepoints[-1] = Savepoint(name)
        elif kind is Kind.ROLLBACK:
            while self.savepoints:
                self.roll_back(self.savepoints.pop(), statement)
        elif kind is Kind.COMMIT:
            while self.savepoints:
                self.drop_unused_snapshots(self.savepoints.pop())

    def before_write(self, table: str) -> None:
        """Copy ``table`` for every open savepoint that has no copy of it yet (and that it
        existed at)."""
        waiting = [
            savepoint
            for savepoint in self.savepoints
            if table not in savepoint.snapshots and not self.created_since(table, savepoint)
        ]
        if not waiting or table not in self.tables:
            return
        snapshot = f"pgivm_snapshot_{next(_snapshot_ids)}"
        self.spark.sql(f"CREATE TABLE {snapshot} USING parquet AS SELECT * FROM {table}")
        for savepoint in waiting:
            savepoint.snapshots[table] = snapshot

    def created_since(self, name: str, savepoint: Savepoint) -> bool:
        index = self.savepoints.index(savepoint)
        return any(name in later.created for later in self.savepoints[index:])

    def roll_back(self, savepoint: Savepoint, statement: Statement) -> None:
        """Undo what happened since ``savepoint``: drop what was created (views first), write
        the tables' snapshots back."""
        order = sorted(savepoint.created, key=lambda name: name not in self.matviews)
        for name in reversed(order):
            if name in self.matviews or name in self.views or name in self.tables:
                self.drop_object(name)
        for table, snapshot in savepoint.snapshots.items():
            if table in self.tables:
                self.spark.sql(f"INSERT OVERWRITE TABLE {table} SELECT * FROM {snapshot}")
                self.after_write(statement)
        self.drop_unused_snapshots(savepoint)

    def drop_unused_snapshots(self, savepoint: Savepoint) -> None:
        """Drop ``savepoint``'s snapshot tables that no other open savepoint shares."""
        used = {
            name
            for other in self.savepoints
            if other is not savepoint
            for name in other.snapshots.values()
        }
        for snapshot in set(savepoint.snapshots.values()) - used:
            self.spark.sql(f"DROP TABLE {snapshot}")
        savepoint.snapshots.clear()

    def created(self, name: str, is_view: bool = False) -> None:
        if is_view:
            self.views.add(name)
        elif name not in self.matviews:
            self.tables.add(name)
        if self.savepoints:
            self.savepoints[-1].created.append(name)

    def forget(self, name: str) -> None:
        """``name`` was dropped: no rollback drops it again."""
        for savepoint in self.savepoints:
            if name in savepoint.created:
                savepoint.created.remove(name)


TRANSACTION_KINDS = frozenset(
    {Kind.BEGIN, Kind.COMMIT, Kind.ROLLBACK, Kind.SAVEPOINT, Kind.RELEASE, Kind.ROLLBACK_TO}
)

# -- translation -------------------------------------------------------------------------------


def translate(sql: str, pg_column_names: bool = False) -> str:
    """``sql`` (PostgreSQL) as Spark SQL, by sqlglot; with ``pg_column_names`` the top-level
    unaliased aggregates get PostgreSQL's column names (``sum``, ``count``, ``avg``, ...),
    which the scripts select by name."""
    tree = sqlglot.parse_one(sql.rstrip().rstrip(";"), read="postgres")
    if pg_column_names and isinstance(tree, exp.Select):
        taken = {projection.alias_or_name for projection in tree.expressions}
        for index, projection in enumerate(tree.expressions):
            if isinstance(projection, exp.AggFunc):
                name = type(projection).__name__.lower()
                if name not in taken:
                    tree.expressions[index] = exp.alias_(projection, name)
                    taken.add(name)
    return tree.sql(dialect="spark")


def create_table_sql(sql: str) -> str:
    """PostgreSQL's CREATE TABLE as a parquet table, without constraints (Spark has none:
    PRIMARY KEY only made PostgreSQL index and refuse duplicates, which the scripts never
    insert)."""
    tree = sqlglot.parse_one(sql.rstrip(";"), read="postgres")
    for constraint in list(tree.find_all(exp.ColumnConstraint)):
        constraint.pop()
    return tree.sql(dialect="spark") + " USING parquet"


def parse_create_immv(text: str) -> tuple[str, list[str], str]:
    """create_immv('name [(col, ...)]', 'query') as (name, columns, query)."""
    match = re.search(
        r"create_immv\(\s*'((?:[^']|'')*)'\s*,\s*'((?:[^']|'')*)'\s*\)", text, re.DOTALL
    )
    assert match is not None, text
    target, query = (part.replace("''", "'") for part in match.groups())
    named = re.fullmatch(r"\s*(\w+)\s*(?:\((.*)\))?\s*", target)
    assert named is not None, target
    columns = [column.strip() for column in (named.group(2) or "").split(",") if column.strip()]
    return named.group(1), columns, query.strip().rstrip(";")


def written_table(sql: str) -> str | None:
    """The table a captured write writes (None for other statements)."""
    match = re.match(
        r"\s*(?:INSERT\s+(?:INTO|OVERWRITE)(?:\s+TABLE)?|UPDATE|DELETE\s+FROM|TRUNCATE\s+TABLE)"
        r"\s+(\w+)",
        sql,
        re.IGNORECASE,
    )
    return match.group(1) if match else None


def created_object(sql: str) -> tuple[str, str] | None:
    """("table" | "view", name) for a CREATE TABLE / CREATE VIEW statement."""
    match = re.match(r"\s*CREATE\s+(TABLE|VIEW)\s+(\w+)", sql, re.IGNORECASE)
    return (match.group(1).lower(), match.group(2)) if match else None


# -- comparing ---------------------------------------------------------------------------------


def normalized_value(value: object) -> str:
    """A value as psql would print it, numbers rounded (PostgreSQL's AVG is NUMERIC with 16
    decimals, Spark's a DOUBLE)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "t" if value else "f"
    text = str(value)
    try:
        number = Decimal(text)
    except InvalidOperation:
        return text
    rounded = round(number, DECIMALS).normalize()
    return format(rounded if rounded != 0 else Decimal(0), "f")


def normalized(row: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple(normalized_value(value) for value in row)


def compare_rows(expected: Output, actual: list[tuple[Any, ...]]) -> None:
    """``actual`` holds the rows of ``expected`` (pg_ivm's hidden columns dropped), as
    multisets of normalized values."""
    kept = [i for i, name in enumerate(expected.columns) if not name.startswith("__ivm_")]
    wanted = Counter(normalized(tuple(row[i] for i in kept)) for row in expected.rows)
    got = Counter(normalized(row) for row in actual)
    if wanted != got:
        raise StepError(
            f"rows differ: only in PostgreSQL's {sorted((wanted - got).elements())}, only in "
            f"Spark's {sorted((got - wanted).elements())}"
        )


def first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0][:300] if str(error).strip() else repr(error)


# -- a run ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """A section with its rule and whether the run executes it (mapped, and sampled)."""

    section: Section
    rule: SectionRule
    unmapped: str  # the reason, or "" when mapped


def plan(corpus: Path) -> list[Plan]:
    """Every section of the four scripts with its mapping verdict."""
    plans = []
    for name in FILES:
        for section in read_sections(corpus, name):
            rule = SECTION_RULES.get(section.key, SectionRule())
            plans.append(Plan(section, rule, unmapped_reason(section, rule)))
    keys = [entry.section.key for entry in plans]
    assert len(keys) == len(set(keys)), "section titles must be unique per file"
    unknown = set(SECTION_RULES) - set(keys)
    assert not unknown, f"section rules for no section: {unknown}"
    return plans


def unmapped_reason(section: Section, rule: SectionRule) -> str:
    if rule.reason:
        return rule.reason
    for statement in section.statements:
        mapped = statement_rule(statement.file, statement.line, statement.text)
        if mapped.kind is Kind.UNMAPPED:
            return mapped.reason
    return ""


def run(spark: SparkSession, plans: list[Plan], selected: set[str]) -> list[SectionOutcome]:
    """Run the ``selected`` mapped sections (setup sections always), each file in a fresh
    database dropped afterwards; an outcome for every section."""
    outcomes = []
    for name in FILES:
        if not any(key.startswith(f"{name}: ") for key in selected):
            outcomes.extend(not_run(entry) for entry in plans if entry.section.file == name)
            continue
        with database(spark, f"pgivm_{name}") as db:
            for entry in (plan for plan in plans if plan.section.file == name):
                execute = not entry.unmapped and (entry.rule.setup or entry.section.key in selected)
                outcome = db.run(entry.section, entry.rule, execute)
                if entry.unmapped:
                    outcome.status, outcome.reason = "unmapped", entry.unmapped
                elif not execute:
                    outcome.status = "not-run"
                elif entry.rule.xfail:
                    outcome.reason = entry.rule.xfail
                outcomes.append(outcome)
    return outcomes


def not_run(entry: Plan) -> SectionOutcome:
    section = entry.section
    outcome = SectionOutcome(section.key, section.file, section.line, section.title)
    if entry.unmapped:
        outcome.status, outcome.reason = "unmapped", entry.unmapped
    else:
        outcome.status = "not-run"
    return outcome


@contextmanager
def database(spark: SparkSession, name: str) -> Iterator[Database]:
    """A fresh current database ``name``; its views and itself dropped afterwards."""
    spark.sql(f"DROP DATABASE IF EXISTS {name} CASCADE")
    spark.sql(f"CREATE DATABASE {name}")
    previous = spark.catalog.currentDatabase()
    spark.sql(f"USE {name}")
    try:
        yield Database(spark, name)
    finally:
        for view in spark.sql(f"SHOW MATERIALIZED VIEWS IN {name}").collect():
            spark.sql(f"DROP MATERIALIZED VIEW {name}.{view.viewName}")
        spark.sql(f"USE {previous}")
        spark.sql(f"DROP DATABASE {name} CASCADE")


# -- the report ----------------------------------------------------------------------------------

COUNTS_BEGIN = "<!-- counts (the test compares them with the mapping and the last full run) -->"


def mapping_counts(plans: list[Plan]) -> dict[str, Any]:
    """What the mapping decides, without running anything: sections and statements, mapped
    and unmapped (by reason)."""
    unmapped = Counter(entry.unmapped for entry in plans if entry.unmapped)
    statements = [s for entry in plans for s in entry.section.statements]
    return {
        "sections": len(plans),
        "mapped": sum(1 for entry in plans if not entry.unmapped),
        "unmapped": dict(sorted(unmapped.items())),
        "statements": len(statements),
        "statements in mapped sections": sum(
            len(entry.section.statements) for entry in plans if not entry.unmapped
        ),
    }


def run_counts(outcomes: list[SectionOutcome]) -> dict[str, Any]:
    """What a full run found: sections passed, failed and expected to fail; checks made."""
    statuses = Counter(outcome.status for outcome in outcomes)
    checks: Counter[str] = Counter()
    answers: Counter[str] = Counter()
    for outcome in outcomes:
        checks.update(outcome.checks)
        answers.update(outcome.refusal_answers)
    return {
        "passed": statuses["passed"],
        "failed": statuses["failed"],
        "xfail": statuses["xfail"],
        "views INCREMENTAL": sum(len(outcome.incremental_views) for outcome in outcomes),
        "views AUTO (not incremental)": sum(len(outcome.full_views) for outcome in outcomes),
        "views pg_ivm refuses: sparkmv": dict(sorted(answers.items())),
        "checks": dict(sorted(checks.items())),
    }


def recorded_counts(report: Path) -> dict[str, Any]:
    """The counts block of a written REPORT.md."""
    text = report.read_text()
    block = text[text.index(COUNTS_BEGIN) :].split("```json\n", 1)[1].split("\n```", 1)[0]
    recorded: dict[str, Any] = json.loads(block)
    return recorded


def write_report(
    path: Path, plans: list[Plan], outcomes: list[SectionOutcome], seconds: float
) -> None:
    """REPORT.md: the counts, then every section with its verdict and what it checked."""
    counts = {"mapping": mapping_counts(plans), "full run": run_counts(outcomes)}
    lines = [
        "# pg_ivm's regression suite against sparkmv (ON COMMIT views)",
        "",
        "Generated by `make pg-ivm` (`SPARKMV_PG_IVM_FULL=1 pytest tests/pg_ivm`) from "
        "`../shared/corpora/pg_ivm` (see its SOURCE.txt); the method is in "
        "`tests/pg_ivm/pg_ivm_runner.py`, the mapping in `tests/pg_ivm/pg_ivm_mapping.py`. "
        "A *section* is one `-- title` block of pg_ivm's `sql/*.sql`. "
        f"Full run: {seconds / 60:.0f} min on this machine.",
        "",
        "## Summary",
        "",
        f"- sections: {counts['mapping']['sections']}, mapped "
        f"{counts['mapping']['mapped']} (passed {counts['full run']['passed']}, failed "
        f"{counts['full run']['failed']}, xfail {counts['full run']['xfail']}), unmapped "
        f"{sum(counts['mapping']['unmapped'].values())}",
        f"- statements: {counts['mapping']['statements']}, of which "
        f"{counts['mapping']['statements in mapped sections']} in mapped sections",
        f"- IMMVs pg_ivm maintains, created as ON COMMIT views: "
        f"{counts['full run']['views INCREMENTAL']} INCREMENTAL, "
        f"{counts['full run']['views AUTO (not incremental)']} AUTO (sparkmv refuses "
        "INCREMENTAL for them)",
        "- views pg_ivm refuses, and what sparkmv does with them: "
        + ", ".join(
            f"{answer} {number}"
            for answer, number in counts["full run"]["views pg_ivm refuses: sparkmv"].items()
        ),
        "",
        "### Unmapped sections by reason",
        "",
    ]
    for reason, number in counts["mapping"]["unmapped"].items():
        lines.append(f"- {number} × {reason}")
    lines += ["", "### Checks made (full run)", ""]
    for check, number in counts["full run"]["checks"].items():
        lines.append(f"- {check}: {number}")
    lines += ["", "## Sections", ""]
    for outcome in outcomes:
        lines.append(f"### {outcome.key} (line {outcome.line}) — {outcome.status}")
        if outcome.reason:
            lines.append(f"- reason: {outcome.reason}")
        if outcome.incremental_views:
            lines.append(f"- INCREMENTAL ON COMMIT: {', '.join(outcome.incremental_views)}")
        lines += [f"- AUTO ON COMMIT: {view}" for view in outcome.full_views]
        lines += [f"- refused by pg_ivm: {refusal}" for refusal in outcome.refusals]
        lines += [f"- FAILED: {failure}" for failure in outcome.failures]
        if outcome.checks:
            made = ", ".join(f"{check} {n}" for check, n in sorted(outcome.checks.items()))
            lines.append(f"- checks: {made}")
        lines.append("")
    lines += [COUNTS_BEGIN, "", "```json", json.dumps(counts, indent=2), "```", ""]
    path.write_text("\n".join(lines))
