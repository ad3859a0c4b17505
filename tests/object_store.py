"""The test-only object-store file system (``ObjectStoreFileSystem`` in
``scala-shim/src/test/scala``, compiled into the test jar of ``versioned_catalog``, never
shipped): ``objstore://bucket/key`` over the local directory ``<root>/bucket/key``, with an
object store's semantics (no atomic rename, no hard links, no append; create-if-absent is
the one atomic primitive).

``SPARKMV_TEST_FS=objstore`` puts the warehouse of every session the tests start on it: the
shared session's (``conftest.spark``) and, through ``run_child``, the child processes'
(``conftest.run_crash_step``). A local warehouse directory ``W`` becomes the bucket
``objstore://W.name/`` of the root ``W.parent``, so its files are where a test of the local
file system looks for them, while every access by Spark and sparkmv goes through the store's
semantics. The Derby catalog stays a local directory under ``W``.
``tests/test_object_store.py`` runs a sample of the suite that way.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path
from typing import Any

SCHEME = "objstore"
FILE_SYSTEM_CLASS = "io.sparkmv.testing.ObjectStoreFileSystem"
ROOT_CONF = "fs.objstore.root"
TEST_FS_ENV = "SPARKMV_TEST_FS"
"""``objstore``: the tests' warehouses are on the object-store file system; unset: local."""
CHILD = Path(__file__).resolve()
"""``python object_store.py <script or -c code> args...``: the script, its sessions'
warehouse on the store when ``SPARKMV_TEST_FS=objstore`` (``run_child``)."""


def enabled() -> bool:
    """Whether this run's warehouses are on the object-store file system."""
    return os.environ.get(TEST_FS_ENV) == SCHEME


def session_conf(root: Path) -> dict[str, str]:
    """What a session needs to serve ``objstore://`` paths from the local directory ``root``
    (the class is in the test jar, which ``versioned_catalog.session_conf`` adds)."""
    return {
        f"spark.hadoop.fs.{SCHEME}.impl": FILE_SYSTEM_CLASS,
        f"spark.hadoop.{ROOT_CONF}": str(root),
    }


def warehouse_uri(warehouse: Path) -> str:
    """The store's URI of the local warehouse directory ``warehouse``."""
    return f"{SCHEME}://{warehouse.resolve().name}/"


def warehouse_conf(warehouse: Path) -> dict[str, str]:
    """``session_conf`` with the warehouse ``warehouse`` (a local directory) on the store."""
    root = warehouse.resolve().parent
    return {**session_conf(root), "spark.sql.warehouse.dir": warehouse_uri(warehouse)}


def local_path(path: str, root: Path) -> Path:
    """The local file behind ``path`` (``objstore://bucket/key`` of ``root``, or ``file:``)."""
    prefix = f"{SCHEME}://"
    if path.startswith(prefix):
        bucket, _, key = path.removeprefix(prefix).partition("/")
        return root / bucket / key
    return Path(path.removeprefix("file:"))


def run_child(arguments: list[str]) -> None:
    """Run ``arguments`` (``-c code args...`` or ``script args...``) as ``python`` would,
    with ``sparkmv.session(warehouse)`` putting ``warehouse`` on the store when enabled: the
    crash tests' child scripts stay as they are."""
    import sparkmv
    import versioned_catalog

    if enabled():
        plain = sparkmv.session

        def on_store(warehouse_dir: Any = None, **conf: str) -> Any:
            warehouse = Path(warehouse_dir or "spark-warehouse")
            store = {**versioned_catalog.session_conf(), **warehouse_conf(warehouse)}
            return plain(warehouse_dir, **{**store, **conf})

        sparkmv.session = on_store  # type: ignore[assignment]
    if arguments[0] == "-c":
        sys.argv = ["-c", *arguments[2:]]
        exec(compile(arguments[1], "<string>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = arguments
        sys.path[0] = str(Path(arguments[0]).resolve().parent)
        runpy.run_path(arguments[0], run_name="__main__")


if __name__ == "__main__":
    run_child(sys.argv[1:])
