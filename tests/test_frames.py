"""DataFrame operations through the shim (``sparkmv.frames``, ``sparkmv.observations``), the
session conf swap (``config.session_conf``) and a statement's read of its conf
(``config.statement_confs``): each does what the PySpark call it replaces does, in one py4j
round trip."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import py4j_round_trips
from pyspark.sql import SparkSession
from pyspark.sql import types as T
from sparkmv import frames
from sparkmv.config import (
    ANSI_CONF,
    STORAGE_PATCH_MIN_ROWS,
    conf_value,
    session_conf,
    statement_confs,
)
from sparkmv.delta.relation import TempViews
from sparkmv.observations import observe


@pytest.mark.parametrize("action", ["collect", "local_checkpoint", "write"])
def test_metrics_observed_below_a_temporary_view_arrive(
    spark: SparkSession, tmp_path: Path, action: str
) -> None:
    """An action over ``spark.sql`` of a temporary view of an observed DataFrame: Spark finds
    the observation only in the analyzed plan, which ``frames.sql``'s DataFrame is over."""
    observed, metrics = observe(spark.range(10), f"test_below_view_{action}", {"n": "count(1)"})
    views = TempViews(spark)
    try:
        query = frames.sql(spark, f"SELECT id FROM {views.name_of(observed)} WHERE id < 3")
        if action == "collect":
            assert len(query.collect()) == 3
        elif action == "local_checkpoint":
            assert query.localCheckpoint(eager=True).count() == 3
        else:
            query.write.parquet(str(tmp_path / "written"))
    finally:
        views.drop()
    assert metrics.get() == {"n": 10}
    assert metrics.counts() == {"n": 10}


def test_metrics_no_action_ran_are_missing_at_once(spark: SparkSession) -> None:
    """Metrics of a DataFrame no action ran: none (no wait); ``counts`` refuses to guess."""
    _, metrics = observe(spark.range(10), "test_never_ran", {"n": "count(1)"})
    assert metrics.get() is None
    with pytest.raises(RuntimeError, match="no action carried"):
        metrics.counts()


def test_metrics_of_a_pruned_plan_are_missing_and_count_zero(spark: SparkSession) -> None:
    """An observed plan joined to an empty relation: Spark's optimizer replaces the join,
    observation included, by an empty relation. No metrics (``get``), zero ``counts``."""
    observed, metrics = observe(spark.range(10), "test_pruned", {"n": "count(1)"})
    empty = frames.empty(spark, T.StructType([T.StructField("id", T.LongType())]))
    assert observed.join(empty, "id").count() == 0
    assert metrics.get() is None
    assert metrics.counts() == {"n": 0}


def test_parquet_reads_are_united_in_one_round_trip(spark: SparkSession, tmp_path: Path) -> None:
    first, second = str(tmp_path / "a"), str(tmp_path / "b")
    spark.range(3).selectExpr("id", "'x' AS s").write.parquet(first)
    spark.range(2).selectExpr("id").write.parquet(second)
    schema = T.StructType([T.StructField("id", T.LongType()), T.StructField("s", T.StringType())])
    reads = [
        frames.ParquetRead(schema, (first,), select=("id", "s", "1 AS w")),
        frames.ParquetRead(
            T.StructType(schema.fields[:1]), (second,), select=("id", "'y' AS s", "-1 AS w")
        ),
    ]
    rows = frames.read_parquets(spark, reads).collect()
    assert sorted(tuple(row) for row in rows) == [
        (0, "x", 1),
        (0, "y", -1),
        (1, "x", 1),
        (1, "y", -1),
        (2, "x", 1),
    ]
    with py4j_round_trips(spark) as trips:  # the shim's method is known by now
        united = frames.read_parquets(spark, reads)
        del united  # its release is counted too
    assert trips.count == 2


@pytest.mark.parametrize("count", [0, 1, 11, 1000], ids=lambda n: f"{n}-values")
def test_where_in_keeps_the_rows_a_sql_in_list_keeps(spark: SparkSession, count: int) -> None:
    """Below and above the length at which Spark's optimizer makes a hash set of an ``IN``
    list (10), with negative values and duplicates among them."""
    rows = spark.range(-500, 500).selectExpr("id", "xxhash64(id, CAST(id AS STRING)) AS h")
    hashes = [row.h for row in rows.where("id % 7 = 0").limit(count).collect()]
    values = [*hashes, *hashes[:3], -1]  # duplicates, and a value no row has
    kept = frames.where_in(rows, "xxhash64(id, CAST(id AS STRING))", values)
    listed = ", ".join(str(value) for value in values)
    expected = rows.where(f"h IN ({listed})")
    assert sorted(kept.collect()) == sorted(expected.collect())
    assert kept.count() == len(hashes)


def test_sql_in_resolves_names_in_the_database_and_switches_back(
    spark: SparkSession, db: str
) -> None:
    spark.sql("CREATE TABLE t (x INT) USING parquet")
    spark.sql("USE default")
    try:
        assert frames.sql_in(spark, "SELECT * FROM t", db).columns == ["x"]
        assert spark.catalog.currentDatabase() == "default"
    finally:
        spark.sql(f"USE {db}")


def test_session_conf_is_restored_set_or_unset(spark: SparkSession) -> None:
    key, other = "spark.sparkmv.test.a", "spark.sparkmv.test.b"
    spark.conf.set(other, "before")
    try:
        with session_conf(spark, {key: "1", other: "2"}):
            assert (spark.conf.get(key), spark.conf.get(other)) == ("1", "2")
        assert spark.conf.get(key, None) is None
        assert spark.conf.get(other) == "before"
    finally:
        spark.conf.unset(other)


def test_a_statement_reads_its_conf_once_and_a_set_counts_from_the_next(
    spark: SparkSession,
) -> None:
    key, unset = STORAGE_PATCH_MIN_ROWS.key, "spark.sparkmv.test.unset"
    ansi = spark.conf.get(ANSI_CONF)
    spark.conf.set(key, "7")
    try:
        with statement_confs(spark):
            assert STORAGE_PATCH_MIN_ROWS.count(spark) == 7  # the statement's one read
            with py4j_round_trips(spark) as trips:
                assert conf_value(spark, unset) is None
                assert conf_value(spark, ANSI_CONF) == ansi
                assert STORAGE_PATCH_MIN_ROWS.count(spark) == 7
            assert trips.count == 0
            spark.conf.set(key, "8")  # by the statement's own code: seen by the next one
            assert STORAGE_PATCH_MIN_ROWS.count(spark) == 7
            with statement_confs(spark):  # nested (a refresh ON COMMIT): the outer's read
                assert STORAGE_PATCH_MIN_ROWS.count(spark) == 7
        assert STORAGE_PATCH_MIN_ROWS.count(spark) == 8  # no statement: read now
        with statement_confs(spark):
            assert STORAGE_PATCH_MIN_ROWS.count(spark) == 8
    finally:
        spark.conf.unset(key)
    assert STORAGE_PATCH_MIN_ROWS.count(spark) == STORAGE_PATCH_MIN_ROWS.default
