"""The change log: net changes between any two versions equal the difference of snapshots.

For every pair of versions a < b: ``net_changes(a, b)`` is the Z-set ``T_b − T_a`` of the
table's states, i.e. ``T_b EXCEPT ALL T_a`` with weight +count and ``T_a EXCEPT ALL T_b``
with weight −count (Hanson §2.2 net changes).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import spark_examples, z_difference, zset_counter
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql.types import IntegerType, StringType, StructField, StructType
from sparkmv.capture.change_log import ChangeLog, ConcurrentCommitError, FileRef
from sparkmv.capture.source import ChangeRangeError

SCHEMA = StructType([StructField("k", IntegerType()), StructField("v", StringType())])
Row = tuple[int | None, str | None]

rows = st.lists(
    st.tuples(st.one_of(st.none(), st.integers(0, 3)), st.sampled_from([None, "a", "b"])),
    max_size=5,
)


def as_counter(spark: SparkSession, log: ChangeLog, start: int, end: int) -> Counter[Row]:
    return zset_counter(log.net_changes(start, end))  # type: ignore[return-value]


@settings(max_examples=spark_examples(6))
@given(writes=st.lists(st.tuples(rows, st.lists(st.integers(0, 10), max_size=3)), max_size=4))
def test_net_changes_equal_snapshot_difference(
    spark: SparkSession, tmp_path: Path, writes: list[tuple[list[Row], list[int]]]
) -> None:
    """Random writes, each inserting rows (duplicates, NULLs) and deleting existing ones."""
    log = ChangeLog(spark, str(tmp_path / f"log{len(list(tmp_path.iterdir()))}"), SCHEMA)
    states: list[Counter[Row]] = [Counter()]
    for inserted, delete_picks in writes:
        current = list(states[-1].elements())
        deleted = [current[i % len(current)] for i in delete_picks] if current else []
        deleted = list((Counter(deleted) & states[-1]).elements())  # only rows that exist
        log.commit(
            "WRITE",
            None,
            inserted_rows=spark.createDataFrame(inserted, SCHEMA),
            deleted_rows=spark.createDataFrame(deleted, SCHEMA),
        )
        states.append(states[-1] - Counter(deleted) + Counter(inserted))
    assert log.current_version() == len(writes)
    for start in range(len(states)):
        for end in range(start, len(states)):
            expected = z_difference(states[end], states[start])
            assert as_counter(spark, log, start, end) == expected, (start, end)


def test_referenced_files_are_read_with_the_partition_values_of_their_refs(
    spark: SparkSession, db: str
) -> None:
    spark.sql("CREATE TABLE p (v STRING, k INT) USING parquet PARTITIONED BY (k)")
    location = spark.sql("DESCRIBE TABLE EXTENDED p").where("col_name = 'Location'").first()
    assert location is not None
    root = location.data_type
    spark.sql("INSERT INTO p VALUES ('x', 1), ('y', 2)")
    before = set(spark.table("p").inputFiles())
    spark.sql("INSERT INTO p VALUES ('z', 2), ('y', 2)")
    added = sorted(set(spark.table("p").inputFiles()) - before)
    schema = spark.table("p").schema
    log = ChangeLog(spark, f"{root}_log", schema)
    refs = [FileRef(path, (("k", path.split("k=")[1].split("/")[0]),)) for path in added]
    log.commit("INSERT", None, inserted_files=refs)
    assert zset_counter(log.net_changes(0, 1)) == Counter({("z", 2): 1, ("y", 2): 1})


def test_ranges_outside_the_log_and_compaction(spark: SparkSession, tmp_path: Path) -> None:
    log = ChangeLog(spark, str(tmp_path / "log"), SCHEMA)
    assert log.current_version() == 0
    assert log.net_changes(0, 0).count() == 0
    for value in ("a", "b", "c"):
        log.commit("INSERT", None, inserted_rows=spark.createDataFrame([(1, value)], SCHEMA))
    with pytest.raises(ChangeRangeError):
        log.net_changes(0, 4)
    log.compact(through=2)
    assert log.earliest_readable() == 2
    assert log.current_version() == 3
    with pytest.raises(ChangeRangeError):
        log.net_changes(1, 3)
    assert as_counter(spark, log, 2, 3) == Counter({(1, "c"): 1})
    assert (
        log.commit("DELETE", None, deleted_rows=spark.createDataFrame([(1, "a")], SCHEMA)).version
        == 4
    )


def test_logs_listed_together_answer_as_each_lists_alone(
    spark: SparkSession, tmp_path: Path
) -> None:
    first = ChangeLog(spark, str(tmp_path / "first"), SCHEMA)
    second = ChangeLog(spark, str(tmp_path / "second"), SCHEMA)
    for value in ("a", "b"):
        first.commit("INSERT", None, inserted_rows=spark.createDataFrame([(1, value)], SCHEMA))
    second.commit("INSERT", None, inserted_rows=spark.createDataFrame([(2, "c")], SCHEMA))
    second.add_dependent("db.v")
    listed = [ChangeLog(spark, log.root, SCHEMA) for log in (first, second)]
    ChangeLog.list_together(listed)
    assert [log.current_version() for log in listed] == [2, 1]
    assert [log.dependents() for log in listed] == [[], ["db.v"]]
    assert as_counter(spark, listed[0], 0, 2) == Counter({(1, "a"): 1, (1, "b"): 1})
    # This process's write to a log, through another instance, is seen by the listed one.
    first.commit("DELETE", None, deleted_rows=spark.createDataFrame([(1, "a")], SCHEMA))
    assert listed[0].current_version() == 3
    assert as_counter(spark, listed[0], 1, 3) == Counter({(1, "a"): -1, (1, "b"): 1})
    listed[0].add_dependent("db.w")
    assert ChangeLog(spark, first.root, SCHEMA).dependents() == ["db.w"]


def test_a_version_published_meanwhile_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    first = ChangeLog(spark, str(tmp_path / "log"), SCHEMA)
    second = ChangeLog(spark, str(tmp_path / "log"), SCHEMA)
    version = first.current_version() + 1
    first.commit("INSERT", None, inserted_rows=spark.createDataFrame([(1, "a")], SCHEMA))
    second.current_version = lambda: version - 1  # type: ignore[method-assign]
    with pytest.raises(ConcurrentCommitError):
        second.commit("INSERT", None, inserted_rows=spark.createDataFrame([(2, "b")], SCHEMA))
    assert as_counter(spark, first, 0, 1) == Counter({(1, "a"): 1})
    assert len(list((tmp_path / "log" / "rows").iterdir())) == 1  # the loser's rows are gone
