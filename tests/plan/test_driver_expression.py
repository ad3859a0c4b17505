"""The driver's arithmetic (``plan/driver_expression.py``) against Spark's own.

Random expressions over integral and decimal columns and literals (``+ - *``, unary minus,
nesting) and random date constants shifted by intervals are evaluated both by the driver and
by Spark, over one row of values (an inline table, which Spark folds while planning: no job).
Whenever the driver computes a value, row by row or over a whole Arrow table, it is Spark's
value, of Spark's type; when Spark fails (an overflow in ANSI mode) the driver declines.
"""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest
import sqlglot
from conftest import spark_examples
from differential import NO_SHRINK, note
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import types as T
from sparkmv.plan.driver_expression import (
    DriverMergeDeclinedError,
    Typed,
    arrow_type,
    compile_expression,
)

COLUMNS: dict[str, T.DataType] = {
    "a": T.IntegerType(),
    "b": T.LongType(),
    "c": T.ByteType(),
    "x": T.DecimalType(15, 2),
    "y": T.DecimalType(3, 2),
    "z": T.DecimalType(38, 10),
}
VALUES: dict[str, list[object]] = {
    "a": [None, 0, 1, -7, 2147483647, 40000],
    "b": [None, 3, -(2**62), 9007199254740993],
    "c": [None, 1, 127, -128],
    "x": [None, decimal.Decimal("0.00"), decimal.Decimal("905.00"), decimal.Decimal("-12345.67")],
    "y": [None, decimal.Decimal("0.05"), decimal.Decimal("-0.99"), decimal.Decimal("0.10")],
    "z": [None, decimal.Decimal("1.0000000001"), decimal.Decimal("-123456789012.3456789012")],
}
LITERALS = ["1", "0", "2", "100", "3000000000", ".06", "0.01", "1.50", "-2", "-0.5", "12345.678"]


def compiled(sql: str) -> Typed | None:
    return compile_expression(
        sqlglot.parse_one(sql, read="spark"), {c: c for c in COLUMNS}, COLUMNS
    )


@st.composite
def numbers(draw: st.DrawFn, depth: int = 0) -> str:
    kind = draw(st.sampled_from(["column", "literal"] + ["op"] * 2 * (depth < 3) + ["neg"]))
    if kind == "column":
        return draw(st.sampled_from(list(COLUMNS)))
    if kind == "literal":
        return draw(st.sampled_from(LITERALS))
    if kind == "neg":
        return f"-({draw(numbers(depth + 1))})"
    operator = draw(st.sampled_from(["+", "-", "*"]))
    return f"({draw(numbers(depth + 1))} {operator} {draw(numbers(depth + 1))})"


def _literal(value: object, data_type: T.DataType) -> str:
    if value is None:
        return f"CAST(NULL AS {data_type.simpleString()})"
    return f"CAST('{value}' AS {data_type.simpleString()})"


def spark_value(spark: SparkSession, sql: str, row: dict[str, object]) -> tuple[object, T.DataType]:
    values = ", ".join(_literal(row[name], kind) for name, kind in COLUMNS.items())
    frame = spark.sql(f"SELECT {sql} AS v FROM VALUES ({values}) AS t({', '.join(COLUMNS)})")
    return frame.collect()[0].v, frame.schema.fields[0].dataType


@settings(max_examples=spark_examples(40), phases=NO_SHRINK)
@given(
    sql=numbers(),
    row=st.fixed_dictionaries({name: st.sampled_from(values) for name, values in VALUES.items()}),
)
def test_the_driver_computes_what_spark_computes(
    spark: SparkSession, sql: str, row: dict[str, object]
) -> None:
    note(f"{sql} over {row}")
    typed = compiled(sql)
    assert typed is not None
    table = pa.table({c: pa.array([row[c]], arrow_type(kind)) for c, kind in COLUMNS.items()})
    try:
        expected, expected_type = spark_value(spark, sql, row)
    except Exception as error:  # an overflow, in ANSI mode
        note(f"Spark: {error}")
        with pytest.raises(DriverMergeDeclinedError):
            typed.evaluate(row)
        if typed.vectorized:
            with pytest.raises(DriverMergeDeclinedError):
                typed.over(table)
        return
    assert typed.data_type == expected_type
    ways = [lambda: typed.evaluate(row)]
    if typed.vectorized:  # not when an exact value could pass 76 digits
        ways.append(lambda: _first(typed.over(table)))
    for compute in ways:
        try:
            found = compute()
        except DriverMergeDeclinedError:
            continue  # declined (a product Spark rounds twice): Spark computes it
        assert found == expected and (found is None) == (expected is None)


def _first(values: pa.Array | pa.ChunkedArray | pa.Scalar) -> object:
    return values.as_py() if isinstance(values, pa.Scalar) else values[0].as_py()


@settings(max_examples=spark_examples(20), phases=NO_SHRINK)
@given(
    day=st.dates(datetime.date(1900, 1, 1), datetime.date(2100, 12, 31)),
    amount=st.integers(-40, 40),
    unit=st.sampled_from(["DAY", "MONTH", "YEAR"]),
    sign=st.sampled_from("+-"),
)
def test_date_constants_are_spark_dates(
    spark: SparkSession, day: datetime.date, amount: int, unit: str, sign: str
) -> None:
    sql = f"DATE '{day.isoformat()}' {sign} INTERVAL '{amount}' {unit}"
    typed = compiled(sql)
    assert typed is not None and typed.constant
    frame = spark.sql(f"SELECT {sql} AS v")
    assert frame.schema.fields[0].dataType == T.DateType()
    assert typed.value() == frame.collect()[0].v


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        # TPC-H Q1's arguments over DECIMAL(15, 2) columns
        ("x * (1 - y)", T.DecimalType(20, 4)),
        ("x * (1 - x) * (1 + x)", T.DecimalType(38, 6)),
        ("2 * x", T.DecimalType(17, 2)),  # a literal widens to its own digits
        ("a * x", T.DecimalType(26, 2)),  # an INT column to DECIMAL(10, 0)
        (".06 - 0.01", T.DecimalType(3, 2)),
        ("a + b", T.LongType()),
        ("c + c", T.ByteType()),
        ("c + 1", T.IntegerType()),
        ("z * z", T.DecimalType(38, 6)),  # precision cut to 38, the scale to 6
    ],
)
def test_spark_types(sql: str, expected: T.DataType) -> None:
    typed = compiled(sql)
    assert typed is not None and typed.data_type == expected


def test_values_are_rounded_half_up_and_overflows_decline() -> None:
    product = compiled("z * z")
    assert product is not None
    z = decimal.Decimal("0.0000015000")
    assert product.evaluate({"z": z}) == decimal.Decimal("0.000000")  # 2.25e-12
    assert product.evaluate({"z": decimal.Decimal("0.0010000000")}) == decimal.Decimal("0.000001")
    with pytest.raises(DriverMergeDeclinedError):  # 40 digits: Spark rounds it twice
        product.evaluate({"z": decimal.Decimal("1234567890.1234567891")})
    with pytest.raises(DriverMergeDeclinedError):
        compiled_sum = compiled("a + a")
        assert compiled_sum is not None
        compiled_sum.evaluate({"a": 2**31 - 1})


@pytest.mark.parametrize(
    "sql",
    ["a / 2", "CAST(a AS BIGINT)", "abs(a)", "1e3 * a", "DATE '2020-01-01' + INTERVAL '1' HOUR"],
)
def test_what_the_driver_leaves_to_spark(sql: str) -> None:
    assert compiled(sql) is None
