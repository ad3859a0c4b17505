"""The driver's bucket of a row (``buckets.bucket_of``) is the one Spark computes
(``buckets.bucket_sql``), and its hashes of an Arrow table's rows (``buckets.row_hashes``)
are Spark's: random values of every type the driver hashes, alone and together, NULLs
included, against Spark's ``xxhash64`` and ``pmod``."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
from conftest import spark_examples
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema
from sparkmv.buckets import bucket_of, bucket_sql, hashed_columns, key_hash_sql, row_hashes

SCHEMA = T.StructType(
    [
        T.StructField("b", T.BooleanType()),
        T.StructField("y", T.ByteType()),
        T.StructField("h", T.ShortType()),
        T.StructField("i", T.IntegerType()),
        T.StructField("l", T.LongType()),
        T.StructField("d", T.DecimalType(18, 2)),
        T.StructField("e", T.DecimalType(38, 6)),
        T.StructField("s", T.StringType()),
        T.StructField("x", T.BinaryType()),
        T.StructField("t", T.DateType()),
    ]
)


def nullable(values: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(st.none(), values)


ROWS = st.tuples(
    nullable(st.booleans()),
    nullable(st.integers(-(2**7), 2**7 - 1)),
    nullable(st.integers(-(2**15), 2**15 - 1)),
    nullable(st.integers(-(2**31), 2**31 - 1)),
    nullable(st.integers(-(2**63), 2**63 - 1)),
    nullable(st.integers(-(10**18) + 1, 10**18 - 1).map(lambda n: decimal.Decimal(n).scaleb(-2))),
    nullable(st.integers(-(10**38) + 1, 10**38 - 1).map(lambda n: decimal.Decimal(n).scaleb(-6))),
    nullable(st.text(max_size=80)),
    nullable(st.binary(max_size=70)),
    nullable(st.dates(datetime.date(1, 1, 1), datetime.date(9999, 12, 31))),
)
KEYS = [["i"], ["l"], ["s"], ["d", "e"], ["b", "y", "h", "x", "t"], [f.name for f in SCHEMA]]


@settings(max_examples=spark_examples(3), deadline=None)
@given(rows=st.lists(ROWS, min_size=1, max_size=40), buckets=st.integers(2, 300))
def test_the_driver_buckets_rows_as_spark_does(
    spark: SparkSession, rows: list[tuple[object, ...]], buckets: int
) -> None:
    frame = spark.createDataFrame(rows, SCHEMA)
    expressions = [f"{bucket_sql(SCHEMA, keys, buckets)} AS k{n}" for n, keys in enumerate(KEYS)]
    hashes = [f"{key_hash_sql(SCHEMA, keys)} AS h{n}" for n, keys in enumerate(KEYS)]
    types = {field.name: field.dataType for field in SCHEMA.fields}
    collected = frame.selectExpr("*", *expressions, *hashes).collect()
    for found in collected:
        for n, keys in enumerate(KEYS):
            hashed = hashed_columns(SCHEMA, keys)
            values = [found[c] for c in hashed]
            assert bucket_of(values, [types[c] for c in hashed], buckets) == found[f"k{n}"]
    table = pa.Table.from_pylist(
        [{c: row[c] for c in SCHEMA.fieldNames()} for row in collected], to_arrow_schema(SCHEMA)
    )
    for n, keys in enumerate(KEYS):
        found = row_hashes(table.select(keys), [types[c] for c in keys])
        assert found == [row[f"h{n}"] for row in collected]
