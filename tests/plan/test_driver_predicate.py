"""The WHERE grammar the driver evaluates (``plan/driver_predicate.py``): SQL's three-valued
logic (row by row and over an Arrow table), and everything outside the grammar left to
Spark. Spark itself is the oracle in
``test_driver_aggregate.py``; these pin the edges without it."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest
import sqlglot
from pyspark.sql import types as T
from sparkmv.plan.driver_expression import arrow_type
from sparkmv.plan.driver_predicate import (
    Predicate,
    columnar_predicate,
    compile_predicate,
    compile_value,
)
from sqlglot import exp

TYPES: dict[str, T.DataType] = {
    "i": T.IntegerType(),
    "l": T.LongType(),
    "d": T.DecimalType(10, 2),
    "s": T.StringType(),
    "b": T.BooleanType(),
    "f": T.DoubleType(),
    "t": T.DateType(),
    "ci": T.StringType("UTF8_LCASE"),
}
COLUMNS = {name: name for name in TYPES}


def parsed(where: str) -> exp.Expr:
    predicate = sqlglot.parse_one(f"SELECT 1 FROM x WHERE {where}", read="spark").args["where"]
    assert isinstance(predicate, exp.Where)
    return predicate.this


def compiled(where: str) -> Predicate | None:
    return compile_predicate(parsed(where), COLUMNS, TYPES)


@pytest.mark.parametrize(
    ("where", "row", "expected"),
    [
        ("i > 1", {"i": 2}, True),
        ("1 < i", {"i": 1}, False),
        ("i > 1", {"i": None}, None),
        ("i = 1.0", {"i": 1}, True),
        ("d >= -0.5", {"d": decimal.Decimal("-0.50")}, True),
        ("s <> 'x'", {"s": "y"}, True),
        ("s < 'é'", {"s": "z"}, True),  # code point order, as UTF-8 bytes compare
        ("i IN (1, NULL)", {"i": 2}, None),
        ("i IN (1, NULL)", {"i": 1}, True),
        ("i NOT IN (1, 2)", {"i": 3}, True),
        ("i IS NULL OR i > 5", {"i": None}, True),
        ("NOT (i > 1) AND s IS NOT NULL", {"i": None, "s": "x"}, None),
        ("i > 1 AND s = 'x'", {"i": 0, "s": None}, False),  # FALSE AND NULL
        ("i > 1 OR s = 'x'", {"i": 2, "s": None}, True),  # TRUE OR NULL
        ("b", {"b": None}, None),
        ("NOT b", {"b": False}, True),
        ("i + 1 > 2", {"i": 2}, True),
        ("i > l", {"i": 2, "l": 2}, False),
        ("d * 2 - 0.01 = 1.99", {"d": decimal.Decimal("1.00")}, True),
        ("d BETWEEN .06 - 0.01 AND .06 + 0.01", {"d": decimal.Decimal("0.07")}, True),
        ("d NOT BETWEEN 1 AND 2", {"d": None}, None),
        ("t <= DATE '1998-12-01' - INTERVAL '90' DAY", {"t": datetime.date(1998, 9, 2)}, True),
        ("t <= DATE '1998-12-01' - INTERVAL '90' DAY", {"t": datetime.date(1998, 9, 3)}, False),
        # a month added to the 31st lands on the month's last day, as Spark's plusMonths
        ("t = DATE '2020-01-31' + INTERVAL '1' MONTH", {"t": datetime.date(2020, 2, 29)}, True),
        ("t < DATE '1994-01-01' + INTERVAL '1' YEAR", {"t": datetime.date(1994, 12, 31)}, True),
        ("t IN (DATE '2000-01-01', NULL)", {"t": datetime.date(2000, 1, 1)}, True),
        ("d IN (1, 2.5)", {"d": decimal.Decimal("2.50")}, True),
        ("d * 2 IN (1, NULL)", {"d": decimal.Decimal("0.25")}, None),
        ("s LIKE 'PROMO%'", {"s": "PROMO BRUSHED"}, True),
        ("s LIKE 'PROMO%'", {"s": "promo"}, False),
        ("s LIKE 'é%'", {"s": "éa"}, True),
        ("s NOT LIKE '%'", {"s": ""}, False),
        ("s LIKE 'x%'", {"s": None}, None),
    ],
)
def test_three_valued_logic(where: str, row: dict[str, object], expected: bool | None) -> None:
    predicate = compiled(where)
    assert predicate is not None
    assert predicate(row) is expected
    columnar = columnar_predicate(parsed(where), COLUMNS, TYPES)  # the same, by Arrow
    assert columnar is not None
    table = pa.table({c: pa.array([v], arrow_type(TYPES[c])) for c, v in row.items()})
    found = columnar(table)
    assert (found.as_py() if isinstance(found, pa.Scalar) else found[0].as_py()) is expected


@pytest.mark.parametrize(
    "where",
    [
        "f > 0.1",  # floating point: Spark compares the literal rounded to a double
        "t > '2020-01-01'",  # a date with a string: Spark casts the string
        "i = '1'",  # a number with a string
        "s = 1",
        "ci = 'x'",  # a collation that is not binary
        "abs(i) > 1",
        "i / 2 > 1",  # division
        "CAST(i AS BIGINT) > 1",
        "t > DATE '2020-01-01' + INTERVAL '1' HOUR",  # a timestamp
        "t > DATE '2020-1-1'",  # a date literal Spark reads more leniently
        "i IN (l, 1)",  # an IN list of columns
        "i > 1e3",  # a double literal
        "l < 0.0000000000000000001",  # their common decimal would need 39 digits
        "i IN (SELECT 1)",
        "s LIKE '%PROMO'",  # a wildcard other than a trailing %
        "s LIKE 'a_%'",
        "s LIKE 'a'",
        "s LIKE 'a\\%%'",  # an escape
        "ci LIKE 'x%'",
        "i LIKE '1%'",
    ],
)
def test_what_the_grammar_leaves_to_spark(where: str) -> None:
    assert compiled(where) is None


@pytest.mark.parametrize(
    ("case", "row", "expected", "kind"),
    [
        ("CASE WHEN s = 'a' OR s = 'b' THEN 1 ELSE 0 END", {"s": "b"}, 1, T.IntegerType()),
        ("CASE WHEN s = 'a' OR s = 'b' THEN 1 ELSE 0 END", {"s": None}, 0, T.IntegerType()),
        ("CASE WHEN i > 1 THEN l END", {"i": 0, "l": 5}, None, T.LongType()),
        ("CASE WHEN i > 1 THEN i WHEN i > 0 THEN l ELSE 7 END", {"i": 1, "l": 9}, 9, T.LongType()),
        (  # a decimal with an integer: DECIMAL(10, 0) widened to the decimal's scale
            "CASE WHEN s LIKE 'P%' THEN d * (1 - d) ELSE 0 END",
            {"s": "PX", "d": decimal.Decimal("0.50")},
            decimal.Decimal("0.2500"),
            T.DecimalType(22, 4),
        ),
        (
            "CASE WHEN s LIKE 'P%' THEN d ELSE 0 END",
            {"s": "Q", "d": decimal.Decimal("0.50")},
            decimal.Decimal("0.00"),
            T.DecimalType(12, 2),
        ),
    ],
)
def test_case_takes_the_first_true_branch(
    case: str, row: dict[str, object], expected: object, kind: T.DataType
) -> None:
    compiled_case = compile_value(sqlglot.parse_one(case, read="spark"), COLUMNS, TYPES)
    assert compiled_case is not None
    assert compiled_case.data_type == kind
    assert compiled_case.evaluate(row) == expected
    table = pa.table({c: pa.array([v], arrow_type(TYPES[c])) for c, v in row.items()})
    assert compiled_case.columnar is not None
    assert compiled_case.columnar(table)[0].as_py() == expected


@pytest.mark.parametrize(
    "case",
    [
        "CASE i WHEN 1 THEN 2 END",  # a simple CASE
        "CASE WHEN i > 1 THEN 'x' ELSE 1 END",  # no common type the driver computes
        "CASE WHEN f > 1 THEN 1 END",  # a condition outside the grammar
        "CASE WHEN i > 1 THEN f END",  # a floating-point value
    ],
)
def test_what_case_leaves_to_spark(case: str) -> None:
    assert compile_value(sqlglot.parse_one(case, read="spark"), COLUMNS, TYPES) is None
