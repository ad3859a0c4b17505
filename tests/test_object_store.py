"""sparkmv with its warehouse on an object store (issue 53): ``objstore://``, the test-only
Hadoop file system of ``object_store`` (no atomic rename, no hard links, no append; a
create-if-absent is the one atomic primitive), standing in for S3, GCS and ABFS.

The commit points sparkmv relies on there (``docs/cluster.md``, "What sparkmv needs from the
file system"): a change-log manifest is published by create-if-absent (``fs.publish_text``),
so of two writers of one version exactly one commits; a refresh commits by the metastore's
compare-and-set. The first tests check the store behaves as one and that publishing is
exclusive on it; the last runs a sample of the suite (the capture tests, a crash test per
protocol, the seeded differential fleet) in a child pytest whose every warehouse, its own
and its child processes', is on the store (``SPARKMV_TEST_FS=objstore``): a process holds one
Spark context, whose warehouse is fixed when it starts. ``SPARKMV_OBJECT_STORE_SAMPLE`` (test
ids, space-separated, or ``full``) runs another sample.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import object_store
import pytest
from conftest import REPO, python_env
from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession
from sparkmv import fs
from sparkmv.errors import ErrorClass, SparkMvError

SAMPLE = (
    "tests/capture/test_write_capture.py",
    "tests/catalog/test_history.py",
    "tests/apply/test_atomicity.py::test_crash_during_refresh_recovers[rows]",
    "tests/test_differential_fleet.py",
)
"""What ``make test`` runs on the store (kept small: a few minutes): captured appends,
overwrites and copy-on-write writes, the refresh history's files, a crash before and after a
refresh's commit, and one
seeded fleet of random views (every view checked against its query after every refresh).
``FULL_SAMPLE`` (the capture and crash tests, all of which passed on the store) runs with
``SPARKMV_OBJECT_STORE_SAMPLE=full``."""
FULL_SAMPLE = (
    "tests/capture",
    "tests/catalog/test_history.py",
    "tests/apply/test_atomicity.py",
    "tests/test_persistence.py",
    "tests/test_differential_fleet.py",
)
SAMPLE_ENV = "SPARKMV_OBJECT_STORE_SAMPLE"
TIMEOUT = 1800  # seconds


def hadoop_path(spark: SparkSession, path: str) -> tuple[Any, Any]:
    return fs.filesystem(spark, path)


def test_the_store_has_no_atomic_rename_no_append_and_a_conditional_put(
    spark: SparkSession,
) -> None:
    """What the tests on it rely on: a file is created once (the second create-if-absent
    fails), rename never replaces a file and moves a tree by copying it, and there is no
    append."""
    base = f"objstore://semantics/{uuid.uuid4().hex}"
    store, first = hadoop_path(spark, f"{base}/a/one")
    stream = store.create(first, False)
    stream.write(b"1")
    stream.close()
    with pytest.raises(Py4JJavaError, match="FileAlreadyExistsException"):
        store.create(first, False)
    _, second = hadoop_path(spark, f"{base}/a/two")
    store.create(second, False).close()
    assert not store.rename(second, first), "a rename replaced an existing file"
    with pytest.raises(Exception, match="append is not supported"):
        store.append(first)
    _, moved = hadoop_path(spark, f"{base}/b")
    assert store.rename(first.getParent(), moved)
    assert fs.list_names(spark, f"{base}/b") == ["one", "two"]
    assert not fs.exists(spark, f"{base}/a")
    assert fs.read_text(spark, f"{base}/b/one") == "1"


def bucket(spark: SparkSession, **conf: str) -> str:
    """A fresh bucket of the store, its file system made with the Hadoop ``conf`` (Hadoop
    makes one per scheme and authority, from the configuration of the moment)."""
    hadoop: Any = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in conf.items():
        hadoop.set(key, value)
    try:
        name = f"objstore://b{uuid.uuid4().hex[:12]}"
        fs.exists(spark, f"{name}/")
    finally:
        for key in conf:
            hadoop.unset(key)
    return name


SLOW_RENAMES = {"fs.objstore.rename.delayMs": "20"}
AS_HDFS = {"fs.objstore.hdfs": "true"}  # files visible while written, an atomic file rename


@pytest.mark.parametrize("where", ["objects", "hdfs", "local-escaped"])
def test_of_writers_publishing_one_file_at_once_exactly_one_wins(
    spark: SparkSession, tmp_path: Path, where: str
) -> None:
    """``fs.publish_text`` is the change log's commit point: of concurrent writers of one
    manifest exactly one gets True, and the file holds its text, whole. ``objects``: the
    store, whose renames are slowed (copies 20 ms apart) so that a publish by
    check-then-rename would let several win (all six did); ``hdfs``: the store made to behave
    as HDFS (its streams can ``hflush``, so a file is visible while written, and a file's
    rename is atomic and refuses to replace), published by rename; ``local-escaped``: a local path
    Hadoop decodes (``%``), published by the JVM rather than by the driver's hard link."""
    if where == "objects":
        directory = f"{bucket(spark, **SLOW_RENAMES)}/commits"
    elif where == "hdfs":
        directory = f"{bucket(spark, **SLOW_RENAMES, **AS_HDFS)}/commits"
    else:
        directory = f"file:{tmp_path}/a%20b/commits"
    target = f"{directory}/00000000000000000001.json"
    results: dict[int, bool] = {}
    start = threading.Barrier(6)

    def publish(writer: int) -> None:
        start.wait()
        results[writer] = fs.publish_text(spark, target, f'{{"writer": {writer}}}')

    threads = [threading.Thread(target=publish, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [writer for writer, won in results.items() if won]
    assert len(results) == 6 and len(winners) == 1, results
    assert fs.read_text(spark, target) == f'{{"writer": {winners[0]}}}'
    assert fs.list_names(spark, directory) == ["00000000000000000001.json"]


def test_a_file_system_without_an_atomic_create_if_absent_is_refused(
    spark: SparkSession,
) -> None:
    """Files visible while written and a rename that replaces (a POSIX-like file system
    reached through Hadoop): no way to publish a manifest once, so sparkmv refuses to keep a
    change log there (the first publish of a log is its START commit, at CREATE), before
    anything is written, rather than lose a write to a race."""
    where = bucket(spark, **AS_HDFS, **{"fs.objstore.rename.replaces": "true"})
    with pytest.raises(SparkMvError) as refused:
        fs.publish_text(spark, f"{where}/commits/00000000000000000001.json", "{}")
    assert refused.value.error_class is ErrorClass.FILE_SYSTEM_CANNOT_COMMIT
    assert fs.list_names(spark, f"{where}/commits") == []


def test_a_sample_of_the_suite_passes_with_the_warehouse_on_an_object_store(
    tmp_path: Path,
) -> None:
    """The sample (``SAMPLE``) in a child pytest with ``SPARKMV_TEST_FS=objstore``: nothing
    a write logged is lost or applied twice, and crashes recover, where renames are copies
    and the driver has no local file to shortcut."""
    chosen = os.environ.get(SAMPLE_ENV, "").split()
    sample = list(FULL_SAMPLE) if chosen == ["full"] else chosen or list(SAMPLE)
    env = python_env()
    env[object_store.TEST_FS_ENV] = object_store.SCHEME
    if chosen != ["full"]:  # one fleet on the store in ``make test``: the sample's longest part
        env.setdefault("SPARKMV_FLEET_EXAMPLES", "1")
    command = [sys.executable, "-m", "pytest", "-q", *sample]
    child = subprocess.run(
        [*command, f"--basetemp={tmp_path / 'child'}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    output = child.stdout[-20_000:] + child.stderr[-5_000:]
    assert child.returncode == 0, output
    assert " passed" in child.stdout, output
