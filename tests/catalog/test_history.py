"""The refresh history's store (``catalog/history.py``): records as files under the warehouse,
through the file-system layer (so on the test object store too, ``SPARKMV_TEST_FS=objstore``),
newest first, bounded by retention, removed with the view."""

from __future__ import annotations

from pyspark.sql import SparkSession
from sparkmv import fs
from sparkmv.catalog import history
from sparkmv.catalog.history import RefreshRecord, Status, Trigger
from sparkmv.identifiers import TableName


def record(view: TableName, ended: int, status: Status = Status.SUCCEEDED) -> RefreshRecord:
    return RefreshRecord(
        view=str(view),
        started_ms=ended - 10,
        ended_ms=ended,
        trigger=Trigger.STATEMENT.value,
        status=status.value,
        mode="INCREMENTAL",
        reason="r",
        base_versions={"db.t": ended},
        spark_jobs=1,
    )


def test_records_are_read_newest_first_and_bounded(spark: SparkSession, db: str) -> None:
    v, w = TableName("v", db), TableName("w", db)
    for ended in (1_000, 3_000, 2_000):
        history.append(spark, v, record(v, ended), retention=10)
    history.append(spark, w, record(w, 2_500, Status.FAILED), retention=10)
    assert [r.ended_ms for r in history.read(spark, v)] == [3_000, 2_000, 1_000]
    assert history.read(spark, v, limit=1) == [record(v, 3_000)]
    every = [(r.view, r.ended_ms) for r in history.read(spark, None) if r.view.startswith(db)]
    assert every == [(str(v), 3_000), (str(w), 2_500), (str(v), 2_000), (str(v), 1_000)]
    history.append(spark, v, record(v, 4_000), retention=2)  # the oldest two go
    assert [r.ended_ms for r in history.read(spark, v)] == [4_000, 3_000]
    history.append(spark, v, record(v, 5_000), retention=0)  # 0: nothing is recorded
    assert len(history.read(spark, v)) == 2
    history.remove(spark, v)
    assert history.read(spark, v) == []
    assert not fs.exists(spark, history.view_root(spark, v))
    assert [r.view for r in history.read(spark, w)] == [str(w)]
    history.remove(spark, w)


def test_a_record_round_trips_and_a_newer_format_is_skipped(spark: SparkSession, db: str) -> None:
    v = TableName("v", db)
    kept = record(v, 7_000)
    assert RefreshRecord.from_json(kept.to_json()) == kept
    newer = kept.to_json().replace('"format": 1', '"format": 99')
    assert RefreshRecord.from_json(newer) is None
    directory = history.view_root(spark, v)
    fs.publish_text(spark, f"{directory}/9999999999999-0-newer.json", newer)
    fs.publish_text(spark, f"{directory}/.stray.tmp", "half")  # a crashed writer's leftover
    history.append(spark, v, kept, retention=10)
    assert history.read(spark, v) == [kept]
    history.remove(spark, v)
