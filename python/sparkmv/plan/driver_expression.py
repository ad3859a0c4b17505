"""Scalar expressions the driver evaluates over a row's Python values exactly as Spark does.

**Constants**, folded once when the view's refresh is compiled:

- number literals, typed as Spark's parser types them: an integer as INT, else BIGINT, else
  DECIMAL(digits, 0); ``1.50`` as DECIMAL(3, 2) (``max(precision, scale)``, scale);
- string literals; ``DATE 'y-m-d'`` and ``CAST('y-m-d' AS DATE)``;
- a date plus or minus ``INTERVAL 'n' DAY|MONTH|YEAR``: Spark's ``DateAdd`` and
  ``DateAddYMInterval``, a date again (a month added to the 31st lands on the month's last
  day, as ``LocalDate.plusMonths``);
- numbers combined as numbers are below.

**Numbers**, per row: integral and decimal columns and number constants combined by ``+``,
``-``, ``*`` and unary minus, typed as Spark's analyzer types them (``DecimalPrecision`` with
precision loss allowed, its default):

    integral ∘ integral → the wider of the two
    integral ∘ decimal  → the integral as DECIMAL(3|5|10|20, 0) (a literal: its own digits)
    d(p1,s1) ± d(p2,s2) → d(max(p1−s1, p2−s2) + max(s1,s2) + 1, max(s1,s2))
    d(p1,s1) × d(p2,s2) → d(p1 + p2 + 1, s1 + s2)

a precision above 38 cut to 38, the scale to ``max(38 − integral digits, min(scale, 6))``.
Each value is computed exactly and rounded half up (ties away from zero, Java's ``HALF_UP``)
to its type's scale, as Spark rounds it. A value outside its type (an error in ANSI mode, NULL
or a wrapped integer without), or a product of more than 38 digits (which Spark's decimal
multiplication may round to 38 digits before its scale), raises
``DriverMergeDeclinedError``: Spark refreshes that change. A NULL operand gives NULL.

Anything else (division, functions, casts of columns, floating point, intervals of hours,
timestamps) does not compile: the compilers return None.

A number expression is also compiled over a whole Arrow table at once (``Typed.columnar``),
with the same rules: the operands widened to ``decimal256`` (exact up to 76 digits), the
result rounded half away from zero (``half_towards_infinity``) to the type's scale and cast
to it with Arrow's checked casts and arithmetic, which fail where Spark would.
"""

from __future__ import annotations

import calendar
import datetime
import decimal
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T
from sqlglot import exp

Row = Mapping[str, object]
"""A row's values by base-table column."""
Columnar = Callable[[pa.Table], pa.Array | pa.ChunkedArray]
"""An expression over every row of a table of base-table columns at once."""
Number = int | decimal.Decimal
"""An integral or decimal value."""

MAX_PRECISION = 38
_MIN_ADJUSTED_SCALE = 6
EXACT = decimal.Context(prec=200, rounding=decimal.ROUND_HALF_UP)
"""Exact below 200 digits: Spark's decimals have at most 38, a product of two at most 77, and
a group's sum of them only a few more."""

_INTEGRAL_RANKS: dict[type[T.DataType], int] = {
    T.ByteType: 0,
    T.ShortType: 1,
    T.IntegerType: 2,
    T.LongType: 3,
}
_INTEGRAL_BY_RANK = (T.ByteType(), T.ShortType(), T.IntegerType(), T.LongType())
_INTEGRAL_BITS = (8, 16, 32, 64)
_INTEGRAL_DIGITS = (3, 5, 10, 20)
"""Per integral rank, the precision of the DECIMAL Spark widens it to."""

_MAX_WIDE_PRECISION = 76  # of decimal256
_ARROW_TYPES: dict[type[T.DataType], pa.DataType] = {
    T.ByteType: pa.int8(),
    T.ShortType: pa.int16(),
    T.IntegerType: pa.int32(),
    T.LongType: pa.int64(),
    T.DateType: pa.date32(),
    T.StringType: pa.string(),
    T.BooleanType: pa.bool_(),
}
_DATE_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}")
_DAY_UNITS = {"DAY", "DAYS"}
_MONTH_UNITS = {"MONTH": 1, "MONTHS": 1, "YEAR": 12, "YEARS": 12}


class DriverMergeDeclinedError(Exception):
    """The driver cannot compute this change exactly as Spark would (a value out of its
    type's range, a product Spark rounds twice, a join input it does not read): Spark
    refreshes it instead."""


@dataclass(frozen=True)
class Typed:
    """A compiled expression: its value for a row, and Spark's type of it. ``literal_digits``:
    the digits of an integral literal, which Spark widens to a DECIMAL of just those;
    ``columnar``: the expression over a whole table (None: only row by row)."""

    evaluate: Callable[[Row], object]
    data_type: T.DataType
    constant: bool
    literal_digits: int | None = None
    columnar: Columnar | None = None

    def value(self) -> object:
        """A constant's value."""
        assert self.constant
        return self.evaluate({})

    @property
    def vectorized(self) -> bool:
        return self.constant or self.columnar is not None

    def over(self, table: pa.Table) -> pa.Array | pa.ChunkedArray | pa.Scalar:
        """The expression over every row of ``table``: a constant as one scalar. Raises
        ``DriverMergeDeclinedError`` where a value is not computed as Spark computes it."""
        if self.constant:
            return pa.scalar(self.value(), arrow_type(self.data_type))
        assert self.columnar is not None
        return self.columnar(table)


def arrow_type(data_type: T.DataType) -> pa.DataType:
    """The Arrow type of Spark's ``data_type`` (as pyarrow reads a parquet file Spark wrote)."""
    if isinstance(data_type, T.DecimalType):
        return pa.decimal128(data_type.precision, data_type.scale)
    return _ARROW_TYPES[type(data_type)]


def compile_expression(
    node: exp.Expr, columns: Mapping[str, str], types: Mapping[str, T.DataType]
) -> Typed | None:
    """``node`` (over the names ``columns`` maps to base-table columns of ``types``)
    compiled, or None when it is outside the grammar (module docstring)."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Column):
        return _column(node, columns, types)
    if isinstance(node, exp.Literal) or (
        isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal)
    ):
        return _literal(node)
    if isinstance(node, (exp.Cast, exp.TryCast)):
        return _date_literal(node)
    if isinstance(node, exp.Neg):
        inner = compile_expression(node.this, columns, types)
        return None if inner is None else _negated(inner)
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
        left = compile_expression(node.this, columns, types)
        if left is not None and isinstance(left.data_type, T.DateType) and left.constant:
            return _date_shifted(left, node)
        right = compile_expression(node.expression, columns, types)
        if left is None or right is None:
            return None
        return _arithmetic(type(node), left, right)
    return None


def is_number(data_type: T.DataType) -> bool:
    return isinstance(data_type, (T.DecimalType, *_INTEGRAL_RANKS))


def _literal(node: exp.Expr) -> Typed | None:
    """A number or string literal (``-`` before a number included, as Spark's parser reads
    it), typed as Spark types it; None for anything else."""
    negative = isinstance(node, exp.Neg)
    if negative:
        node = node.this
    if not isinstance(node, exp.Literal):
        return None
    text = str(node.this)
    if node.is_string:
        return None if negative else _constant(text, T.StringType())
    if not _plain_number(text):
        return None
    if "." in text:
        number = decimal.Decimal(text)
        value = -number if negative else number
        digits, scale = _digits(number)
        precision = max(digits, scale)
        if precision > MAX_PRECISION:
            return None
        return _constant(value, T.DecimalType(precision, scale))
    integer = -int(text) if negative else int(text)
    digits = len(str(abs(integer)))
    for rank in (2, 3):
        if _fits_integral(integer, rank):
            return Typed(lambda row: integer, _INTEGRAL_BY_RANK[rank], True, digits)
    if digits > MAX_PRECISION:
        return None
    return _constant(integer, T.DecimalType(digits, 0))


def _constant(value: object, data_type: T.DataType) -> Typed:
    return Typed(lambda row: value, data_type, True)


def _column(
    node: exp.Column, columns: Mapping[str, str], types: Mapping[str, T.DataType]
) -> Typed | None:
    name = columns.get(node.name) if not node.table else None
    data_type = types.get(name) if name is not None else None
    if name is None or data_type is None:
        return None
    columnar = None
    if isinstance(data_type, (T.DecimalType, *_ARROW_TYPES)):
        target = arrow_type(data_type)
        columnar = lambda table: _checked(pc.cast, table.column(name), target)  # noqa: E731
    return Typed(lambda row: row[name], data_type, False, columnar=columnar)


def _date_literal(node: exp.Cast | exp.TryCast) -> Typed | None:
    """``DATE 'y-m-d'`` (parsed as a cast of a string literal to DATE)."""
    target = node.args.get("to")
    text = node.this
    if not (
        isinstance(target, exp.DataType)
        and target.is_type(exp.DataType.Type.DATE)
        and isinstance(text, exp.Literal)
        and text.is_string
        and _DATE_TEXT.fullmatch(str(text.this))
    ):
        return None
    try:
        day = datetime.date.fromisoformat(str(text.this))
    except ValueError:
        return None
    return _constant(day, T.DateType())


def _date_shifted(day: Typed, node: exp.Expr) -> Typed | None:
    """A constant date plus or minus a constant ``INTERVAL 'n' DAY|MONTH|YEAR``."""
    interval = node.expression
    while isinstance(interval, exp.Paren):
        interval = interval.this
    if not isinstance(node, (exp.Add, exp.Sub)) or not isinstance(interval, exp.Interval):
        return None
    amount, unit = interval.this, interval.args.get("unit")
    if not isinstance(amount, exp.Literal) or unit is None:
        return None
    text, name = str(amount.this).strip(), unit.name.upper()
    if not re.fullmatch(r"[+-]?\d{1,9}", text):
        return None
    count = int(text) * (-1 if isinstance(node, exp.Sub) else 1)
    start = day.value()
    assert isinstance(start, datetime.date)
    try:
        if name in _DAY_UNITS:
            shifted = start + datetime.timedelta(days=count)
        elif name in _MONTH_UNITS:
            shifted = _plus_months(start, count * _MONTH_UNITS[name])
        else:
            return None
    except (OverflowError, ValueError):  # outside Python's years 1–9999
        return None
    return _constant(shifted, T.DateType())


def _plus_months(day: datetime.date, months: int) -> datetime.date:
    """``LocalDate.plusMonths``: the same day of the month, or the month's last day."""
    year, month = divmod(day.year * 12 + day.month - 1 + months, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return datetime.date(year, month + 1, min(day.day, last))


def _negated(inner: Typed) -> Typed | None:
    """``-x`` in ``x``'s type (negating the smallest integral overflows it)."""
    data_type = inner.data_type
    if not is_number(data_type):
        return None
    check = _range_check(data_type)

    def evaluate(row: Row) -> object:
        value = inner.evaluate(row)
        if value is None:
            return None
        assert isinstance(value, (int, decimal.Decimal))
        with decimal.localcontext(EXACT):  # the default context rounds to 28 digits
            return check(-value)

    columnar = None
    if inner.columnar is not None:
        negate = pc.negate if isinstance(data_type, T.DecimalType) else pc.negate_checked
        of = inner.columnar
        columnar = lambda table: _checked(negate, of(table))  # noqa: E731
    return _folded(Typed(evaluate, data_type, inner.constant, columnar=columnar))


def _arithmetic(kind: type[exp.Expr], left: Typed, right: Typed) -> Typed | None:
    """``left ∘ right`` for ∘ one of + - ×, typed as Spark types it (module docstring)."""
    a, b = left.data_type, right.data_type
    if not (is_number(a) and is_number(b)):
        return None
    if not isinstance(a, T.DecimalType) and not isinstance(b, T.DecimalType):
        rank = max(_INTEGRAL_RANKS[type(a)], _INTEGRAL_RANKS[type(b)])
        result: T.DataType = _INTEGRAL_BY_RANK[rank]
    else:
        p1, s1 = decimal_shape(left)
        p2, s2 = decimal_shape(right)
        if kind is exp.Mul:
            result = _adjusted(p1 + p2 + 1, s1 + s2)
        else:
            scale = max(s1, s2)
            result = _adjusted(max(p1 - s1, p2 - s2) + scale + 1, scale)
    check = _range_check(result)
    multiplies = kind is exp.Mul
    sign = -1 if kind is exp.Sub else 1

    def evaluate(row: Row) -> object:
        x, y = left.evaluate(row), right.evaluate(row)
        if x is None or y is None:
            return None
        assert isinstance(x, (int, decimal.Decimal)) and isinstance(y, (int, decimal.Decimal))
        with decimal.localcontext(EXACT):
            if multiplies:
                value = x * y
                if isinstance(value, decimal.Decimal) and _digits(value)[0] > MAX_PRECISION:
                    raise DriverMergeDeclinedError("a product of more than 38 digits")
            else:
                value = x + sign * y
        return check(value)

    columnar = _columnar_arithmetic(kind, left, right, result)
    return _folded(Typed(evaluate, result, left.constant and right.constant, columnar=columnar))


_ARROW_OPERATIONS: dict[type[exp.Expr], tuple[Callable[..., pa.Array], Callable[..., pa.Array]]] = {
    exp.Add: (pc.add_checked, pc.add),
    exp.Sub: (pc.subtract_checked, pc.subtract),
    exp.Mul: (pc.multiply_checked, pc.multiply),
}


def _columnar_arithmetic(
    kind: type[exp.Expr], left: Typed, right: Typed, result: T.DataType
) -> Columnar | None:
    """``left ∘ right`` over a table (``_arithmetic``'s rules with Arrow's kernels): integers
    by checked kernels in the result's type; decimals exactly in ``decimal256``, a product of
    more than 38 digits refused, rounded half away from zero to the result's scale and
    cast to it (checked: a value that does not fit fails). None when an operand is computed
    only row by row, or the exact value could pass 76 digits."""
    if not (left.vectorized and right.vectorized):
        return None
    checked, exact = _ARROW_OPERATIONS[kind]
    target = arrow_type(result)
    if not isinstance(result, T.DecimalType):

        def integral(table: pa.Table) -> pa.Array | pa.ChunkedArray:
            a, b = (_checked(pc.cast, side.over(table), target) for side in (left, right))
            return _checked(checked, a, b)

        return integral
    (p1, s1), (p2, s2) = decimal_shape(left), decimal_shape(right)
    multiplies = kind is exp.Mul
    scale = s1 + s2 if multiplies else max(s1, s2)
    precision = p1 + p2 + 1 if multiplies else max(p1 - s1, p2 - s2) + scale + 1
    if precision + 1 > _MAX_WIDE_PRECISION:
        return None
    # a product is exact in Spark while it has at most 38 digits: its type is then wide enough
    long_product = multiplies and precision > MAX_PRECISION
    digits_checked = pa.decimal256(MAX_PRECISION, scale) if long_product else None
    wide = pa.decimal256(precision + 1, scale)

    def decimals(table: pa.Table) -> pa.Array | pa.ChunkedArray:
        a = _wide_decimal(left.over(table), p1, s1)
        b = _wide_decimal(right.over(table), p2, s2)
        value = _checked(pc.cast, _checked(exact, a, b), wide)
        if digits_checked is not None:
            _checked(pc.cast, value, digits_checked)
        if result.scale < scale:
            value = pc.round(value, ndigits=result.scale, round_mode="half_towards_infinity")
        return _checked(pc.cast, value, target)

    return decimals


def _wide_decimal(
    values: pa.Array | pa.ChunkedArray | pa.Scalar, precision: int, scale: int
) -> pa.Array | pa.ChunkedArray | pa.Scalar:
    return cast_checked(values, pa.decimal256(precision, scale))


def cast_checked(
    values: pa.Array | pa.ChunkedArray | pa.Scalar, target: pa.DataType
) -> pa.Array | pa.ChunkedArray | pa.Scalar:
    """``values`` cast to ``target`` by Arrow's checked cast (raises
    ``DriverMergeDeclinedError`` when a value does not fit); an integer to a decimal through
    ``decimal256(20, 0)``, as Arrow casts an integer only to a decimal of all its type's
    digits."""
    if pa.types.is_integer(values.type) and pa.types.is_decimal(target):
        values = _checked(pc.cast, values, pa.decimal256(_INTEGRAL_DIGITS[-1], 0))
    return _checked(pc.cast, values, target)


def _checked(
    function: Callable[..., pa.Array | pa.ChunkedArray], *arguments: object
) -> pa.Array | pa.ChunkedArray:
    """``function(*arguments)``, an Arrow failure (an overflow, a value that does not fit)
    raised as ``DriverMergeDeclinedError``."""
    try:
        return function(*arguments)
    except pa.ArrowInvalid as error:
        raise DriverMergeDeclinedError(f"Arrow: {error}") from None


def _folded(typed: Typed) -> Typed:
    """A constant computed once (None: it declines, and is left to Spark)."""
    if not typed.constant:
        return typed
    try:
        value = typed.evaluate({})
    except DriverMergeDeclinedError:
        return typed
    return Typed(lambda row: value, typed.data_type, True)  # not a literal to Spark's typing


def decimal_shape(operand: Typed) -> tuple[int, int]:
    """The precision and scale Spark widens the number ``operand`` to in decimal arithmetic
    and comparisons."""
    data_type = operand.data_type
    if isinstance(data_type, T.DecimalType):
        return data_type.precision, data_type.scale
    if operand.literal_digits is not None:
        return operand.literal_digits, 0
    return _INTEGRAL_DIGITS[_INTEGRAL_RANKS[type(data_type)]], 0


def wider_type(data_types: list[T.DataType]) -> T.DataType | None:
    """Spark's common type of a CASE's branches (``findWiderCommonType``): their one type, the
    widest integral of integrals, or the wider decimal when one is a decimal (an integral as
    the DECIMAL of all its type's digits: DECIMAL(10, 0) for INT, literals too); None for
    anything else, which the driver leaves to Spark."""
    if all(t == data_types[0] for t in data_types):
        return data_types[0]
    if not all(is_number(t) for t in data_types):
        return None
    ranks = [_INTEGRAL_RANKS.get(type(t)) for t in data_types]
    if all(rank is not None for rank in ranks):
        return _INTEGRAL_BY_RANK[max(rank for rank in ranks if rank is not None)]
    shapes = [
        (t.precision, t.scale)
        if isinstance(t, T.DecimalType)
        else (_INTEGRAL_DIGITS[_INTEGRAL_RANKS[type(t)]], 0)
        for t in data_types
    ]
    scale = max(s for _, s in shapes)
    return T.DecimalType(min(max(p - s for p, s in shapes) + scale, MAX_PRECISION), scale)


def _adjusted(precision: int, scale: int) -> T.DecimalType:
    """Spark's ``DecimalType.adjustPrecisionScale`` with precision loss allowed."""
    if precision <= MAX_PRECISION:
        return T.DecimalType(precision, scale)
    whole = precision - scale
    kept = max(MAX_PRECISION - whole, min(scale, _MIN_ADJUSTED_SCALE))
    return T.DecimalType(MAX_PRECISION, kept)


def fits(value: Number, data_type: T.DataType) -> bool:
    """Whether the integral or decimal ``value`` (at most ``data_type``'s scale) is one of
    ``data_type``'s values."""
    if isinstance(data_type, T.DecimalType):
        whole = data_type.precision - data_type.scale
        return abs(decimal.Decimal(value)) < decimal.Decimal(1).scaleb(whole)
    return _fits_integral(int(value), _INTEGRAL_RANKS[type(data_type)])


def _range_check(data_type: T.DataType) -> Callable[[Number], Number]:
    """A value in ``data_type``: rounded half up to a decimal's scale; raises
    ``DriverMergeDeclinedError`` when it does not fit."""
    quantum = (
        decimal.Decimal(1).scaleb(-data_type.scale)
        if isinstance(data_type, T.DecimalType)
        else None
    )

    def checked(value: Number) -> Number:
        if quantum is not None:
            with decimal.localcontext(EXACT):
                value = decimal.Decimal(value).quantize(quantum, rounding=decimal.ROUND_HALF_UP)
        if not fits(value, data_type):
            raise DriverMergeDeclinedError(f"a value outside {data_type.simpleString()}")
        return value

    return checked


def _fits_integral(value: int, rank: int) -> bool:
    half = 1 << (_INTEGRAL_BITS[rank] - 1)
    return -half <= value < half


def _digits(number: decimal.Decimal) -> tuple[int, int]:
    """The number of digits of ``number``'s unscaled value, and its scale (≥ 0)."""
    _, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    scale = max(-exponent, 0)
    significant = len(digits) + max(exponent, 0)
    return significant, scale


def _plain_number(text: str) -> bool:
    """Digits with at most one point: an integral or decimal literal (``1e3`` is a double,
    ``1L``/``1BD`` suffixed ones are left out)."""
    digits = text.replace(".", "", 1)
    return bool(digits) and digits.isdigit()
