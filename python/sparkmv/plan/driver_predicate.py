"""A view's WHERE evaluated by the driver over a row's Python values, as Spark evaluates it.

Only a grammar whose meaning in Python is Spark's is compiled; anything else (functions,
casts of columns, division, floating point, timestamps, a date against a string) is not, and
the view is refreshed by Spark (``compile_predicate`` returns None):

- ``AND``, ``OR``, ``NOT`` in SQL's three-valued logic (Kleene: NULL is unknown);
- ``a op b``, ``op`` one of ``= <> != < <= > >=``, and ``a BETWEEN l AND h`` (Spark's
  ``a >= l AND a <= h``), over expressions ``driver_expression`` compiles (columns,
  constants, ``+ - *`` of numbers, a date constant shifted by days, months or years):
  numbers compared by value, as Spark compares them after widening both sides to a common
  decimal (refused when that type would pass 38 digits and round one side); dates; or
  binary-collation strings (compared by code point, the order of the UTF-8 bytes Spark
  compares);
- ``a IS [NOT] NULL``, ``a [NOT] IN (constants…)`` (NULL when no constant equals the value
  and one of them is NULL), a boolean column, ``TRUE``, ``FALSE``, ``NULL``;
- ``a [NOT] LIKE 'prefix%'`` of a binary-collation string: whether ``a`` starts with the
  prefix (no other wildcard, no escape).

``compile_value`` compiles an aggregate's argument: an expression, or ``CASE WHEN p THEN v …
[ELSE e] END`` over predicates and values of this grammar, of the branches' common type.

A row passes the WHERE when the predicate is TRUE (not FALSE, not NULL).

``columnar_predicate`` evaluates the same predicate over a whole Arrow table at once.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T
from sqlglot import exp

from sparkmv.plan.driver_expression import (
    MAX_PRECISION,
    Row,
    Typed,
    arrow_type,
    cast_checked,
    compile_expression,
    decimal_shape,
    is_number,
    wider_type,
)

Predicate = Callable[[Row], bool | None]
"""A compiled predicate: TRUE, FALSE or NULL (None) for a row."""

_COMPARISONS: dict[type[exp.Expr], Callable[[Any, Any], Any]] = {
    exp.EQ: operator.eq,
    exp.NEQ: operator.ne,
    exp.LT: operator.lt,
    exp.LTE: operator.le,
    exp.GT: operator.gt,
    exp.GTE: operator.ge,
}


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
        return _kleene(left, right, dominant=isinstance(node, exp.Or))
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
        tested = compile_expression(node.this, columns, types)
        if tested is None:
            return None
        value_of = tested.evaluate
        return lambda row: value_of(row) is None
    if isinstance(node, exp.In):
        return _in(node, columns, types)
    if isinstance(node, exp.Like):
        found = _prefix_like(node, columns, types)
        if found is None:
            return None
        value_of, prefix = found[0].evaluate, found[1]
        holds: Predicate = lambda row: _starts_with(value_of(row), prefix)  # noqa: E731
        return _not(holds) if node.args.get("negate") else holds
    if isinstance(node, exp.Between):
        rewritten = _between(node)
        return None if rewritten is None else compile_predicate(rewritten, columns, types)
    if type(node) in _COMPARISONS:
        return _comparison(node, columns, types)
    return None


def compile_value(
    node: exp.Expr, columns: Mapping[str, str], types: Mapping[str, T.DataType]
) -> Typed | None:
    """``node`` compiled as ``compile_expression`` compiles it, or, when it is
    ``CASE WHEN p_1 THEN v_1 … [ELSE e] END``, as the first ``v_i`` whose ``p_i`` is TRUE
    (else ``e``, or NULL), of the branches' common type (``wider_type``), each value cast
    to it (a decimal exactly, or ``DriverMergeDeclinedError``)."""
    if not isinstance(node, exp.Case) or node.this is not None:
        return compile_expression(node, columns, types)
    conditions = [compile_predicate(branch.this, columns, types) for branch in node.args["ifs"]]
    masks = [columnar_predicate(branch.this, columns, types) for branch in node.args["ifs"]]
    values = [
        compile_expression(branch.args["true"], columns, types) for branch in node.args["ifs"]
    ]
    default = node.args.get("default")
    otherwise = None if default is None else compile_expression(default, columns, types)
    branches = [*values, otherwise] if default is not None else values
    if any(c is None for c in conditions) or any(v is None for v in branches):
        return None
    typed = [v for v in branches if v is not None]
    result = wider_type([v.data_type for v in typed])
    if result is None or not (is_number(result) or _binary_string(result)):
        return None
    target = arrow_type(result)
    checks = [c for c in conditions if c is not None]
    outcomes = [v for v in values if v is not None]

    def evaluate(row: Row) -> object:
        for holds, value in zip(checks, outcomes, strict=True):
            if holds(row) is True:
                return _cast_value(value.evaluate(row), target)
        return None if otherwise is None else _cast_value(otherwise.evaluate(row), target)

    columnar = None
    if all(m is not None for m in masks) and all(v.vectorized for v in typed):

        def columnar(table: pa.Table) -> pa.Array | pa.ChunkedArray:
            size = table.num_rows
            chosen = _broadcast(
                pa.scalar(None, target) if otherwise is None else otherwise.over(table),
                target,
                size,
            )
            for mask, value in reversed(list(zip(masks, outcomes, strict=True))):
                assert mask is not None
                holds = _broadcast(mask(table), pa.bool_(), size)
                chosen = pc.if_else(
                    pc.fill_null(holds, False), _broadcast(value.over(table), target, size), chosen
                )
            return chosen

    return Typed(evaluate, result, False, columnar=columnar)


def _broadcast(
    values: pa.Array | pa.ChunkedArray | pa.Scalar, target: pa.DataType, size: int
) -> pa.Array | pa.ChunkedArray:
    """``values`` cast to ``target`` (checked), a scalar repeated ``size`` times."""
    cast = cast_checked(values, target)
    return pa.repeat(cast, size) if isinstance(cast, pa.Scalar) else cast


def _cast_value(value: object, target: pa.DataType) -> object:
    """A branch's value as the CASE's type has it (checked, as ``cast_checked``)."""
    if value is None:
        return None
    cast = cast_checked(pa.array([value]), target)
    return cast[0].as_py()


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
    left = compile_expression(node.this, columns, types)
    right = compile_expression(node.expression, columns, types)
    if left is None or right is None or not _comparable(left, [right]):
        return None
    compare = _COMPARISONS[type(node)]
    a, b = left.evaluate, right.evaluate

    def evaluate(row: Row) -> bool | None:
        x, y = a(row), b(row)
        return None if x is None or y is None else bool(compare(x, y))

    return evaluate


def _prefix_like(
    node: exp.Like, columns: Mapping[str, str], types: Mapping[str, T.DataType]
) -> tuple[Typed, str] | None:
    """``a [NOT] LIKE 'p%'`` (no other wildcard, no escape) of a binary-collation string ``a``:
    ``a`` compiled and the prefix ``p``, which the string starts with exactly when Spark's
    ``LIKE`` holds."""
    pattern = node.expression
    if node.args.get("escape") is not None or not isinstance(pattern, exp.Literal):
        return None
    text = pattern.this
    if not pattern.is_string or not text.endswith("%"):
        return None
    prefix = text[:-1]
    if any(c in prefix for c in "%_\\"):
        return None
    tested = compile_expression(node.this, columns, types)
    if tested is None or not _binary_string(tested.data_type):
        return None
    return tested, prefix


def _starts_with(value: object, prefix: str) -> bool | None:
    return None if value is None else str(value).startswith(prefix)


def _between(node: exp.Between) -> exp.Expr | None:
    """``x BETWEEN l AND h`` as Spark reads it, ``x >= l AND x <= h`` (None: SYMMETRIC)."""
    if node.args.get("symmetric"):
        return None
    low = exp.GTE(this=node.this.copy(), expression=node.args["low"].copy())
    high = exp.LTE(this=node.this.copy(), expression=node.args["high"].copy())
    return exp.And(this=low, expression=high)


def _in_list(
    node: exp.In, columns: Mapping[str, str], types: Mapping[str, T.DataType]
) -> tuple[Typed, list[Typed], bool] | None:
    """``x [NOT] IN (…)``'s tested value, its constants other than NULL, and whether a NULL
    is listed; None when the list is not of constants ``x`` compares with as Python does."""
    tested = compile_expression(node.this, columns, types)
    if tested is None or node.args.get("query") is not None or not node.expressions:
        return None
    listed = [item for item in node.expressions if not isinstance(item, exp.Null)]
    present = [compile_expression(item, columns, types) for item in listed]
    constants = [item for item in present if item is not None and item.constant]
    if len(constants) < len(listed) or not _comparable(tested, constants):
        return None
    return tested, constants, len(listed) < len(node.expressions)


def _in(
    node: exp.In, columns: Mapping[str, str], types: Mapping[str, T.DataType]
) -> Predicate | None:
    parts = _in_list(node, columns, types)
    if parts is None:
        return None
    tested, constants, has_null = parts
    present = [item.value() for item in constants]
    value_of = tested.evaluate

    def evaluate(row: Row) -> bool | None:
        found = value_of(row)
        if found is None:
            return None
        if any(found == value for value in present):
            return True
        return None if has_null else False

    return evaluate


def _comparable(tested: Typed, others: list[Typed]) -> bool:
    """Whether Spark compares ``tested`` with each of ``others`` as Python does: all numbers
    whose common decimal type (the widest integral part and the largest scale) fits in 38
    digits, so that neither side is rounded; all dates; or all binary-collation strings."""
    kinds = [tested.data_type, *(other.data_type for other in others)]
    if all(isinstance(kind, T.DateType) for kind in kinds):
        return True
    if all(_binary_string(kind) for kind in kinds):
        return True
    if not all(is_number(kind) for kind in kinds):
        return False
    if not any(isinstance(kind, T.DecimalType) for kind in kinds):
        return True  # integers compare as the widest integral type
    shapes = [decimal_shape(typed) for typed in (tested, *others)]
    whole = max(precision - scale for precision, scale in shapes)
    return whole + max(scale for _, scale in shapes) <= MAX_PRECISION


def _binary_string(column_type: T.DataType | None) -> bool:
    return (
        isinstance(column_type, T.StringType)
        and getattr(column_type, "collation", "UTF8_BINARY") == "UTF8_BINARY"
    )


def _boolean(value: object) -> bool | None:
    return None if value is None else bool(value)


def _kleene(left: Predicate, right: Predicate, dominant: bool) -> Predicate:
    """``left AND right`` (``dominant`` FALSE) or ``left OR right`` (TRUE) in three-valued
    logic: ``dominant`` when either side is, else NULL when either side is, else the other
    value."""

    def evaluate(row: Row) -> bool | None:
        a, b = left(row), right(row)
        if a is dominant or b is dominant:
            return dominant
        return None if a is None or b is None else not dominant

    return evaluate


def _not(inner: Predicate) -> Predicate:
    def evaluate(row: Row) -> bool | None:
        value = inner(row)
        return None if value is None else not value

    return evaluate


ColumnarPredicate = Callable[[pa.Table], pa.Array | pa.ChunkedArray | pa.Scalar]
"""A compiled predicate over every row of a table at once: TRUE, FALSE or NULL per row (a
scalar when it reads no column)."""

_ARROW_COMPARISONS: dict[type[exp.Expr], Callable[..., Any]] = {
    exp.EQ: pc.equal,
    exp.NEQ: pc.not_equal,
    exp.LT: pc.less,
    exp.LTE: pc.less_equal,
    exp.GT: pc.greater,
    exp.GTE: pc.greater_equal,
}
_NULL = pa.scalar(None, pa.bool_())


def columnar_predicate(
    predicate: exp.Expr, columns: Mapping[str, str], types: Mapping[str, T.DataType]
) -> ColumnarPredicate | None:
    """``compile_predicate``'s predicate over a whole Arrow table, by Arrow's kernels (Kleene
    AND/OR, comparisons of both sides cast to their common type); None when some part is
    evaluated only row by row. The same TRUE, FALSE or NULL per row as ``compile_predicate``."""
    if compile_predicate(predicate, columns, types) is None:
        return None  # outside the grammar: the checks below are compile_predicate's
    return _columnar(predicate, columns, types)


def _columnar(
    node: exp.Expr, columns: Mapping[str, str], types: Mapping[str, T.DataType]
) -> ColumnarPredicate | None:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, (exp.And, exp.Or)):
        left, right = (
            _columnar(node.this, columns, types),
            _columnar(node.expression, columns, types),
        )
        if left is None or right is None:
            return None
        kleene = pc.and_kleene if isinstance(node, exp.And) else pc.or_kleene
        return lambda table: kleene(left(table), right(table))
    if isinstance(node, exp.Not):
        inner = _columnar(node.this, columns, types)
        return None if inner is None else (lambda table: pc.invert(inner(table)))
    if isinstance(node, exp.Boolean):
        constant = pa.scalar(bool(node.this))
        return lambda table: constant
    if isinstance(node, exp.Null):
        return lambda table: _NULL
    if isinstance(node, exp.Column):
        flag = _column(node, columns)
        assert flag is not None
        return lambda table: table.column(flag)
    if isinstance(node, exp.Between):
        rewritten = _between(node)
        return None if rewritten is None else _columnar(rewritten, columns, types)
    if isinstance(node, exp.Is):
        tested = compile_expression(node.this, columns, types)
        if tested is None or not tested.vectorized:
            return None
        return lambda table: pc.is_null(tested.over(table))
    if isinstance(node, exp.In):
        return _columnar_in(node, columns, types)
    if isinstance(node, exp.Like):
        found = _prefix_like(node, columns, types)
        if found is None or not found[0].vectorized:
            return None
        string, prefix = found
        if node.args.get("negate"):  # NOT LIKE
            return lambda table: pc.invert(pc.starts_with(string.over(table), pattern=prefix))
        return lambda table: pc.starts_with(string.over(table), pattern=prefix)
    a = compile_expression(node.this, columns, types)
    b = compile_expression(node.expression, columns, types)
    if a is None or b is None or not (a.vectorized and b.vectorized):
        return None
    compare, common = _ARROW_COMPARISONS[type(node)], _common_type(a, [b])
    return lambda table: compare(
        cast_checked(a.over(table), common), cast_checked(b.over(table), common)
    )


def _columnar_in(
    node: exp.In, columns: Mapping[str, str], types: Mapping[str, T.DataType]
) -> ColumnarPredicate | None:
    parts = _in_list(node, columns, types)
    if parts is None or not parts[0].vectorized:
        return None
    tested, constants, has_null = parts
    common = _common_type(tested, constants)
    try:
        values = pa.array([item.value() for item in constants], common)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # left to the row-by-row predicate
        return None

    def evaluate(table: pa.Table) -> pa.Array | pa.ChunkedArray | pa.Scalar:
        value = cast_checked(tested.over(table), common)
        found = pc.is_in(value, value_set=values)
        if has_null:  # no match among the values: NULL, not FALSE
            found = pc.if_else(found, True, _NULL)
        return pc.if_else(pc.is_null(value), _NULL, found)

    return evaluate


def _common_type(tested: Typed, others: list[Typed]) -> pa.DataType:
    """The Arrow type ``_comparable`` operands are compared in: numbers as the common
    decimal (or BIGINT), dates and strings as they are."""
    kind = tested.data_type
    if not is_number(kind):
        return arrow_type(kind)
    shapes = [decimal_shape(typed) for typed in (tested, *others)]
    if not any(isinstance(t.data_type, T.DecimalType) for t in (tested, *others)):
        return pa.int64()
    scale = max(s for _, s in shapes)
    return pa.decimal128(max(p - s for p, s in shapes) + scale, scale)
