"""A view's WHERE evaluated by the driver over a row's Python values, as Spark evaluates it.

Only a grammar whose meaning in Python is Spark's is compiled; anything else (functions,
arithmetic, casts, floating point, dates, a literal of another type than its column's)
is not, and the view is refreshed by Spark (``compile_predicate`` returns None):

- ``AND``, ``OR``, ``NOT`` in SQL's three-valued logic (Kleene: NULL is unknown);
- ``column op literal`` (either side), ``op`` one of ``= <> != < <= > >=``: an integral or
  decimal column with a number literal (compared by value, as Spark compares them after
  widening both to a common decimal), or a binary-collation string column with a string
  literal (compared by code point, which is the order of UTF-8 bytes Spark compares);
- ``column IS [NOT] NULL``, ``column [NOT] IN (literals…)`` (NULL when no literal equals
  the value and one of them is NULL), a boolean column, ``TRUE``, ``FALSE``, ``NULL``.

A row passes the WHERE when the predicate is TRUE (not FALSE, not NULL).
"""

from __future__ import annotations

import decimal
import operator
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import types as T
from sqlglot import exp

Row = Mapping[str, object]
"""A row's values by base-table column."""
Predicate = Callable[[Row], bool | None]
"""A compiled predicate: TRUE, FALSE or NULL (None) for a row."""

_NUMERIC = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DecimalType)
_COMPARISONS: dict[type[exp.Expr], Callable[[Any, Any], Any]] = {
    exp.EQ: operator.eq,
    exp.NEQ: operator.ne,
    exp.LT: operator.lt,
    exp.LTE: operator.le,
    exp.GT: operator.gt,
    exp.GTE: operator.ge,
}
_MIRRORED: dict[type[exp.Expr], type[exp.Expr]] = {
    exp.EQ: exp.EQ,
    exp.NEQ: exp.NEQ,
    exp.LT: exp.GT,
    exp.LTE: exp.GTE,
    exp.GT: exp.LT,
    exp.GTE: exp.LTE,
}
_NO_VALUE = object()  # a literal this grammar does not read


def compile_predicate(
    predicate: exp.Expr, columns: Mapping[str, str], types: Mapping[str, T.DataType]
) -> Predicate | None:
    """``predicate`` (over the names ``columns`` maps to base-table columns of ``types``)
    as a function of a row, or None when it is outside the grammar (module docstring)."""
    node = predicate
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, (exp.And, exp.Or)):
        left = compile_predicate(node.this, columns, types)
        right = compile_predicate(node.expression, columns, types)
        if left is None or right is None:
            return None
        return _and(left, right) if isinstance(node, exp.And) else _or(left, right)
    if isinstance(node, exp.Not):
        inner = compile_predicate(node.this, columns, types)
        return None if inner is None else _not(inner)
    if isinstance(node, exp.Boolean):
        constant: bool | None = bool(node.this)
        return lambda row: constant
    if isinstance(node, exp.Null):
        return lambda row: None
    if isinstance(node, exp.Column):
        flag = _column(node, columns)
        if flag is None or not isinstance(types.get(flag), T.BooleanType):
            return None
        return lambda row: _boolean(row[flag])
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        name = _column(node.this, columns)
        return None if name is None else (lambda row: row[name] is None)
    if isinstance(node, exp.In):
        return _in(node, columns, types)
    if type(node) in _COMPARISONS:
        return _comparison(node, columns, types)
    return None


def predicate_columns(predicate: exp.Expr, columns: Mapping[str, str]) -> list[str]:
    """The base-table columns ``predicate`` reads."""
    found = (_column(column, columns) for column in predicate.find_all(exp.Column))
    return [name for name in found if name is not None]


def _column(node: exp.Expr, columns: Mapping[str, str]) -> str | None:
    if isinstance(node, exp.Column) and not node.table:
        return columns.get(node.name)
    return None


def _comparison(
    node: exp.Expr, columns: Mapping[str, str], types: Mapping[str, T.DataType]
) -> Predicate | None:
    kind: type[exp.Expr] = type(node)
    left, right = node.this, node.expression
    if _column(left, columns) is None:
        left, right, kind = right, left, _MIRRORED[kind]
    name = _column(left, columns)
    if name is None:
        return None
    value = _literal(right, types.get(name))
    if value is _NO_VALUE:
        return None
    compare = _COMPARISONS[kind]

    def evaluate(row: Row) -> bool | None:
        found = row[name]
        return None if found is None or value is None else compare(found, value)

    return evaluate


def _in(
    node: exp.In, columns: Mapping[str, str], types: Mapping[str, T.DataType]
) -> Predicate | None:
    name = _column(node.this, columns)
    if name is None or node.args.get("query") is not None or not node.expressions:
        return None
    values = [_literal(item, types.get(name)) for item in node.expressions]
    if any(value is _NO_VALUE for value in values):
        return None
    present = [value for value in values if value is not None]
    has_null = len(present) < len(values)

    def evaluate(row: Row) -> bool | None:
        found = row[name]
        if found is None:
            return None
        if any(found == value for value in present):
            return True
        return None if has_null else False

    return evaluate


def _literal(node: exp.Expr, column_type: T.DataType | None) -> object:
    """The value of the literal ``node`` compared with a column of ``column_type`` (None
    for NULL), or ``_NO_VALUE`` when the grammar does not compare them."""
    if isinstance(node, exp.Null):
        return None
    negative = isinstance(node, exp.Neg)
    if negative:
        node = node.this
    if not isinstance(node, exp.Literal):
        return _NO_VALUE
    text = str(node.this)
    if node.is_string:
        if negative or not _binary_string(column_type):
            return _NO_VALUE
        return text
    if not isinstance(column_type, _NUMERIC) or not _plain_number(text):
        return _NO_VALUE
    number: int | decimal.Decimal = decimal.Decimal(text) if "." in text else int(text)
    if not _compared_exactly(column_type, number):
        return _NO_VALUE
    return -number if negative else number


_INTEGRAL_DIGITS: dict[type[T.DataType], int] = {
    T.ByteType: 3,
    T.ShortType: 5,
    T.IntegerType: 10,
    T.LongType: 20,
}


def _compared_exactly(column_type: T.DataType, number: int | decimal.Decimal) -> bool:
    """Whether Spark compares a column of ``column_type`` with ``number`` without rounding
    either: their common decimal type (the wider integral part and the larger scale) fits
    in 38 digits."""
    if isinstance(column_type, T.DecimalType):
        whole, scale = column_type.precision - column_type.scale, column_type.scale
    else:
        whole, scale = _INTEGRAL_DIGITS[type(column_type)], 0
    if isinstance(number, int):
        return True  # an integral literal compares as a long or a decimal of scale 0
    exponent = number.as_tuple().exponent
    literal_scale = -exponent if isinstance(exponent, int) and exponent < 0 else 0
    literal_whole = max(len(number.as_tuple().digits) - literal_scale, 1)
    return max(whole, literal_whole) + max(scale, literal_scale) <= 38


def _plain_number(text: str) -> bool:
    """Digits with at most one point: an integral or decimal literal (``1e3`` is a double,
    ``1L``/``1BD`` suffixed ones are left out)."""
    digits = text.replace(".", "", 1)
    return bool(digits) and digits.isdigit()


def _binary_string(column_type: T.DataType | None) -> bool:
    return (
        isinstance(column_type, T.StringType)
        and getattr(column_type, "collation", "UTF8_BINARY") == "UTF8_BINARY"
    )


def _boolean(value: object) -> bool | None:
    return None if value is None else bool(value)


def _and(left: Predicate, right: Predicate) -> Predicate:
    def evaluate(row: Row) -> bool | None:
        a, b = left(row), right(row)
        if a is False or b is False:
            return False
        return None if a is None or b is None else True

    return evaluate


def _or(left: Predicate, right: Predicate) -> Predicate:
    def evaluate(row: Row) -> bool | None:
        a, b = left(row), right(row)
        if a is True or b is True:
            return True
        return None if a is None or b is None else False

    return evaluate


def _not(inner: Predicate) -> Predicate:
    def evaluate(row: Row) -> bool | None:
        value = inner(row)
        return None if value is None else not value

    return evaluate
