"""The test-only DSv2 catalogs of ``scala-shim/src/test/scala`` (``VersionedCatalog``), compiled
into a jar of their own under ``tests/.build/spark-<line>/`` (never into the product jar; one per
Spark line, as the shim's), rebuilt when their sources or the shim's jar change, and registered
in the tests' shared session.

``testcat``: in-memory versioned tables whose catalog answers Spark's changelog
(``CHANGES FROM VERSION a TO VERSION b``), standing in for Delta and Iceberg; ``plaincat``: the
same tables without a changelog.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from sparkmv.config import DRIVER_CLASS_PATH_CONF
from sparkmv.jar import built_jar, jar_path, line_jar

REPO = Path(__file__).resolve().parents[1]
SOURCES = REPO / "scala-shim" / "src" / "test" / "scala"
BUILD = REPO / "tests" / ".build"

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
    jar = built_jar(line_jar(BUILD, "sparkmv-test-catalog.jar"), (SOURCES,), (Path(jar_path()),))
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
