"""SQLite's sqllogictest ``select1-5.test`` run as materialized views (docs/development.md).

For each ``query`` record the runner creates the query as a materialized view, changes the
base tables in batches and refreshes, then checks the view after the last refresh against the
same query run plainly over the final tables, and against the file's expected result.

Per test file the records are replayed in order: ``statement ok`` records build the database
(CREATE TABLE, INSERT; CREATE INDEX and other statements Spark has no use for are skipped and
counted), and every query sees the tables as the statements before it left them. Queries that
see the same state form a group (in select1-5 each file is one group). A group is run in
chunks of at most ``--chunk`` views, each chunk in a database of its own. In select5 a chunk
is a run of consecutive records that read the same tables (its three equivalent spellings of
each join): its 732 queries join 4 to 64 of 64 tables, and in a database shared by many of
them most tables would change in the batches, so that a 64-table view's change would have
dozens of terms of 63 joins each, where real workloads change a few tables at a time.

1. create the tables the chunk's queries read (parquet). Some of them are *dynamic*: at
   least two (or all) of the tables of every query, chosen with a seeded RNG (select5's
   queries join up to 64 tables, and each changed table costs six captured writes). Load
   the first half of each dynamic table's rows; the other tables hold all their rows, as
   external tables over one copy of them written once per run (``static_location``);
2. ``CREATE MATERIALIZED VIEW q<line> (c1, ..., cn) AS <query>`` for every query record;
3. batch 1, per dynamic table: INSERT the next quarter of its rows, DELETE a few present
   rows (seeded choice; null-safe match on every column, so every copy goes); then
   REFRESH every view;
4. batch 2, per dynamic table: INSERT the last quarter and re-INSERT the rows deleted in
   batch 1, DELETE a few present rows and re-INSERT exactly those (a change that nets to
   nothing); REFRESH every view. Every table now holds exactly the file's rows (as a
   multiset);
5. run each query plainly (with its ORDER BY) and read each view; classify.

Translation (measured; docs/development.md): sqlglot ``read="sqlite"``, ``write="spark"``;
every ``/`` whose operands hold no floating-point value (a literal with a point or exponent,
``avg``, a cast to a real type) becomes ``DIV``, as SQLite divides integers as integers; and
``spark.sql.ansi.enabled=false`` (SQLite gives NULL, not an error, on division by zero).
Tables: INTEGER → BIGINT (SQLite integers are 64-bit), VARCHAR/TEXT → STRING, REAL → DOUBLE,
constraints dropped, ``USING parquet``. Views get a column list ``(c1, ..., cn)`` because
result columns of these queries are unnamed expressions and may repeat (``SELECT a, a``),
which a view cannot hold; the list is what a user would write.

Results follow about.wiki: values formatted per the record's type letters (``I`` as ``%d``,
``R`` as ``%.3f``, ``T`` as text with ``(empty)`` and ``@`` for unprintable characters,
``NULL``), sorted per ``rowsort``/``valuesort`` with strcmp order, and compared with the
listed values or as ``N values hashing to <md5>`` (md5 of every value followed by a newline).
A materialized view is a multiset: it cannot promise the order of ``nosort`` records, so a
view is compared with the plain query as multisets; for ``nosort`` records with listed values
the view's rows are compared with the expected rows both sorted, and for hashed ``nosort``
records the view's rows must be those of the plain query (which keeps its ORDER BY and is
checked against the hash in the file's order).

Conditional records: this engine is neither SQLite nor any other listed database, so
``onlyif <db>`` records are skipped; ``skipif <db>`` records run, except ``skipif sqlite``
(the expected results are SQLite's, and SQLite did not produce one for that record).
``statement error`` records are skipped (counted). Labels need no check of their own: every
record lists its own expected result.

Classification per query record:
- plain-correct / plain-wrong / plain-error: the translated query over the final tables
  against the file (dialect issues, not view failures);
- view-correct: the view equals the plain query (multiset) and, when the plain query is
  correct, the file's expected result;
- view-wrong: it does not (must be zero; every case is printed);
- view-error: a REFRESH or the read of a created view failed, or CREATE failed with
  MATERIALIZED_VIEW_INTERNAL_ERROR or Spark's INTERNAL_ERROR (engine failures; grouped by
  kind and printed with examples);
- refused: CREATE failed with another MATERIALIZED_VIEW_* error while the plain query runs;
- create-error: CREATE failed with a Spark error (or any error while the plain query fails);
- view-unchecked: the view exists but the plain query failed, so there is nothing to compare.

Command line (each process its own temporary warehouse and JVM)::

    python tests/sqllogictest/runner.py                      # every query record of select1-5
    python tests/sqllogictest/runner.py --files select1 --limit 200
    python tests/sqllogictest/runner.py --sample 50 --seed 7 --json out.json
    python tests/sqllogictest/runner.py --processes 2        # --shard i/2 each, merged counts
    python tests/sqllogictest/runner.py --merge a.json b.json
    python tests/sqllogictest/runner.py --files select4 --shard 1/4 --record ledger/s4-1.json
    python tests/sqllogictest/runner.py --files select5 --records 1-120  # records 1 to 120
    python tests/sqllogictest/runner.py --ledger tests/sqllogictest/ledger   # recorded parts merged
    (also --shard i/n, --records a-b, --max-tables N, --chunk N, --warehouse DIR, --cleanup,
    --engine-logs)

``--sample`` picks N records at random over all selected files; ``--limit`` the first N of
each file; views of one chunk share a database and are not dropped unless ``--cleanup``
(the temporary warehouse goes at the end).

The summary ends with one ``SLT <counter> <value>`` line per counter (``grep ^SLT``); the
exit code is 1 when any view is wrong or failed (view-wrong or view-error).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import sqlglot
from sparkmv import fs
from sparkmv.bridge import quiet_pyspark_error_logs
from sparkmv.cli import conf_pair
from sparkmv.config import REFRESH_COST_BASED_CONF
from sqlglot import exp

REPO = Path(__file__).resolve().parents[2]
CORPUS_ENV = "SPARKMV_SQLLOGICTEST_DIR"
DEFAULT_CORPUS = REPO.parent / "shared" / "corpora" / "sqllogictest" / "test"
FILES = ("select1", "select2", "select3", "select4", "select5")
ENGINE_NAMES = frozenset({"spark", "sparkmv"})
SESSION_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "3g",  # a chunk's 250 views over up to 9 tables share one driver
}
ANSI = "spark.sql.ansi.enabled"
RUN_CONF = {
    ANSI: "false",
    # Every maintainable view refreshes incrementally, so that the run checks the incremental
    # path: over tables this small AUTO's cost model refreshes most views fully, and the
    # incremental share would measure the model rather than what the rules maintain.
    REFRESH_COST_BASED_CONF: "false",
}
"""Session confs for the duration of a run, restored afterwards."""
DEFAULT_CHUNK = 250
CHUNK_BY_TABLES = frozenset({"select5"})
"""Files whose chunks are runs of consecutive records that read the same tables (module
docstring)."""
HASHED = re.compile(r"^(\d+) values hashing to ([0-9a-f]{32})$")
ERROR_CLASS = re.compile(r"^\[([A-Z0-9_.]+)\]")
COUNTERS = (
    "queries",
    "plain-correct",
    "plain-wrong",
    "plain-error",
    "view-correct",
    "view-wrong",
    "view-error",
    "refused",
    "create-error",
    "view-unchecked",
    "refreshes",
    "refreshes-incremental",
    "views-refreshed",
    "views-with-incremental",
    "records-skipped",
    "statements-run",
    "statements-skipped",
    "statements-unsupported",
    "queries-unreplayable",
)

Row = tuple[object, ...]


def corpus_dir() -> Path:
    return Path(os.environ.get(CORPUS_ENV, DEFAULT_CORPUS))


# ---------------------------------------------------------------------------------------------
# The test-script format (about.wiki)


@dataclass(frozen=True)
class Expected:
    """A query record's expected result: the listed values, or a count and an md5."""

    values: tuple[str, ...] | None
    hashed: tuple[int, str] | None

    @staticmethod
    def parse(lines: Sequence[str]) -> Expected:
        if len(lines) == 1 and (match := HASHED.match(lines[0].strip())):
            return Expected(None, (int(match.group(1)), match.group(2)))
        return Expected(tuple(lines), None)

    def matches(self, values: Sequence[str]) -> bool:
        if self.hashed is not None:
            return (len(values), result_hash(values)) == self.hashed
        return tuple(values) == self.values

    def describe(self) -> str:
        if self.hashed is not None:
            return f"{self.hashed[0]} values hashing to {self.hashed[1]}"
        assert self.values is not None
        return " ".join(self.values[:24]) + (" ..." if len(self.values) > 24 else "")


@dataclass(frozen=True)
class Statement:
    line: int
    sql: str
    ok: bool


@dataclass(frozen=True)
class Query:
    file: str
    line: int
    types: str
    sort: str
    label: str | None
    sql: str
    expected: Expected


@dataclass
class Script:
    name: str
    records: list[Statement | Query]
    skipped: int = 0
    hash_threshold: int = 0


def parse_script(path: Path) -> Script:
    """The records of a test script, conditional records already resolved for this engine."""
    script = Script(path.stem, [])
    record: list[tuple[int, str]] = []
    lines = path.read_text().splitlines()
    for number, text in enumerate([*lines, ""], start=1):
        if text.startswith("#"):
            continue
        if text.strip():
            record.append((number, text))
            continue
        if record and not _add_record(script, record):
            break  # halt
        record = []
    return script


def _add_record(script: Script, record: list[tuple[int, str]]) -> bool:
    run = True
    while record and record[0][1].split()[0] in ("skipif", "onlyif"):
        condition, database = record.pop(0)[1].split()[:2]
        if condition == "skipif" and (database in ENGINE_NAMES or database == "sqlite"):
            run = False
        if condition == "onlyif" and database not in ENGINE_NAMES:
            run = False
    if not record:
        return True
    line, first = record[0]
    words = first.split()
    if words[0] == "halt":
        return not run
    if words[0] == "hash-threshold":
        script.hash_threshold = int(words[1])
        return True
    if not run:
        script.skipped += 1
        return True
    body = [text for _, text in record[1:]]
    if words[0] == "statement":
        script.records.append(Statement(line, "\n".join(body), words[1] == "ok"))
    elif words[0] == "query":
        split = body.index("----") if "----" in body else len(body)
        sort = words[2] if len(words) > 2 else "nosort"
        label = words[3] if len(words) > 3 else None
        script.records.append(
            Query(
                script.name,
                line,
                words[1],
                sort,
                label,
                "\n".join(body[:split]),
                Expected.parse(body[split + 1 :]),
            )
        )
    else:
        raise ValueError(f"{script.name}:{line}: unknown record {first!r}")
    return True


# ---------------------------------------------------------------------------------------------
# Values, sorting and hashing (about.wiki)


def format_value(value: object, kind: str) -> str:
    """``value`` as sqllogictest renders a result value of type letter ``kind``."""
    if value is None:
        return "NULL"
    if kind == "I":
        return str(_as_int(value))
    if kind == "R":
        return f"{_as_float(value):.3f}"
    text = _as_text(value)
    if not text:
        return "(empty)"
    return "".join(char if " " <= char <= "~" else "@" for char in text)


def _as_int(value: object) -> int:
    """SQLite's ``sqlite3_column_int``: reals truncate, text reads its leading integer."""
    if isinstance(value, bool | int):
        return int(value)
    if isinstance(value, float | Decimal):
        number = float(value)
        if math.isnan(number):
            return 0
        if math.isinf(number):
            return 2**63 - 1 if number > 0 else -(2**63)
        return int(number)
    match = re.match(r"\s*[+-]?\d+", str(value))
    return int(match.group()) if match else 0


def _as_float(value: object) -> float:
    if isinstance(value, bool | int | float | Decimal):
        return float(value)
    match = re.match(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", str(value))
    return float(match.group()) if match else 0.0


def _as_text(value: object) -> str:
    """SQLite's text of a value: booleans are integers, reals print as ``%!.15g``."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float | Decimal) and not isinstance(value, int):
        number = float(value)
        text = f"{number:.15g}"
        if math.isfinite(number) and not any(char in text for char in ".e"):
            text += ".0"
        return text
    return str(value)


def format_rows(rows: Sequence[Row], types: str) -> list[tuple[str, ...]]:
    return [
        tuple(format_value(v, kind) for v, kind in zip(row, types, strict=True)) for row in rows
    ]


def result_values(rows: Sequence[tuple[str, ...]], sort: str) -> list[str]:
    """The values of formatted ``rows`` in the order the record's sort mode gives them."""
    if sort == "rowsort":
        rows = sorted(rows)
    values = [value for row in rows for value in row]
    return sorted(values) if sort == "valuesort" else values


def result_hash(values: Sequence[str]) -> str:
    digest = hashlib.md5()
    for value in values:
        digest.update(value.encode())
        digest.update(b"\n")
    return digest.hexdigest()


def normalized(row: Row) -> Row:
    """A row for multiset comparison: numbers by value, floats to 10 significant digits."""
    out: list[object] = []
    for value in row:
        if isinstance(value, bool):
            value = int(value)
        elif isinstance(value, float | Decimal):
            number = float(value)
            value = "NaN" if math.isnan(number) else float(f"{number:.10g}")
        out.append(value)
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Translation SQLite → Spark


def translate_query(sql: str) -> str:
    """The Spark SQL of a SQLite query: sqlglot, then integer ``/`` as ``DIV``."""
    tree = sqlglot.parse_one(sql, read="sqlite")
    for division in list(tree.find_all(exp.Div)):
        if not (_floating(division.this) or _floating(division.expression)):
            division.replace(exp.IntDiv(this=division.this, expression=division.expression))
    return tree.sql(dialect="spark")


def _floating(node: exp.Expression) -> bool:
    """Whether SQLite computes ``node`` as a floating-point value (judged syntactically)."""
    if isinstance(node, exp.Literal):
        return not node.is_string and any(char in node.this for char in ".eE")
    if isinstance(node, exp.Avg):
        return True
    if isinstance(node, exp.Cast):
        return node.to.is_type(*exp.DataType.REAL_TYPES)
    if isinstance(node, exp.Subquery | exp.Select):
        select = node.this if isinstance(node, exp.Subquery) else node
        return isinstance(select, exp.Select) and any(_floating(e) for e in select.expressions)
    return any(_floating(child) for child in node.iter_expressions())


def referenced_tables(sql: str) -> set[str] | None:
    """Lower-case names of the tables a query reads, or None when sqlglot cannot tell."""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except sqlglot.errors.SqlglotError:
        return None
    return {table.name.lower() for table in tree.find_all(exp.Table)}


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[str, ...]
    types: tuple[str, ...]

    def ddl(self, database: str, location: str | None = None) -> str:
        columns = ", ".join(f"{c} {t}" for c, t in zip(self.columns, self.types, strict=True))
        where = f" LOCATION '{location}'" if location else ""
        return f"CREATE TABLE {database}.{self.name} ({columns}) USING parquet{where}"

    def insert(self, database: str, rows: Sequence[Row]) -> str:
        values = ", ".join("(" + ", ".join(_literal(v) for v in row) + ")" for row in rows)
        return f"INSERT INTO {database}.{self.name} ({', '.join(self.columns)}) VALUES {values}"

    def delete(self, database: str, rows: Sequence[Row]) -> str:
        """DELETE every copy of each of ``rows`` (null-safe match on all columns)."""
        condition = " OR ".join(self._match(row) for row in rows)
        return f"DELETE FROM {database}.{self.name} WHERE {condition}"

    def _match(self, row: Row) -> str:
        pairs = zip(self.columns, row, strict=True)
        return "(" + " AND ".join(f"{c} <=> {_literal(v)}" for c, v in pairs) + ")"


def _literal(value: object) -> str:
    return "NULL" if value is None else exp.convert(value).sql(dialect="spark")


def _spark_type(kind: exp.DataType) -> str:
    if kind.is_type(*exp.DataType.INTEGER_TYPES):
        return "BIGINT"
    if kind.is_type(*exp.DataType.REAL_TYPES):
        return "DOUBLE"
    if kind.is_type(*exp.DataType.TEXT_TYPES) or kind.is_type(exp.DataType.Type.CHAR):
        return "STRING"
    return kind.sql(dialect="spark")


class UnsupportedError(Exception):
    """A statement the runner cannot replay (the queries after it are not run)."""


def _value(node: exp.Expression) -> object:
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        return float(node.this) if any(char in node.this for char in ".eE") else int(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        number = _value(node.this)
        if isinstance(number, int | float):
            return -number
    if isinstance(node, exp.Paren):
        return _value(node.this)
    raise UnsupportedError(f"not a literal: {node.sql()}")


# ---------------------------------------------------------------------------------------------
# Database states and the writes that reach them


@dataclass
class Group:
    """Query records that see the same database state, and that state."""

    file: str
    number: int
    tables: dict[str, Table]
    rows: dict[str, list[Row]]
    queries: list[Query] = field(default_factory=list)


@dataclass
class Replay:
    groups: list[Group]
    counts: Counter[str]


def replay(script: Script) -> Replay:
    """Group the script's queries by the database state the statements before them build."""
    counts: Counter[str] = Counter({"records-skipped": script.skipped, "queries-unreplayable": 0})
    tables: dict[str, Table] = {}
    rows: dict[str, list[Row]] = {}
    groups: list[Group] = []
    changed = True
    broken = False
    for record in script.records:
        if isinstance(record, Query):
            if broken:
                counts["queries-unreplayable"] += 1
                continue
            if changed:
                snapshot = {name: list(table_rows) for name, table_rows in rows.items()}
                groups.append(Group(script.name, len(groups) + 1, dict(tables), snapshot))
                changed = False
            groups[-1].queries.append(record)
            continue
        if not record.ok:
            counts["records-skipped"] += 1
            continue
        try:
            outcome = _apply_statement(record.sql, tables, rows)
        except (UnsupportedError, sqlglot.errors.SqlglotError):
            counts["statements-unsupported"] += 1
            broken = True
            continue
        counts["statements-run" if outcome else "statements-skipped"] += 1
        changed = changed or outcome
    return Replay(groups, counts)


def _apply_statement(sql: str, tables: dict[str, Table], rows: dict[str, list[Row]]) -> bool:
    """Apply a statement to the Python model of the database; False if it is skipped."""
    head = [word.upper() for word in sql.split()[:3]]
    if head[:1] in (["CREATE"], ["DROP"]) and "INDEX" in head:
        return False  # indexes change no result
    if head[:1] in (["ANALYZE"], ["REINDEX"], ["PRAGMA"], ["VACUUM"]):
        return False
    tree = sqlglot.parse_one(sql, read="sqlite")
    if isinstance(tree, exp.Create) and tree.kind == "TABLE" and isinstance(tree.this, exp.Schema):
        name = tree.this.this.name.lower()
        definitions = [c for c in tree.this.expressions if isinstance(c, exp.ColumnDef)]
        kinds = [c.args.get("kind") for c in definitions]
        tables[name] = Table(
            name,
            tuple(c.name.lower() for c in definitions),
            tuple(_spark_type(k) if k is not None else "STRING" for k in kinds),
        )
        rows[name] = []
        return True
    if isinstance(tree, exp.Drop) and tree.kind == "TABLE":
        name = tree.this.name.lower()
        tables.pop(name, None)
        rows.pop(name, None)
        return True
    if isinstance(tree, exp.Insert) and isinstance(tree.expression, exp.Values):
        target = tree.this
        table_expr = target.this if isinstance(target, exp.Schema) else target
        table = tables.get(table_expr.name.lower())
        if table is None:
            raise UnsupportedError(f"INSERT into unknown table: {sql}")
        columns = (
            [c.name.lower() for c in target.expressions]
            if isinstance(target, exp.Schema)
            else list(table.columns)
        )
        for values in tree.expression.expressions:
            given = dict(zip(columns, [_value(v) for v in values.expressions], strict=True))
            rows[table.name].append(tuple(given.get(c) for c in table.columns))
        return True
    raise UnsupportedError(sql)


@dataclass(frozen=True)
class Write:
    kind: str  # "insert" | "delete"
    table: str
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class LoadPlan:
    """The initial rows per table and two batches of writes that end at the file's rows."""

    initial: dict[str, list[Row]]
    batches: tuple[tuple[Write, ...], ...]


def load_plan(rows: dict[str, list[Row]], dynamic: set[str], rng: random.Random) -> LoadPlan:
    """All rows of the static tables and half of the dynamic ones first; then two batches.

    For each dynamic table, batch 1 inserts the next quarter of its rows and deletes some
    present rows (every copy of each: the DELETE matches all columns). Batch 2 inserts the
    last quarter plus the rows batch 1 deleted, deletes some present rows and re-inserts
    exactly those. The final multiset of every table equals ``rows``.
    """
    initial: dict[str, list[Row]] = {}
    batches: list[list[Write]] = [[], []]
    for name in sorted(rows):
        table_rows = rows[name]
        if name not in dynamic:
            initial[name] = list(table_rows)
            continue
        half = len(table_rows) // 2
        quarter = half + (len(table_rows) - half) // 2
        initial[name] = table_rows[:half]
        present: Counter[Row] = Counter(table_rows[:half])
        deleted: list[Row] = []
        for batch, chunk in enumerate((table_rows[half:quarter], table_rows[quarter:])):
            writes = batches[batch]
            inserted = [*chunk, *deleted]
            if inserted:
                writes.append(Write("insert", name, tuple(inserted)))
                present.update(inserted)
            victims = _pick(present, rng)
            if victims:
                writes.append(Write("delete", name, tuple(victims)))
            deleted = [row for row in victims for _ in range(present[row])]
            for row in victims:
                del present[row]
            if batch == 1 and deleted:
                writes.append(Write("insert", name, tuple(deleted)))
                present.update(deleted)
        assert present == Counter(table_rows), name
    return LoadPlan(initial, tuple(tuple(batch) for batch in batches))


def dynamic_tables(reads: Sequence[set[str]], rng: random.Random) -> set[str]:
    """Tables to change in the batches: at least two (or all) of the tables of every query.

    Every table captured-written costs six statements, and select5's queries join up to 64
    tables; changing a covering subset keeps the writes bounded and gives joins deltas in
    some of their tables, as real workloads do.
    """
    dynamic: set[str] = set()
    for tables in reads:
        ordered = sorted(tables)
        missing = min(2, len(ordered)) - sum(table in dynamic for table in ordered)
        if missing > 0:
            dynamic.update(rng.sample([t for t in ordered if t not in dynamic], missing))
    return dynamic


def _pick(present: Counter[Row], rng: random.Random) -> list[Row]:
    distinct = sorted(present, key=repr)
    count = min(len(distinct), 10, max(1, len(distinct) // 10))
    return rng.sample(distinct, count)


# ---------------------------------------------------------------------------------------------
# Running a chunk of query records


@dataclass
class Outcome:
    """What happened to one query record."""

    file: str
    line: int
    sort: str
    sql: str
    translated: str = ""
    plain: str = ""  # correct | wrong | error
    view: str = ""  # correct | wrong | error | refused | create-error | unchecked
    refreshes: int = 0
    incremental: int = 0
    error: str = ""  # "CLASS: first line" of the error that decided ``view`` or ``plain``
    detail: str = ""
    reasons: list[str] = field(default_factory=list)  # reasons of the FULL refreshes
    plain_error: str = ""

    def describe(self) -> str:
        lines = [
            f"{self.file}.test:{self.line} ({self.sort}) view {self.view}, plain {self.plain}",
            "  sqlite: " + " ".join(self.sql.split()),
            "  spark:  " + self.translated,
        ]
        if self.error:
            lines.append("  error:  " + self.error)
        if self.plain_error:
            lines.append("  plain error: " + self.plain_error)
        lines.extend("  " + line for line in self.detail.splitlines())
        return "\n".join(lines)


@dataclass
class Live:
    query: Query
    outcome: Outcome
    view: str
    created: bool = False
    failed: bool = False


def error_of(error: BaseException) -> tuple[str, str]:
    """(error class, first line of the message) of a Spark or sparkmv error.

    For an error py4j passed through unconverted, the class and message are the JVM
    exception's, followed by its root cause.
    """
    text = str(error).strip()
    name = _call(error, "getCondition")
    java = getattr(error, "java_exception", None)
    if java is not None:
        name = _call(java, "getCondition")
        text = _call(java, "getMessage") or _call(java, "toString") or text
        root = java
        with suppress(Exception):
            for _ in range(20):
                cause = root.getCause()
                if cause is None:
                    break
                root = cause
        if root is not java:
            text = f"{text.splitlines()[0] if text else ''} (root cause: {_call(root, 'toString')})"
    if not name and (match := ERROR_CLASS.match(text)):
        name = match.group(1)
    first = text.splitlines()[0] if text else type(error).__name__
    first = ERROR_CLASS.sub("", first).strip()
    first = re.sub(r"\s*SQLSTATE: \w+\.?", "", first)
    return name or type(error).__name__, first[:400]


def error_kind(error: str) -> str:
    """An error without the statement it quotes and the column numbers: failures grouped."""
    error = re.sub(r"while running .*?\.\.\.: ", "", error)
    error = re.sub(r"while running [^:]*: ", "", error)
    error = re.sub(r"\b_col_\d+\b", "_col_N", error)
    error = re.sub(r"^REFRESH \d+: ", "REFRESH: ", error)
    return error[:160]


def _call(target: Any, method: str) -> str:
    """``target.method()`` as a string, or '' when there is no such method or it fails."""
    try:
        return str(getattr(target, method)() or "").strip()
    except Exception:
        return ""


def run_chunk(
    spark: Any,
    group: Group,
    queries: Sequence[Query],
    database: str,
    static: str,
    seed: int,
    cleanup: bool,
    timings: defaultdict[str, float],
    progress: bool = False,
) -> list[Outcome]:
    """Run ``queries`` (of ``group``) as views in a fresh ``database``; their outcomes.
    ``static``: the database of the tables' rows that chunks share (``static_location``)."""
    started = time.monotonic()

    def say(step: str, since: float) -> None:
        if progress:
            seconds = time.monotonic() - since
            print(
                f"[sqllogictest] {database}: {step} ({seconds:.0f}s)", file=sys.stderr, flush=True
            )

    live: list[Live] = []
    for query in queries:
        outcome = Outcome(query.file, query.line, query.sort, query.sql)
        live.append(Live(query, outcome, f"q{query.line}"))
        try:
            outcome.translated = translate_query(query.sql)
        except Exception as error:
            outcome.error = "translation: " + str(error).splitlines()[0][:300]
            outcome.plain = "error"
            outcome.view = "create-error"
    reads: list[set[str]] = []
    for item in live:
        names = referenced_tables(item.query.sql)
        reads.append(set(group.tables) if names is None else names & set(group.tables))
    rows = {name: group.rows[name] for name in sorted(set().union(*reads))}
    rng = random.Random(f"{seed}:{group.file}:{group.number}:{queries[0].line}")
    plan = load_plan(rows, dynamic_tables(reads, rng), rng)

    spark.sql(f"CREATE DATABASE {database}")
    spark.sql(f"USE {database}")
    try:
        for name in rows:
            table = group.tables[name]
            if len(plan.initial[name]) < len(rows[name]):  # dynamic: its own files
                spark.sql(table.ddl(database))
                spark.sql(table.insert(database, plan.initial[name]))
            else:  # never written: over the group's one copy of its rows
                location = static_location(spark, group, name, static)
                spark.sql(table.ddl(database, location))
        timings["setup"] += time.monotonic() - started
        dynamic = sum(1 for name in rows if len(plan.initial[name]) < len(rows[name]))
        say(f"{len(rows)} tables ({dynamic} changed in the batches)", started)

        mark = time.monotonic()
        for item in live:
            if item.outcome.view:
                continue
            columns = ", ".join(f"c{i}" for i in range(1, len(item.query.types) + 1))
            try:
                spark.sql(
                    f"CREATE MATERIALIZED VIEW {item.view} ({columns}) AS\n"
                    + item.outcome.translated
                )
                item.created = True
            except Exception as error:
                item.failed = True
                name, message = error_of(error)
                item.outcome.error = f"{name}: {_anonymous(message, database, item.view)}"
        timings["create"] += time.monotonic() - mark
        say(f"created {sum(item.created for item in live)} of {len(live)} views", mark)

        for number, batch in enumerate(plan.batches, start=1):
            mark = time.monotonic()
            for write in batch:
                table = group.tables[write.table]
                if write.kind == "insert":
                    spark.sql(table.insert(database, write.rows))
                else:
                    spark.sql(table.delete(database, write.rows))
            timings["writes"] += time.monotonic() - mark
            mark = time.monotonic()
            for item in live:
                if item.created and not item.failed:
                    _refresh(spark, item, database, timings)
            timings["refresh"] += time.monotonic() - mark
            say(f"batch {number}: {len(batch)} writes, refreshed", mark)

        mark = time.monotonic()
        for item in live:
            if item.outcome.translated:
                _check(spark, item, database)
        timings["check"] += time.monotonic() - mark
    finally:
        mark = time.monotonic()
        spark.sql("USE default")
        if cleanup:
            for item in live:
                if item.created:
                    try:
                        spark.sql(f"DROP MATERIALIZED VIEW IF EXISTS {database}.{item.view}")
                    except Exception as error:  # reported, but the run goes on
                        print(f"could not drop {database}.{item.view}: {error}", file=sys.stderr)
            spark.sql(f"DROP DATABASE IF EXISTS {database} CASCADE")
        timings["cleanup"] += time.monotonic() - mark
    return [item.outcome for item in live]


def static_location(spark: Any, group: Group, name: str, static: str) -> str:
    """The files of table ``name`` with all of ``group``'s rows, written once per run (a
    table of the database ``static``): every chunk's copy of a table its batches do not
    change is an external table over them, so a chunk creates it with one metastore call,
    not a write (select5's chunks read up to 64 tables each, and change two).
    """
    table = group.tables[name]
    source = Table(f"{group.file}_{group.number}_{name}", table.columns, table.types)
    location = f"{static_files(spark, static)}/{source.name}"
    if not spark.catalog.tableExists(f"{static}.{source.name}"):
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {static}")
        spark.sql(source.ddl(static, location))
        if group.rows[name]:
            spark.sql(source.insert(static, group.rows[name]))
    return location


def static_files(spark: Any, static: str) -> str:
    warehouse = str(spark.conf.get("spark.sql.warehouse.dir")).rstrip("/")
    return f"{warehouse}/{static}_files"


def _anonymous(message: str, database: str, view: str) -> str:
    """An error message with this run's names replaced, so that equal errors count as one."""
    message = re.sub(rf"(spark_catalog\.)?`?\b{re.escape(database)}\b`?\.", "", message)
    message = re.sub(rf"`?\b{re.escape(view)}\b`?", "<view>", message)
    return re.sub(rf"\b{re.escape(database)}\b", "<db>", message)


def _refresh(spark: Any, item: Live, database: str, timings: defaultdict[str, float]) -> None:
    mark = time.monotonic()
    try:
        result = spark.sql(f"REFRESH MATERIALIZED VIEW {item.view}").collect()[0]
    except Exception as error:
        item.failed = True
        name, message = error_of(error)
        item.outcome.error = f"REFRESH {item.outcome.refreshes + 1}: {name}: " + _anonymous(
            message, database, item.view
        )
        return
    item.outcome.refreshes += 1
    timings[f"refresh-{str(result['mode']).lower()}"] += time.monotonic() - mark
    if result["mode"] == "INCREMENTAL":
        item.outcome.incremental += 1
    else:
        item.outcome.reasons.append(_anonymous(str(result["reason"]), database, item.view))


def _check(spark: Any, item: Live, database: str) -> None:
    query, outcome = item.query, item.outcome
    try:
        plain_rows = [tuple(row) for row in spark.sql(outcome.translated).collect()]
    except Exception as error:
        name, message = error_of(error)
        outcome.plain, outcome.plain_error = "error", f"{name}: {message}"
        plain_rows = None
    if plain_rows is not None:
        if any(len(row) != len(query.types) for row in plain_rows):
            outcome.plain = "wrong"
            outcome.plain_error = f"{len(plain_rows[0])} columns, the record has {query.types}"
        else:
            plain_values = result_values(format_rows(plain_rows, query.types), query.sort)
            outcome.plain = "correct" if query.expected.matches(plain_values) else "wrong"
    if not item.created:
        internal = outcome.error.startswith(("MATERIALIZED_VIEW_INTERNAL_ERROR", "INTERNAL_ERROR"))
        refused = outcome.error.startswith("MATERIALIZED_VIEW_") and outcome.plain != "error"
        outcome.view = "error" if internal else "refused" if refused else "create-error"
        return
    if item.failed:
        outcome.view = "error"
        return
    try:
        view_rows = [tuple(row) for row in spark.table(item.view).collect()]
    except Exception as error:
        name, message = error_of(error)
        outcome.view, outcome.error = "error", f"read: {name}: {message}"
        return
    if plain_rows is None:
        outcome.view = "unchecked"
        return
    outcome.view = judge_view(query, outcome, plain_rows, view_rows)


def judge_view(query: Query, outcome: Outcome, plain: list[Row], view: list[Row]) -> str:
    """'correct' or 'wrong' (with a detail) for a view's rows against the plain query's."""
    plain_set = Counter(normalized(row) for row in plain)
    view_set = Counter(normalized(row) for row in view)
    if plain_set != view_set or any(len(row) != len(query.types) for row in view):
        outcome.detail = _difference(view_set, plain_set)
        return "wrong"
    if outcome.plain != "correct":
        return "correct"
    view_formatted = format_rows(view, query.types)
    if query.sort != "nosort":
        ok = query.expected.matches(result_values(view_formatted, query.sort))
    elif query.expected.values is not None:
        width = len(query.types)
        values = query.expected.values
        expected_rows = [tuple(values[i : i + width]) for i in range(0, len(values), width)]
        ok = sorted(view_formatted) == sorted(expected_rows)
    else:  # hashed nosort: the view's rows in the plain query's order match the hash
        ok = Counter(view_formatted) == Counter(format_rows(plain, query.types))
    if not ok:
        outcome.detail = (
            f"expected: {query.expected.describe()}\n"
            f"view (sorted): {_sample(sorted(view_formatted))}"
        )
    return "correct" if ok else "wrong"


def _difference(view: Counter[Row], plain: Counter[Row]) -> str:
    only_view = view - plain
    only_plain = plain - view
    return (
        f"view rows {sum(view.values())}, plain rows {sum(plain.values())}\n"
        f"only in view ({sum(only_view.values())}): "
        f"{_sample(sorted(only_view.elements(), key=repr))}\n"
        f"only in plain ({sum(only_plain.values())}): "
        f"{_sample(sorted(only_plain.elements(), key=repr))}"
    )


def _sample(rows: Sequence[object], limit: int = 8) -> str:
    shown = ", ".join(str(row) for row in rows[:limit])
    return shown + (f", ... ({len(rows)} rows)" if len(rows) > limit else "")


# ---------------------------------------------------------------------------------------------
# Selection, the whole run, the summary


@dataclass
class Selection:
    files: Sequence[str] = FILES
    limit: int | None = None  # the first N query records of each file
    sample: int | None = None  # N query records chosen at random over all selected files
    seed: int = 0
    shard: tuple[int, int] = (1, 1)  # (i, n): every n-th selected record from the i-th
    records: tuple[int, int] | None = None  # (a, b): the a-th to b-th selected records
    max_tables: int | None = None  # only records whose query reads at most this many tables
    chunk: int = DEFAULT_CHUNK


@dataclass
class Summary:
    counts: Counter[str] = field(default_factory=Counter)
    timings: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    outcomes: list[Outcome] = field(default_factory=list)
    files: dict[str, int] = field(default_factory=dict)  # query records run per file

    def add(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        self.counts["queries"] += 1
        self.counts[f"plain-{outcome.plain}"] += 1
        key = {
            "correct": "view-correct",
            "wrong": "view-wrong",
            "error": "view-error",
            "unchecked": "view-unchecked",
        }.get(outcome.view, outcome.view)
        self.counts[key] += 1
        self.counts["refreshes"] += outcome.refreshes
        self.counts["refreshes-incremental"] += outcome.incremental
        self.counts["views-refreshed"] += outcome.refreshes > 0
        self.counts["views-with-incremental"] += outcome.incremental > 0
        self.files[outcome.file] = self.files.get(outcome.file, 0) + 1

    def to_json(self, compact: bool = False) -> dict[str, Any]:
        """The summary as JSON; ``compact``: only the outcomes worth reading, those whose
        view or plain query was not correct (the counts stay whole: merged counts are exact)."""
        outcomes = self.outcomes
        if compact:
            outcomes = [o for o in outcomes if o.view != "correct" or o.plain != "correct"]
        return {
            "counts": dict(self.counts),
            "timings": dict(self.timings),
            "files": self.files,
            "outcomes": [asdict(o) for o in outcomes],
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> Summary:
        summary = Summary(Counter(data["counts"]), defaultdict(float, data["timings"]))
        summary.files = dict(data["files"])
        summary.outcomes = [Outcome(**o) for o in data["outcomes"]]
        return summary

    def merge(self, other: Summary) -> None:
        self.counts.update(other.counts)
        self.outcomes.extend(other.outcomes)
        for name, count in other.files.items():
            self.files[name] = self.files.get(name, 0) + count
        for key, value in other.timings.items():  # shards side by side reset "wall"
            self.timings[key] += value

    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.view in ("wrong", "error")]

    def report(self) -> str:
        counts = self.counts
        lines = ["sqllogictest as materialized views"]
        lines.append(
            "files: " + ", ".join(f"{name} ({count})" for name, count in sorted(self.files.items()))
        )
        wrong = [o for o in self.outcomes if o.view == "wrong"]
        if wrong:
            lines.append(f"\nview-wrong cases ({len(wrong)}):")
            lines.extend(outcome.describe() for outcome in wrong)
        errors = [o for o in self.outcomes if o.view == "error"]
        if errors:
            kinds = Counter(error_kind(o.error) for o in errors)
            lines.append(f"\nview-error kinds ({len(errors)} views):")
            lines.extend(f"  {count:6d}  {kind}" for kind, count in kinds.most_common())
            lines.append("view-error cases (at most 3 per kind; all in --json):")
            shown: Counter[str] = Counter()
            for outcome in errors:
                kind = error_kind(outcome.error)
                shown[kind] += 1
                if shown[kind] <= 3:
                    lines.append(outcome.describe())
        lines.extend(self._histogram("refused", "refused (error class: message)", 20))
        lines.extend(self._histogram("create-error", "create-error (error class: message)", 10))
        lines.extend(self._cases("create-error", 5))
        plain_failures = [o for o in self.outcomes if o.plain in ("wrong", "error")]
        if plain_failures:
            lines.append(f"\nplain-wrong/plain-error (dialect, first 10 of {len(plain_failures)}):")
            for outcome in plain_failures[:10]:
                lines.append(f"  {outcome.file}.test:{outcome.line} {outcome.plain}")
                lines.append("    " + outcome.translated[:300])
                if outcome.plain_error:
                    lines.append("    " + outcome.plain_error)
        reasons = Counter(reason for o in self.outcomes for reason in o.reasons)
        if reasons:
            lines.append("\nFULL refresh reasons:")
            lines.extend(f"  {count:6d}  {reason}" for reason, count in reasons.most_common(15))
        lines.append("\ntimings (s): " + ", ".join(f"{k} {v:.1f}" for k, v in self.timings.items()))
        lines.append("")
        for counter in COUNTERS:
            lines.append(f"SLT {counter} {counts[counter]}")
        share = counts["refreshes-incremental"] / counts["refreshes"] if counts["refreshes"] else 0
        views = counts["views-refreshed"]
        view_share = counts["views-with-incremental"] / views if views else 0
        per_query = self.timings["wall"] / counts["queries"] if counts["queries"] else 0
        incremental = counts["refreshes-incremental"]
        full = counts["refreshes"] - incremental
        lines.append(f"SLT incremental-share {share:.3f}")
        lines.append(f"SLT views-with-incremental-share {view_share:.3f}")
        lines.append(f"SLT seconds {self.timings['wall']:.1f}")
        lines.append(f"SLT seconds-per-query {per_query:.2f}")
        for mode, number in (("full", full), ("incremental", incremental)):
            seconds = self.timings[f"refresh-{mode}"] / number if number else 0
            lines.append(f"SLT seconds-per-{mode}-refresh {seconds:.2f}")
        return "\n".join(lines)

    def _cases(self, view: str, top: int) -> list[str]:
        cases = [o for o in self.outcomes if o.view == view]
        lines = [f"  {o.file}.test:{o.line}: {' '.join(o.sql.split())[:200]}" for o in cases]
        return lines[:top] + ([f"  ... {len(cases) - top} more"] if len(cases) > top else [])

    def _histogram(self, view: str, title: str, top: int) -> list[str]:
        errors = Counter(o.error for o in self.outcomes if o.view == view)
        if not errors:
            return []
        lines = [f"\n{title}:"]
        lines.extend(f"  {count:6d}  {error}" for error, count in errors.most_common(top))
        if len(errors) > top:
            lines.append(f"  ... {len(errors) - top} more")
        return lines


def select(selection: Selection, directory: Path) -> tuple[list[Group], Counter[str]]:
    """The groups of the selected query records (each group holding only those records)."""
    groups: list[Group] = []
    counts: Counter[str] = Counter()
    for name in selection.files:
        replayed = replay(parse_script(directory / f"{name}.test"))
        counts.update(replayed.counts)
        budget = selection.limit
        for group in replayed.groups:
            if selection.max_tables is not None:
                group.queries = [
                    q for q in group.queries if _table_count(q) <= selection.max_tables
                ]
            if budget is not None:
                group.queries = group.queries[:budget]
                budget -= len(group.queries)
            groups.append(group)
    every = [(g, q) for g in groups for q in g.queries]
    if selection.sample is not None and selection.sample < len(every):
        chosen = set(random.Random(selection.seed).sample(range(len(every)), selection.sample))
        every = [pair for index, pair in enumerate(every) if index in chosen]
    if selection.records is not None:
        first, last = selection.records
        every = every[first - 1 : last]
    shard, shards = selection.shard
    every = every[shard - 1 :: shards]
    kept = {id(q) for _, q in every}
    for group in groups:
        group.queries = [q for q in group.queries if id(q) in kept]
    return [g for g in groups if g.queries], counts


def _table_count(query: Query) -> int:
    names = referenced_tables(query.sql)
    return 0 if names is None else len(names)


def run(
    spark: Any,
    selection: Selection,
    directory: Path | None = None,
    database_prefix: str = "slt",
    cleanup: bool = False,
    progress: bool = True,
) -> Summary:
    """Run the selected query records as materialized views in ``spark``."""
    started = time.monotonic()
    directory = directory or corpus_dir()
    groups, counts = select(selection, directory)
    summary = Summary()
    if selection.shard[0] == 1:  # facts of the files, not of a shard: counted once
        summary.counts.update(counts)
    previous = {key: spark.conf.get(key, None) for key in RUN_CONF}
    for key, value in RUN_CONF.items():
        spark.conf.set(key, value)
    static = f"{database_prefix}_static"
    try:
        with quiet_pyspark_error_logs():  # the runner reports errors itself
            for group in groups:
                for start, queries in chunks(group, selection.chunk):
                    database = f"{database_prefix}_{group.file}_{group.number}_{start}"
                    mark = time.monotonic()
                    outcomes = run_chunk(
                        spark,
                        group,
                        queries,
                        database,
                        static,
                        selection.seed,
                        cleanup,
                        summary.timings,
                        progress,
                    )
                    for outcome in outcomes:
                        summary.add(outcome)
                    if progress:
                        _progress(group, start, outcomes, time.monotonic() - mark)
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
        if cleanup:
            spark.sql(f"DROP DATABASE IF EXISTS {static} CASCADE")  # external: files stay
            fs.remove(spark, static_files(spark, static))
    summary.timings["wall"] = time.monotonic() - started
    return summary


def chunks(group: Group, size: int) -> list[tuple[int, list[Query]]]:
    """``group``'s queries in chunks of at most ``size``, with the index of each chunk's
    first query; in ``CHUNK_BY_TABLES`` files a chunk also reads one set of tables."""
    out: list[tuple[int, list[Query]]] = []
    previous: set[str] | None = None
    for index, query in enumerate(group.queries):
        tables = referenced_tables(query.sql) if group.file in CHUNK_BY_TABLES else None
        if not out or len(out[-1][1]) >= size or tables != previous:
            out.append((index, []))
        out[-1][1].append(query)
        previous = tables
    return out


def _progress(group: Group, start: int, outcomes: list[Outcome], seconds: float) -> None:
    kinds = Counter(o.view for o in outcomes)
    print(
        f"[sqllogictest] {group.file} group {group.number} records {start + 1}-"
        f"{start + len(outcomes)}: {dict(kinds)} in {seconds:.0f}s "
        f"({seconds / len(outcomes):.2f}s/query)",
        file=sys.stderr,
        flush=True,
    )
    for outcome in outcomes:
        if outcome.view in ("wrong", "error"):
            print(outcome.describe(), file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Command line


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", default=",".join(FILES), help="e.g. select1,select3")
    parser.add_argument("--dir", type=Path, default=None, help="the corpus directory")
    parser.add_argument("--limit", type=int, default=None, help="first N records per file")
    parser.add_argument("--sample", type=int, default=None, help="N records at random")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shard", default="1/1", help="i/n: this process's share")
    parser.add_argument("--records", default=None, help="a-b: the a-th to b-th records")
    parser.add_argument("--max-tables", type=int, default=None, help="skip bigger joins")
    parser.add_argument("--processes", type=int, default=1, help="run n shards side by side")
    parser.add_argument("--chunk", type=int, default=DEFAULT_CHUNK, help="views per database")
    parser.add_argument("--json", type=Path, default=None, help="write the summary here")
    parser.add_argument("--merge", type=Path, nargs="+", default=None, help="merge JSON files")
    parser.add_argument(
        "--record",
        type=Path,
        default=None,
        help="write a compact summary with the commit it ran on (a part of the ledger)",
    )
    parser.add_argument(
        "--ledger",
        type=Path,
        default=None,
        help="merge the recorded parts in this directory and report the coverage",
    )
    parser.add_argument("--warehouse", type=Path, default=None, help="kept after the run")
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        type=conf_pair,
        metavar="KEY=VALUE",
        help="a Spark conf of the session, over SESSION_CONF (repeatable)",
    )
    parser.add_argument("--cleanup", action="store_true", help="drop views after each chunk")
    parser.add_argument(
        "--engine-logs", action="store_true", help="show sparkmv's own error logs (tracebacks)"
    )
    return parser.parse_args(argv)


def selection_of(args: argparse.Namespace) -> Selection:
    """The query records the command line ``args`` select."""
    shard, shards = (int(part) for part in args.shard.split("/"))
    records = None
    if args.records:
        first, last = (int(part) for part in args.records.split("-"))
        records = (first, last)
    return Selection(
        files=[name.strip() for name in args.files.split(",") if name.strip()],
        limit=args.limit,
        sample=args.sample,
        seed=args.seed,
        shard=(shard, shards),
        records=records,
        chunk=args.chunk,
        max_tables=args.max_tables,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    started = provenance(argv)
    if not args.engine_logs:  # the runner reports every failure itself, once
        logging.getLogger("sparkmv").setLevel(logging.CRITICAL)
    if args.ledger is not None:
        return print_ledger(args.ledger, args.dir)
    if args.merge:
        summary = Summary()
        for path in args.merge:
            summary.merge(Summary.from_json(json.loads(path.read_text())))
    elif args.processes > 1:
        summary = _run_processes(args, argv)
    else:
        summary = _run_session(args, selection_of(args))
    if args.json is not None:
        args.json.write_text(json.dumps(summary.to_json(), indent=1))
    if args.record is not None:
        record_part(summary, args.record, started)
    print(summary.report(), flush=True)
    return 1 if summary.failures() else 0


# ---------------------------------------------------------------------------------------------
# The ledger: a full run of select1-5 takes hours, more than one sitting; it is run in parts
# (``--files f --shard i/n --record ledger/f-i-of-n.json``) and the parts are merged.


def provenance(argv: Sequence[str] | None) -> dict[str, object]:
    """What a run is a run of: the command, and the commit of the code it started with."""
    return {
        "command": " ".join(["runner.py", *(sys.argv[1:] if argv is None else argv)]),
        "commit": _git("rev-parse", "HEAD"),
        "uncommitted_python_changes": bool(_git("status", "--porcelain", "--", "python")),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def record_part(summary: Summary, path: Path, started: dict[str, object]) -> None:
    """Write ``summary`` compactly with its ``provenance`` (taken when the run started)."""
    data = summary.to_json(compact=True)
    data["provenance"] = {**started, "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")


def _git(*arguments: str) -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(REPO), *arguments], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def print_ledger(directory: Path, corpus: Path | None) -> int:
    """Merge the recorded parts in ``directory``; report them and what is not yet covered.
    Exit code 1 when a recorded view is wrong or failed."""
    summary = Summary()
    parts = sorted(directory.glob("*.json"))
    for path in parts:
        data = json.loads(path.read_text())
        summary.merge(Summary.from_json(data))
        made = data.get("provenance", {})
        print(
            f"part {path.name}: {sum(data['files'].values())} queries, "
            f"commit {str(made.get('commit', '?'))[:10]}, {made.get('finished', '?')}"
        )
    print(summary.report())
    corpus = corpus or corpus_dir()
    totals: dict[str, int] = {}
    for name in FILES:
        total = sum(len(g.queries) for g in replay(parse_script(corpus / f"{name}.test")).groups)
        covered = summary.files.get(name, 0)
        overlap = " (more than the file holds: parts overlap)" if covered > total else ""
        print(f"SLT covered {name} {covered} of {total}{overlap}")
        totals[name] = total
    overlapping = overlapping_parts(parts, totals)
    for first, second in overlapping:
        print(f"SLT overlapping parts {first} and {second}: some records are counted twice")
    return 1 if summary.failures() or overlapping else 0


def overlapping_parts(parts: Sequence[Path], totals: dict[str, int]) -> list[tuple[str, str]]:
    """Pairs of recorded parts that ran some query record twice (``totals``: the records of
    each file).

    A part ran ``--files f1,f2 [--records a-b] --shard i/n``: of its files' records in that
    order, the a-th to b-th, and of those every n-th from the i-th (``select``). So a shard can
    be split later — ``2/8`` is ``2/16`` and ``10/16`` — and the parts stay disjoint. Parts
    are recorded without ``--limit``, ``--sample`` or ``--max-tables``
    (``make sqllogictest-part``); those are not modelled.
    """
    ran: list[tuple[str, dict[str, set[int]]]] = []
    for path in parts:
        command = json.loads(path.read_text()).get("provenance", {}).get("command")
        if not command:
            continue  # nothing says what it ran
        selection = selection_of(_arguments(command.split()[1:]))
        every = [(name, index) for name in selection.files for index in range(totals.get(name, 0))]
        if selection.records is not None:
            every = every[selection.records[0] - 1 : selection.records[1]]
        shard, count = selection.shard
        records: dict[str, set[int]] = {name: set() for name in selection.files}
        for name, index in every[shard - 1 :: count]:
            records[name].add(index)
        ran.append((path.name, records))
    return [
        (first, second)
        for index, (first, mine) in enumerate(ran)
        for second, theirs in ran[index + 1 :]
        if any(mine[name] & theirs.get(name, set()) for name in mine)
    ]


def _run_session(args: argparse.Namespace, selection: Selection) -> Summary:
    import sparkmv

    warehouse = args.warehouse or Path(tempfile.mkdtemp(prefix="sparkmv-slt-"))
    started = time.monotonic()
    spark = sparkmv.session(warehouse, **{**SESSION_CONF, **dict(args.conf)})
    try:
        session_seconds = time.monotonic() - started
        summary = run(spark, selection, args.dir, cleanup=args.cleanup)
        summary.timings["session"] = session_seconds
        return summary
    finally:
        spark.stop()
        if args.warehouse is None:
            shutil.rmtree(warehouse, ignore_errors=True)


def _run_processes(args: argparse.Namespace, argv: Sequence[str] | None) -> Summary:
    """Run ``--processes n`` copies of this script, each with ``--shard i/n``; merge them."""
    started = time.monotonic()
    passed = list(sys.argv[1:] if argv is None else argv)
    passed = _without(passed, ("--processes", "--json", "--shard", "--warehouse"))
    with tempfile.TemporaryDirectory(prefix="sparkmv-slt-") as scratch:
        children = []
        for shard in range(1, args.processes + 1):
            output = Path(scratch) / f"{shard}.json"
            command = [sys.executable, __file__, *passed]
            command += ["--shard", f"{shard}/{args.processes}", "--json", str(output)]
            children.append((output, subprocess.Popen(command, stdout=subprocess.DEVNULL)))
        summary = Summary()
        for output, child in children:
            child.wait()
            if not output.exists():
                raise SystemExit(f"a shard failed (exit code {child.returncode})")
            summary.merge(Summary.from_json(json.loads(output.read_text())))
    summary.timings["wall"] = time.monotonic() - started
    return summary


def _without(argv: list[str], options: tuple[str, ...]) -> list[str]:
    """``argv`` without the given options (``--x v`` and ``--x=v`` forms)."""
    out: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
            continue
        if word in options:
            skip = True
            continue
        if word.split("=")[0] in options:
            continue
        out.append(word)
    return out


if __name__ == "__main__":
    sys.exit(main())
