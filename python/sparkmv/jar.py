"""The shim jar: found next to the package, rebuilt offline when its Scala sources change.

There is no Maven Central and no sbt here, but pyspark's wheel ships the Scala compiler
(``scala-compiler``, ``scala-library``, ``scala-reflect``) and every Spark jar in
``pyspark/jars/``; that is all a compile of the shim needs (docs/development.md).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from sparkmv.errors import error_conditions_json

JAR_NAME = "sparkmv-shim.jar"
ERROR_CONDITIONS_RESOURCE = "io/sparkmv/error-conditions.json"
"""sparkmv's error classes inside the jar (``errors.error_conditions_json``), read by the
shim's ``SparkMvErrors``."""
_PACKAGE_DIR = Path(__file__).resolve().parent
_SOURCES_DIR = _PACKAGE_DIR / "shim"
"""The shim's Scala sources: in a checkout a link to ``scala-shim/src/main``, in an installed
package (a wheel) a copy, so that ``pip install ./python`` builds the jar on first use as a
checkout does. It holds ``COMMON_SOURCES`` and one ``LINE_SOURCES_PREFIX<line>`` directory per
supported Spark line."""
COMMON_SOURCES = "scala"
"""The directory of the shim's sources that compile against every supported Spark line."""
LINE_SOURCES_PREFIX = "scala-spark-"
"""``scala-spark-<line>``: the only sources that differ between Spark lines
(small compat traits, e.g. ``ParserCompat``), one directory per line. Those directories are
the one list of the lines sparkmv supports (``supported_spark_lines``)."""


def spark_line(version: str | None = None) -> str:
    """The Spark line (``major.minor``) of ``version``, by default the installed pyspark's:
    what the shim's line-specific sources, and its jar, are chosen by."""
    if version is None:
        import pyspark

        version = pyspark.__version__
    major, minor, *_ = version.split(".")
    return f"{major}.{minor}"


def supported_spark_lines(sources: Path = _SOURCES_DIR) -> tuple[str, ...]:
    """The Spark lines the shim has sources for, oldest first."""
    lines = (
        p.name.removeprefix(LINE_SOURCES_PREFIX) for p in sources.glob(f"{LINE_SOURCES_PREFIX}*")
    )
    return tuple(sorted(lines, key=lambda line: tuple(map(int, line.split(".")))))


def shim_sources(line: str | None = None, sources: Path = _SOURCES_DIR) -> tuple[Path, Path]:
    """The source directories of the shim for Spark ``line`` (by default the installed
    pyspark's): the common ones and that line's; a line without sources is refused here,
    naming the supported ones, rather than failing in scalac on a missing Spark API."""
    line = line or spark_line()
    specific = sources / f"{LINE_SOURCES_PREFIX}{line}"
    if not specific.is_dir():
        supported = ", ".join(supported_spark_lines(sources))
        raise JarBuildError(
            f"pyspark's Spark line {line} is not supported; sparkmv supports Spark {supported}"
        )
    return sources / COMMON_SOURCES, specific


def _jar_dir() -> Path:
    """Where the jars are built: next to the package, or in the user's cache when the package
    directory is read-only (a system-wide install); one subdirectory per Spark line
    (``jar_path``)."""
    beside = _PACKAGE_DIR / "jars"
    if os.access(beside if beside.is_dir() else _PACKAGE_DIR, os.W_OK):
        return beside
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "sparkmv" / "jars"


class JarBuildError(RuntimeError):
    """The shim could not be compiled; the message carries the compiler's output."""


def jar_path() -> str:
    """Absolute path of the extension jar for the installed pyspark's Spark line, building it
    first if missing or stale. Each line has its own jar (``jars/spark-<line>/``), so two
    virtualenvs over one checkout, on different lines, never rebuild or load each other's."""
    jar = line_jar(_jar_dir(), JAR_NAME)
    if not _SOURCES_DIR.is_dir():
        if jar.is_file():
            return str(jar)
        raise JarBuildError(f"{jar} is missing and the shim sources are not available")
    return built_jar(jar, shim_sources())


def line_jar(directory: Path, name: str) -> Path:
    """Where the jar ``name``, compiled against the installed pyspark, goes under
    ``directory``: in that Spark line's subdirectory."""
    return directory / f"spark-{spark_line()}" / name


def built_jar(jar: Path, sources: Sequence[Path], classpath: tuple[Path, ...] = ()) -> str:
    """``jar`` compiled from the Scala files under the directories ``sources`` against
    pyspark's jars and ``classpath``: rebuilt when the digest of those sources (and of the
    ``classpath`` jars) differs from the one stamped beside it (``<jar>.sha256``); the jar also
    carries the error classes of ``sparkmv.errors`` (``ERROR_CONDITIONS_RESOURCE``). Also
    builds the test jar of the shim's test sources (``tests/versioned_catalog.py``), never
    shipped."""
    digest = _sources_digest(sources, classpath)
    stamp = jar.with_suffix(".sha256")
    if jar.is_file() and stamp.is_file() and stamp.read_text().strip() == digest:
        return str(jar)
    _build(jar, _scala_sources(sources), classpath)
    stamp.write_text(digest + "\n")
    return str(jar)


def _scala_sources(sources: Sequence[Path]) -> list[Path]:
    return sorted(path for root in sources for path in root.rglob("*.scala"))


def _sources_digest(sources: Sequence[Path], classpath: tuple[Path, ...]) -> str:
    sha = hashlib.sha256()
    for root in sources:
        for source in sorted(root.rglob("*.scala")):
            # With the root's own name: the same file in another line's directory differs.
            sha.update(str(source.relative_to(root.parent)).encode())
            sha.update(source.read_bytes())
    sha.update(error_conditions_json().encode())
    for jar in classpath:
        sha.update(jar.read_bytes())
    return sha.hexdigest()


def pyspark_jars_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"


def _java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise JarBuildError("no `java` found; install a Java 17 runtime or set JAVA_HOME")
    return found


def _compiler_classpath(jars: Path) -> str:
    needed = ("scala-compiler", "scala-library", "scala-reflect")
    parts = []
    for name in needed:
        matches = sorted(jars.glob(f"{name}-2.13*.jar"))
        if not matches:
            raise JarBuildError(f"{name} is not in {jars}; is pyspark 4.x installed?")
        parts.append(str(matches[-1]))
    return os.pathsep.join(parts)


def _build(jar: Path, sources: list[Path], classpath: tuple[Path, ...]) -> None:
    jars = pyspark_jars_dir()
    with tempfile.TemporaryDirectory(prefix="sparkmv-shim-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        command = [
            _java(),
            "-cp",
            _compiler_classpath(jars),
            "scala.tools.nsc.Main",
            "-nowarn",
            "-classpath",
            os.pathsep.join([str(jars / "*"), *map(str, classpath)]),
            "-d",
            str(classes),
            *map(str, sources),
        ]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise JarBuildError("scalac failed:\n" + result.stdout + result.stderr)
        jar.parent.mkdir(parents=True, exist_ok=True)
        partial = jar.parent / f".{jar.name}.{os.getpid()}.partial"
        _write_jar(classes, partial)
        # Replace atomically so a concurrent reader never loads a half-written jar.
        os.replace(partial, jar)


def _write_jar(classes: Path, target: Path) -> None:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: sparkmv\n")
        for path in sorted(classes.rglob("*.class")):
            archive.write(path, str(path.relative_to(classes)))
        archive.writestr(ERROR_CONDITIONS_RESOURCE, error_conditions_json())
