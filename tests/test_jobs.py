"""Every Spark job of a CREATE or REFRESH is described by its view and step, as Spark's UI
and history server show it (``sparkmv/jobs.py``), and the statement's own description is
restored afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from conftest import assert_view_matches_query, last_job_id, session_confs
from pyspark.sql import SparkSession
from sparkmv.config import STORAGE_MAX_MASKED_SHARE, STORAGE_PATCH_MIN_ROWS
from sparkmv.jobs import JOB_DESCRIPTION


@contextmanager
def job_descriptions(spark: SparkSession) -> Iterator[list[str]]:
    """The descriptions of the jobs that run inside ("" for a job without one)."""
    context: Any = spark.sparkContext._jsc.sc()
    found: list[str] = []
    first = last_job_id(spark)
    yield found
    for job in range(first + 1, last_job_id(spark) + 1):
        description = context.statusStore().job(job).description()
        found.append(str(description.get()) if description.isDefined() else "")


def test_refresh_jobs_name_the_view_and_the_step(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE t (k INT, v INT) USING parquet")
    spark.sql("INSERT INTO t SELECT id % 10, id FROM range(200)")
    spark.sparkContext.setLocalProperty(JOB_DESCRIPTION, "the user's statement")
    with job_descriptions(spark) as created:
        spark.sql("CREATE MATERIALIZED VIEW v AS SELECT k, v, v / 2 AS h FROM t WHERE k < 5")
    assert f"CREATE MATERIALIZED VIEW {db}.v: compute" in created
    spark.sql("INSERT INTO t VALUES (1, 1000)")
    with job_descriptions(spark) as small:
        spark.sql("REFRESH MATERIALIZED VIEW v").collect()
    assert small and all(d.startswith(f"REFRESH {db}.v: ΔV, merged into all ") for d in small)

    patching = {STORAGE_PATCH_MIN_ROWS.key: "0", STORAGE_MAX_MASKED_SHARE.key: "1"}
    spark.sql("DELETE FROM t WHERE v = 3")  # a row of the view: ΔV deletes it
    with session_confs(spark, patching), job_descriptions(spark) as patched:
        spark.sql("REFRESH MATERIALIZED VIEW v").collect()
    steps = [d.removeprefix(f"REFRESH {db}.v: ") for d in patched]
    assert steps == ["ΔV", "find the rows ΔV replaces in 1 bucket", "write 1 bucket"]

    with job_descriptions(spark) as full:
        spark.sql("REFRESH MATERIALIZED VIEW v FULL").collect()
    assert full and all(d == f"REFRESH {db}.v: recompute (full refresh requested)" for d in full)
    assert spark.sparkContext.getLocalProperty(JOB_DESCRIPTION) == "the user's statement"
    spark.sparkContext.setLocalProperty(JOB_DESCRIPTION, None)  # type: ignore[arg-type]
    assert_view_matches_query(spark, "v")
