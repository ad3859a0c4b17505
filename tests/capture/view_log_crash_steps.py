"""Child-process steps for ``test_view_log_crash.py`` (run as a script, not collected).

``python view_log_crash_steps.py <warehouse> <step>``: step ``setup+0`` creates a table
``t``, a view ``u`` over it and a view ``d`` over ``u``, then goes on as step ``0``; step ``N``
first checks the outcome of the previous crashed refresh of ``u`` (if any), then changes ``t``
and refreshes ``u`` (the crash point comes from ``SPARKMV_CRASH_AT``, armed only for that
refresh); step ``final`` only checks.

The check: ``d``'s refresh is incremental (the log of ``u`` agrees with ``u``: a prepared
commit was published or removed, nothing resynchronised) and leaves ``d`` equal to its query
over ``u`` as it stands (so ``u``'s change was neither missed nor applied twice); then ``u``
and ``d`` are refreshed again and both equal their queries.
"""

from __future__ import annotations

import sys
from collections import Counter

import sparkmv
from pyspark.sql import SparkSession
from sparkmv.faults import disarmed


def assert_matches_query(spark: SparkSession, view: str) -> None:
    rows = spark.sql(f"DESCRIBE MATERIALIZED VIEW EXTENDED {view}").collect()
    query = next(row.data_type for row in rows if row.col_name == "Query")
    actual = Counter(tuple(row) for row in spark.table(view).collect())
    expected = Counter(tuple(row) for row in spark.sql(query).collect())
    assert actual == expected, f"{view}: {actual} != {expected}"


def refresh(spark: SparkSession, view: str) -> str:
    row = spark.sql(f"REFRESH MATERIALIZED VIEW {view}").collect()[0]
    return f"{row.mode}: {row.reason}"


def check(spark: SparkSession) -> None:
    outcome = refresh(spark, "d")
    assert outcome.startswith("INCREMENTAL"), outcome
    assert_matches_query(spark, "d")
    refresh(spark, "u")
    outcome = refresh(spark, "d")
    assert outcome.startswith("INCREMENTAL"), outcome
    assert_matches_query(spark, "u")
    assert_matches_query(spark, "d")


def main(warehouse: str, step: str) -> None:
    spark = sparkmv.session(warehouse)
    if step.startswith("setup+"):  # one process sets up and runs the first step
        step = step.removeprefix("setup+")
        with disarmed():
            spark.sql("CREATE TABLE t (k INT, v INT) USING parquet")
            spark.sql("INSERT INTO t SELECT id % 4, id FROM range(12)")
            spark.sql(
                "CREATE MATERIALIZED VIEW u REFRESH INCREMENTAL AS"
                " SELECT k, v FROM t WHERE v % 3 <> 0"
            )
            spark.sql(
                "CREATE MATERIALIZED VIEW d REFRESH INCREMENTAL AS"
                " SELECT k, count(*) AS n, sum(v) AS s FROM u GROUP BY k"
            )
    if step != "0":
        with disarmed():  # the check's refreshes pass the point
            check(spark)
        print(f"CHECKED before {step}", flush=True)
    if step == "final":
        print("NOT CRASHED", flush=True)
        return
    number = int(step)
    spark.sql(f"INSERT INTO t VALUES ({number}, {100 + number}), (9, {200 + number})")
    spark.sql(f"DELETE FROM t WHERE v = {number + 1}")
    refresh(spark, "u")  # dies at the crash point
    print("NOT CRASHED", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
