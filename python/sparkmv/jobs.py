"""Names of the Spark jobs sparkmv runs, as Spark's UI and history server show them.

Every job a refresh or a CREATE runs carries a job group naming the statement and its view
(``sparkmv REFRESH db.v``) and a description naming the step as well (``sparkmv REFRESH
db.v: ΔV``, ``sparkmv REFRESH db.v: write 3 buckets``), which is its call site too (the name
Spark's UI lists jobs and stages by): properties of the thread that submits the job (the
statement's thread: sparkmv's calls from Python reach the JVM on it). The group
and description the statement had before (a user's ``setJobGroup``, a JDBC server's per
statement) are restored after each step. Jobs of the same view share a group, so Spark's UI
lists them together and ``statusTracker().getJobIdsForGroup`` finds them.

``start_counting`` and ``stop_counting`` count the jobs a refresh runs and the bytes their
tasks read, as Spark's listener bus reports them (``io.sparkmv.jobs.RefreshJobs``), with no
job of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pyspark.sql import SparkSession

from sparkmv.config import JOB_STEPS_CLASS, REFRESH_JOBS_CLASS
from sparkmv.jvm import helper

JOB_DESCRIPTION = "spark.job.description"  # SparkContext.SPARK_JOB_DESCRIPTION
JOB_GROUP = "spark.jobGroup.id"  # SparkContext.SPARK_JOB_GROUP_ID
PREFIX = "sparkmv "


@contextmanager
def job_step(spark: SparkSession, description: str) -> Iterator[None]:
    """Jobs submitted meanwhile from this thread are described as ``sparkmv description``
    and grouped as ``sparkmv`` and the part of ``description`` before its first ``: `` (the
    statement and its view, e.g. ``REFRESH db.v``). Two py4j round trips in all
    (``io.sparkmv.jobs.JobSteps``): one sets both properties and answers the previous ones,
    one puts those back, also when the step fails."""
    steps = helper(spark, JOB_STEPS_CLASS)
    statement = description.partition(": ")[0]
    previous = str(steps.enter(PREFIX + statement, PREFIX + description))
    try:
        yield
    finally:
        steps.restore(previous)


def buckets(count: int) -> str:
    """``count`` buckets, in words (``1 bucket``, ``3 buckets``)."""
    return f"{count} bucket{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class JobCount:
    """The Spark jobs a refresh ran and the bytes their tasks read (None: not known)."""

    jobs: int | None = None
    bytes_read: int | None = None


def start_counting(spark: SparkSession) -> str:
    """Count the jobs submitted from this thread from now on (and from the threads Spark
    starts for them, e.g. broadcasts), until ``stop_counting`` with the tag returned; one
    py4j round trip."""
    return str(helper(spark, REFRESH_JOBS_CLASS).begin())


def stop_counting(spark: SparkSession, tag: str) -> JobCount:
    """What was counted since ``start_counting`` returned ``tag``, once Spark's listener bus
    has delivered every event posted so far (unknown if it did not within 10 s); one py4j
    round trip, no Spark job."""
    found, read = (int(n) for n in str(helper(spark, REFRESH_JOBS_CLASS).end(tag)).split(","))
    return JobCount(found, read) if found >= 0 else JobCount()
