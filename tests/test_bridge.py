"""The py4j bridge's own set-up (``sparkmv/bridge.py``)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession


def test_the_callback_connection_sends_without_nagle_delay(spark: SparkSession, db: str) -> None:
    """After a statement sparkmv ran, the JVM's end of the connection it was called back over
    has TCP_NODELAY set (``Py4jSockets``): without it, every JVM answer of 8-64 KiB to the
    handler waited for a delayed acknowledgement."""
    spark.sql("CREATE TABLE t (k INT) USING parquet")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT k FROM t")
    spark.sql("REFRESH MATERIALIZED VIEW v").collect()
    gateway: Any = spark.sparkContext._gateway
    # Answered by the JVM thread that serves this Python thread: the callbacks of its
    # statements went out over that thread's connection.
    connection = gateway.java_gateway_server.getCallbackClient().getPerThreadConnection()
    assert connection is not None
    assert connection.getSocket().getTcpNoDelay()
