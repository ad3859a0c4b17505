"""Metrics observed while a Spark action runs (``DataFrame.observe``): counts that cost no
job of their own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import Observation


def observed_counts(observation: Observation, names: Sequence[str]) -> dict[str, int]:
    """The integer metrics of ``observation`` after its action ran; every count zero when
    no metrics arrived (``observed_metrics``)."""
    found = observed_metrics(observation, names)
    return dict.fromkeys(names, 0) if found is None else found


def observed_metrics(observation: Observation, names: Sequence[str]) -> dict[str, int] | None:
    """The integer metrics of ``observation`` after its action ran, None when none arrived.

    Spark's optimizer replaces a plan it proves empty (e.g. over an empty table) by an empty
    relation, observation included; no metrics arrive then.
    """
    jvm_row: Any = observation._jo.getRow() if observation._jo is not None else None
    if jvm_row is None or jvm_row.length() == 0:
        return None
    metrics = observation.get
    return {name: int(metrics[name] or 0) for name in names}
