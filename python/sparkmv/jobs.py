"""Names of the Spark jobs sparkmv runs, as Spark's UI and history server show them.

Every job a refresh or a CREATE runs carries a description saying which view and which step,
e.g. ``REFRESH db.v: ΔV`` or ``REFRESH db.v: write 3 buckets``: Spark's job description, a
property of the thread that submits the job (the statement's thread: sparkmv's calls from
Python reach the JVM on it). The description the statement had before (a JDBC server sets
one per statement) is restored after each step.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

JOB_DESCRIPTION = "spark.job.description"  # SparkContext.SPARK_JOB_DESCRIPTION


@contextmanager
def job_step(spark: SparkSession, description: str) -> Iterator[None]:
    """Jobs submitted meanwhile are described as ``description``."""
    context = spark.sparkContext
    previous = context.getLocalProperty(JOB_DESCRIPTION)
    context.setLocalProperty(JOB_DESCRIPTION, description)
    try:
        yield
    finally:
        context.setLocalProperty(JOB_DESCRIPTION, previous)  # type: ignore[arg-type]


def buckets(count: int) -> str:
    """``count`` buckets, in words (``1 bucket``, ``3 buckets``)."""
    return f"{count} bucket{'' if count == 1 else 's'}"
