"""Views over Apache Iceberg tables (``capture/iceberg_source.py``): their changes are read from
the table's own snapshots (Iceberg's changelog scan), whoever wrote them. Every maintenance
check compares the view with its query run afresh (``assert_view_matches_query``) and asserts
the refresh mode.

The Iceberg tables are in ``ice``, a Hadoop catalog (``iceberg_tables``), under a namespace
named as the test's database; sparkmv captures none of their writes. One test writes from a
separate process that never loads sparkmv."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest
from conftest import python_env, spark_examples, view_description
from differential import (
    MAINTAINABLE,
    NO_SHRINK,
    refresh_checked,
)
from format_streams import (
    RICH_INITIAL,
    RICH_STEPS,
    FormatTables,
    Step,
    always_incremental,  # noqa: F401 (a fixture pytestmark uses)
    auto_weighs_the_formats_sizes,
    r_rows,
    steps,
    views_are_maintained,
)
from hypothesis import example, given, settings
from iceberg_tables import CATALOG, catalog_conf, jars, requires_iceberg
from pyspark.sql import SparkSession
from sparkmv.capture import iceberg_source
from test_golden_sql import INPUTS, check_golden

pytestmark = [requires_iceberg, pytest.mark.usefixtures("always_incremental")]
COPY_ON_WRITE = iceberg_source.COPY_ON_WRITE_PROPERTIES

REWRITE_DATA_FILES = (
    "CALL {catalog}.system.rewrite_data_files(table => '{table}',"
    " options => map('min-input-files', '1'))"
)


def iceberg_tables_in(database: str) -> FormatTables:
    """The differential's ``r`` and ``q`` as Iceberg tables of ``ice``, in a namespace named
    as ``database``."""
    namespace = f"{CATALOG}.{database}"
    compact = REWRITE_DATA_FILES.format(catalog=CATALOG, table=f"{database}.r")
    return FormatTables(f"{namespace}.r", f"{namespace}.q", "USING iceberg", compact)


@settings(max_examples=spark_examples(1), phases=NO_SHRINK)
@given(initial=r_rows, stream=steps)
@example(initial=RICH_INITIAL, stream=RICH_STEPS)
def test_views_over_iceberg_tables_are_maintained_from_their_snapshots(
    spark: SparkSession, db: str, initial: list[tuple[Any, ...]], stream: list[Step]
) -> None:
    views_are_maintained(spark, db, iceberg_tables_in, initial, stream)


def test_a_write_by_a_process_without_sparkmv_is_read_from_the_snapshots(
    spark: SparkSession, db: str
) -> None:
    """The writer's catalog is another ``ice`` over the same warehouse; this session's
    catalog caches the table, so the refresh must see past its cache."""
    table = f"{CATALOG}.{db}.r"
    spark.sql(f"CREATE TABLE {table} (a INT, b INT) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (1, 1), (2, 2)")
    spark.sql(f"CREATE MATERIALIZED VIEW v AS SELECT b, COUNT(*) AS n FROM {table} GROUP BY b")
    warehouse = spark.conf.get(f"spark.sql.catalog.{CATALOG}.warehouse")
    assert warehouse is not None
    conf = catalog_conf(warehouse)
    writer = textwrap.dedent(f"""
        from pyspark.sql import SparkSession
        builder = SparkSession.builder.master("local[1]").config("spark.jars", {",".join(jars())!r})
        for key, value in {conf!r}.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        assert "sparkmv" not in (spark.conf.get("spark.sql.extensions") or "")
        spark.sql("INSERT INTO {table} VALUES (3, 1), (4, 4)")
        spark.sql("UPDATE {table} SET b = 5 WHERE a = 2")
        spark.sql("DELETE FROM {table} WHERE a = 1")
        spark.stop()
    """)
    subprocess.run([sys.executable, "-c", writer], env=python_env(), check=True, timeout=300)
    assert refresh_checked(spark, "v") == ("INCREMENTAL", MAINTAINABLE)
    assert sorted(spark.table("v").collect()) == [(1, 1), (4, 1), (5, 1)]


def test_merge_on_read_deletes_refresh_fully_naming_the_properties(
    spark: SparkSession, db: str
) -> None:
    table = f"{CATALOG}.{db}.r"
    modes = ", ".join(
        f"'{key}' = 'merge-on-read'" for key in iceberg_source.COPY_ON_WRITE_PROPERTIES
    )
    spark.sql(f"CREATE TABLE {table} (a BIGINT) USING iceberg TBLPROPERTIES ({modes})")
    spark.sql(f"INSERT INTO {table} SELECT /*+ COALESCE(1) */ id FROM range(10)")
    spark.sql(
        f"CREATE MATERIALIZED VIEW v AS SELECT a % 3 AS k, COUNT(*) AS n FROM {table} GROUP BY 1"
    )
    spark.sql(f"DELETE FROM {table} WHERE a = 1")  # a position delete file
    mode, reason = refresh_checked(spark, "v")
    assert mode == "FULL"
    assert "merge-on-read" in reason and "write.delete.mode" in reason
    cow = ", ".join(f"'{key}' = 'copy-on-write'" for key in COPY_ON_WRITE)
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ({cow})")
    spark.sql(f"DELETE FROM {table} WHERE a = 3")  # rewrites the file; its deletes stay
    assert refresh_checked(spark, "v")[0] == "FULL"
    spark.sql(f"DELETE FROM {table} WHERE a = 2")  # the deletes go with the file
    assert refresh_checked(spark, "v")[0] == "FULL"  # read from a snapshot that had them
    spark.sql(f"INSERT INTO {table} VALUES (20)")
    assert refresh_checked(spark, "v") == ("INCREMENTAL", MAINTAINABLE)


def test_a_rollback_an_expiry_or_a_schema_change_refreshes_fully(
    spark: SparkSession, db: str
) -> None:
    table = f"{CATALOG}.{db}.r"
    spark.sql(f"CREATE TABLE {table} (a INT) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (1), (2)")
    spark.sql(f"CREATE MATERIALIZED VIEW v AS SELECT a FROM {table} WHERE a > 1")
    first = spark.sql(f"SELECT snapshot_id FROM {table}.snapshots").collect()[0][0]
    spark.sql(f"INSERT INTO {table} VALUES (3)")
    assert refresh_checked(spark, "v") == ("INCREMENTAL", MAINTAINABLE)
    spark.sql(f"CALL {CATALOG}.system.rollback_to_snapshot('{db}.r', {first})")
    spark.sql(f"INSERT INTO {table} VALUES (4)")  # a sequence number the view has not read
    mode, reason = refresh_checked(spark, "v")
    assert mode == "FULL"
    assert "no longer an ancestor" in reason
    spark.sql(f"INSERT INTO {table} VALUES (5)")
    assert refresh_checked(spark, "v") == ("INCREMENTAL", MAINTAINABLE)
    spark.sql(f"INSERT INTO {table} VALUES (6)")
    spark.sql(
        f"CALL {CATALOG}.system.expire_snapshots(table => '{db}.r',"
        " older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)"
    )
    mode, reason = refresh_checked(spark, "v")
    assert mode == "FULL"
    assert "no longer an ancestor" in reason
    spark.sql(f"ALTER TABLE {table} ADD COLUMN c STRING")
    spark.sql(f"INSERT INTO {table} VALUES (7, 'x')")
    mode, reason = refresh_checked(spark, "v")
    assert mode == "FULL"
    assert "schema changed" in reason
    spark.sql(f"INSERT INTO {table} VALUES (8, 'y')")
    assert refresh_checked(spark, "v") == ("INCREMENTAL", MAINTAINABLE)


def test_a_recreated_table_is_not_read_against_the_old_ones_versions(
    spark: SparkSession, db: str
) -> None:
    table = f"{CATALOG}.{db}.r"
    spark.sql(f"CREATE TABLE {table} (a INT) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (1), (2), (3)")
    spark.sql(f"CREATE MATERIALIZED VIEW v AS SELECT SUM(a) AS total FROM {table}")
    spark.sql(f"DROP TABLE {table} PURGE")
    spark.sql(f"CREATE TABLE {table} (a INT) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (10)")  # sequence number 1 again, of another table
    mode, reason = refresh_checked(spark, "v")
    assert mode == "FULL"
    assert "has not read the current changelog of base table" in reason
    spark.sql(f"INSERT INTO {table} VALUES (5)")
    assert refresh_checked(spark, "v") == ("INCREMENTAL", MAINTAINABLE)


def test_a_compaction_alone_changes_nothing_and_describe_names_the_source(
    spark: SparkSession, db: str
) -> None:
    table = f"{CATALOG}.{db}.r"
    spark.sql(f"CREATE TABLE {table} (a INT) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (1)")
    spark.sql(f"INSERT INTO {table} VALUES (2)")
    spark.sql(f"CREATE MATERIALIZED VIEW v AS SELECT a, COUNT(*) AS n FROM {table} GROUP BY a")
    spark.sql(REWRITE_DATA_FILES.format(catalog=CATALOG, table=f"{db}.r"))
    assert refresh_checked(spark, "v")[0] == "INCREMENTAL"
    changelog = view_description(spark, "v")[f"Changelog {table}"]
    assert "Iceberg changelog scan" in changelog


def test_a_format_version_1_table_refreshes_fully(spark: SparkSession, db: str) -> None:
    table = f"{CATALOG}.{db}.r"
    spark.sql(f"CREATE TABLE {table} (a INT) USING iceberg TBLPROPERTIES ('format-version' = '1')")
    spark.sql(f"CREATE MATERIALIZED VIEW v AS SELECT COUNT(*) AS n FROM {table}")
    spark.sql(f"INSERT INTO {table} VALUES (1)")
    mode, reason = refresh_checked(spark, "v")
    assert mode == "FULL"
    assert "format-version 1" in reason


def test_snapshot_summaries_size_the_table_for_auto(spark: SparkSession, db: str) -> None:
    auto_weighs_the_formats_sizes(spark, f"{CATALOG}.{db}.r", "USING iceberg")


def test_golden_full_refreshes_and_their_reasons(spark: SparkSession) -> None:
    """``sql-tests/inputs/formats/iceberg_full_reasons.sql``: the cases above in one golden
    file, as a user sees it (``make golden-formats`` regenerates it). A rollback is left to
    its test: its snapshot id is random."""
    check_golden(spark, INPUTS / "formats" / "iceberg_full_reasons.sql")
