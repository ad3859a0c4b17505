"""Every error sparkmv raises: one error class per failure, each defined once here.

An error class has a SQLSTATE and a message template. ``SparkMvError`` carries one to the
bridge, which turns it into a Spark-style ``AnalysisException`` on the JVM side (class
``io.sparkmv.bridge.SparkMvException``), so users see ``[CLASS] message SQLSTATE: xxxxx``.

The JVM gets these classes too: the shim's jar carries them as a JSON file in Spark's format
(``error_conditions_json``, written by ``sparkmv.jar``), which the shim adds to Spark's
error-class registry, so that Spark's own lookups by class (PySpark's ``getMessage()``, the
JSON error formats) render them as they render Spark's (docs/sql-reference.md#errors). Three
classes are Spark's own (``SPARK_DEFINED``): sparkmv raises them with Spark's parameters, and
Spark's registry keeps Spark's message for them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import Enum


@dataclass(frozen=True)
class ErrorSpec:
    sql_state: str
    template: str


class ErrorClass(Enum):
    """Error classes; the value holds the SQLSTATE and the message template."""

    RECURSION_LEVEL_LIMIT_EXCEEDED = ErrorSpec(
        "42836",
        "Recursion level limit {levelLimit} reached but query has not exhausted, try increasing it "
        "like 'WITH RECURSIVE t(col) MAX RECURSION LEVEL 200' (the view's query fails so over "
        "the base tables as they are now; the view keeps its rows).",
    )
    RECURSION_ROW_LIMIT_EXCEEDED = ErrorSpec(
        "42836",
        "Recursion row limit {rowLimit} reached but query has not exhausted (the view's query "
        "fails so over the base tables as they are now; the view keeps its rows).",
    )
    MATERIALIZED_VIEW_ALREADY_EXISTS = ErrorSpec(
        "42P07",
        "Cannot create materialized view {name}: a table or view with that name already exists. "
        "Use CREATE OR REPLACE MATERIALIZED VIEW, IF NOT EXISTS, or another name.",
    )
    MATERIALIZED_VIEW_NOT_FOUND = ErrorSpec(
        "42P01",
        "The materialized view {name} cannot be found. Check the spelling and the database "
        "(SHOW MATERIALIZED VIEWS lists them), or use IF EXISTS.",
    )
    NOT_A_MATERIALIZED_VIEW = ErrorSpec(
        "42809",
        "{name} is a {kind}, not a materialized view; {hint}",
    )
    MATERIALIZED_VIEW_WRONG_COMMAND = ErrorSpec(
        "42809",
        "{name} is a materialized view: {command} would leave its stored rows and its base "
        "tables' change logs behind. {instead}",
    )
    MATERIALIZED_VIEW_PARSE_ERROR = ErrorSpec(
        "42601",
        "Syntax error in materialized view statement at position {position} ({near}): {detail}. "
        "Expected: {expected}",
    )
    MATERIALIZED_VIEW_UNKNOWN_OPTION = ErrorSpec(
        "42601",
        "Unknown materialized view option {option}. Valid options: {valid}.{hint}",
    )
    MATERIALIZED_VIEW_DUPLICATE_CLAUSE = ErrorSpec(
        "42601",
        "The {clause} clause appears more than once in this statement; give it once.",
    )
    MATERIALIZED_VIEW_MULTIPLE_STATEMENTS = ErrorSpec(
        "42601",
        "The query of a materialized view must be a single SELECT statement, but {count} "
        "statements were given. Run the other statements separately.",
    )
    MATERIALIZED_VIEW_QUERY_NOT_SELECT = ErrorSpec(
        "42601",
        "The query of a materialized view must be a SELECT (or WITH ... SELECT, or VALUES) "
        "query, not {found}.",
    )
    MATERIALIZED_VIEW_INVALID_IDENTIFIER = ErrorSpec(
        "42602",
        "{identifier} is not a valid {what}: {detail}. {hint}",
    )
    MATERIALIZED_VIEW_DUPLICATE_COLUMN = ErrorSpec(
        "42711",
        "The materialized view would have two columns named {column}. Give the query's "
        "columns distinct aliases or list distinct names after the view name.",
    )
    MATERIALIZED_VIEW_COLUMN_COUNT_MISMATCH = ErrorSpec(
        "21S01",
        "The column list names {listed} columns but the query returns {returned}.",
    )
    MATERIALIZED_VIEW_RESERVED_PROPERTY = ErrorSpec(
        "42000",
        "Table property {key} is reserved for sparkmv's own metadata; choose a key that does "
        "not start with '{prefix}'.",
    )
    MATERIALIZED_VIEW_NOT_INCREMENTAL = ErrorSpec(
        "0A000",
        "Materialized view {name} cannot be maintained incrementally: {reason}. "
        "Refresh it with REFRESH MATERIALIZED VIEW {name} [FULL], and use the refresh policy "
        "AUTO (the default) or FULL for it.",
    )
    MATERIALIZED_VIEW_AVERAGE_OUT_OF_RANGE = ErrorSpec(
        "22003",
        "A materialized view keeps the sum behind each AVG of decimals, and a group's sum has "
        "more than {digits} integral digits: Spark's average cannot be derived from it exactly. "
        "Nothing was committed; give the view the FULL refresh policy (ALTER MATERIALIZED VIEW "
        "... SET REFRESH FULL), which runs its query instead.",
    )
    MATERIALIZED_VIEW_UNSUPPORTED_FEATURE = ErrorSpec(
        "0A000",
        "{feature} is not supported yet. {hint}",
    )
    MATERIALIZED_VIEW_HAS_DEPENDENTS = ErrorSpec(
        "2BP01",
        "Cannot drop materialized view {name}: the materialized views {dependents} read it. "
        "Drop them first, or use DROP MATERIALIZED VIEW {name} CASCADE to drop them too.",
    )
    MATERIALIZED_VIEW_CYCLE = ErrorSpec(
        "42P17",
        "The new definition of materialized view {name} reads {path}: a view cannot read "
        "itself, directly or through other materialized views. Read the base tables instead.",
    )
    MATERIALIZED_VIEW_ON_COMMIT_NOT_CAPTURED = ErrorSpec(
        "0A000",
        "Materialized view {view} cannot be refreshed ON COMMIT: the writes to its base table "
        "{table} are not captured ({reason}). Use ON DEMAND (the default) and run REFRESH "
        "MATERIALIZED VIEW {view} after writing to {table}.",
    )
    MATERIALIZED_VIEW_ON_COMMIT_REFRESH_FAILED = ErrorSpec(
        "55000",
        "The write to {table} is committed, but the ON COMMIT refresh of materialized view "
        "{view} failed: {detail}. The view shows its contents as of its last refresh until "
        "REFRESH MATERIALIZED VIEW {view} succeeds.",
    )
    MATERIALIZED_VIEW_CONCURRENT_COMMIT = ErrorSpec(
        "40001",
        "Another statement committed a change to the materialized view {name} after this "
        "statement read it (its catalog entry moved from commit {expected} to {found}); "
        "nothing of this statement was committed. Run it again: it will read the view as the "
        "other statement left it.",
    )
    FILE_SYSTEM_CANNOT_COMMIT = ErrorSpec(
        "0A000",
        "sparkmv cannot commit {path}: its file system offers no atomic create-if-absent (its "
        "files are visible while written, and its rename replaces an existing file), so two "
        "writers of one change-log version could both commit and one write would be lost. "
        "Nothing was written. Keep the warehouse on local disk, HDFS or an object store with "
        "conditional puts (docs/cluster.md).",
    )
    ROW_LEVEL_WRITE_NOT_SUPPORTED = ErrorSpec(
        "0A000",
        "{statement} on {table} cannot run: {reason}.",
    )
    MERGE_CARDINALITY_VIOLATION = ErrorSpec(
        "23K01",
        "The MERGE into {table} matched a target row with more than one source row, so it "
        "is not clear which one should change it; nothing was changed. Make the ON condition "
        "match at most one source row per target row, e.g. by deduplicating the source.",
    )
    SERVER_START_FAILED = ErrorSpec(
        "58030",
        "The {server} server cannot start on {address}: {detail}. Stop what uses the port or "
        "choose another one ({option}; 0 turns this server off), and listen on an address of "
        "this machine (--host).",
    )
    SERVER_CREDENTIALS_UNUSABLE = ErrorSpec(
        "22023",
        "The {what} cannot be used: {detail}. {hint}",
    )
    SERVER_NEEDS_APPLICATION_CONF = ErrorSpec(
        "55000",
        "Serving clients needs {key}={value} in the application's configuration, set when it "
        "starts (it is {actual}): {reason}. Build the session with "
        "sparkmv.session(..., **sparkmv.config.SERVER_APPLICATION_CONF) or pass --conf "
        "{key}={value} to spark-submit.",
    )
    SERVER_NEEDS_DRIVER_CLASS_PATH = ErrorSpec(
        "55000",
        "The JDBC (Thrift) server needs the sparkmv jar on the driver's class path: a JDBC "
        "session that ends closes the class loader of spark.jars (--jars), and sparkmv's "
        "classes with it. Build the session with sparkmv.session(), or start the application "
        "with --driver-class-path {jar} (spark.driver.extraClassPath).",
    )
    SERVER_SHUTTING_DOWN = ErrorSpec(
        "57P01",
        "The sparkmv server is shutting down: it starts no more materialized view statements, "
        "DELETE, UPDATE or MERGE, or writes to tracked tables. Run the statement again once the "
        "server has restarted.",
    )
    SPARK_DRIVER_EXITED = ErrorSpec(
        "58000",
        "The Spark driver's JVM exited (exit code {code}) while the servers ran; their clients "
        "were disconnected. Its log above says why.",
    )
    MATERIALIZED_VIEW_HANDLER_NOT_ATTACHED = ErrorSpec(
        "55000",
        "Materialized view statements need the sparkmv Python handler, and none is attached to "
        "this Spark application. In Python call `sparkmv.attach(spark)` after building the "
        "session (or build it with `sparkmv.session()`).",
    )
    MATERIALIZED_VIEW_INVALID_LIMIT = ErrorSpec(
        "42K0E",
        "The LIMIT of SHOW MATERIALIZED VIEW REFRESHES must be a non-negative integer "
        "literal, not {found}.",
    )
    MATERIALIZED_VIEW_HISTORY_ARGUMENTS = ErrorSpec(
        "42605",
        "sparkmv_refresh_history takes no argument (every view's refreshes) or one, the name "
        "of a materialized view as a string literal, e.g. sparkmv_refresh_history('db.v'); "
        "got {found}.",
    )
    MATERIALIZED_VIEW_INVALID_INTERVAL = ErrorSpec(
        "22006",
        "{interval} is not a valid interval for SCHEDULE EVERY or TARGET LAG. Give a positive "
        "interval string such as '30 seconds', '5 minutes', '1 hour' or '1 hour 30 minutes' "
        "(units: second, minute, hour, day, week).",
    )
    MATERIALIZED_VIEW_TARGET_LAG_TOO_SMALL = ErrorSpec(
        "22023",
        "The {clause} of {name} is {interval}, below the minimum of {minimum} "
        "({conf}). Give a longer interval, or lower the minimum.",
    )
    MATERIALIZED_VIEW_CONFLICTING_SCHEDULE = ErrorSpec(
        "42601",
        "A materialized view has one schedule: give SCHEDULE EVERY or TARGET LAG, not both.",
    )
    MATERIALIZED_VIEW_INTERNAL_ERROR = ErrorSpec(
        "XX000",
        "sparkmv failed unexpectedly while running {statement}: {detail}. "
        "Nothing was changed if the failure happened before the commit; please report this.",
    )

    @property
    def sql_state(self) -> str:
        return self.value.sql_state


class SparkMvError(Exception):
    """A user-facing error of a given class; ``params`` fill the message template."""

    def __init__(self, error_class: ErrorClass, **params: object) -> None:
        self.error_class = error_class
        self.params = {key: str(value) for key, value in params.items()}
        super().__init__(error_class.value.template.format(**self.params))

    @property
    def message(self) -> str:
        return str(self.args[0])

    @property
    def sql_state(self) -> str:
        return self.error_class.sql_state

    def __str__(self) -> str:
        return f"[{self.error_class.name}] {self.message} SQLSTATE: {self.sql_state}"


SPARK_DEFINED = frozenset(
    {
        ErrorClass.RECURSION_LEVEL_LIMIT_EXCEEDED,
        ErrorClass.RECURSION_ROW_LIMIT_EXCEEDED,
        ErrorClass.MERGE_CARDINALITY_VIOLATION,
    }
)
"""Classes Spark's own registry defines: sparkmv raises them with the parameters Spark's
message names (``levelLimit``, ``rowLimit``), in its own wording; Spark's registry keeps
Spark's wording for them, so PySpark's ``getMessage()`` of one is Spark's message."""

_PARAMETER = re.compile(r"\{(\w+)\}")


def spark_template(template: str) -> str:
    """A template of this module in Spark's notation: ``{name}`` becomes ``<name>``."""
    return _PARAMETER.sub(r"<\1>", template)


def error_conditions_json() -> str:
    """sparkmv's error classes in the format of Spark's ``error/error-conditions.json``
    (``{"CLASS": {"message": [template], "sqlState": "xxxxx"}}``), without ``SPARK_DEFINED``:
    the shim's jar carries it, and the shim adds it to Spark's registry."""
    conditions = {
        error.name: {"message": [spark_template(error.value.template)], "sqlState": error.sql_state}
        for error in ErrorClass
        if error not in SPARK_DEFINED
    }
    return json.dumps(conditions, indent=2, sort_keys=True) + "\n"
