"""Configuration keys and fixed names; each defined once."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXTENSION_CLASS = "io.sparkmv.SparkMvExtensions"
"""Value for ``spark.sql.extensions``."""

HANDLER_REGISTRY_CLASS = "io.sparkmv.bridge.MvHandlerRegistry"
EXCEPTION_CLASS = "io.sparkmv.bridge.SparkMvException"
PY4J_SOCKETS_CLASS = "io.sparkmv.bridge.Py4jSockets"
CATALOG_BRIDGE_CLASS = "io.sparkmv.catalog.CatalogBridge"
CHANGELOG_BRIDGE_CLASS = "io.sparkmv.catalog.ChangelogBridge"
FS_BRIDGE_CLASS = "io.sparkmv.fs.FsBridge"
FRAME_BRIDGE_CLASS = "io.sparkmv.frames.FrameBridge"
REFRESH_JOBS_CLASS = "io.sparkmv.jobs.RefreshJobs"
JOB_STEPS_CLASS = "io.sparkmv.jobs.JobSteps"
LOCAL_FILE_SYSTEM_CLASS = "io.sparkmv.fs.LocalFileSystemWithNioPermissions"
"""Hadoop's ``fs.file.impl`` in ``sparkmv.session()``: every file Spark writes on the local
file system (and its checksum file) would otherwise start a ``chmod`` process, 12-17 ms
each, without Hadoop's native library (pyspark's wheel has none); a refresh writes a few
small files per bucket it touches. Set once the JVM runs: spark-submit itself resolves
files before the shim's jar is on its class path."""

DRIVER_CLASS_PATH_CONF = "spark.driver.extraClassPath"
"""``sparkmv.session()`` puts the shim's jar there as well as in ``spark.jars``, so the driver
loads it from the JVM's own class path. Jars of ``spark.jars`` are loaded by a class loader
that the JDBC (Thrift) server's Hive sessions close when they end (``SessionState.close``
closes the loaders between the session's and Hive's own): after the first JDBC client
disconnects, every shim class not loaded yet would fail with ``NoClassDefFoundError``."""

DEFAULT_WAREHOUSE_DIR = "spark-warehouse"
"""Relative to the working directory, like Spark's own default."""

METASTORE_DIR_NAME = "metastore_db"
"""The embedded Derby metastore's directory under the warehouse (the default catalog)."""

METASTORE_URL_CONF = "spark.hadoop.javax.jdo.option.ConnectionURL"
"""The metastore database's JDBC URL (without the spark.hadoop. prefix Spark ignores it):
embedded Derby under the warehouse by default, a ``jdbc:postgresql:`` URL for a metastore that
several processes share (``sparkmv.session(metastore_url=...)``, ``docs/metastore.md``)."""
METASTORE_USER_CONF = "spark.hadoop.javax.jdo.option.ConnectionUserName"
METASTORE_PASSWORD_CONF = "spark.hadoop.javax.jdo.option.ConnectionPassword"
METASTORE_DRIVER_CONF = "spark.hadoop.javax.jdo.option.ConnectionDriverName"
POSTGRES_URL_PREFIX = "jdbc:postgresql:"
POSTGRES_DRIVER_CLASS = "org.postgresql.Driver"
POSTGRES_JDBC_JAR = "/usr/share/java/postgresql.jar"
"""Where Debian's ``libpostgresql-jdbc-java`` puts the driver; ``$SPARKMV_POSTGRES_JDBC_JAR``
overrides it."""
POSTGRES_JDBC_JAR_ENV = "SPARKMV_POSTGRES_JDBC_JAR"
HIVE_SCHEMA_VERSION = "2.3.0"
"""The metastore schema version of Spark's built-in Hive client (hive-metastore 2.3.x)."""
SHARED_METASTORE_CONF: dict[str, str] = {
    METASTORE_DRIVER_CONF: POSTGRES_DRIVER_CLASS,
    # The schema is created up front (``catalog/metastore.py: ensure_schema``), with its
    # VERSION row: DataNucleus must create nothing lazily (on PostgreSQL a table created inside
    # another connection's open transaction waits for it forever), and Hive must not write the
    # VERSION row itself (two processes starting together would write two, and every later
    # start fails on "multiple versions"); without verification Hive writes it only if missing.
    "spark.hadoop.datanucleus.schema.autoCreateAll": "false",
    "spark.hadoop.hive.metastore.schema.verification": "false",
    # Another process writes tables too: each statement looks its tables up afresh instead of
    # reading a cached file listing (as ``sparkmv server`` does for its clients' sessions).
    "spark.sql.filesourceTableRelationCacheSize": "0",
}
"""Conf of ``sparkmv.session(metastore_url=...)`` with a PostgreSQL metastore; any key can be
overridden by the caller."""
STORAGE_DIR_NAME = "_sparkmv"
"""Directory under the warehouse that holds materialized view snapshots."""
LOG_DIR_NAME = "_sparkmv_logs"
"""Directory under the warehouse that holds the change logs of tracked base tables."""
REFRESH_HISTORY_FUNCTION = "sparkmv_refresh_history"
"""The table-valued function of the refresh history (registered by the shim,
``io.sparkmv.functions.RefreshHistoryFunction``, whose calls the parser reads)."""
HISTORY_DIR_NAME = "_sparkmv_history"
"""Directory under the warehouse that holds the refresh history of materialized views
(``catalog/history.py``): ``<db>/<view>/`` with one JSON file per refresh."""

CONSOLE_PROGRESS_CONF = "spark.ui.showConsoleProgress"

DEFAULT_SESSION_CONF: dict[str, str] = {
    "spark.master": "local[2]",
    "spark.app.name": "sparkmv",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    CONSOLE_PROGRESS_CONF: "false",  # ``sparkmv sql`` shows its own line (progress.py)
    # Spark keeps the last 1000 SQL executions' plans and 1000 jobs and stages in the driver's
    # status store even with the UI off; a refresh runs several jobs with wide plans, so the
    # defaults alone can fill a 1 GiB driver heap in a long session.
    "spark.sql.ui.retainedExecutions": "100",
    "spark.ui.retainedJobs": "200",
    "spark.ui.retainedStages": "200",
    # Spark sizes a Tungsten page from the execution memory per core (64 MiB for local[2]
    # with a 2-3 GiB driver), and every hash aggregate or sort in a task takes a page with
    # its first row. A refresh of a wide join view runs stages with many of them over a few rows
    # (select5's 42-table views ran a task out of execution memory); with 4 MiB pages they
    # fit. Larger records still get a page of their own.
    "spark.buffer.pageSize": "4m",
    # Spark compiles each generated class once per JVM and keeps the last 100. The writes
    # between two refreshes (each captured write runs several queries) compile more than
    # that, so every refresh compiled its own plans again: 11-23 compilations, 0.15-1 s of a
    # refresh at TPC-H SF 1 (docs/refresh-plan.md). Static: set when the session starts.
    "spark.sql.codegen.cache.maxEntries": "1000",
}
"""Defaults for ``sparkmv.session()``; any key can be overridden by the caller."""

THRIFT_PORT = 10000
"""``sparkmv server``'s default JDBC (Thrift) port, HiveServer2's."""
CONNECT_PORT = 15002
"""``sparkmv server``'s default Spark Connect port, Spark's."""
THRIFT_PORT_CONF = "hive.server2.thrift.port"
"""HiveServer2's port, read from the session conf when the Thrift server starts."""
CONNECT_PORT_CONF = "spark.connect.grpc.binding.port"
"""Spark Connect's port, read from the application's conf when its server starts."""
SERVER_HOST = "localhost"
"""The address ``sparkmv server`` binds both servers to: loopback, so only this machine's
clients reach them unless ``--host`` says otherwise."""
THRIFT_BIND_HOST_CONF = "hive.server2.thrift.bind.host"
"""HiveServer2's bind address, read from the session conf when the Thrift server starts (the
environment variable ``HIVE_SERVER2_THRIFT_BIND_HOST``, if set, wins over it)."""
CONNECT_BIND_ADDRESS_CONF = "spark.connect.grpc.binding.address"
"""Spark Connect's bind address, read from the application's conf when its server starts
(unset: every interface)."""
CONNECT_TOKEN_CONF = "spark.connect.authenticate.token"
"""Spark Connect's pre-shared token: with one, the server refuses calls without it (clients:
``sc://host:port/;token=...``). Read from the application's conf when the server starts."""
CONNECT_TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
"""The environment variable Spark Connect reads its token from when the conf has none (the
Python client reads it too)."""
THRIFT_AUTHENTICATION_CONF = "hive.server2.authentication"
"""HiveServer2's authentication mode (``NONE`` by default: any user name and password)."""
THRIFT_CUSTOM_AUTHENTICATION_CLASS_CONF = "hive.server2.custom.authentication.class"
"""The class that checks user names and passwords in HiveServer2's ``CUSTOM`` mode."""
PASSWORD_FILE_AUTHENTICATOR_CLASS = "io.sparkmv.auth.PasswordFileAuthenticator"
"""The shim's check of JDBC logins against a password file (``--password-file``)."""
SERVER_SHUTDOWN_GRACE_SECONDS = 60.0
"""How long a stopping server waits for the statements sparkmv is running (a refresh, a
captured write) before it stops the JVM anyway."""

SERVER_APPLICATION_CONF: dict[str, str] = {
    # Every session caches a table's plan with its file listing, and another session's write
    # does not reach that cache: a JDBC or Spark Connect client would keep reading a table as
    # it was, and a refresh in its session would compute a view from that stale listing. With
    # no cache each statement looks its tables up afresh (a metastore call and a listing each).
    "spark.sql.filesourceTableRelationCacheSize": "0",
}
"""Static conf, set when the application starts, that ``sparkmv server`` uses and
``sparkmv.serve`` requires: clients in sessions of their own must see each other's writes."""

SERVER_SESSION_CONF: dict[str, str] = {
    # Run a JDBC client's statement in its connection's thread (each connection has one), so a
    # failed statement's error reaches the client as the statement's status: error class,
    # message and SQLSTATE. Run in the background (Spark's default), the client polls for the
    # status and the Thrift server renders the error as a whole Java stack trace, for Spark's
    # own errors as for sparkmv's.
    "spark.sql.hive.thriftServer.async": "false",
    # Spark Connect clients show an error as spark.sql does in PySpark: class, message and
    # SQLSTATE, not the server's JVM stack trace (a client can set it back to true).
    "spark.sql.connect.serverStacktrace.enabled": "false",
}
"""Defaults of ``sparkmv server`` for the sessions of its clients (one per JDBC connection or
Spark Connect client); a value set in the application's conf (``--conf``) wins."""

ANSI_CONF = "spark.sql.ansi.enabled"
"""Spark's own: with ANSI mode (the default) arithmetic overflow fails the query; without it,
integers wrap around and decimals turn NULL."""

IRRELEVANCE_FILTERS_CONF = "spark.sparkmv.irrelevanceFilters.enabled"
"""Session conf: "false" turns off the irrelevance filters on base-table changes (default on)."""

KEY_PROOFS_CONF = "spark.sparkmv.refresh.keyProofs.enabled"
"""Session conf: "false" turns off the join-term proofs from metadata (default on:
``plan/key_proofs.py``); a join term then reads its other input whole."""

REFRESH_COST_BASED_CONF = "spark.sparkmv.refresh.costBased"
"""Session conf: "false" makes a refresh under policy AUTO incremental whenever the view's logs
allow it, without weighing its estimated cost against a full one (default true:
``plan/cost.py``)."""

STORAGE_BUCKETS_CONF = "spark.sparkmv.storage.buckets"
"""Session conf: hash buckets of an incrementally maintained view's storage, set at each full
refresh (unset or 0: sized from the base tables' bytes)."""


SPARKMV_CONF_PREFIX = "spark.sparkmv."
"""The prefix of every sparkmv session conf (``statement_confs`` reads them all at once)."""

STATEMENT_SPARK_CONFS = (ANSI_CONF,)
"""Spark's own confs a statement reads with its ``spark.sparkmv.*`` ones."""


@dataclass
class _StatementConfs:
    """What ``statement_confs`` read of ``spark``'s conf; None until its first use."""

    spark: SparkSession
    values: dict[str, str | None] | None = None

    def read(self) -> dict[str, str | None]:
        if self.values is None:
            from sparkmv.jvm import helper  # it imports PySpark, which this module does not

            text = helper(self.spark, FRAME_BRIDGE_CLASS).confs(
                self.spark._jsparkSession, SPARKMV_CONF_PREFIX, json.dumps(STATEMENT_SPARK_CONFS)
            )
            self.values = json.loads(str(text))
        return self.values


_statement_confs: ContextVar[_StatementConfs | None] = ContextVar(
    "sparkmv_statement_confs", default=None
)


@contextmanager
def statement_confs(spark: SparkSession) -> Iterator[None]:
    """For the duration of one statement in ``spark``, ``conf_value`` answers from one read of
    its conf, made at its first use: every ``spark.sparkmv.*`` key set and
    ``STATEMENT_SPARK_CONFS``, in one py4j round trip instead of one per read (a refresh reads
    about ten; a statement that reads none pays nothing). A ``SET`` takes effect at the next
    statement, as Spark's own confs do; a statement nested in another (a refresh ON COMMIT
    inside a write) reads its outer statement's. Per thread: another thread reads the
    session's conf itself."""
    if _statement_confs.get() is not None:
        yield
        return
    token = _statement_confs.set(_StatementConfs(spark))
    try:
        yield
    finally:
        _statement_confs.reset(token)


def conf_value(spark: SparkSession, key: str) -> str | None:
    """``key``'s value in ``spark``'s session conf (None: unset), as the running statement read
    it (``statement_confs``), else read now (one py4j round trip)."""
    statement = _statement_confs.get()
    snapshotted = key.startswith(SPARKMV_CONF_PREFIX) or key in STATEMENT_SPARK_CONFS
    if statement is not None and statement.spark is spark and snapshotted:
        return statement.read().get(key)
    value = spark.conf.get(key, None)
    return None if value is None else str(value)


def ansi_mode(spark: SparkSession) -> str:
    """``ANSI_CONF`` as the statement reads it: "true" (Spark's default) or "false"."""
    return conf_value(spark, ANSI_CONF) or "true"


def conf_flag(spark: SparkSession, key: str, default: bool = True) -> bool:
    """A true/false conf: anything but "false" (in any letter case) is true; unset is
    ``default``."""
    value = conf_value(spark, key)
    return default if value is None else value.strip().lower() != "false"


@dataclass(frozen=True)
class Threshold:
    """A session conf that bounds how a refresh runs: its ``key``, its ``default`` (an int,
    or a float for a share) and, in its docstring beside it, what it decides. Read as the
    statement read its conf (``conf_value``), so a ``SET`` takes effect at the next one."""

    key: str
    default: float

    def value(self, spark: SparkSession) -> float:
        text = conf_value(spark, self.key) or ""
        return float(text) if text else self.default

    def count(self, spark: SparkSession) -> int:
        """The value of a threshold that counts (rows, files, bytes, buckets)."""
        return int(self.value(spark))


CAPTURE_CLEARED_KEYS_MAX_VALUES = Threshold("spark.sparkmv.capture.clearedKeysMaxValues", 100_000)
"""A ``DELETE`` whose condition compares one integer or date column with at most this many
constants (``k IN (…)``) logs them with its commit: after it no row holds one of those keys,
a proof a join term uses to read its other input from its own change
(``plan/key_proofs.py``); with more, or 0, nothing is logged."""

KEY_PROOFS_CACHED_FOOTER_RANGES = Threshold(
    "spark.sparkmv.refresh.keyProofs.cachedFooterRanges", 100_000
)
"""The join-term proofs (``plan/key_proofs.py``) keep this many column ranges read from
parquet footers (one per file and column, a few hundred bytes each) in the driver's JVM,
least recently used dropped, keyed by the file's path, length and modification time: a file
every view over a table reads, or one a table keeps between refreshes, has its footer read
once. 0 keeps none."""

HOT_INPUT_MAX_BYTES = Threshold("spark.sparkmv.refresh.hotInputMaxBytes", 256 * 1024 * 1024)
"""An unchanged base table that an incremental refresh reads, whose files hold at most this
many bytes, is kept in Spark's cache (executor memory, spilling to disk) for the next
refreshes while it stays at that version (``apply/hot_inputs.py``); 0: none is kept."""

HOT_INPUT_MAX_TABLES = Threshold("spark.sparkmv.refresh.hotInputMaxTables", 16)
"""The most base tables kept in Spark's cache at once (the least recently read goes first):
every cached plan is matched against each query Spark plans."""

STORAGE_PATCH_MIN_ROWS = Threshold("spark.sparkmv.storage.patchMinRows", 50_000)
"""An incremental refresh patches the buckets it touches (appends the merged rows, masks the
ones they replace) when those buckets hold at least this many of the view's rows, and
rewrites them whole otherwise, in one job (0: always patch). Patching costs two jobs more
than a rewrite."""

STORAGE_MAX_MASKED_SHARE = Threshold("spark.sparkmv.storage.maxMaskedShare", 0.25)
"""A patched bucket is rewritten whole (compacted) once its mask would hide more than this
share of its stored rows (1: never, for that reason): readers then skip at most about a
quarter of what they read."""

STORAGE_MAX_FILES_PER_BUCKET = Threshold("spark.sparkmv.storage.maxFilesPerBucket", 16)
"""A touched bucket holding this many files is rewritten whole (compacted): each patch adds
one file."""

STORAGE_BUCKET_BYTES = Threshold("spark.sparkmv.storage.bucketBytes", 32 * 1024 * 1024)
"""Base-table bytes per storage bucket when ``STORAGE_BUCKETS_CONF`` is unset: a 10M-row
fact table gets about 7 buckets. A refresh patches the buckets it touches at a cost that
follows its change, not their size, while every touched bucket costs a file: fewer, larger
buckets."""

STORAGE_MAX_BUCKETS = Threshold("spark.sparkmv.storage.maxBuckets", 256)
"""The most buckets a view's storage is sized to from its base tables' bytes."""

HISTORY_RETENTION = Threshold("spark.sparkmv.history.retention", 100)
"""The refreshes of each materialized view its refresh history keeps (the newest; one small
file each, ``catalog/history.py``); 0: refreshes are not recorded."""

SCHEDULE_MIN_INTERVAL_SECONDS = Threshold("spark.sparkmv.schedule.minInterval", 60)
"""The shortest ``SCHEDULE EVERY`` period or ``TARGET LAG`` a CREATE or ALTER accepts, in
seconds (MATERIALIZED_VIEW_TARGET_LAG_TOO_SMALL below it): every refresh has a fixed cost
(a few py4j round trips and metastore calls when nothing is pending, Spark jobs otherwise)."""

SCHEDULE_POLL_SECONDS = Threshold("spark.sparkmv.schedule.pollSeconds", 15)
"""How often the scheduler (``sparkmv server``, ``sparkmv.serve()``) looks at every view's
schedule and pending changes; a due view waits at most this long past its time."""

SCHEDULE_RETRY_SECONDS = Threshold("spark.sparkmv.schedule.retrySeconds", 60)
"""After a scheduled refresh of a view fails, the scheduler waits this long before it tries
the view again, and twice as long after each further failure in a row (exponential
back-off), up to ``SCHEDULE_MAX_RETRY_SECONDS``. Each failure is in the refresh history."""

SCHEDULE_MAX_RETRY_SECONDS = Threshold("spark.sparkmv.schedule.maxRetrySeconds", 3600)
"""The longest wait between two scheduled attempts of a view whose refreshes keep failing."""

FIXPOINT_MAX_FILES = Threshold("spark.sparkmv.storage.fixpointMaxFiles", 16)
"""A recursive view's stored fixpoint of this many files is rewritten whole by the next
refresh that changes it; below, the refresh appends its change as a file."""

CHANGE_SINGLE_TASK_BYTES = Threshold("spark.sparkmv.refresh.singleTaskChangeBytes", 8 * 1024 * 1024)
"""A base table's change whose logged files hold at most this many bytes is read as one
partition: netting it, and the aggregates and broadcast joins above it, then need no
shuffle (one partition satisfies any clustering), so the statement that computes ΔV runs
without the stages those shuffles cost. A larger change is read in parallel."""

DELTA_LOG_FILES_READ = Threshold("spark.sparkmv.delta.maxCommitFilesRead", 1000)
"""A refresh of a view over a Delta table reads the commit files of the versions since the
view's last refresh at the driver, one after the other (metadata: their operations and file
sizes) when there are at most this many; more are checked by ``DESCRIBE HISTORY`` instead
(one Spark job, which reads them in parallel), and the change is then not sized."""

TABLE_SINGLE_TASK_BYTES = Threshold("spark.sparkmv.refresh.singleTaskTableBytes", 4 * 1024 * 1024)
"""A base table whose files hold at most this many bytes is read by one task (Spark's own
``spark.sql.files.openCostInBytes`` is 4 MiB): its scan and what joins it need no shuffle."""

INCREMENTAL_REFRESH_CONF: dict[str, str] = {
    # Adaptive execution runs every stage of a plan as a Spark job of its own and re-plans
    # between them; an incremental refresh's statements read small changes, where the fixed
    # cost per job (60-130 ms here) is most of the refresh. Planned statically, each
    # statement is one job.
    "spark.sql.adaptive.enabled": "false",
    # A refresh reads the buckets it touches by path; past this many paths Spark would list
    # them with a job of its own.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
}
"""Session conf set while an incremental refresh runs its statements (restored after)."""


@contextmanager
def session_conf(spark: SparkSession, values: Mapping[str, str]) -> Iterator[None]:
    """``values`` set in ``spark``'s session conf for the duration, then restored."""
    previous = _swap_confs(spark, values)
    try:
        yield
    finally:
        _swap_confs(spark, previous)


def _swap_confs(spark: SparkSession, values: Mapping[str, str | None]) -> dict[str, str | None]:
    """Set ``values`` in the session conf (None: unset) in one py4j round trip (the shim's
    ``FrameBridge``; PySpark's conf costs one per key and value); what they were before."""
    from sparkmv.jvm import helper  # it imports PySpark, which this module otherwise does not

    session: Any = spark._jsparkSession
    swapped = helper(spark, FRAME_BRIDGE_CLASS).swapConfs(session, json.dumps(dict(values)))
    previous: dict[str, str | None] = json.loads(str(swapped))
    return previous


PROGRESS_DELAY_MS = Threshold("spark.sparkmv.shell.progressDelayMs", 1000)
"""``sparkmv sql`` on a terminal shows a progress line (stage, tasks done/total, elapsed) for
a statement still running after this many milliseconds (``progress.py``): quick statements
print none."""

PROGRESS_INTERVAL_MS = Threshold("spark.sparkmv.shell.progressIntervalMs", 250)
"""Milliseconds between two updates of ``sparkmv sql``'s progress line; each polls Spark's
status tracker (a few py4j round trips, no Spark job)."""
