"""The storage bucket of a row (``buckets.bucket_sql``), as Spark computes it: in range,
equal for rows equal on the key columns (the merge's condition), and blind to the columns a
merge does not compare exactly (floating point)."""

from __future__ import annotations

from conftest import spark_examples
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import types as T
from sparkmv.storage.buckets import bucket_sql, hashed_columns, key_hash_sql

SCHEMA = T.StructType(
    [
        T.StructField("i", T.IntegerType()),
        T.StructField("s", T.StringType()),
        T.StructField("f", T.DoubleType()),
        T.StructField("other", T.LongType()),
    ]
)
ROWS = st.tuples(
    st.one_of(st.none(), st.integers(-3, 3)),
    st.one_of(st.none(), st.sampled_from(["", "a", "b"])),
    st.one_of(st.none(), st.floats(allow_nan=True)),
    st.integers(-(2**63), 2**63 - 1),
)


def test_only_exactly_compared_columns_are_hashed() -> None:
    assert hashed_columns(SCHEMA, ["i", "f", "s"]) == ["i", "s"]
    assert key_hash_sql(SCHEMA, ["f"]) is None
    assert bucket_sql(SCHEMA, ["f"], 7) == "CAST(0 AS INT)"


@settings(max_examples=spark_examples(3), deadline=None)
@given(rows=st.lists(ROWS, min_size=1, max_size=40), buckets=st.integers(1, 300))
def test_rows_equal_on_the_keys_share_a_bucket_in_range(
    spark: SparkSession, rows: list[tuple[object, ...]], buckets: int
) -> None:
    frame = spark.createDataFrame(rows, SCHEMA)
    bucket = bucket_sql(SCHEMA, ["i", "s", "f"], buckets)
    found = frame.selectExpr("i", "s", f"{bucket} AS k").collect()
    by_key: dict[tuple[object, object], int] = {}
    for row in found:
        assert 0 <= row.k < buckets
        assert by_key.setdefault((row.i, row.s), row.k) == row.k
