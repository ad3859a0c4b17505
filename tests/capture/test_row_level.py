"""DELETE, UPDATE and MERGE on parquet tables (which plain Spark refuses), tracked or not.

Each statement is checked against a Python model of SQL's semantics over random tables with
NULLs and duplicates; readers running alongside only ever see whole statements; statements
the copy-on-write cannot express fail with a clear error and change nothing.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from conftest import multiset, read_while, spark_examples
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

Row = tuple[int | None, str | None, int | None]
NO_SHRINK = [Phase.explicit, Phase.reuse, Phase.generate]

rows = st.lists(
    st.tuples(
        st.one_of(st.none(), st.integers(0, 3)),
        st.sampled_from([None, "a", "b"]),
        st.sampled_from([0, 1, None]),
    ),
    max_size=8,
)


def create(spark: SparkSession, name: str, batch: list[Row], partitioned: bool) -> None:
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    clause = "PARTITIONED BY (p)" if partitioned else ""
    spark.sql(f"CREATE TABLE {name} (k INT, v STRING, p INT) USING parquet {clause}")
    if batch:
        spark.createDataFrame(batch, "k INT, v STRING, p INT").write.insertInto(name)


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
@settings(max_examples=spark_examples(3), phases=NO_SHRINK)
@given(target=rows, source=rows, key=st.integers(0, 3))
def test_statements_match_sql_semantics(
    spark: SparkSession,
    db: str,
    partitioned: bool,
    target: list[Row],
    source: list[Row],
    key: int,
) -> None:
    create(spark, "t", target, partitioned)
    deleted = spark.sql(f"DELETE FROM t WHERE k = {key} OR v IS NULL").first()
    model = [r for r in target if not (r[0] == key or r[1] is None)]
    assert multiset(spark.table("t")) == Counter(model)
    assert deleted is not None and deleted.num_affected_rows == len(target) - len(model)

    spark.sql("UPDATE t SET v = 'u', p = k WHERE k > 1")  # moves rows between partitions
    model = [(k, "u", k) if k is not None and k > 1 else (k, v, p) for k, v, p in model]
    assert multiset(spark.table("t")) == Counter(model)

    unique_source = list({r[0]: r for r in source if r[0] is not None}.values())
    create(spark, "s", unique_source, partitioned=False)
    spark.sql(
        "MERGE INTO t USING s ON t.k = s.k "
        "WHEN MATCHED AND s.v = 'a' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED AND s.p IS NOT NULL THEN INSERT (k, v, p) VALUES (s.k, 'new', s.p) "
        "WHEN NOT MATCHED BY SOURCE AND t.p = 0 THEN UPDATE SET v = 'orphan'"
    )
    by_key = {r[0]: r for r in unique_source}
    merged: list[Row] = []
    for k, v, p in model:
        match = by_key.get(k) if k is not None else None
        if match is None:
            merged.append((k, "orphan", p) if p == 0 else (k, v, p))
        elif match[1] != "a":
            merged.append((k, match[1], p))
    target_keys = {r[0] for r in model}
    merged += [(k, "new", p) for k, _, p in unique_source if k not in target_keys and p is not None]
    assert multiset(spark.table("t")) == Counter(merged)


def test_conditions_with_subqueries_and_results(spark: SparkSession, db: str) -> None:
    create(spark, "t", [(1, "a", 0), (2, "b", 0), (3, "c", 1), (None, "d", 1)], False)
    create(spark, "gone", [(2, None, None), (3, None, None)], False)
    result = spark.sql("DELETE FROM t WHERE k IN (SELECT k FROM gone)").collect()
    assert [tuple(r) for r in result] == [(2,)]
    spark.sql("UPDATE t SET v = (SELECT max(v) FROM t) WHERE k IS NULL")
    assert multiset(spark.table("t")) == Counter({(1, "a", 0): 1, (None, "d", 1): 1})
    merged = spark.sql(
        "MERGE INTO t USING (SELECT 1 AS k, 'z' AS v) AS s ON t.k = s.k "
        "WHEN MATCHED THEN UPDATE SET v = s.v"
    ).first()
    assert merged is not None and merged.asDict() == {
        "num_affected_rows": 1,
        "num_updated_rows": 1,
        "num_deleted_rows": 0,
        "num_inserted_rows": 0,
    }
    nothing = spark.sql("DELETE FROM t WHERE k = 42").first()
    assert nothing is not None and nothing.num_affected_rows == 0


def test_a_merge_matching_a_row_twice_fails_and_changes_nothing(
    spark: SparkSession, db: str
) -> None:
    create(spark, "t", [(1, "a", 0)], False)
    create(spark, "s", [(1, "x", 0), (1, "y", 0)], False)
    files = set(spark.table("t").inputFiles())
    with pytest.raises(PySparkException) as failure:
        spark.sql("MERGE INTO t USING s ON t.k = s.k WHEN MATCHED THEN UPDATE SET v = s.v")
    assert failure.value.getCondition() == "MERGE_CARDINALITY_VIOLATION"
    assert failure.value.getSqlState() == "23K01"
    assert set(spark.table("t").inputFiles()) == files


def test_unsupported_statements_say_why(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE n (k INT, s STRUCT<a: INT, b: INT>) USING parquet")
    spark.sql("INSERT INTO n VALUES (1, named_struct('a', 1, 'b', 2))")
    with pytest.raises(PySparkException) as failure:
        spark.sql("UPDATE n SET s.a = 5")
    assert failure.value.getCondition() == "ROW_LEVEL_WRITE_NOT_SUPPORTED"
    assert "whole top-level columns" in str(failure.value)
    spark.sql("CREATE TABLE j (k INT) USING json")
    with pytest.raises(PySparkException) as spark_own:
        spark.sql("DELETE FROM j WHERE k = 1")
    assert spark_own.value.getCondition() == "UNSUPPORTED_FEATURE.TABLE_OPERATION"


MIN_UPDATES = 3
MAX_UPDATES = 50


def test_readers_see_whole_statements(spark: SparkSession, db: str) -> None:
    """Every row of every file is updated together; a reader sees all old or all new.

    The writer runs UPDATEs (at least ``MIN_UPDATES``) until a read has completed since it
    started, so that at least one read overlapped the writes however slow the machine; if
    none completes in ``MAX_UPDATES`` the readers are blocked, and the test fails."""
    spark.sql("CREATE TABLE t (k BIGINT, v BIGINT, p INT) USING parquet PARTITIONED BY (p)")
    spark.sql("INSERT INTO t SELECT id, 0, id % 4 FROM range(400)")
    read_completed = threading.Event()
    updates = 0

    def read() -> tuple[int, int, int]:
        count, low, high = spark.sql("SELECT count(*), min(v), max(v) FROM t").head()
        read_completed.set()
        return count, low, high

    def write() -> None:
        nonlocal updates
        read_completed.clear()
        while updates < MIN_UPDATES or not read_completed.is_set():
            assert updates < MAX_UPDATES, f"no read completed during {updates} UPDATEs"
            updates += 1
            spark.sql(f"UPDATE t SET v = {updates}")

    seen = set(read_while(read, write))
    assert read_completed.is_set(), "no read completed while the UPDATEs ran"
    assert seen <= {(400, n, n) for n in range(updates + 1)}, seen


def test_a_merge_without_matched_clauses_may_match_a_row_twice(
    spark: SparkSession, db: str
) -> None:
    create(spark, "t", [(1, "a", 0), (2, "b", 0)], False)
    create(spark, "s", [(1, "x", 0), (1, "y", 0), (5, "z", 0)], False)
    spark.sql(
        "MERGE INTO t USING s ON t.k = s.k "
        "WHEN NOT MATCHED THEN INSERT * "
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = 'gone'"
    )
    assert multiset(spark.table("t")) == Counter(
        {(1, "a", 0): 1, (2, "gone", 0): 1, (5, "z", 0): 1}
    )


@pytest.mark.parametrize("tracked", [False, True], ids=["untracked", "tracked"])
def test_spark_own_table_writes_keep_working_after_copy_on_write(
    spark: SparkSession, db: str, tracked: bool
) -> None:
    """The table's location is now a version directory; Spark's writes that drop and
    re-create the table must still find its original location free."""
    create(spark, "t", [(1, "a", 0), (2, "b", 0)], False)
    if tracked:
        spark.sql("CREATE MATERIALIZED VIEW v AS SELECT count(*) AS n FROM t")
    spark.sql("DELETE FROM t WHERE k = 1")
    frame = spark.createDataFrame([(3, "c", 1)], "k INT, v STRING, p INT")
    frame.write.mode("overwrite").format("parquet").saveAsTable("t")
    spark.sql("UPDATE t SET v = 'x'")
    frame.write.mode("overwrite").format("parquet").saveAsTable("t")
    spark.sql("INSERT OVERWRITE t VALUES (4, 'd', 2)")
    assert multiset(spark.table("t")) == Counter({(4, "d", 2): 1})
    spark.sql("DROP MATERIALIZED VIEW IF EXISTS v")
    spark.sql("DROP TABLE t")
    create(spark, "t", [], False)
    assert spark.table("t").count() == 0
