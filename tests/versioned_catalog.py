"""The test-only DSv2 catalogs of ``scala-shim/src/test/scala`` (``VersionedCatalog``), compiled
into a jar of their own under ``tests/.build/spark-<line>/`` (never into the product jar; one per
Spark line, as the shim's), rebuilt when their sources or the shim's jar change, and registered
in the tests' shared session.

``testcat``: in-memory versioned tables whose catalog answers Spark's changelog
(``CHANGES FROM VERSION a TO VERSION b``), standing in for Delta and Iceberg; ``plaincat``: the
same tables without a changelog. Spark 4.1 has no changelog API: there ``testcat`` is a second
``plaincat`` and the tests that read its changelog are skipped (``requires_changelog``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from sparkmv.config import DRIVER_CLASS_PATH_CONF
from sparkmv.jar import (
    COMMON_SOURCES,
    LINE_SOURCES_PREFIX,
    built_jar,
    jar_path,
    line_jar,
    spark_line,
    supported_spark_lines,
)

REPO = Path(__file__).resolve().parents[1]
TEST_SOURCES = REPO / "scala-shim" / "src" / "test"
SOURCES = TEST_SOURCES / COMMON_SOURCES
BUILD = REPO / "tests" / ".build"
CHANGELOG_LINE = "4.2"
"""The first Spark line with the changelog API (``TableCatalog.loadChangelog``)."""


def _line_key(line: str) -> tuple[int, ...]:
    return tuple(map(int, line.split(".")))


HAS_CHANGELOG = _line_key(spark_line()) >= _line_key(CHANGELOG_LINE)
requires_changelog = pytest.mark.skipif(
    not HAS_CHANGELOG,
    reason=f"Spark {spark_line()} has no changelog API (TableCatalog.loadChangelog is Spark "
    f"{CHANGELOG_LINE}'s): testcat answers no CHANGES FROM VERSION",
)
"""For a test that reads ``testcat``'s changelog."""


def line_sources(line: str | None = None) -> Path:
    """The test sources for Spark ``line`` (by default the installed pyspark's) beside the
    common ones: the directory of the newest line not newer than it, since the test catalogs
    differ only where an API appeared (``scala-spark-4.2``: the changelog, for 4.2 and every
    later line), not per line as the shim's compat sources do."""
    line = line or spark_line()
    older = [
        known
        for known in supported_spark_lines(TEST_SOURCES)
        if _line_key(known) <= _line_key(line)
    ]
    if not older:
        raise RuntimeError(f"no test sources under {TEST_SOURCES} for Spark {line}")
    return TEST_SOURCES / f"{LINE_SOURCES_PREFIX}{older[-1]}"


CHANGELOG_CATALOG = "testcat"
PLAIN_CATALOG = "plaincat"
CATALOG_CLASSES = {
    CHANGELOG_CATALOG: "io.sparkmv.testing.ChangelogCatalog",
    PLAIN_CATALOG: "io.sparkmv.testing.VersionedCatalog",
}
Rows = Sequence[tuple[Any, ...]]


def session_conf() -> dict[str, str]:
    """What the shared session needs for the test catalogs: their jar on the driver's class
    path (a catalog class is loaded by the driver's class loader, so a jar added at run time
    would not do), and each catalog registered (loaded on first use)."""
    jar = built_jar(
        line_jar(BUILD, "sparkmv-test-catalog.jar"),
        (SOURCES, line_sources()),
        (Path(jar_path()),),
    )
    return {
        "spark.jars": jar,
        DRIVER_CLASS_PATH_CONF: jar,
        **{f"spark.sql.catalog.{name}": cls for name, cls in CATALOG_CLASSES.items()},
    }


def commit(
    spark: SparkSession,
    table: str,
    schema: str,
    inserted: Rows = (),
    deleted: Rows = (),
    updated: Sequence[tuple[tuple[Any, ...], tuple[Any, ...]]] = (),
) -> int:
    """Commit one version of the test catalog's ``table`` (``catalog.namespace.name``, of
    columns ``schema``): ``deleted`` removes one copy of each of its rows, each ``(old, new)``
    of ``updated`` turns one copy of ``old`` into ``new`` (pre- and post-image), ``inserted``
    adds rows. Returns the version."""

    def frame(rows: Rows) -> Any:
        return spark.createDataFrame(list(rows), schema)._jdf

    jvm: Any = spark._jvm
    return int(
        jvm.io.sparkmv.testing.VersionedCatalog.commit(
            spark._jsparkSession,
            table,
            frame(inserted),
            frame(deleted),
            frame([old for old, _ in updated]),
            frame([new for _, new in updated]),
        )
    )


def expire_changes(spark: SparkSession, table: str, through: int) -> None:
    """Make the changes of versions ``<= through`` of ``table`` unreadable (retention)."""
    jvm: Any = spark._jvm
    jvm.io.sparkmv.testing.VersionedCatalog.expireChanges(spark._jsparkSession, table, through)
