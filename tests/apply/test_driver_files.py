"""A small change is merged through the driver: ΔV, the rows it hits and the merged rows are
collected as Arrow and written by the driver as parquet (``apply/driver_files.py``), in the
layout Spark writes; rows whose columns all compare exactly are also merged there. A full
refresh of a view that held few rows writes its new rows the same way. These tests check
that every column type the driver carries comes back unchanged, for each storage layout and
either merge, and that a bag of rows takes its insertions without reading stored rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_view_matches_query, session_confs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession
from sparkmv import frames
from sparkmv.apply import incremental, materialize
from sparkmv.config import STORAGE_BUCKETS_CONF, STORAGE_PATCH_MIN_ROWS_CONF

TYPED_COLUMNS = (
    "id BIGINT, flag BOOLEAN, tiny TINYINT, small SMALLINT, num INT, ratio DOUBLE,"
    " real FLOAT, price DECIMAL(12,2), wide DECIMAL(30,5), name STRING, raw BINARY,"
    " day DATE, moment TIMESTAMP, local TIMESTAMP_NTZ"
)


def typed_rows(first: int, last: int) -> str:
    """Rows ``first`` to ``last - 1`` of the typed table, NULLs included."""
    return (
        "SELECT id, id % 3 = 0, CAST(id % 100 AS TINYINT), CAST(id % 1000 AS SMALLINT),"
        " CAST(id % 7 AS INT), id / 8.0, CAST(id / 4.0 AS FLOAT),"
        " CAST(id * 1.25 AS DECIMAL(12,2)), CAST(id AS DECIMAL(30,5)) / 3,"
        " IF(id % 5 = 0, NULL, concat('n', id % 11)), CAST(concat('b', id % 4) AS BINARY),"
        " date_add(DATE'2024-02-28', CAST(id % 9 AS INT)),"
        " TIMESTAMP'2024-03-10 01:30:00' + make_interval(0, 0, 0, 0, CAST(id % 5 AS INT)),"
        " TIMESTAMP_NTZ'2024-01-01 00:00:00' + make_interval(0, 0, 0, CAST(id % 3 AS INT))"
        f" FROM range({first}, {last})"
    )


@pytest.fixture
def patching(spark: SparkSession) -> Iterator[None]:
    with session_confs(spark, {STORAGE_PATCH_MIN_ROWS_CONF: "0", STORAGE_BUCKETS_CONF: "3"}):
        yield


def driver_files(spark: SparkSession, view: str) -> list[Path]:
    """The data files of ``view``'s snapshot that the driver wrote."""
    return [p for p in snapshot_files(spark, view) if p.name.endswith("-driver.snappy.parquet")]


def snapshot_files(spark: SparkSession, view: str) -> list[Path]:
    """The data files of ``view``'s snapshot (bucketed or not), whoever wrote them."""
    rows = spark.sql(f"DESCRIBE MATERIALIZED VIEW EXTENDED {view}").collect()
    snapshot = Path(next(r.data_type for r in rows if r.col_name == "Storage")[len("file:") :])
    return sorted([*snapshot.glob("mv_bucket=*/*.parquet"), *snapshot.glob("*.parquet")])


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM typed WHERE num < 5",  # doubles: merged by Spark
        # every column compares exactly: merged at the driver (``Merge.at_driver``)
        "SELECT id, flag, tiny, small, num, price, wide, name, raw, day, moment, local"
        " FROM typed WHERE num < 5",
        "SELECT DISTINCT flag, tiny, name, raw, day, moment, local FROM typed",
        "SELECT name, day, count(*) AS n, sum(price) AS p, sum(wide) AS w, min(moment) AS m,"
        " max(real) AS r FROM typed GROUP BY name, day",
    ],
    ids=["rows", "exact-rows", "distinct", "aggregate"],
)
def test_every_column_type_survives_a_merge_through_the_driver(
    spark: SparkSession, db: str, patching: None, query: str
) -> None:
    spark.sql(f"CREATE TABLE typed ({TYPED_COLUMNS}) USING parquet")
    spark.sql(f"INSERT INTO typed {typed_rows(0, 300)}")
    spark.sql(f"CREATE MATERIALIZED VIEW v AS {query}")
    spark.sql(f"INSERT INTO typed {typed_rows(300, 330)}")
    spark.sql("DELETE FROM typed WHERE id % 37 = 2")
    assert spark.sql("REFRESH MATERIALIZED VIEW v").collect()[0].mode == "INCREMENTAL"
    assert driver_files(spark, "v"), "the merge was not written by the driver"
    assert_view_matches_query(spark, "v")
    spark.sql(f"INSERT INTO typed {typed_rows(0, 20)}")  # duplicates of stored rows
    assert spark.sql("REFRESH MATERIALIZED VIEW v").collect()[0].mode == "INCREMENTAL"
    assert_view_matches_query(spark, "v")


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    batches=st.lists(
        st.tuples(
            st.lists(st.integers(0, 6), max_size=12),  # inserted keys (duplicates likely)
            st.sets(st.integers(0, 6), max_size=3),  # keys deleted
        ),
        min_size=1,
        max_size=3,
    )
)
def test_a_bag_of_rows_appends_insertions_and_masks_only_deletions(
    spark: SparkSession, db: str, patching: None, batches: list[tuple[list[int], set[int]]]
) -> None:
    spark.sql("DROP MATERIALIZED VIEW IF EXISTS bag")
    spark.sql("DROP TABLE IF EXISTS t")
    spark.sql("CREATE TABLE t (k INT, s STRING) USING parquet")
    spark.sql("INSERT INTO t SELECT CAST(id % 7 AS INT), CAST(id % 2 AS STRING) FROM range(40)")
    spark.sql("CREATE MATERIALIZED VIEW bag AS SELECT k, s FROM t WHERE k < 6")
    for inserted, deleted in batches:
        if inserted:
            values = ", ".join(f"({k}, '{k % 2}')" for k in inserted)
            spark.sql(f"INSERT INTO t VALUES {values}")
        if deleted:
            spark.sql(f"DELETE FROM t WHERE k IN ({', '.join(map(str, sorted(deleted)))})")
        row = spark.sql("REFRESH MATERIALIZED VIEW bag").collect()[0]
        assert row.mode == "INCREMENTAL"
        assert_view_matches_query(spark, "bag")


def test_a_change_too_large_for_the_driver_is_merged_by_spark(
    spark: SparkSession, db: str, patching: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Collected once, ΔV is written from the driver even when it is too large to merge
    there (not computed again); Spark then finds its hits by a join and writes the merge."""
    monkeypatch.setattr(incremental, "LOCAL_CHANGE_MAX_ROWS", 5)
    spark.sql(f"CREATE TABLE typed ({TYPED_COLUMNS}) USING parquet")
    spark.sql(f"INSERT INTO typed {typed_rows(0, 300)}")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT * FROM typed WHERE num < 5")
    spark.sql(f"INSERT INTO typed {typed_rows(0, 40)}")
    spark.sql("DELETE FROM typed WHERE id % 37 = 2")
    assert spark.sql("REFRESH MATERIALIZED VIEW v").collect()[0].mode == "INCREMENTAL"
    assert not driver_files(spark, "v"), "the merge should have been written by Spark"
    assert_view_matches_query(spark, "v")


@pytest.mark.parametrize(
    ("query", "policy"),
    [
        ("SELECT * FROM typed WHERE num < 5", ""),
        ("SELECT DISTINCT flag, tiny, name, raw, day, moment, local FROM typed", ""),
        (
            "SELECT name, day, count(*) AS n, sum(wide) AS w, avg(price) AS p, min(moment) AS m"
            " FROM typed GROUP BY name, day HAVING count(*) > 1",
            "",
        ),
        ("SELECT * FROM typed WHERE num < 5", " REFRESH FULL"),  # not bucketed
        ("SELECT * FROM typed WHERE num > 100", ""),  # no rows
    ],
    ids=["rows", "distinct", "aggregate-having", "unbucketed", "empty"],
)
def test_a_full_refresh_of_a_small_view_is_written_by_the_driver(
    spark: SparkSession, db: str, query: str, policy: str
) -> None:
    """One job computes the rows (and their buckets) and the driver writes them: no shuffle
    by bucket, no second job, no commit protocol. Every type comes back unchanged, and the
    view can be refreshed incrementally afterwards (the buckets are Spark's)."""
    spark.sql(f"CREATE TABLE typed ({TYPED_COLUMNS}) USING parquet")
    spark.sql(f"INSERT INTO typed {typed_rows(0, 300)}")
    spark.sql(f"CREATE MATERIALIZED VIEW v{policy} AS {query}")
    assert not driver_files(spark, "v"), "CREATE knows no earlier size: Spark writes"
    spark.sql(f"INSERT INTO typed {typed_rows(300, 330)}")
    assert spark.sql("REFRESH MATERIALIZED VIEW v FULL").collect()[0].mode == "FULL"
    files = snapshot_files(spark, "v")
    assert files and driver_files(spark, "v") == files
    assert_view_matches_query(spark, "v")
    described = spark.sql("DESCRIBE MATERIALIZED VIEW EXTENDED v").collect()
    rows = next(r.data_type for r in described if r.col_name == "Row Count")
    assert int(rows) == spark.sql(f"SELECT count(*) FROM ({query})").collect()[0][0]
    spark.sql("DELETE FROM typed WHERE id % 37 = 2")
    spark.sql(f"INSERT INTO typed {typed_rows(0, 20)}")
    mode = spark.sql("REFRESH MATERIALIZED VIEW v").collect()[0].mode
    assert mode == ("FULL" if policy else "INCREMENTAL")
    assert_view_matches_query(spark, "v")


def test_a_full_refresh_of_a_large_view_is_written_by_spark(
    spark: SparkSession, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(materialize, "FULL_AT_DRIVER_MAX_ROWS", 5)
    spark.sql(f"CREATE TABLE typed ({TYPED_COLUMNS}) USING parquet")
    spark.sql(f"INSERT INTO typed {typed_rows(0, 300)}")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT * FROM typed WHERE num < 5")
    assert spark.sql("REFRESH MATERIALIZED VIEW v FULL").collect()[0].mode == "FULL"
    assert not driver_files(spark, "v")
    assert_view_matches_query(spark, "v")


def test_rows_the_driver_cannot_collect_are_written_by_spark(
    spark: SparkSession, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A view that grew past what the driver takes (``spark.driver.maxResultSize``) since
    its last refresh: the failed collect is not the refresh's failure."""
    collect = frames.collect_arrow

    def refused(frame: Any, call_site: str) -> Any:
        if call_site == "sparkmv: the view's rows":
            raise PySparkRuntimeError("TOO_LARGE", {})  # as the job's abort
        return collect(frame, call_site)

    spark.sql(f"CREATE TABLE typed ({TYPED_COLUMNS}) USING parquet")
    spark.sql(f"INSERT INTO typed {typed_rows(0, 300)}")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT * FROM typed WHERE num < 5")
    monkeypatch.setattr(frames, "collect_arrow", refused)
    assert spark.sql("REFRESH MATERIALIZED VIEW v FULL").collect()[0].mode == "FULL"
    assert not driver_files(spark, "v")
    assert_view_matches_query(spark, "v")
