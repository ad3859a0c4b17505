"""Delta Lake in the test session: `make test-formats` resolves Delta's jars with Maven
(``tests/formats/delta-pom.xml``) into a folder and names it in ``SPARKMV_DELTA_JARS``; the
session then loads them (``spark.jars``, not Ivy's ``spark.jars.packages``) with Delta's
extension and its catalog as the session catalog. Without it the Delta tests skip."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

JARS_ENV = "SPARKMV_DELTA_JARS"
EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def jars() -> list[str]:
    """Delta's jars as `make test-formats` resolved them; none outside that target."""
    folder = os.environ.get(JARS_ENV)
    return sorted(str(jar) for jar in Path(folder).glob("*.jar")) if folder else []


def enabled() -> bool:
    return bool(jars())


def with_delta(conf: dict[str, str]) -> dict[str, str]:
    """``conf`` and what loads Delta, its jars added to those ``conf`` lists (``conf`` as it is
    when Delta's jars were not resolved)."""
    if not enabled():
        return conf
    listed = [jar for jar in conf.get("spark.jars", "").split(",") if jar]
    return {
        **conf,
        "spark.jars": ",".join([*listed, *jars()]),
        "spark.sql.extensions": EXTENSION,
        "spark.sql.catalog.spark_catalog": CATALOG,
    }


requires_delta = pytest.mark.skipif(
    not enabled(), reason="Delta Lake runs on Spark 4.2 with its jars: `make test-formats`"
)
