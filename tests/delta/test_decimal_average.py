"""A decimal ``AVG`` recomputed from its kept sum and count is Spark's own average.

Spark's ``Average`` divides the sum by the count at the ``MathContext`` of its ``Decimal``
division and rounds the quotient half up to the result's scale, once; a plain SQL division
rounds to a scale of its own first (``delta/aggregate.decimal_average_sql``). Random decimal
types and values (zeros pad the count, so quotients with long periods come up) are averaged
by Spark and by the formula over Spark's own sum and count: they agree, or, for a sum too
large to divide as Spark does, the formula fails with ``MATERIALIZED_VIEW_AVERAGE_OUT_OF_RANGE``.
"""

from __future__ import annotations

import decimal

import pytest
from conftest import assert_view_matches_query, spark_examples
from differential import NO_SHRINK, note
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql import types as T
from sparkmv.delta.aggregate import decimal_average_sql
from sparkmv.errors import ErrorClass

OUT_OF_RANGE = ErrorClass.MATERIALIZED_VIEW_AVERAGE_OUT_OF_RANGE.name


@st.composite
def decimal_types(draw: st.DrawFn) -> tuple[int, int]:
    precision = draw(st.sampled_from([1, 2, 5, 10, 15, 18, 20, 24, 25, 28, 30, 38]))
    return precision, draw(st.integers(0, min(precision, 8)))


@settings(max_examples=spark_examples(30), phases=NO_SHRINK)
@given(
    shape=decimal_types(),
    unscaled=st.lists(st.integers(-(10**40), 10**40), min_size=1, max_size=4),
    zeros=st.sampled_from([0, 1, 6, 100, 20_000]),
)
@example(shape=(20, 0), unscaled=[1], zeros=20_000)  # 1 / 20001: 0.0000499975…
@example(shape=(10, 0), unscaled=[50], zeros=100)  # 50 / 101: 0.4950495…
@example(shape=(15, 2), unscaled=[123456789], zeros=6)
def test_the_average_of_a_kept_sum_is_sparks(
    spark: SparkSession, shape: tuple[int, int], unscaled: list[int], zeros: int
) -> None:
    precision, scale = shape
    limit = 10**precision - 1
    exact = decimal.Context(prec=80)  # the default context keeps 28 digits
    values = [decimal.Decimal(max(-limit, min(limit, u))).scaleb(-scale, exact) for u in unscaled]
    typed = f"DECIMAL({precision}, {scale})"
    rows = " UNION ALL ".join(f"SELECT CAST('{v}' AS {typed}) AS x" for v in values)
    rows += f" UNION ALL SELECT CAST(0 AS {typed}) FROM range({zeros})"
    found = spark.sql(f"SELECT avg(x) AS a, sum(x) AS s, count(x) AS n FROM ({rows})")
    sum_type, result = found.schema["s"].dataType, found.schema["a"].dataType
    assert isinstance(sum_type, T.DecimalType) and isinstance(result, T.DecimalType)
    average = decimal_average_sql("s", "n", sum_type, result)
    checked = found.selectExpr("a", "s", f"CAST({average} AS {result.simpleString()}) AS f")
    try:
        row = checked.first()
    except PySparkException as error:  # only a sum Spark's division cannot take exactly
        assert OUT_OF_RANGE in str(error)
        total = found.first()
        assert total is not None
        assert abs(total.s) >= 10 ** (38 - result.scale)
        note(f"out of range: a sum of {total.s} as {sum_type.simpleString()}")
        return
    assert row is not None
    note(f"{values} and {zeros} zeros as {typed}: Spark {row.a}, the kept sum's {row.f}")
    assert row.f == row.a


def test_a_view_averages_a_decimal_as_spark_does(spark: SparkSession, db: str) -> None:
    """1 / 20001 = 0.0000499975…: a division to 8 decimals then rounded to 4 gave 0.0001."""
    spark.sql("CREATE TABLE t (g INT, x DECIMAL(20, 0)) USING parquet")
    spark.sql("INSERT INTO t SELECT 1, 0 FROM range(20000)")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT g, avg(x) AS a FROM t GROUP BY g")
    spark.sql("INSERT INTO t VALUES (1, 1)")
    assert spark.sql("REFRESH MATERIALIZED VIEW v").collect()[0].mode == "INCREMENTAL"
    assert spark.table("v").first().a == decimal.Decimal("0.0000")  # type: ignore[union-attr]
    assert_view_matches_query(spark, "v")


def test_an_average_of_wide_decimals_is_maintained(spark: SparkSession, db: str) -> None:
    """A sum of DECIMAL(30, 5) is a DECIMAL(38, 5): a plain division kept 6 decimals of the
    average's 9. Past 29 integral digits the refresh fails, and the view keeps its rows."""
    spark.sql("CREATE TABLE t (g INT, x DECIMAL(30, 5)) USING parquet")
    spark.sql("INSERT INTO t VALUES (1, 1), (1, 2), (1, 2), (2, 5)")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT g, avg(x) AS a FROM t GROUP BY g")
    spark.sql("INSERT INTO t VALUES (1, 1)")
    assert spark.sql("REFRESH MATERIALIZED VIEW v").collect()[0].mode == "INCREMENTAL"
    assert_view_matches_query(spark, "v")
    before = sorted(spark.table("v").collect())
    spark.sql("INSERT INTO t SELECT 2, 9999999999999999999999999.99999 FROM range(20000)")
    with pytest.raises(PySparkException, match=OUT_OF_RANGE):
        spark.sql("REFRESH MATERIALIZED VIEW v").collect()
    assert sorted(spark.table("v").collect()) == before
