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
from pathlib import Path

from sparkmv.errors import error_conditions_json

JAR_NAME = "sparkmv-shim.jar"
ERROR_CONDITIONS_RESOURCE = "io/sparkmv/error-conditions.json"
"""sparkmv's error classes inside the jar (``errors.error_conditions_json``), read by the
shim's ``SparkMvErrors``."""
_PACKAGE_DIR = Path(__file__).resolve().parent
_SOURCES_DIR = _PACKAGE_DIR / "shim"
"""The shim's Scala sources: in a checkout a link to ``scala-shim/src/main/scala``, in an
installed package (a wheel) a copy, so that ``pip install ./python`` builds the jar on first
use as a checkout does."""


def _jar_dir() -> Path:
    """Where the jar is built: next to the package, or in the user's cache when the package
    directory is read-only (a system-wide install)."""
    beside = _PACKAGE_DIR / "jars"
    if os.access(beside if beside.is_dir() else _PACKAGE_DIR, os.W_OK):
        return beside
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "sparkmv" / "jars"


class JarBuildError(RuntimeError):
    """The shim could not be compiled; the message carries the compiler's output."""


def jar_path() -> str:
    """Absolute path of the extension jar, building it first if missing or stale."""
    jar = _jar_dir() / JAR_NAME
    if not _SOURCES_DIR.is_dir():
        if jar.is_file():
            return str(jar)
        raise JarBuildError(f"{jar} is missing and the shim sources are not available")
    return built_jar(jar, _SOURCES_DIR)


def built_jar(jar: Path, sources: Path, classpath: tuple[Path, ...] = ()) -> str:
    """``jar`` compiled from the Scala files under ``sources`` against pyspark's jars and
    ``classpath``: rebuilt when the digest of those sources (and of the ``classpath`` jars)
    differs from the one stamped beside it (``<jar>.sha256``); the jar also carries the error
    classes of ``sparkmv.errors`` (``ERROR_CONDITIONS_RESOURCE``). Also builds the test jar of
    the shim's test sources (``tests/test_jar.py``), never shipped."""
    digest = _sources_digest(sources, classpath)
    stamp = jar.with_suffix(".sha256")
    if jar.is_file() and stamp.is_file() and stamp.read_text().strip() == digest:
        return str(jar)
    _build(jar, _scala_sources(sources), classpath)
    stamp.write_text(digest + "\n")
    return str(jar)


def _scala_sources(sources: Path) -> list[Path]:
    return sorted(sources.rglob("*.scala"))


def _sources_digest(sources: Path, classpath: tuple[Path, ...]) -> str:
    sha = hashlib.sha256()
    for source in _scala_sources(sources):
        sha.update(str(source.relative_to(sources)).encode())
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
