"""The py4j bridge: the Python object the shim calls (``io.sparkmv.bridge.MvHandler``).

Errors never cross as Python tracebacks: a ``SparkMvError`` becomes a JVM
``SparkMvException`` (error class + SQLSTATE), a failing nested Spark call hands back its
original Java exception (so it keeps its own error class), and anything unexpected becomes
MATERIALIZED_VIEW_INTERNAL_ERROR with the traceback in the log.

A statement, and a DELETE, UPDATE or MERGE, runs in the session that runs it (``session``): a
JDBC connection or a Spark Connect client of ``sparkmv server`` has a session of its own, with
its own current database and SQL conf. ``running`` counts the calls in progress, so that a
server can let them finish before it stops the JVM.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from py4j.protocol import Py4JError, Py4JJavaError
from pyspark.errors import utils as pyspark_errors_utils
from pyspark.errors.exceptions.captured import CapturedException
from pyspark.logger import PySparkLogger
from pyspark.sql import SparkSession

from sparkmv import commands
from sparkmv.capture.row_level import cleared_keys_of, run_row_level_write
from sparkmv.capture.writes import WriteCapture
from sparkmv.commands import view_entry_guard
from sparkmv.commands.context import CommandContext
from sparkmv.commands.on_commit import refresh_immediate_views
from sparkmv.config import EXCEPTION_CLASS, PY4J_SOCKETS_CLASS, statement_confs
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.identifiers import TableName
from sparkmv.jvm import helper

log = logging.getLogger(__name__)


class Handler:
    """Implements the Scala trait ``io.sparkmv.bridge.MvHandler`` for one SparkSession."""

    class Java:
        implements = ["io.sparkmv.bridge.MvHandler"]  # noqa: RUF012 (py4j protocol)

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self.context = CommandContext.of(spark)
        self.writes = WriteCapture(spark, self.context.tracking)

    def resultSchema(self, kind: str, sql_text: str) -> Any:  # noqa: N802 (Java name)
        return commands.RESULT_SCHEMAS.get(kind, "")

    def execute(self, kind: str, sql_text: str, session: Any) -> Any:
        try:
            context = self.context_of(session)
            with running.call(), nested_call(self.spark), statement_confs(context.spark):
                rows = commands.execute(context, sql_text)
        except BaseException as error:
            return self.to_java_error(error, sql_text)
        return json.dumps([list(row) for row in rows])

    def context_of(self, session: Any) -> CommandContext:
        """The context of the JVM ``session`` that runs a statement: names resolve in its
        current database and queries run with its conf, as ``spark.sql`` in that session
        would run them (one py4j round trip when it is the attached session)."""
        if session is None or session.equals(self.spark._jsparkSession):
            return self.context
        return CommandContext.of(SparkSession(self.spark.sparkContext, session))

    def captureWrite(  # noqa: N802 (Java name)
        self, phase: str, database: str, table: str, detail: str
    ) -> Any:
        name = TableName(table, database)
        try:
            with running.call(), nested_call(self.spark), statement_confs(self.spark):
                if phase == "BEFORE":
                    return self.writes.before(name, detail)
                if phase == "AFTER":
                    immediate = self.writes.after(name, detail)
                    refresh_immediate_views(self.context, name, immediate)
                else:
                    self.writes.abort(detail)
                return ""
        except BaseException as error:
            return self.to_java_error(error, f"capture of a write to {name}")

    def rowLevelWrite(  # noqa: N802 (Java name)
        self,
        kind: str,
        database: str,
        table: str,
        changes: Any,
        unsupported: str,
        assigned: Any,
        cleared_keys: str,
        session: Any,
    ) -> Any:
        name = TableName(table, database)
        try:
            context = self.context_of(session)
            with running.call(), nested_call(self.spark), statement_confs(context.spark):
                result = run_row_level_write(
                    context.tracking,
                    kind,
                    name,
                    changes,
                    unsupported,
                    tuple(assigned),
                    cleared_keys_of(context.spark, cleared_keys),
                )
                refresh_immediate_views(context, name, result.immediate)
        except BaseException as error:
            return self.to_java_error(error, f"{kind} on {name}")
        return json.dumps([list(result.row)])

    def viewCommandRefused(  # noqa: N802 (Java name)
        self, command: str, database: str, view: str
    ) -> Any:
        return java_exception(
            self.spark, view_entry_guard.refusal(command, TableName(view, database))
        )

    def to_java_error(self, error: BaseException, sql_text: str) -> Any:
        if isinstance(error, CapturedException) and error._origin is not None:
            return error._origin
        if isinstance(error, Py4JJavaError):
            return error.java_exception
        if not isinstance(error, SparkMvError):
            log.exception("sparkmv failed on: %s", sql_text)
            error = SparkMvError(
                ErrorClass.MATERIALIZED_VIEW_INTERNAL_ERROR,
                statement=_first_line(sql_text),
                detail=f"{type(error).__name__}: {error}",
            )
        return java_exception(self.spark, error)


class RunningCalls:
    """The handler calls (statements, captured writes) running in this process, in all
    threads, and whether new ones are accepted (a stopping server refuses them)."""

    def __init__(self) -> None:
        self._count = 0
        self._accepting = True
        self._lock = threading.Lock()
        self._depth = threading.local()  # calls the current thread is inside of

    @contextmanager
    def call(self) -> Iterator[None]:
        """Counts one call for the duration of the block. While new calls are refused, a
        call fails with SERVER_SHUTTING_DOWN unless it is nested in one that runs (the
        handler called back from the Spark work of a running statement)."""
        nested = getattr(self._depth, "value", 0)
        with self._lock:
            if not self._accepting and not nested:
                raise SparkMvError(ErrorClass.SERVER_SHUTTING_DOWN)
            self._count += 1
        self._depth.value = nested + 1
        try:
            yield
        finally:
            self._depth.value = nested
            with self._lock:
                self._count -= 1

    @property
    def count(self) -> int:
        return self._count

    def refuse_new(self, refuse: bool) -> None:
        """Refuse new calls (True) or accept them again (False)."""
        with self._lock:
            self._accepting = not refuse

    def wait_until_idle(self, timeout: float, cut_short: Callable[[], bool]) -> bool:
        """Wait until no call runs, at most ``timeout`` seconds and while ``cut_short()`` is
        false; True if none runs any more. Polls without holding a lock: the waiting thread
        is the one Python runs signal handlers in, and those set what ``cut_short`` reads."""
        deadline = time.monotonic() + timeout
        while self._count and time.monotonic() < deadline and not cut_short():
            time.sleep(_IDLE_POLL_SECONDS)
        return self._count == 0


_IDLE_POLL_SECONDS = 0.1

running = RunningCalls()
"""The handler calls in progress in this process (py4j calls the handlers on threads of its
own; one handler per attached session)."""


@contextmanager
def nested_call(spark: SparkSession) -> Iterator[None]:
    """How sparkmv runs inside a user's Spark call (the shim calls it back over py4j)."""
    without_nagle(spark)
    with quiet_pyspark_error_logs(), without_call_sites():
        yield


_connection_set_up = threading.local()


def without_nagle(spark: SparkSession) -> None:
    """Turn Nagle's algorithm off on the JVM's end of the py4j connection this callback
    arrived on, once per connection (py4j serves each on a Python thread of its own): one
    round trip the first time. Otherwise every JVM answer of 8-64 KiB to the calls sparkmv
    makes over it would wait about 40 ms for a delayed acknowledgement (``Py4jSockets``).
    Only an optimization: a failure is logged, and the call goes on."""
    if getattr(_connection_set_up, "done", False):
        return
    _connection_set_up.done = True
    gateway: Any = spark.sparkContext._gateway
    try:
        helper(spark, PY4J_SOCKETS_CLASS).noDelay(gateway.java_gateway_server)
    except Py4JError:
        log.warning("could not turn Nagle's algorithm off on a py4j connection", exc_info=True)


PYSPARK_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def pyspark_error_loggers() -> list[logging.Logger]:
    """The loggers PySpark reports every captured SQL error to (as JSON on stderr)."""
    # Created through PySparkLogger: a plain logging.Logger of that name would break PySpark.
    return [PySparkLogger.getLogger(name) for name in PYSPARK_ERROR_LOGGERS]


@contextmanager
def quiet_pyspark_error_logs() -> Iterator[None]:
    """Silence PySpark's logging of errors raised by nested Spark calls.

    A nested error is handed back to the JVM and reaches the user through their own call,
    where PySpark reports it once; logging it here too would print it twice.
    """
    loggers = pyspark_error_loggers()
    previous = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        for logger, was_disabled in zip(loggers, previous, strict=True):
            logger.disabled = was_disabled


@contextmanager
def without_call_sites() -> Iterator[None]:
    """Turn PySpark's DataFrame call-site capture off while sparkmv builds and runs its plans.

    PySpark (4.x, classic) wraps every DataFrame and Column method to record its Python call
    site on the JVM for error contexts (``spark.python.sql.dataFrameDebugging.enabled``): about
    ten py4j round trips per call, half of an incremental refresh's round trips (a delta plan
    is built from thousands of such calls). sparkmv's plans are internal: their
    call sites would mean nothing to the user, whose own statement carries the error context.
    PySpark reads the setting once per process into a module cache — the one switch there is
    at run time — which is restored afterwards (other threads' DataFrame calls made meanwhile
    go without call sites too).
    """
    saved = getattr(pyspark_errors_utils, _CALL_SITE_SWITCH, None)
    setattr(pyspark_errors_utils, _CALL_SITE_SWITCH, False)
    try:
        yield
    finally:
        setattr(pyspark_errors_utils, _CALL_SITE_SWITCH, saved)


_CALL_SITE_SWITCH = "_enable_debugging_cache"  # pyspark.errors.utils.is_debugging_enabled's


def java_exception(spark: SparkSession, error: SparkMvError) -> Any:
    """A JVM ``SparkMvException`` carrying ``error``'s class, SQLSTATE, message and the
    message's parameters."""
    constructor: Any = spark._jvm
    for part in EXCEPTION_CLASS.split("."):
        constructor = getattr(constructor, part)
    return constructor(
        error.error_class.name, error.sql_state, error.message, json.dumps(error.params)
    )


def _first_line(sql_text: str) -> str:
    line = " ".join(sql_text.split())
    return line if len(line) <= 80 else line[:77] + "..."
