"""Metrics observed while a Spark action runs (``DataFrame.observe``): counts that cost no
job of their own.

Observed through the shim (``frames.bridge``): the observed DataFrame (its observation made
and kept in the JVM, found again by the DataFrame) and the metrics' values as JSON cost a py4j
round trip each, where PySpark's ``Observation`` and a ``Column`` per metric cost about
fifteen, and one more to release each JVM object Python held.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from sparkmv import frames
from sparkmv.identifiers import quote_identifier


class Metrics:
    """Integer metrics (by name) of an observed DataFrame, known once an action ran it."""

    def __init__(self, spark: SparkSession, observed: Any, names: tuple[str, ...]) -> None:
        self._spark = spark
        self._observed = observed  # the JVM's observed DataFrame: its observation's key
        self.names = names

    def get(self) -> dict[str, int] | None:
        """The metrics once an action that ran the observed DataFrame ended; None when none
        arrived, because Spark's optimizer replaced a plan it proved empty (e.g. one joined to
        an empty table) by an empty relation, observation included, or because no action that
        ended carried the observed plan. Never waits.
        """
        found = self._found()
        if not found:
            return None
        return {name: int(found.get(name) or 0) for name in self.names}

    def counts(self) -> dict[str, int]:
        """``get``, with every count zero when Spark pruned the observed plan; for metrics
        observed above everything an action runs (its rows pruned only when it has none).

        Fails (an internal error to the user) when no action that ended carried the observed
        plan: zeros then would be a guess.
        """
        found = self._found()
        if found is None:
            raise RuntimeError(f"no action carried the observed metrics {', '.join(self.names)}")
        return {name: int(found.get(name) or 0) for name in self.names}

    def _found(self) -> dict[str, Any] | None:
        """The metrics as observed (``{}``: pruned), or None when no action carried them."""
        found = frames.bridge(self._spark).metrics(self._observed)
        if found is None:
            return None
        values: dict[str, Any] = json.loads(str(found))
        return values


def observe(frame: DataFrame, name: str, metrics: Mapping[str, str]) -> tuple[DataFrame, Metrics]:
    """``frame`` observed: ``metrics`` maps each name to a SQL aggregate over its rows (an
    integer). The observation is named ``name`` (unique among the observations of one
    action); an action must run the returned DataFrame, or one built on it by DataFrame
    operations, for the metrics to arrive."""
    spark = frame.sparkSession
    listed = [f"{sql} AS {quote_identifier(metric)}" for metric, sql in metrics.items()]
    observed = frames.bridge(spark).observe(frame._jdf, name, json.dumps(listed))
    return DataFrame(observed, spark), Metrics(spark, observed, tuple(metrics))
