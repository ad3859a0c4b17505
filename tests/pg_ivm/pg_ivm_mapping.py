"""How each statement of pg_ivm's regression scripts maps to sparkmv: the reviewable table.

``STATEMENT_RULES`` is tried in order on every statement (first match wins): a rule either
names what the statement becomes (a kind the runner executes) or marks it unmapped with the
reason. ``OVERRIDES`` replaces single statements (by file and line) where the generic rule
would be wrong; each says why. ``SECTION_RULES`` marks whole sections unmapped (where a
statement maps but the section tests something sparkmv has no counterpart of) and names the
sections that set up state later sections read (they always run, also in the sample).

A section is *mapped* when every one of its statements maps (a SKIP, a read of something
sparkmv has no counterpart of, maps to nothing and is counted by reason); otherwise it is
unmapped, with the reason of its first unmapped statement (or of its section rule).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    """What the runner does with a statement."""

    SQL = "sql"  # run its sqlglot translation (postgres → spark); a SELECT's rows are compared
    WRITE = "write"  # run its translation, then check every ON COMMIT view
    CREATE_TABLE = "create_table"  # translation without constraints, USING parquet
    CREATE_IMMV = "create_immv"  # CREATE MATERIALIZED VIEW ... REFRESH INCREMENTAL ON COMMIT
    REFRESH_IMMV = "refresh_immv"  # REFRESH MATERIALIZED VIEW name
    PLAIN_MATVIEW = "plain_matview"  # PostgreSQL's own materialized view: sparkmv ON DEMAND
    IS_MATCH = "is_match"  # the view mv against the plain view v, as multisets
    DROP = "drop"  # DROP TABLE of a table, an IMMV (a materialized view) or DROP VIEW
    BEGIN = "begin"  # transactions, emulated by snapshots (Spark has none): see runner
    COMMIT = "commit"
    ROLLBACK = "rollback"
    SAVEPOINT = "savepoint"
    RELEASE = "release"
    ROLLBACK_TO = "rollback_to"
    NOOP = "noop"  # nothing to do in sparkmv (the reason says why)
    SKIP = "skip"  # a read whose result has no sparkmv counterpart: not compared (reason)
    UNMAPPED = "unmapped"  # no sparkmv counterpart (the reason says why)


@dataclass(frozen=True)
class Rule:
    """Statements matching ``pattern`` (case-insensitive, at the start) become ``kind``."""

    pattern: str
    kind: Kind
    reason: str = ""

    def matches(self, text: str) -> bool:
        return re.match(self.pattern, text, re.IGNORECASE | re.DOTALL) is not None


# Reasons a statement has no sparkmv counterpart (the report groups sections by these).
UNPOPULATED = (
    "refresh_immv(name, false): an unpopulated IMMV (empty, maintenance off) has no sparkmv "
    "counterpart (ALTER ... SET REFRESH ON DEMAND stops maintenance but keeps the rows)"
)
PG_IVM_CATALOG = (
    "pg_ivm's catalog (pgivm.pg_ivm_immv, get_immv_def, regclass): sparkmv's is SHOW / "
    "DESCRIBE MATERIALIZED VIEW, with other columns and text"
)
WRITABLE_CTE = (
    "data-modifying CTE (WITH x AS (INSERT/UPDATE/DELETE ... RETURNING)): several writes in "
    "one statement, all reading its snapshot; Spark has no such statement"
)
ALTER_COLUMNS = "ALTER TABLE DROP/RENAME COLUMN: Spark refuses them on parquet tables"
PG_OBJECTS = (
    "user-defined types, operators, operator classes and functions (CREATE TYPE/OPERATOR/"
    "FUNCTION): PostgreSQL catalog objects"
)
TRIGGERS = "triggers (CREATE TRIGGER, plpgsql): Spark has none"
ROLES_RLS = (
    "roles, privileges and row-level security (CREATE USER, SET SESSION AUTHORIZATION, "
    "CREATE POLICY, GRANT): Spark's session catalog has none"
)
SCHEMAS = "schemas on a search_path (CREATE SCHEMA, SET search_path): Spark has no search_path"
FOREIGN_KEYS = (
    "foreign keys with ON UPDATE/DELETE CASCADE: Spark tables have no constraints, so the "
    "cascaded writes would not happen"
)
INHERITANCE = "table inheritance (INHERITS): Spark has none"
PG_TYPES = "PostgreSQL-only column types (json without a btree operator class)"
SYSTEM_COLUMNS = "system columns (xmin): Spark tables have none"

STATEMENT_RULES: tuple[Rule, ...] = (
    Rule(r"\\set\b", Kind.NOOP, "psql variable: is_match's target list (all of mv's columns)"),
    Rule(r"BEGIN;", Kind.BEGIN),
    Rule(r"COMMIT;", Kind.COMMIT),
    Rule(r"ROLLBACK;", Kind.ROLLBACK),
    Rule(r"SAVEPOINT \w+;", Kind.SAVEPOINT),
    Rule(r"RELEASE SAVEPOINT \w+;", Kind.RELEASE),
    Rule(r"ROLLBACK TO \w+;", Kind.ROLLBACK_TO),
    Rule(r"CREATE EXTENSION pg_ivm;", Kind.NOOP, "sparkmv is attached to the session"),
    Rule(r"GRANT ALL ON SCHEMA public TO public;", Kind.NOOP, "Spark has no privileges"),
    Rule(
        r"CREATE FUNCTION is_match\(",
        Kind.NOOP,
        "is_match (mv EXCEPT ALL v, both ways) is the runner's IS_MATCH check",
    ),
    Rule(r"SELECT is_match\(", Kind.IS_MATCH),
    Rule(r"SELECT pgivm\.create_immv\(", Kind.CREATE_IMMV),
    Rule(r"SELECT pgivm\.refresh_immv\('[^']*', false\)", Kind.UNMAPPED, UNPOPULATED),
    Rule(r"SELECT pgivm\.refresh_immv\(", Kind.REFRESH_IMMV),
    Rule(r".*(pgivm\.pg_ivm_immv|get_immv_def|::regclass)", Kind.SKIP, PG_IVM_CATALOG),
    Rule(r"WITH\s.*\b(INSERT|UPDATE|DELETE)\b", Kind.UNMAPPED, WRITABLE_CTE),
    Rule(r"ALTER TABLE \S+ (DROP COLUMN|RENAME)", Kind.UNMAPPED, ALTER_COLUMNS),
    Rule(r"CREATE (TYPE|OPERATOR|FUNCTION)\b", Kind.UNMAPPED, PG_OBJECTS),
    Rule(r"CREATE TRIGGER\b", Kind.UNMAPPED, TRIGGERS),
    Rule(
        r"((CREATE|DROP) USER|(SET|RESET) SESSION AUTHORIZATION|CREATE POLICY|GRANT)\b"
        r"|ALTER TABLE \S+ ENABLE ROW LEVEL SECURITY",
        Kind.UNMAPPED,
        ROLES_RLS,
    ),
    Rule(r"(CREATE SCHEMA|SET search_path)\b", Kind.UNMAPPED, SCHEMAS),
    Rule(r"CREATE TABLE .*\bREFERENCES\b", Kind.UNMAPPED, FOREIGN_KEYS),
    Rule(r"CREATE TABLE .*\bINHERITS\b", Kind.UNMAPPED, INHERITANCE),
    Rule(r"CREATE TABLE \w+ \(\w+ json\)", Kind.UNMAPPED, PG_TYPES),
    Rule(r"CREATE TABLE\b", Kind.CREATE_TABLE),
    Rule(r"CREATE MATERIALIZED VIEW\b", Kind.PLAIN_MATVIEW),
    Rule(r"CREATE VIEW\b", Kind.SQL),
    Rule(r"DROP (TABLE|VIEW)\b", Kind.DROP),
    Rule(r"(INSERT|UPDATE|DELETE|TRUNCATE)\b", Kind.WRITE),
    Rule(r"SELECT\b", Kind.SQL),
)


@dataclass(frozen=True)
class Override:
    """A statement replaced by ``sql`` (Spark SQL, run in order; none: a no-op)."""

    sql: tuple[str, ...]
    kind: Kind
    reason: str
    compare: bool = True  # compare the last statement's rows with the expected output


DROPPED_COLUMNS = (
    "pg_ivm creates the base tables with columns x and y and drops them right away (to test "
    "base tables with dropped columns); Spark refuses DROP COLUMN on parquet tables, so the "
    "table is created without them"
)
SEQUENTIAL = (
    "a data-modifying CTE: several writes in one statement, each reading the statement's "
    "snapshot (pg_ivm maintains the IMMV once for all of them); Spark has no such statement, "
    "so they run as successive writes, the DELETEs and UPDATEs first (they must not see the "
    "CTE's inserted rows), which ends in the same tables (where an UPDATE and a DELETE hit "
    "the same row, PostgreSQL's expected output shows the DELETE winning)"
)


def sequential(*writes: str) -> Override:
    """A data-modifying CTE as its writes one after another (see SEQUENTIAL)."""
    return Override(writes, Kind.WRITE, SEQUENTIAL, compare=False)


JOIN_CHANGES = sequential(
    "DELETE FROM mv_base_b WHERE i = 4",
    "INSERT INTO mv_base_a VALUES (1, 11), (2, 22)",
    "INSERT INTO mv_base_b VALUES (1, 111), (3, 133)",
)
SELF_JOIN_CHANGES = sequential(
    "DELETE FROM base_t WHERE i IN (4, 5)",
    "UPDATE base_t SET v = v + 100",
    "INSERT INTO base_t VALUES (5, 50), (6, 60)",
)
OVERRIDES: dict[tuple[str, int], Override] = {
    ("pg_ivm", 216): SELF_JOIN_CHANGES,
    ("pg_ivm", 241): sequential(
        "UPDATE base_r SET v = v + 1000 WHERE i = 2",
        "DELETE FROM base_s WHERE i = 3",
        "INSERT INTO base_r VALUES (1, 11), (3, 33)",
        "INSERT INTO base_s VALUES (2, 222)",
    ),
    **{("pg_ivm", line): JOIN_CHANGES for line in (322, 333, 385, 396)},
    ("pg_ivm", 415): SELF_JOIN_CHANGES,
    ("outer_join", 1331): sequential(
        "INSERT INTO base_r VALUES (1), (2), (3)", "INSERT INTO base_s VALUES (1, 3)"
    ),
    ("outer_join", 1339): sequential(
        "DELETE FROM base_r WHERE i = 1", "DELETE FROM base_s WHERE i = 2"
    ),
    ("outer_join", 1360): sequential(
        "DELETE FROM base_r WHERE i IN (3, 4)", "INSERT INTO base_r VALUES (1), (2), (3), (4), (5)"
    ),
    **{
        ("outer_join", line): Override(
            (),
            Kind.NOOP,
            "ROLLBACK TO p1 just before undoes this section's CREATE of mv and v and brings back "
            "the previous section's mv and v, which that section dropped after its SAVEPOINT "
            "p1; PostgreSQL then drops those. The runner's ROLLBACK TO does not bring dropped "
            "objects back, so there is nothing to drop",
        )
        for line in (1317, 1318)
    },
    ("pg_ivm", 5): Override(
        ("CREATE TABLE mv_base_a (i INT, j INT) USING parquet",), Kind.SQL, DROPPED_COLUMNS
    ),
    ("pg_ivm", 6): Override(
        ("CREATE TABLE mv_base_b (i INT, k INT) USING parquet",), Kind.SQL, DROPPED_COLUMNS
    ),
    **{("pg_ivm", line): Override((), Kind.NOOP, DROPPED_COLUMNS) for line in (9, 10, 11, 12)},
    ("refresh_immv", 15): Override(
        ("ALTER MATERIALIZED VIEW mv SET REFRESH ON DEMAND",),
        Kind.SQL,
        "refresh_immv(mv, false) empties the IMMV and stops its maintenance; sparkmv's closest "
        "counterpart stops the maintenance and keeps the rows (refresh_immv(mv, true) later "
        "refreshes it and turns ON COMMIT back on, as pg_ivm does)",
        compare=False,
    ),
    ("create_immv", 22): Override(
        (),
        Kind.SKIP,
        "DROP TABLE t while views read it: PostgreSQL refuses (no CASCADE); sparkmv lets a base "
        "table be dropped (its views then fail to refresh), so it is not run",
    ),
    ("pg_ivm", 552): Override(
        (),
        Kind.SKIP,
        "TABLESAMPLE SYSTEM(50) samples afresh on every run, so a view of it cannot equal its "
        "query run again (pg_ivm refuses it; sparkmv refuses INCREMENTAL and would refresh it "
        "FULL)",
    ),
    **{
        ("refresh_immv", line): Override(
            (), Kind.SKIP, "reads the unpopulated (empty) IMMV; sparkmv's view keeps its rows"
        )
        for line in (17, 21)
    },
}


@dataclass(frozen=True)
class SectionRule:
    """A whole section unmapped (``reason``); always run (``setup``: later ones read its
    state, so a sample keeps it); or expected to fail (``xfail``: a sparkmv bug, with its
    repro; strict: the run fails when the section passes)."""

    reason: str = ""
    setup: bool = False
    xfail: str = ""


SETUP = SectionRule(setup=True)
SECTION_RULES: dict[str, SectionRule] = {
    "create_immv: (preamble)": SETUP,
    "create_immv: SQL other than SELECT": SETUP,  # drops what the preamble created
    "refresh_immv: (preamble)": SETUP,
    # A chain: the view is written to, made unpopulated, written to, refreshed, written to.
    "refresh_immv: Refresh IMMV with data": SETUP,
    "refresh_immv: Make IMMV unpopulated": SETUP,
    "refresh_immv: Immediate maintenance is disabled. IMMV can be scannable and is empty.": SETUP,
    "refresh_immv: Refresh the IMMV and make it populated.": SETUP,
    "refresh_immv: Immediate maintenance is enabled.": SETUP,
    "pg_ivm: (preamble)": SETUP,
    "pg_ivm: create a table to use as a basis for views and materialized views in various "
    "combinations": SETUP,
    "pg_ivm: test for base tables with dropped columns": SETUP,
    "pg_ivm: contain view or materialized view": SETUP,  # creates b_view, b_mview
    "pg_ivm: get_immv_def function": SETUP,
    "pg_ivm: mv_base_b is not immv": SETUP,  # drops the base tables
    "outer_join: (preamble)": SETUP,
    "outer_join: support outer joins": SETUP,  # the base tables, in the file's transaction
    "outer_join: multiple change of the same table on outer join": SETUP,  # its ROLLBACK
    "outer_join: outer join view's targetlist must contain vars in the join conditions": SETUP,
    "pg_ivm: contain system column": SectionRule(SYSTEM_COLUMNS),
    "pg_ivm: type that doesn't have default operator class for access method btree": (
        SectionRule(PG_TYPES)
    ),
}


def statement_rule(file: str, line: int, text: str) -> Rule | Override:
    """The override for the statement at ``file``:``line``, else the first matching rule."""
    if (file, line) in OVERRIDES:
        return OVERRIDES[(file, line)]
    for rule in STATEMENT_RULES:
        if rule.matches(text):
            return rule
    return Rule("", Kind.UNMAPPED, "no rule matches this statement")
