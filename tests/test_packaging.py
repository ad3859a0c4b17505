"""``pip install ./python`` (or a built wheel) gives a package that builds its jar on first
use, offline, as a checkout does: the wheel carries the shim's Scala sources."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from sparkmv import jar

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "scala-shim" / "src" / "main"  # the common sources and every line's


def test_a_wheel_carries_the_shims_sources(tmp_path: Path) -> None:
    # Built from a copy: setuptools builds in the source tree, leaving build/ behind.
    source = tmp_path / "python"
    ignored = shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "jars")
    shutil.copytree(ROOT / "python", source, ignore=ignored)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), "."],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = tmp_path.glob("sparkmv-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"sparkmv/shim/{p.relative_to(SOURCES)}" for p in SOURCES.rglob("*.scala")}
    assert expected and expected <= names
    assert {"sparkmv/py.typed", "sparkmv/resources/log4j2.properties"} <= names


def test_the_jar_is_built_in_the_users_cache_when_the_package_is_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jar.os, "access", lambda path, mode: False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert jar._jar_dir() == tmp_path / "sparkmv" / "jars"
    monkeypatch.undo()
    assert jar._jar_dir() == Path(jar.__file__).resolve().parent / "jars"
