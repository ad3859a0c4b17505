"""Views over joins whose change the driver computes (``plan/driver_join.py``): aggregate
views refreshed by the driver alone, and row views whose ``Δstored`` it computes and merges
(``plan/driver_refresh.py``).

The changes drawn are TPC-H's refresh functions in small (orders inserted with their lines
under new keys, orders deleted with all of their lines), where every term reads the other
fact table from its change and the dimension table from its files, mixed with writes after
which the driver declines and Spark refreshes: a line added to or updated in a surviving
order, an order deleted without its lines, a dangling line, an order's key changed, a
duplicate order key, an update of the dimension. The views: a two-way join; a three-way join
with a dimension filtered by a literal, a local filter on each fact table, arithmetic over
decimals and a key from each fact table (TPC-H Q3's shape), stored in three buckets, so that
new groups are placed by the driver's own ``xxhash64``; and the shapes of Q12 (CASE), Q14
(CASE under LIKE, a ratio of sums) and Q19 (the join conjunct inside each branch of an OR).
The row views: a bag of a three-way join's rows (decimal arithmetic, dates, NULLs), small and
so rewritten whole by the driver, and the same view patched (the driver finds the stored
rows ΔV deletes and writes the patch); and a DISTINCT view (counted rows).

After every refresh the view equals its query run afresh and the refresh was INCREMENTAL; a
change of refresh functions alone ran no Spark job.
"""

from __future__ import annotations

import pytest
from conftest import assert_view_matches_query, last_job_id, session_confs, spark_examples
from differential import NO_SHRINK, note
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from sparkmv.config import (
    STORAGE_BUCKETS_CONF,
    STORAGE_MAX_MASKED_SHARE_CONF,
    STORAGE_PATCH_MIN_ROWS_CONF,
)

SETUP = [
    "CREATE TABLE cu (c STRING, seg STRING) USING parquet",
    "CREATE TABLE o (k INT, c STRING, d DATE, pri INT) USING parquet",
    "CREATE TABLE l (k INT, x INT, p DECIMAL(9,2), s DATE) USING parquet",
    "INSERT INTO cu VALUES ('a', 'B'), ('b', 'M'), ('c', 'B'), (NULL, 'B')",
    "INSERT INTO o VALUES (1, 'a', DATE'2020-01-01', 0), (2, 'b', NULL, 1),"
    " (3, 'c', DATE'2020-03-01', 0), (4, NULL, DATE'2020-01-01', 1)",
    "INSERT INTO l VALUES (1, 5, 10.50, DATE'2020-02-01'), (1, 7, 3.25, DATE'2019-01-01'),"
    " (2, 1, 99.99, NULL), (3, 9, NULL, DATE'2020-05-05'), (4, 2, 1.00, DATE'2020-02-02'),"
    " (NULL, 3, 2.00, DATE'2020-02-02')",
]
VIEWS = {
    "pairs": (
        "SELECT o.c, o.pri, count(*) AS n, count(l.p) AS m, sum(l.x) AS total"
        " FROM o JOIN l ON o.k = l.k GROUP BY o.c, o.pri",
        "1",
    ),
    "q3": (
        "SELECT l.k, o.d, o.pri, sum(l.p * (1 - 0.05)) AS revenue, avg(l.x) AS a"
        " FROM cu, o, l WHERE cu.seg = 'B' AND cu.c = o.c AND l.k = o.k"
        " AND (o.d IS NULL OR o.d < DATE'2021-01-01') AND l.x > 1 GROUP BY l.k, o.d, o.pri",
        "3",
    ),
    # TPC-H Q12's shape: CASE over a disjunction
    "q12": (
        "SELECT l.s, sum(CASE WHEN o.c = 'a' OR o.c = 'b' THEN 1 ELSE 0 END) AS hi,"
        " sum(CASE WHEN o.c <> 'a' AND o.c <> 'b' THEN 1 ELSE 0 END) AS lo"
        " FROM o, l WHERE o.k = l.k AND l.x IN (1, 3, 5, 7, 9) GROUP BY l.s",
        "2",
    ),
    # Q14's: a CASE of a decimal and 0 under LIKE, a global aggregate, a ratio of calls
    "q14": (
        "SELECT 100.00 * sum(CASE WHEN cu.seg LIKE 'B%' THEN l.p * (1 - 0.1) ELSE 0 END)"
        " / nullif(sum(l.p), 0) AS promo FROM l, o, cu WHERE l.k = o.k AND o.c = cu.c",
        "1",
    ),
    # Q19's: the join conjunct repeated in every branch of an OR
    "q19": (
        "SELECT sum(l.p * (1 - 0.05)) AS revenue FROM l, o"
        " WHERE (o.k = l.k AND o.c = 'a' AND l.x BETWEEN 1 AND 5)"
        " OR (o.k = l.k AND o.c IN ('b', 'c') AND l.x >= 5)",
        "1",
    ),
}
ROWS = (
    "SELECT l.k, o.d, l.p * (1 - 0.05) AS net, l.x, cu.seg FROM cu, o, l"
    " WHERE cu.c = o.c AND l.k = o.k AND l.x > 1"
)
PATCHED = {STORAGE_PATCH_MIN_ROWS_CONF: "1", STORAGE_MAX_MASKED_SHARE_CONF: "1000"}
"""Every touched bucket patched, never rewritten whole (which Spark would do)."""
ROW_VIEWS = {
    "rows": (ROWS, "3", {}),
    "patched": (ROWS, "3", PATCHED),
    "values": ("SELECT DISTINCT o.c, l.x FROM o JOIN l ON o.k = l.k", "2", {}),
}
"""Row views, with their buckets and the settings they are refreshed under."""

NOISE = [
    "INSERT INTO l VALUES ({key}, 4, 7.00, NULL)",  # a line of a surviving order
    "UPDATE l SET x = x + 1 WHERE k = {key}",
    "DELETE FROM o WHERE k = {key}",  # an order without its lines
    "INSERT INTO l VALUES (5{key}, 6, 1.50, NULL)",  # a dangling line
    "UPDATE o SET k = {moved} WHERE k = {key}",
    "INSERT INTO o VALUES ({key}, {c}, NULL, 0)",  # a duplicate order key
    "UPDATE cu SET seg = 'M' WHERE c = {c}",  # the dimension
    "INSERT INTO cu VALUES ('b', 'B')",
]
"""Writes after which the driver declines (a term reads a changed table in full)."""


@st.composite
def batches(draw: st.DrawFn) -> list[tuple[list[str], bool]]:
    """Two to four batches of writes, each with whether it is refresh functions only; new
    orders get keys above any existing one."""
    result = []
    fresh = 100
    for _ in range(draw(st.integers(2, 4))):
        batch: list[str] = []
        clean = draw(st.booleans())
        for _ in range(draw(st.integers(1, 4))):
            kind = draw(st.sampled_from(["new", "gone"] if clean else ["new", "gone", "noise"]))
            key = draw(st.integers(1, 8))
            c = draw(st.sampled_from(["'a'", "'b'", "'c'", "NULL"]))
            if kind == "new":
                fresh += 1
                day = draw(st.sampled_from(["DATE'2020-06-01'", "DATE'2022-01-01'", "NULL"]))
                batch.append(f"INSERT INTO o VALUES ({fresh}, {c}, {day}, {key % 2})")
                lines = draw(st.lists(st.integers(0, 9), max_size=3))
                if lines:
                    values = ", ".join(f"({fresh}, {x}, {x}.25, DATE'2020-01-1{x}')" for x in lines)
                    batch.append(f"INSERT INTO l VALUES {values}")
            elif kind == "gone":
                batch += [f"DELETE FROM l WHERE k = {key}", f"DELETE FROM o WHERE k = {key}"]
            else:
                batch.append(draw(st.sampled_from(NOISE)).format(key=key, c=c, moved=key + 10))
        result.append((batch, clean))
    return result


@settings(max_examples=spark_examples(3), phases=NO_SHRINK, deadline=None)
@given(writes=batches())
def test_join_aggregates_are_refreshed_by_the_driver_when_it_can(
    spark: SparkSession, db: str, writes: list[tuple[list[str], bool]]
) -> None:
    database = f"{db}_dj"
    spark.sql(f"DROP DATABASE IF EXISTS {database} CASCADE")
    spark.sql(f"CREATE DATABASE {database}")
    spark.sql(f"USE {database}")
    try:
        for statement in SETUP:
            spark.sql(statement)
        views = {**{n: (q, b, {}) for n, (q, b) in VIEWS.items()}, **ROW_VIEWS}
        for name, (query, buckets, _) in views.items():
            with session_confs(spark, {STORAGE_BUCKETS_CONF: buckets}):
                spark.sql(f"CREATE MATERIALIZED VIEW {name} REFRESH INCREMENTAL AS {query}")
        for batch, clean in writes:
            note("; ".join(batch))
            for statement in batch:
                spark.sql(statement)
            for name, (_, _, confs) in views.items():
                first = last_job_id(spark)
                with session_confs(spark, confs):
                    row = spark.sql(f"REFRESH MATERIALIZED VIEW {name}").collect()[0]
                jobs = last_job_id(spark) - first
                note(f"{name}: {row.mode} ({row.reason}), {jobs} jobs")
                assert row.mode == "INCREMENTAL", row.reason
                if clean:
                    assert jobs == 0, f"{name} ran {jobs} jobs after refresh functions alone"
                assert_view_matches_query(spark, name)
    finally:
        spark.sql(f"USE {db}")
        for name in [*VIEWS, *ROW_VIEWS]:
            spark.sql(f"DROP MATERIALIZED VIEW IF EXISTS {database}.{name}")
        spark.sql(f"DROP DATABASE {database} CASCADE")


@pytest.mark.parametrize(("policy", "query"), [("AUTO", VIEWS["q3"][0]), ("INCREMENTAL", ROWS)])
def test_explain_says_the_driver_joins_the_change(
    spark: SparkSession, db: str, policy: str, query: str
) -> None:
    for statement in SETUP:
        spark.sql(statement)
    spark.sql(f"CREATE MATERIALIZED VIEW v REFRESH {policy} AS {query}")
    spark.sql("INSERT INTO o VALUES (9, 'a', DATE'2020-07-07', 1)")
    spark.sql("INSERT INTO l VALUES (9, 4, 2.50, NULL)")
    plan = spark.sql("EXPLAIN REFRESH MATERIALIZED VIEW v").collect()[0][0]
    assert "of changes, joined by the driver" in plan  # the estimate
    assert "this one is computed so" in plan
    row = spark.sql("REFRESH MATERIALIZED VIEW v").collect()[0]
    assert row.mode == "INCREMENTAL", row.reason
    assert_view_matches_query(spark, "v")
    # order 1 keeps lines before and after: the term of Δo reads l, which changed, in full
    spark.sql("INSERT INTO l VALUES (1, 4, 2.50, NULL)")
    spark.sql("UPDATE o SET pri = 1 WHERE k = 1")
    plan = spark.sql("EXPLAIN REFRESH MATERIALIZED VIEW v").collect()[0][0]
    assert "of changes, joined by the driver" not in plan
    assert "this one is not computed so" in plan
    spark.sql("REFRESH MATERIALIZED VIEW v INCREMENTAL")
    assert_view_matches_query(spark, "v")
