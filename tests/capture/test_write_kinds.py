"""Every captured write kind against the snapshot oracle (Hanson §2.2 net changes).

Random sequences of writes — INSERT, INSERT OVERWRITE (whole table, static and dynamic
partition), ``insertInto``, ``saveAsTable`` append and overwrite, TRUNCATE, DROP PARTITION,
DELETE, UPDATE (including moving rows between partitions) and MERGE — on partitioned and
unpartitioned tracked tables. After each write the table's contents are taken as a snapshot;
for every pair of versions ``a < b`` the log's net changes must equal ``T_b − T_a``
(``T_b EXCEPT ALL T_a`` with weight +n, ``T_a EXCEPT ALL T_b`` with −n). Finally a refresh
leaves the view equal to its query (docs/development.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from conftest import (
    assert_view_matches_query,
    change_log_of,
    multiset,
    spark_examples,
    z_difference,
    zset_counter,
)
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from sparkmv import fs

SCHEMA = "k INT, v STRING, p INT"
NO_SHRINK = [Phase.explicit, Phase.reuse, Phase.generate]  # shrinking Spark runs takes hours
Row = tuple[int | None, str | None, int | None]

keys = st.one_of(st.none(), st.integers(0, 3))
partitions = st.sampled_from([0, 1, None])
rows = st.lists(st.tuples(keys, st.sampled_from([None, "a", "b"]), partitions), max_size=4)


def values(batch: list[Row]) -> str:
    """A VALUES list; empty batches select nothing of the right type."""
    if not batch:
        return "SELECT CAST(NULL AS INT), CAST(NULL AS STRING), CAST(NULL AS INT) WHERE false"
    literal = lambda x: "NULL" if x is None else repr(x)  # noqa: E731
    return "VALUES " + ", ".join(f"({', '.join(literal(x) for x in row)})" for row in batch)


def partition_clause(value: int | None) -> str:
    return "p IS NULL" if value is None else f"p = {value}"


@dataclass(frozen=True)
class Write:
    """One write: its description (for failure messages) and how to run it."""

    label: str
    run: Callable[[SparkSession, bool], None]

    def __repr__(self) -> str:
        return self.label


def insert(batch: list[Row]) -> Write:
    return Write(f"INSERT {batch}", lambda s, _: s.sql(f"INSERT INTO t {values(batch)}").collect())


def insert_overwrite(batch: list[Row]) -> Write:
    return Write(
        f"INSERT OVERWRITE {batch}", lambda s, _: s.sql(f"INSERT OVERWRITE t {values(batch)}")
    )


def overwrite_partition(batch: list[Row], value: int) -> Write:
    """Static partition overwrite (the whole table when unpartitioned)."""

    def run(spark: SparkSession, partitioned: bool) -> None:
        if not partitioned:
            spark.sql(f"INSERT OVERWRITE t {values(batch)}")
            return
        selected = f"SELECT k, v FROM ({values(batch)}) AS b(k, v, p)"
        spark.sql(f"INSERT OVERWRITE t PARTITION (p = {value}) {selected}")

    return Write(f"OVERWRITE PARTITION p={value} {batch}", run)


def dynamic_overwrite(batch: list[Row]) -> Write:
    """Replaces only the partitions the batch has rows for (all data when unpartitioned)."""

    def run(spark: SparkSession, partitioned: bool) -> None:
        key = "spark.sql.sources.partitionOverwriteMode"
        spark.conf.set(key, "dynamic")
        try:
            spark.createDataFrame(batch, SCHEMA).write.insertInto("t", overwrite=True)
        finally:
            spark.conf.unset(key)

    return Write(f"DYNAMIC OVERWRITE {batch}", run)


def insert_into(batch: list[Row]) -> Write:
    return Write(
        f"insertInto {batch}",
        lambda s, _: s.createDataFrame(batch, SCHEMA).write.insertInto("t"),
    )


def save_as_table(batch: list[Row], mode: str) -> Write:
    def run(spark: SparkSession, partitioned: bool) -> None:
        writer = spark.createDataFrame(batch, SCHEMA).write.mode(mode).format("parquet")
        (writer.partitionBy("p") if partitioned else writer).saveAsTable("t")

    return Write(f"saveAsTable {mode} {batch}", run)


def truncate(value: int) -> Write:
    def run(spark: SparkSession, partitioned: bool) -> None:
        exists = partitioned and spark.sql(f"SELECT 1 FROM t WHERE p = {value}").count()
        spark.sql(f"TRUNCATE TABLE t PARTITION (p = {value})" if exists else "TRUNCATE TABLE t")

    return Write(f"TRUNCATE (p={value})", run)


def drop_partition(value: int) -> Write:
    def run(spark: SparkSession, partitioned: bool) -> None:
        if partitioned:
            spark.sql(f"ALTER TABLE t DROP IF EXISTS PARTITION (p = {value})")
        else:
            spark.sql(f"DELETE FROM t WHERE p = {value}")

    return Write(f"DROP PARTITION p={value}", run)


def delete(key: int | None) -> Write:
    condition = "k IS NULL" if key is None else f"k = {key} OR v IS NULL"
    return Write(
        f"DELETE WHERE {condition}", lambda s, _: s.sql(f"DELETE FROM t WHERE {condition}")
    )


def update(key: int | None, partition: int | None) -> Write:
    target = "NULL" if partition is None else str(partition)
    match = "NULL" if key is None else str(key)
    statement = f"UPDATE t SET v = concat(coalesce(v, ''), 'u'), p = {target} WHERE k <=> {match}"
    return Write(statement, lambda s, _: s.sql(statement))


def merge(batch: list[Row]) -> Write:
    # One source row per key, so no target row matches two of them.
    source = list({row[0]: row for row in batch}.values())
    statement = (
        f"MERGE INTO t USING (SELECT * FROM ({values(source)}) AS b(k, v, p)) AS s ON t.k = s.k "
        "WHEN MATCHED AND s.v IS NULL THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    return Write(f"MERGE {source}", lambda s, _: s.sql(statement))


writes = st.one_of(
    rows.map(insert),
    rows.map(insert_overwrite),
    st.builds(overwrite_partition, rows, st.sampled_from([0, 1])),
    rows.map(dynamic_overwrite),
    rows.map(insert_into),
    st.builds(save_as_table, rows, st.sampled_from(["append", "overwrite"])),
    st.sampled_from([0, 1]).map(truncate),
    st.sampled_from([0, 1]).map(drop_partition),
    keys.map(delete),
    st.builds(update, keys, partitions),
    rows.map(merge),
)


def contents(spark: SparkSession) -> Counter[tuple[object, ...]]:
    return multiset(spark.table("t"))


def log_files(spark: SparkSession, root: str) -> dict[str, list[str]]:
    """What a change log holds, for a failure's message."""
    return {part: fs.list_names(spark, f"{root}/{part}") for part in ("commits", "dependents")}


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
@settings(max_examples=spark_examples(4), phases=NO_SHRINK)
@given(initial=rows, sequence=st.lists(writes, min_size=1, max_size=5))
def test_net_changes_of_every_write_kind_equal_snapshot_differences(
    spark: SparkSession, db: str, partitioned: bool, initial: list[Row], sequence: list[Write]
) -> None:
    spark.sql("DROP MATERIALIZED VIEW IF EXISTS v")
    spark.sql("DROP TABLE IF EXISTS t")
    spark.sql(f"CREATE TABLE t ({SCHEMA}) USING parquet {'PARTITIONED BY (p)' * partitioned}")
    spark.sql(f"INSERT INTO t {values(initial)}")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT p, count(*) AS n FROM t GROUP BY p")
    log = change_log_of(spark, "t")
    states = {log.current_version(): contents(spark)}
    for write in sequence:
        write.run(spark, partitioned)
        states[log.current_version()] = contents(spark)
    versions = sorted(states)
    for start in versions:
        for end in (v for v in versions if v >= start):
            reason = log.unreadable_reason(start, end)
            assert not reason, (sequence, start, end, reason, log_files(spark, log.root))
            expected = z_difference(states[end], states[start])
            assert zset_counter(log.net_changes(start, end)) == expected, (sequence, start, end)
    refreshed = spark.sql("REFRESH MATERIALIZED VIEW v").first()
    assert refreshed is not None and "outside" not in refreshed.reason, refreshed.reason
    assert_view_matches_query(spark, "v")
