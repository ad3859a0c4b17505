"""The Spark lines sparkmv supports: one directory of line-specific shim sources each
(``scala-shim/src/main/scala-spark-<line>``), the list that ``sparkmv.jar`` compiles from and
that ``python/pyproject.toml``'s pyspark requirement must agree with."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from sparkmv import jar

ROOT = Path(__file__).resolve().parents[1]
MAIN = ROOT / "scala-shim" / "src" / "main"


def test_pyprojects_pyspark_requirement_admits_exactly_the_supported_lines() -> None:
    project = tomllib.loads((ROOT / "python" / "pyproject.toml").read_text())["project"]
    (pyspark,) = [
        Requirement(d) for d in project["dependencies"] if Requirement(d).name == "pyspark"
    ]
    lines = jar.supported_spark_lines(MAIN)
    for line in lines:
        assert pyspark.specifier.contains(f"{line}.0"), line
    oldest_major, oldest_minor = map(int, lines[0].split("."))
    newest_major, newest_minor = map(int, lines[-1].split("."))
    assert not pyspark.specifier.contains(f"{oldest_major}.{oldest_minor - 1}.9")
    assert not pyspark.specifier.contains(f"{newest_major}.{newest_minor + 1}.0")


def test_every_line_defines_the_same_compat_files() -> None:
    # A trait one line's directory has and another's lacks would compile on one line only.
    def files(line: str) -> set[Path]:
        root = MAIN / f"{jar.LINE_SOURCES_PREFIX}{line}"
        return {p.relative_to(root) for p in root.rglob("*.scala")}

    first, *others = jar.supported_spark_lines(MAIN)
    assert files(first)
    for line in others:
        assert files(line) == files(first), line


def test_an_unsupported_line_is_refused_naming_the_supported_ones() -> None:
    assert jar.spark_line("4.0.1") == "4.0"
    with pytest.raises(
        jar.JarBuildError,
        match=r"line 4\.0 is not supported; sparkmv supports Spark 4\.1, 4\.2, 4\.3$",
    ):
        jar.shim_sources("4.0", MAIN)


def test_the_installed_pysparks_line_compiles_its_own_directory() -> None:
    common, specific = jar.shim_sources(sources=MAIN)
    assert common == MAIN / jar.COMMON_SOURCES
    assert specific.name == f"{jar.LINE_SOURCES_PREFIX}{jar.spark_line()}"
    assert Path(jar.jar_path()).parent.name == f"spark-{jar.spark_line()}"
