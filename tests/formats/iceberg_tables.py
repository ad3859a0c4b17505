"""Apache Iceberg in the test session: `make test-formats` resolves Iceberg's Spark runtime
(for the Spark 4.1 line: Iceberg serves no runtime for a newer one) with Maven
(``tests/formats/iceberg-pom.xml``) into a folder named in ``SPARKMV_ICEBERG_JARS``; the
session then loads it (``spark.jars``) with Iceberg's extension and ``ice``, a Hadoop catalog
of Iceberg tables under the session's warehouse. Without it the Iceberg tests skip."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

JARS_ENV = "SPARKMV_ICEBERG_JARS"
EXTENSION = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
CATALOG = "ice"


def jars() -> list[str]:
    """Iceberg's jars as `make test-formats` resolved them; none outside that target."""
    folder = os.environ.get(JARS_ENV)
    return sorted(str(jar) for jar in Path(folder).glob("*.jar")) if folder else []


def enabled() -> bool:
    return bool(jars())


def catalog_conf(warehouse: Path | str) -> dict[str, str]:
    """The conf of ``ice``, a Hadoop catalog of Iceberg tables under ``warehouse``."""
    return {
        f"spark.sql.catalog.{CATALOG}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{CATALOG}.type": "hadoop",
        f"spark.sql.catalog.{CATALOG}.warehouse": str(warehouse),
    }


def with_iceberg(conf: dict[str, str], warehouse: Path) -> dict[str, str]:
    """``conf`` and what loads Iceberg with ``ice`` at ``warehouse`` (``conf`` as it is when
    Iceberg's jars were not resolved)."""
    if not enabled():
        return conf
    listed = [jar for jar in conf.get("spark.jars", "").split(",") if jar]
    return {
        **conf,
        "spark.jars": ",".join([*listed, *jars()]),
        "spark.sql.extensions": ",".join(
            [name for name in (conf.get("spark.sql.extensions"), EXTENSION) if name]
        ),
        **catalog_conf(warehouse),
    }


requires_iceberg = pytest.mark.skipif(
    not enabled(), reason="Iceberg runs on Spark 4.1 with its runtime jar: `make test-formats`"
)
