"""``session()``, ``attach()``: a Spark session with the extension and a persistent catalog."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pyspark.java_gateway import ensure_callback_server_started
from pyspark.sql import SparkSession

from sparkmv.bridge import Handler
from sparkmv.catalog import metastore
from sparkmv.catalog import properties as keys
from sparkmv.config import (
    DEFAULT_SESSION_CONF,
    DEFAULT_WAREHOUSE_DIR,
    DRIVER_CLASS_PATH_CONF,
    EXTENSION_CLASS,
    HANDLER_REGISTRY_CLASS,
    LOCAL_FILE_SYSTEM_CLASS,
    METASTORE_DIR_NAME,
    METASTORE_PASSWORD_CONF,
    METASTORE_URL_CONF,
    METASTORE_USER_CONF,
    POSTGRES_URL_PREFIX,
    SHARED_METASTORE_CONF,
)
from sparkmv.jar import jar_path
from sparkmv.jvm import helper

LOG4J_CONFIG = Path(__file__).resolve().parent / "resources" / "log4j2.properties"

_attached: dict[int, Handler] = {}  # keeps handlers alive for the JVM's callbacks


def session(
    warehouse_dir: str | os.PathLike[str] | None = None,
    *,
    metastore_url: str | None = None,
    metastore_user: str | None = None,
    metastore_password: str | None = None,
    **spark_conf: str,
) -> SparkSession:
    """A local SparkSession with sparkmv attached and a persistent catalog.

    The catalog (a Derby metastore) and all table data live under ``warehouse_dir``
    (default ``./spark-warehouse``), so materialized views survive a restart. Keyword
    arguments are Spark configuration and override the defaults, e.g.
    ``sparkmv.session(**{"spark.sql.shuffle.partitions": "8"})``.

    ``metastore_url`` (``jdbc:postgresql://host:port/db``, with ``metastore_user`` and
    ``metastore_password`` or those in the URL) keeps the catalog in a PostgreSQL database
    instead, which several processes can share (with one warehouse directory they all reach):
    its Hive metastore tables are created if the database has none (``docs/metastore.md``).
    """
    warehouse = Path(warehouse_dir or DEFAULT_WAREHOUSE_DIR).resolve()
    warehouse.mkdir(parents=True, exist_ok=True)
    shared = _shared_conf(metastore_url, metastore_user, metastore_password)
    conf = {**DEFAULT_SESSION_CONF, **_required_conf(warehouse), **shared, **spark_conf}
    conf["spark.sql.extensions"] = _with_item(
        spark_conf.get("spark.sql.extensions"), EXTENSION_CLASS
    )
    jar = jar_path()
    conf["spark.jars"] = _with_item(spark_conf.get("spark.jars"), jar)
    conf[DRIVER_CLASS_PATH_CONF] = _with_item(
        spark_conf.get(DRIVER_CLASS_PATH_CONF), jar, os.pathsep
    )
    if shared:  # the driver's class path: Hive's client shares org.postgresql classes
        conf[DRIVER_CLASS_PATH_CONF] = _with_item(
            conf[DRIVER_CLASS_PATH_CONF], metastore.jdbc_jar(), os.pathsep
        )
    if "spark.driver.extraJavaOptions" in spark_conf:  # the caller's options win, ours stay
        conf["spark.driver.extraJavaOptions"] = (
            _required_conf(warehouse)["spark.driver.extraJavaOptions"]
            + " "
            + spark_conf["spark.driver.extraJavaOptions"]
        )
    builder: Any = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark: SparkSession = builder.enableHiveSupport().getOrCreate()
    found = metastore.shared_metastore(spark)
    if found is not None:  # before Hive's client first connects (it does so lazily)
        metastore.ensure_schema(spark, found)
    if "spark.hadoop.fs.file.impl" not in spark_conf:
        _use_local_file_system(spark, LOCAL_FILE_SYSTEM_CLASS)
    attach(spark)
    return spark


def _shared_conf(url: str | None, user: str | None, password: str | None) -> dict[str, str]:
    """The conf of a shared (PostgreSQL) metastore at ``url``; none for the default."""
    if url is None:
        return {}
    if not url.startswith(POSTGRES_URL_PREFIX):
        expected = f"{POSTGRES_URL_PREFIX}//host:port/database"
        raise ValueError(f"metastore_url takes a {expected} URL, got {url!r}")
    conf = {**SHARED_METASTORE_CONF, METASTORE_URL_CONF: url}
    if user is not None:
        conf[METASTORE_USER_CONF] = user
    if password is not None:
        conf[METASTORE_PASSWORD_CONF] = password
    return conf


def _use_local_file_system(spark: SparkSession, class_name: str) -> None:
    """Serve ``file:`` paths with ``class_name`` from now on: Hadoop caches one file system
    per scheme, so the cached ones are closed (nothing of a fresh local session holds
    them)."""
    jvm: Any = spark._jvm
    spark.sparkContext._jsc.hadoopConfiguration().set("fs.file.impl", class_name)
    jvm.org.apache.hadoop.fs.FileSystem.closeAll()


def _required_conf(warehouse: Path) -> dict[str, str]:
    metastore = warehouse / METASTORE_DIR_NAME
    java_options = (
        f"-Dlog4j2.configurationFile=file:{LOG4J_CONFIG} "
        f"-Dderby.stream.error.file={warehouse / 'derby.log'}"
    )
    return {
        "spark.sql.warehouse.dir": str(warehouse),
        # Without the spark.hadoop. prefix Spark ignores it and Derby lands in the cwd.
        METASTORE_URL_CONF: (f"jdbc:derby:;databaseName={metastore};create=true"),
        "spark.driver.extraJavaOptions": java_options,
    }


def _with_item(listed: str | None, item: str, separator: str = ",") -> str:
    items = [part for part in (listed or "").split(separator) if part]
    return separator.join(items if item in items else [item, *items])


def attach(spark: SparkSession) -> SparkSession:
    """Attach sparkmv's handler to a session built with ``spark.sql.extensions`` set.

    For sessions built elsewhere (spark-submit, notebooks):
    ``spark-submit --jars $(sparkmv jar) --conf spark.sql.extensions=io.sparkmv.SparkMvExtensions``.
    """
    extensions = spark.conf.get("spark.sql.extensions", "") or ""
    if EXTENSION_CLASS not in extensions.split(","):
        raise RuntimeError(
            f"this SparkSession was built without the sparkmv extension; build it with "
            f"spark.sql.extensions={EXTENSION_CLASS} and the jar from `sparkmv jar` "
            f"(or use sparkmv.session())"
        )
    gateway: Any = spark.sparkContext._gateway
    ensure_callback_server_started(gateway)  # type: ignore[no-untyped-call]
    metastore.configure(spark)
    handler = Handler(spark)
    helper(spark, HANDLER_REGISTRY_CLASS).register(handler, keys.TRACKING_LOG, keys.FORMAT)
    _attached[id(spark)] = handler
    return spark


def ensure_attached(spark: SparkSession) -> SparkSession:
    """``spark`` with sparkmv's handler attached: ``attach`` unless it was already."""
    return spark if id(spark) in _attached else attach(spark)
