"""The WHERE grammar the driver evaluates (``plan/driver_predicate.py``): SQL's three-valued
logic, and everything outside the grammar left to Spark. Spark itself is the oracle in
``test_driver_aggregate.py``; these pin the edges without it."""

from __future__ import annotations

import decimal

import pytest
import sqlglot
from pyspark.sql import types as T
from sparkmv.plan.driver_predicate import Predicate, compile_predicate

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


def compiled(where: str) -> Predicate | None:
    predicate = sqlglot.parse_one(f"SELECT 1 FROM x WHERE {where}", read="spark").args["where"]
    return compile_predicate(predicate.this, COLUMNS, TYPES)


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
    ],
)
def test_three_valued_logic(where: str, row: dict[str, object], expected: bool | None) -> None:
    predicate = compiled(where)
    assert predicate is not None
    assert predicate(row) is expected


@pytest.mark.parametrize(
    "where",
    [
        "f > 0.1",  # floating point: Spark compares the literal rounded to a double
        "t > '2020-01-01'",  # a date with a string: Spark casts the string
        "i = '1'",  # a number with a string
        "s = 1",
        "ci = 'x'",  # a collation that is not binary
        "abs(i) > 1",
        "i + 1 > 2",
        "i > l",
        "i > 1e3",  # a double literal
        "l < 0.0000000000000000001",  # their common decimal would need 39 digits
        "i IN (SELECT 1)",
    ],
)
def test_what_the_grammar_leaves_to_spark(where: str) -> None:
    assert compiled(where) is None
