"""A Hive metastore shared by several processes: a PostgreSQL database (``docs/metastore.md``).

The default metastore (embedded Derby) admits one process, so the per-process locks of
``commands/view_locks.py`` serialize everything that changes a view. On a shared metastore
this module adds, through PostgreSQL advisory locks taken on connections of their own:

- ``view_lock``: held with the process's own view lock, from a statement's first catalog read
  to its last commit, so statements on one view in different processes run one at a time (a
  second REFRESH finds nothing pending, and one process's clean-up of unreferenced snapshots
  never meets another's snapshot in the making);
- ``hold_table_lock``: a base table's, held by a captured write from its first listing of the
  table's files to its change log's commit, and by a refresh while it lists the table and
  reconciles its log (``capture/table_locks.py``);
- ``commit_lock``: held around the compare-and-set of a view's catalog entry
  (``ViewCatalog.commit``): Hive's ``alter_table`` has no condition, so the check of the commit
  token and the update are made exact by letting no other commit of the view come between.

A session lock of PostgreSQL is released when its connection ends, so a process that dies
holding one does not block the others. ``ensure_schema`` creates the metastore's tables in an
empty database with DataNucleus's SchemaTool from Hive's own JDO mapping, all at once: Hive's
lazy creation (``datanucleus.schema.autoCreateAll``) deadlocks on PostgreSQL.
"""

from __future__ import annotations

import glob
import os
import subprocess
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from sparkmv.config import (
    HIVE_SCHEMA_VERSION,
    METASTORE_PASSWORD_CONF,
    METASTORE_URL_CONF,
    METASTORE_USER_CONF,
    POSTGRES_URL_PREFIX,
)
from sparkmv.identifiers import TableName

_VIEW_LOCKS = 0x53504D31  # advisory lock class ids ("SPM1", "SPM2", "SPM3")
_COMMIT_LOCKS = 0x53504D32
_SCHEMA_LOCK = 0x53504D33
_TABLE_LOCKS = 0x53504D34


@dataclass(frozen=True)
class SharedMetastore:
    """The JDBC coordinates of a shared (PostgreSQL) metastore database."""

    url: str
    user: str | None
    password: str | None

    def connect(self, jvm: Any) -> Any:
        """A new JDBC connection (auto-commit), through the driver JVM."""
        properties = jvm.java.util.Properties()
        if self.user is not None:
            properties.setProperty("user", self.user)
        if self.password is not None:
            properties.setProperty("password", self.password)
        return jvm.java.sql.DriverManager.getConnection(self.url, properties)


_shared: tuple[SharedMetastore, Any] | None = None  # and the JVM's gateway view
_shared_guard = threading.Lock()


def shared_metastore(spark: SparkSession) -> SharedMetastore | None:
    """The shared metastore ``spark``'s application uses, or None (embedded Derby)."""
    conf = spark.sparkContext.getConf()
    url = conf.get(METASTORE_URL_CONF)
    if url is None or not url.startswith(POSTGRES_URL_PREFIX):
        return None
    return SharedMetastore(url, conf.get(METASTORE_USER_CONF), conf.get(METASTORE_PASSWORD_CONF))


def configure(spark: SparkSession) -> None:
    """Take the cross-process locks of this driver process on ``spark``'s metastore, if it is
    a shared one (called when sparkmv attaches to a session)."""
    global _shared
    found = shared_metastore(spark)
    with _shared_guard:
        _shared = None if found is None else (found, spark.sparkContext._jvm)


@contextmanager
def _advisory_lock(class_id: int, key: str) -> Iterator[None]:
    assert _shared is not None
    metastore, jvm = _shared
    connection = metastore.connect(jvm)
    try:
        _execute(connection, "SELECT pg_advisory_lock(?, hashtext(?))", class_id, key)
        try:
            yield
        finally:
            _execute(connection, "SELECT pg_advisory_unlock(?, hashtext(?))", class_id, key)
    finally:
        connection.close()


def _execute(connection: Any, sql: str, class_id: int, key: str) -> None:
    statement = connection.prepareStatement(sql)
    try:
        statement.setInt(1, class_id)
        statement.setString(2, key)
        statement.execute()
    finally:
        statement.close()


def hold_table_lock(table: TableName) -> Callable[[], None] | None:
    """Take the cross-process lock of the base table ``table`` (resolved) until the returned
    function is called (from any thread; ``capture/table_locks.py``); None on a metastore of
    one process."""
    if _shared is None:
        return None
    metastore, jvm = _shared
    key = f"{table.database}.{table.name}".lower()
    connection = metastore.connect(jvm)
    try:
        _execute(connection, "SELECT pg_advisory_lock(?, hashtext(?))", _TABLE_LOCKS, key)
    except BaseException:
        connection.close()
        raise

    def release() -> None:
        connection.close()  # ends the session, and so its lock

    return release


def view_lock(view: TableName) -> AbstractContextManager[None]:
    """The cross-process lock of ``view`` (keyed as ``commands/view_locks.py`` keys its own:
    the bare name, lower-cased); nothing on a metastore of one process."""
    return nullcontext() if _shared is None else _advisory_lock(_VIEW_LOCKS, view.name.lower())


def commit_lock(spark: SparkSession, view: TableName) -> AbstractContextManager[None]:
    """The cross-process lock of commits to ``view`` (resolved); nothing on a metastore of one
    process, where the per-process view lock already keeps commits apart."""
    del spark  # the process's metastore; one per driver JVM
    if _shared is None:
        return nullcontext()
    return _advisory_lock(_COMMIT_LOCKS, f"{view.database}.{view.name}".lower())


def ensure_schema(spark: SparkSession, metastore: SharedMetastore) -> None:
    """Create the Hive metastore's tables in ``metastore``'s database if it has none, before
    the session's Hive client first connects (processes starting together create them once:
    under an advisory lock)."""
    jvm: Any = spark.sparkContext._jvm
    connection = metastore.connect(jvm)
    try:
        if _has_schema(connection):
            return
        _execute(connection, "SELECT pg_advisory_lock(?, hashtext(?))", _SCHEMA_LOCK, "schema")
        unlock = "SELECT pg_advisory_unlock(?, hashtext(?))"
        try:
            if not _has_schema(connection):
                _create_schema(metastore)
                insert = connection.prepareStatement(
                    'INSERT INTO "VERSION" ("VER_ID", "SCHEMA_VERSION", "VERSION_COMMENT") '
                    "VALUES (1, ?, 'Hive release version ' || ?)"
                )
                insert.setString(1, HIVE_SCHEMA_VERSION)
                insert.setString(2, HIVE_SCHEMA_VERSION)
                insert.execute()
                insert.close()
        finally:
            _execute(connection, unlock, _SCHEMA_LOCK, "schema")
    finally:
        connection.close()


def _has_schema(connection: Any) -> bool:
    statement = connection.createStatement()
    try:
        result = statement.executeQuery("""SELECT to_regclass('"VERSION"') IS NOT NULL""")
        result.next()
        return bool(result.getBoolean(1))
    finally:
        statement.close()


def _create_schema(metastore: SharedMetastore) -> None:
    """Run DataNucleus's SchemaTool (in pyspark's jars) on Hive's JDO mapping (``package.jdo``
    of the hive-metastore jar) in a JVM of its own: every table, index and constraint, created
    in one go while nothing else uses the database."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    (hive_jar,) = glob.glob(str(jars / "hive-metastore-*.jar"))
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else "java"
    with tempfile.TemporaryDirectory(prefix="sparkmv-schema-") as work:
        mapping = Path(work) / "package.jdo"
        with zipfile.ZipFile(hive_jar) as archive:
            mapping.write_bytes(archive.read("package.jdo"))
        settings = {
            "javax.jdo.option.ConnectionURL": metastore.url,
            "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
            "javax.jdo.option.ConnectionUserName": metastore.user or "",
            "javax.jdo.option.ConnectionPassword": metastore.password or "",
            "datanucleus.schema.autoCreateAll": "true",
            # Hive's own defaults for these (HiveConf): the names of tables and columns
            "datanucleus.identifierFactory": "datanucleus1",
            "datanucleus.rdbms.useLegacyNativeValueStrategy": "true",
        }
        props = Path(work) / "datanucleus.properties"
        props.touch(mode=0o600)
        props.write_text("".join(f"{k}={_escaped(v)}\n" for k, v in settings.items()))
        classpath = os.pathsep.join([str(jars / "*"), jdbc_jar()])
        command = [java, "-cp", classpath, "org.datanucleus.store.schema.SchemaTool"]
        done = subprocess.run(
            [*command, "-create", "-api", "JDO", "-props", str(props), str(mapping)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0 or "completed successfully" not in done.stdout:
            raise RuntimeError(
                f"creating the Hive metastore schema in {metastore.url} failed:\n"
                f"{done.stdout[-4000:]}{done.stderr[-4000:]}"
            )


def _escaped(value: str) -> str:
    """``value`` for a Java properties file."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace(":", "\\:").replace("=", "\\=")


def jdbc_jar() -> str:
    """The PostgreSQL JDBC driver's jar: ``$SPARKMV_POSTGRES_JDBC_JAR``, else Debian's."""
    from sparkmv.config import POSTGRES_JDBC_JAR, POSTGRES_JDBC_JAR_ENV

    path = os.environ.get(POSTGRES_JDBC_JAR_ENV) or POSTGRES_JDBC_JAR
    if not Path(path).is_file():
        raise FileNotFoundError(
            f"the PostgreSQL JDBC driver's jar is not at {path}: install it (Debian: "
            f"apt-get install libpostgresql-jdbc-java) or set {POSTGRES_JDBC_JAR_ENV}"
        )
    return path
