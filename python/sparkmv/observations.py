"""Metrics observed while a Spark action runs (``DataFrame.observe``): counts that cost no
job of their own.

Observed through the shim (``frames.bridge``): an observation, its metrics as SQL text and
their values as JSON cost a py4j round trip each, where PySpark's ``Observation`` and a
``Column`` per metric cost about fifteen.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from sparkmv import frames
from sparkmv.parse.statements import quote_identifier


class Metrics:
    """Integer metrics (by name) of an observed DataFrame, known once an action ran it."""

    def __init__(self, spark: SparkSession, observation: Any, names: tuple[str, ...]) -> None:
        self._spark = spark
        self._observation = observation  # the JVM's org.apache.spark.sql.Observation
        self.names = names

    def get(self) -> dict[str, int] | None:
        """The metrics after the action ran (waits for them); None when none arrived.

        Spark's optimizer replaces a plan it proves empty (e.g. over an empty table) by an
        empty relation, observation included; no metrics arrive then.
        """
        found = frames.bridge(self._spark).metrics(self._observation)
        if found is None:
            return None
        values = json.loads(str(found))
        return {name: int(values.get(name) or 0) for name in self.names}

    def counts(self) -> dict[str, int]:
        """``get``, with every count zero when no metrics arrived."""
        found = self.get()
        return dict.fromkeys(self.names, 0) if found is None else found


def observe(frame: DataFrame, name: str, metrics: Mapping[str, str]) -> tuple[DataFrame, Metrics]:
    """``frame`` observed: ``metrics`` maps each name to a SQL aggregate over its rows (an
    integer). The observation is named ``name`` (unique among the observations of one
    action); an action must run the returned DataFrame, or one built on it by DataFrame
    operations, for the metrics to arrive."""
    spark = frame.sparkSession
    bridge = frames.bridge(spark)
    observation = bridge.observation(name)
    listed = [f"{sql} AS {quote_identifier(metric)}" for metric, sql in metrics.items()]
    observed = DataFrame(bridge.observe(frame._jdf, observation, json.dumps(listed)), spark)
    return observed, Metrics(spark, observation, tuple(metrics))
