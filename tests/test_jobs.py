"""Every Spark job of a CREATE or REFRESH carries a job group naming the statement and its view
and a description naming the step too, as Spark's UI and history server show them
(``sparkmv/jobs.py``); the statement's own group and description are restored afterwards,
also when the refresh fails; the jobs the refresh history counts are the ones so named."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from conftest import assert_view_matches_query, last_job_id, session_confs
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from sparkmv.config import STORAGE_MAX_MASKED_SHARE, STORAGE_PATCH_MIN_ROWS
from sparkmv.jobs import JOB_DESCRIPTION, JOB_GROUP, job_step


@dataclass(frozen=True)
class Job:
    """A finished Spark job as Spark's status store has it ("": no group, no description);
    ``name``: its call site's short form, as the UI lists it."""

    job_id: int
    group: str
    description: str
    name: str


def _job(spark: SparkSession, job_id: int) -> Job:
    data = spark.sparkContext._jsc.sc().statusStore().job(job_id)  # type: ignore[union-attr]
    group, description = data.jobGroup(), data.description()
    return Job(
        job_id,
        str(group.get()) if group.isDefined() else "",
        str(description.get()) if description.isDefined() else "",
        str(data.name()),
    )


@contextmanager
def jobs_run(spark: SparkSession) -> Iterator[list[Job]]:
    """The jobs that run inside, in the order they started."""
    found: list[Job] = []
    first = last_job_id(spark)
    yield found
    found.extend(_job(spark, job) for job in range(first + 1, last_job_id(spark) + 1))


@contextmanager
def job_descriptions(spark: SparkSession) -> Iterator[list[str]]:
    """The descriptions of the jobs that run inside ("" for a job without one)."""
    found: list[str] = []
    with jobs_run(spark) as jobs:
        yield found
    found.extend(job.description for job in jobs)


@contextmanager
def users_job_group(spark: SparkSession) -> Iterator[None]:
    """The caller's own job group and description, as PySpark's ``setJobGroup`` sets them;
    unset afterwards (the session is shared)."""
    spark.sparkContext.setJobGroup("the user's group", "the user's statement")
    try:
        yield
    finally:
        for key in (JOB_GROUP, JOB_DESCRIPTION):
            spark.sparkContext.setLocalProperty(key, None)  # type: ignore[arg-type]


def _properties(spark: SparkSession) -> tuple[str | None, str | None]:
    context = spark.sparkContext
    return context.getLocalProperty(JOB_GROUP), context.getLocalProperty(JOB_DESCRIPTION)


USERS = ("the user's group", "the user's statement")


def test_refresh_jobs_name_the_view_and_the_step(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE t (k INT, v INT) USING parquet")
    spark.sql("INSERT INTO t SELECT id % 10, id FROM range(200)")
    spark.sparkContext.setLocalProperty(JOB_DESCRIPTION, "the user's statement")
    with job_descriptions(spark) as created:
        spark.sql("CREATE MATERIALIZED VIEW v AS SELECT k, v, v / 2 AS h FROM t WHERE k < 5")
    assert f"sparkmv CREATE MATERIALIZED VIEW {db}.v: compute" in created
    spark.sql("INSERT INTO t VALUES (1, 1000)")
    with job_descriptions(spark) as small:
        spark.sql("REFRESH MATERIALIZED VIEW v").collect()
    assert small and all(
        d.startswith(f"sparkmv REFRESH {db}.v: ΔV, merged into all ") for d in small
    )

    patching = {STORAGE_PATCH_MIN_ROWS.key: "0", STORAGE_MAX_MASKED_SHARE.key: "1"}
    spark.sql("DELETE FROM t WHERE v = 3")  # a row of the view: ΔV deletes it
    with session_confs(spark, patching), job_descriptions(spark) as patched:
        spark.sql("REFRESH MATERIALIZED VIEW v").collect()
    steps = [d.removeprefix(f"sparkmv REFRESH {db}.v: ") for d in patched]
    assert steps == ["ΔV", "find the rows ΔV replaces in 1 bucket", "write 1 bucket"]

    with job_descriptions(spark) as full:
        spark.sql("REFRESH MATERIALIZED VIEW v FULL").collect()
    expected = f"sparkmv REFRESH {db}.v: recompute (full refresh requested)"
    assert full and all(d == expected for d in full)
    assert spark.sparkContext.getLocalProperty(JOB_DESCRIPTION) == "the user's statement"
    spark.sparkContext.setLocalProperty(JOB_DESCRIPTION, None)  # type: ignore[arg-type]
    assert_view_matches_query(spark, "v")


def test_the_jobs_the_history_counts_carry_the_views_group(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE t (k INT, v INT) USING parquet")
    spark.sql("INSERT INTO t SELECT id % 10, id FROM range(200)")
    spark.sql(
        "CREATE MATERIALIZED VIEW v AS SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k"
    )
    group = f"sparkmv REFRESH {db}.v"
    for refresh in ("REFRESH MATERIALIZED VIEW v", "REFRESH MATERIALIZED VIEW v FULL"):
        spark.sql("INSERT INTO t VALUES (1, 1000), (11, 5)")
        with users_job_group(spark):
            with jobs_run(spark) as jobs:
                spark.sql(refresh).collect()
            assert _properties(spark) == USERS  # the caller's group is back
            with jobs_run(spark) as after:
                spark.range(3).collect()
        (record,) = spark.sql("SHOW MATERIALIZED VIEW REFRESHES FOR v LIMIT 1").collect()
        assert jobs and record.spark_jobs == len(jobs), (refresh, jobs)
        for job in jobs:
            assert job.group == group, job
            assert (
                job.description.startswith(f"{group}: ") and len(job.description) > len(group) + 2
            )
            assert job.name == job.description, job  # the step is the jobs' call site
        ids = set(spark.sparkContext.statusTracker().getJobIdsForGroup(group))
        assert {job.job_id for job in jobs} <= ids
        assert [(job.group, job.description) for job in after] == [USERS]
        assert not after[0].name.startswith("sparkmv"), after  # Spark's own call site again
    assert_view_matches_query(spark, "v")


def test_a_failed_refresh_restores_the_callers_group(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE t (a INT) USING parquet")
    spark.sql("INSERT INTO t VALUES (1), (3)")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT a, 10 DIV (a - 2) AS q FROM t")
    spark.sql("INSERT INTO t VALUES (2)")
    with users_job_group(spark):
        with jobs_run(spark) as jobs, pytest.raises(PySparkException):
            spark.sql("REFRESH MATERIALIZED VIEW v").collect()
        assert _properties(spark) == USERS
    assert jobs and all(job.group == f"sparkmv REFRESH {db}.v" for job in jobs)
    assert _properties(spark) == (None, None)


def test_a_step_restores_unset_properties(spark: SparkSession) -> None:
    assert _properties(spark) == (None, None)
    call_site = "callSite.short"  # set with the description, so Spark walks no stack for it
    with job_step(spark, "REFRESH db.v: ΔV"):
        assert _properties(spark) == ("sparkmv REFRESH db.v", "sparkmv REFRESH db.v: ΔV")
        assert spark.sparkContext.getLocalProperty(call_site) == "sparkmv REFRESH db.v: ΔV"
        with job_step(spark, "REFRESH db.w: merge"):  # nested: the inner one's, then back
            assert _properties(spark)[0] == "sparkmv REFRESH db.w"
        assert _properties(spark)[1] == "sparkmv REFRESH db.v: ΔV"
    assert _properties(spark) == (None, None)
    assert spark.sparkContext.getLocalProperty(call_site) is None
    spark.sparkContext.setLocalProperty(JOB_DESCRIPTION, "")  # set but empty stays so
    with job_step(spark, "REFRESH db.v: ΔV"):
        pass
    assert _properties(spark) == (None, "")
    spark.sparkContext.setLocalProperty(JOB_DESCRIPTION, None)  # type: ignore[arg-type]
