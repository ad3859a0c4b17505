"""Counts of a column's keys kept by the driver and moved forward along the change log.

``plan/key_counts.py``: ``n_u(k) = n_v(k) + Σ w(k)`` over the rows logged in ``(v, u]``. The
counts are checked against a ``Counter`` (hypothesis), and in a refresh: after copy-on-write
rewrote the table, the join proofs read only the log; after a write that bypassed capture,
they decode the table's files again, and the view stays exact.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from conftest import assert_view_matches_query, change_log_of, table_files, table_location
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from sparkmv.plan import join_keys
from sparkmv.plan.key_counts import KeyCounts, kept_counts

VIEW = "SELECT o.c, count(*) AS n, sum(l.x) AS total FROM o JOIN l ON o.k = l.k GROUP BY o.c"


def as_dict(counts: KeyCounts) -> dict[int, int]:
    assert list(counts.keys) == sorted(set(counts.keys.tolist())), "ascending, distinct"
    return dict(zip(counts.keys.tolist(), counts.counts.tolist(), strict=True))


@given(
    values=st.lists(st.integers(-3, 12)),
    changes=st.lists(st.tuples(st.integers(-5, 15), st.sampled_from([1, -1, 2]))),
)
def test_counts_follow_the_rows_logged(values: list[int], changes: list[tuple[int, int]]) -> None:
    counts = KeyCounts.of(np.array(values, np.int64))
    assert as_dict(counts) == dict(Counter(values))
    probe = np.arange(-6, 17, dtype=np.int64)
    assert counts.at(probe).tolist() == [Counter(values)[k] for k in probe.tolist()]
    expected = Counter(values)
    for key, weight in changes:
        expected[key] += weight
    keys = np.array([key for key, _ in changes], np.int64)
    moved = counts.plus(keys, np.array([weight for _, weight in changes], np.int64))
    if any(n < 0 for n in expected.values()):
        assert moved is None
    else:
        assert moved is not None
        assert as_dict(moved) == {k: n for k, n in expected.items() if n > 0}


def refresh(spark: SparkSession, mode: str) -> None:
    row = spark.sql("REFRESH MATERIALIZED VIEW v").first()
    assert row is not None and row["mode"] == mode, row
    assert_view_matches_query(spark, "v")


def counts_kept(spark: SparkSession, table: str) -> dict[int, int]:
    """The counts the driver keeps of ``table.k`` now (awaited if being counted)."""
    log = change_log_of(spark, table)
    counts = kept_counts(log, log.current_version(), table_files(spark, table).digest, "k")
    assert counts is not None, "the counts were not kept"
    return as_dict(counts)


def oracle(spark: SparkSession, table: str) -> dict[int, int]:
    rows = spark.sql(f"SELECT k, count(*) FROM {table} WHERE k IS NOT NULL GROUP BY k").collect()
    return {row[0]: row[1] for row in rows}


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The files the join proofs decode, by name."""
    counted: Counter[str] = Counter()
    decode: Callable[[str, pa.Schema], pa.Table] = join_keys.decoded

    def counting(path: str, schema: pa.Schema) -> pa.Table:
        counted[Path(path).name] += 1
        return decode(path, schema)

    monkeypatch.setattr(join_keys, "decoded", counting)
    return counted


def test_kept_counts_follow_copy_on_write_and_restart_after_a_bypass(
    spark: SparkSession, db: str, decodes: Counter[str]
) -> None:
    spark.sql("CREATE TABLE o (k INT, c STRING) USING parquet")
    spark.sql("CREATE TABLE l (k INT, x INT) USING parquet")
    spark.sql("INSERT INTO o VALUES (1, 'a'), (2, 'b'), (3, 'a')")
    spark.sql("INSERT INTO l VALUES (1, 5), (1, 7), (2, 1), (3, 9), (NULL, 4)")
    spark.sql(f"CREATE MATERIALIZED VIEW v REFRESH INCREMENTAL AS {VIEW}")
    for key, order in ((10, 1), (11, 2)):  # RF1 and RF2 in small: the proofs hold
        spark.sql(f"INSERT INTO o VALUES ({key}, 'b')")
        spark.sql(f"INSERT INTO l VALUES ({key}, 3), ({key}, 4)")
        spark.sql(f"DELETE FROM l WHERE k = {order}")  # copy-on-write: rewrites l's file
        spark.sql(f"DELETE FROM o WHERE k = {order}")
        decodes.clear()
        refresh(spark, "INCREMENTAL")
        assert counts_kept(spark, "l") == oracle(spark, "l")
        assert counts_kept(spark, "o") == oracle(spark, "o")
    assert not decodes, "the second refresh moved the counts along the log"

    # A line of order 5 written past capture: the log cannot move the counts over it.
    frame = spark.createDataFrame([(5, 6)], "k INT, x INT")
    frame.write.mode("append").parquet(str(table_location(spark, "l")))
    spark.catalog.refreshTable("l")
    refresh(spark, "FULL")
    spark.sql("INSERT INTO o VALUES (5, 'a')")  # n_old(5) = n_new(5) = 1: not proven
    spark.sql("INSERT INTO l VALUES (12, 1)")
    decodes.clear()
    refresh(spark, "INCREMENTAL")
    assert decodes, "the counts were decoded again"
    assert counts_kept(spark, "l") == oracle(spark, "l")
