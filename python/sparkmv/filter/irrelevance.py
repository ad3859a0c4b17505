"""Irrelevant-update filters: Blakeley's satisfiability test compiled into one predicate per
occurrence of a base table, applied to its change ``ΔR`` before any join.

Blakeley §4 (Theorem 4.1): for a block ``π_X(σ_C(R_1 × … × R_p))`` and a tuple ``t``
inserted into or deleted from ``R_i``, the change is irrelevant to the block iff
``C(t, Y_2)`` — ``C`` with ``t``'s values substituted for ``R_i``'s attributes — is
unsatisfiable. Algorithm 4.1 builds the graph of ``C``'s invariant atoms once and adds each
tuple's variant part. Here that second step is done symbolically, once per view: the graph
of one disjunct of ``C`` over *all* its variables (``R_i``'s included) is closed by
Floyd–Warshall; substituting ``t`` fixes the values of ``R_i``'s nodes, and a closed system
of difference constraints has a solution extending fixed values iff those values satisfy
every closed bound between fixed nodes (shortest-path closure is minimal and decomposable).
The fixed nodes are ``R_i``'s attributes, ``ZERO`` and the constants, so the test on ``t``
*is* a conjunction of bounds on ``t``'s attributes (``a ≤ 9``, ``b ≥ 6``) and on differences
between them (``a − b ≤ 3``) — a Spark predicate, evaluated on ``ΔR`` inside Spark. ``C`` in
DNF is unsatisfiable iff every disjunct is, so the filter is the OR of the disjuncts' tests.

Blocks: the Filter/Project/Join nodes above a scan up to the first other operator (a
``SELECT``'s FROM, WHERE and select list; subqueries in FROM included). Its predicates are
rewritten through the block's projections onto the leaves' columns; leaves that are not the
scan (other tables, aggregates, DISTINCT subqueries) are the free variables ``Y_2``.

Why filtering ``ΔR`` of one occurrence is exact: every row of the block's result that the
dropped tuples would have produced fails ``C``, and the block applies ``C`` before its rows
leave it (the join rule's ``R_old`` still comes from the whole change).

NULL: a compiled bound on ``t.a`` comes from an atom of the disjunct over ``a``; with ``a``
NULL that atom, hence the disjunct, is not TRUE, and the bound is NULL as well: dropped.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date
from fractions import Fraction

from pyspark.sql import types as T
from sqlglot import exp

from sparkmv.analyze.relational import Filter, Join, Node, Project, Scan, children
from sparkmv.filter.difference_constraints import Closure, Weight, close
from sparkmv.filter.predicates import INTEGRAL, ZERO, Conjunction, ConstantNode, disjuncts, family

BLOCK_OPERATORS = (Filter, Project, Join)
MAX_CLOSURE_WORK = 500_000
"""Above this many Floyd–Warshall steps for a block (about a second in Python) its scans get
no filter: a view joining dozens of tables on many columns keeps every changed row."""


@dataclass(frozen=True)
class Block:
    """One ``π_X(σ_C(R_1 × … × R_p))``: its predicates over its leaves' columns."""

    predicates: tuple[exp.Expr, ...]
    leaves: tuple[Node, ...]


def irrelevance_filters(
    root: Node,
    leaf_types: Callable[[Node], Mapping[str, T.DataType]],
    exact_arithmetic: bool,
) -> dict[Scan, exp.Expr]:
    """Per scan whose changes can be screened: the predicate (over the base table's own
    column names) its changed rows must satisfy to be relevant. Scans without one keep every
    changed row. ``leaf_types`` gives a node's output columns' Spark types.

    A scan in a shared subtree (``ir.walk``: an anti-join reads its left input twice) is in
    several blocks, and its one change feeds them all: a changed row is relevant when it is
    to any of them, so its filter is the OR of the blocks' tests, and none when some block
    keeps every row (no predicate, no test, or the scan outside any block)."""
    tests: dict[Scan, list[exp.Expr | None]] = {}
    for block in blocks(root):
        for scan, test in _block_tests(block, leaf_types, exact_arithmetic).items():
            tests.setdefault(scan, []).append(test)
    filters: dict[Scan, exp.Expr] = {}
    for scan, found in tests.items():
        if any(test is None for test in found):
            continue
        kept = list({test.sql(): test for test in found if test is not None}.values())
        filters[scan] = exp.or_(*kept) if len(kept) > 1 else kept[0]
    return filters


def _block_tests(
    block: Block,
    leaf_types: Callable[[Node], Mapping[str, T.DataType]],
    exact_arithmetic: bool,
) -> dict[Scan, exp.Expr | None]:
    """The test of each scan among ``block``'s leaves (None: every changed row is relevant)."""
    scans = [leaf for leaf in block.leaves if isinstance(leaf, Scan)]
    found: dict[Scan, exp.Expr | None] = dict.fromkeys(scans)
    if not block.predicates or not scans:
        return found
    types = {name: t for leaf in block.leaves for name, t in leaf_types(leaf).items()}
    disjunction = disjuncts(exp.and_(*block.predicates), types, exact_arithmetic)
    if disjunction is None or _closure_work(disjunction) > MAX_CLOSURE_WORK:
        return found
    closed = [(conjunction, close(conjunction)) for conjunction in disjunction]
    for scan in scans:
        found[scan] = compile_test(closed, scan, types)
    return found


def _closure_work(disjunction: list[Conjunction]) -> int:
    """Floyd–Warshall's steps for every disjunct: the cube of its node count."""
    return sum(
        len({n for c in conjunction for n in (c.earlier, c.later)}) ** 3
        for conjunction in disjunction
    )


def blocks(root: Node) -> Iterator[Block]:
    """Every block of the tree (a block's leaves may hold blocks of their own), each once; a
    scan outside any block (under a union, say) is a block without predicates."""
    stack: list[Node] = [root]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Scan):
            yield Block((), (node,))
            continue
        if not isinstance(node, BLOCK_OPERATORS):
            stack.extend(children(node))
            continue
        predicates: list[exp.Expr] = []
        projections: dict[str, exp.Expr] = {}
        leaves: list[Node] = []
        _collect(node, predicates, projections, leaves)
        yield Block(tuple(_substituted(p, projections) for p in predicates), tuple(leaves))
        stack.extend(leaf for leaf in leaves if not isinstance(leaf, Scan))


def _collect(
    node: Node, predicates: list[exp.Expr], projections: dict[str, exp.Expr], leaves: list[Node]
) -> None:
    if isinstance(node, Filter):
        predicates.append(node.predicate)
        _collect(node.child, predicates, projections, leaves)
    elif isinstance(node, Join):
        if node.condition is not None:
            predicates.append(node.condition)
        for child in node.inputs:
            _collect(child, predicates, projections, leaves)
    elif isinstance(node, Project):
        projections.update(zip(node.outputs, node.expressions, strict=True))
        _collect(node.child, predicates, projections, leaves)
    else:
        leaves.append(node)


def _substituted(predicate: exp.Expr, projections: dict[str, exp.Expr]) -> exp.Expr:
    """``predicate`` over the leaves' columns: a projected column is its expression."""

    def replace(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.name in projections:
            return exp.Paren(this=_substituted(projections[node.name].copy(), projections))
        return node

    return predicate.copy().transform(replace)


def compile_test(
    closed: list[tuple[Conjunction, Closure | None]],
    scan: Scan,
    types: Mapping[str, T.DataType],
) -> exp.Expr | None:
    """The relevance test of ``scan``'s changed rows: OR over the disjuncts (each with its
    closure, None if unsatisfiable) of the bounds the closure puts on the scan's columns
    (None: every row is relevant; FALSE: none)."""
    names = dict(zip(scan.outputs, scan.columns, strict=True))
    tests: list[exp.Expr] = []
    for conjunction, closure in closed:
        if closure is None:
            continue  # unsatisfiable whatever the tuple
        fixed = _fixed_nodes(conjunction, scan.outputs)
        bounds = _tuple_bounds(closure, fixed)
        if bounds is None:
            continue  # the constants contradict each other
        bounds.sort(key=lambda b: min(fixed.index(b.earlier), fixed.index(b.later)))
        columns = _TupleColumns(names, types)
        rendered = [_render(b, columns) for b in _without_implied(bounds, closure, fixed)]
        conditions = _equalities([condition for condition in rendered if condition is not None])
        conditions += _not_null(conjunction, names, conditions)
        if not conditions:
            return None  # some disjunct is satisfiable whatever the tuple
        tests.append(exp.and_(*conditions) if len(conditions) > 1 else conditions[0])
    if not tests:
        return exp.false()
    return exp.or_(*tests) if len(tests) > 1 else tests[0]


def _not_null(
    conjunction: Conjunction, names: Mapping[str, str], conditions: list[exp.Expr]
) -> list[exp.Expr]:
    """``col IS NOT NULL`` for each of the tuple's columns an atom of the disjunct compares
    but no bound mentions: with it NULL, that atom and so the disjunct is not TRUE."""
    mentioned = {
        column.name for condition in conditions for column in condition.find_all(exp.Column)
    }
    compared = {node for c in conjunction for node in (c.earlier, c.later) if isinstance(node, str)}
    compared &= set(names)
    return [
        exp.Not(this=exp.Is(this=exp.column(names[node], quoted=True), expression=exp.Null()))
        for node in sorted(compared, key=str)
        if names[node] not in mentioned
    ]


def _equalities(conditions: list[exp.Expr]) -> list[exp.Expr]:
    """``x <= v AND x >= v`` as ``x = v`` (where the first of the two was)."""
    result: list[exp.Expr] = []
    lower = {c.sql(): c for c in conditions if isinstance(c, exp.GTE)}
    merged: set[str] = set()
    for condition in conditions:
        if isinstance(condition, exp.LTE):
            twin = lower.get(exp.GTE(this=condition.this, expression=condition.expression).sql())
            if twin is not None:
                merged.add(twin.sql())
                result.append(exp.EQ(this=condition.this, expression=condition.expression))
                continue
        result.append(condition)
    return [c for c in result if not (isinstance(c, exp.GTE) and c.sql() in merged)]


@dataclass(frozen=True)
class Bound:
    """``later − earlier ≤ weight`` between two fixed nodes, one of them a tuple's column."""

    earlier: Hashable
    later: Hashable
    weight: Weight


def _fixed_nodes(conjunction: Conjunction, columns: tuple[str, ...]) -> list[Hashable]:
    """The nodes whose values a tuple fixes: its columns (in table order), ZERO, constants."""
    nodes = {node for c in conjunction for node in (c.earlier, c.later)}
    return sorted(
        (n for n in nodes if _is_constant(n) or n in columns),
        key=lambda n: (0, columns.index(n), "") if n in columns else (1, 0, repr(n)),
    )


def _tuple_bounds(closure: Closure, fixed: list[Hashable]) -> list[Bound] | None:
    """The closed bounds between fixed nodes that involve the tuple; None when the bounds
    between constants alone are violated."""
    bounds = []
    for earlier, later in itertools.permutations(fixed, 2):
        weight = closure.bound(earlier, later)
        if weight is None:
            continue
        if _is_constant(earlier) and _is_constant(later):
            if not _constants_satisfy(earlier, later, weight):
                return None
            continue
        bounds.append(Bound(earlier, later, weight))
    return bounds


def _is_constant(node: Hashable) -> bool:
    return node is ZERO or isinstance(node, ConstantNode)


def _constants_satisfy(earlier: Hashable, later: Hashable, weight: Weight) -> bool:
    """Whether ``later − earlier ≤ weight`` holds between two constants (of one family)."""
    if not (isinstance(earlier, ConstantNode) and isinstance(later, ConstantNode)):
        return True  # ZERO relates to no ordered constant
    a, b = later.value, earlier.value
    if weight.strict:
        return a < b  # type: ignore[operator]
    return a <= b  # type: ignore[operator]


def _without_implied(bounds: list[Bound], closure: Closure, fixed: list[Hashable]) -> list[Bound]:
    """Drop bounds implied by two others that are kept (``u→w→v`` as tight as ``u→v``),
    one at a time, so that the kept ones still imply every dropped one."""
    kept = {(b.earlier, b.later): b for b in bounds}
    for bound in bounds:
        pair = (bound.earlier, bound.later)
        for via in fixed:
            if via in pair:
                continue
            first, second = kept.get((bound.earlier, via)), kept.get((via, bound.later))
            first_weight = first.weight if first else _constant_weight(closure, bound.earlier, via)
            second_weight = second.weight if second else _constant_weight(closure, via, bound.later)
            if first_weight is None or second_weight is None:
                continue
            if not bound.weight.tighter_than(first_weight + second_weight):
                del kept[pair]
                break
    return list(kept.values())


def _constant_weight(closure: Closure, earlier: Hashable, later: Hashable) -> Weight | None:
    """A bound between two constants holds by itself (it was checked): usable as a link."""
    if _is_constant(earlier) and _is_constant(later):
        return closure.bound(earlier, later)
    return None


@dataclass(frozen=True)
class _TupleColumns:
    """The changed table's columns: internal name → the table's name, and Spark types."""

    names: Mapping[str, str]
    types: Mapping[str, T.DataType]

    def column(self, node: Hashable) -> exp.Column:
        assert isinstance(node, str)
        return exp.column(self.names[node], quoted=True)


def _render(bound: Bound, columns: _TupleColumns) -> exp.Expr | None:
    """``bound`` as a predicate on the table's columns (None: not expressible exactly, so
    not used — keeping more rows is always allowed)."""
    earlier, later, weight = bound.earlier, bound.later, bound.weight
    if later in columns.names and earlier in columns.names:
        return _difference(later, earlier, weight, columns)
    if later in columns.names:  # later ≤ earlier + w
        return _compare_constant(later, "<", earlier, weight, columns)
    # earlier ≥ later − w
    negated = Weight(-weight.value, weight.strict)
    return _compare_constant(earlier, ">", later, negated, columns)


def _compare_constant(
    name: Hashable,
    direction: str,
    constant: Hashable,
    offset: Weight,
    columns: _TupleColumns,
) -> exp.Expr | None:
    """``column ≤ constant + offset`` (direction "<") or ``column ≥ constant + offset``."""
    column = columns.column(name)
    data_type = columns.types[str(name)]
    strict = offset.strict
    value: exp.Expr
    if isinstance(constant, ConstantNode):
        value = _ordered_literal(constant.value)
    else:
        bound = offset.value
        if isinstance(data_type, INTEGRAL):
            bound, strict = Fraction(_integral(bound, direction, strict)), False
        literal = _numeric_literal(bound, data_type)
        if literal is None:
            return None
        value, exact = literal
        strict = strict and exact
    if direction == "<":
        return _at_most(column, value, strict)
    return _at_most(value, column, strict)


def _at_most(left: exp.Expr, right: exp.Expr, strict: bool) -> exp.Expr:
    """``left < right`` (strict) or ``left <= right``, the column on the left if any."""
    if isinstance(right, exp.Column) and not isinstance(left, exp.Column):
        return (
            exp.GT(this=right, expression=left) if strict else exp.GTE(this=right, expression=left)
        )
    return exp.LT(this=left, expression=right) if strict else exp.LTE(this=left, expression=right)


def _integral(bound: Fraction, direction: str, strict: bool) -> int:
    """The integer bound of an integral column: ``x < 5.5`` is ``x ≤ 5``, ``x > 5`` is
    ``x ≥ 6``."""
    floor, ceiling = math.floor(bound), math.ceil(bound)
    if direction == "<":
        return ceiling - 1 if strict else floor
    return floor + 1 if strict else ceiling


def _numeric_literal(value: Fraction, data_type: T.DataType) -> tuple[exp.Expr, bool] | None:
    """A literal Spark compares with a column of ``data_type`` as ``value``, and whether it
    equals ``value`` exactly (a double is the nearest one: a column ≤ value is ≤ it too)."""
    if family(data_type) == "float":
        try:
            nearest = float(value)
        except OverflowError:
            return None
        return exp.cast(exp.Literal.number(repr(nearest)), "DOUBLE"), Fraction(nearest) == value
    text = _decimal_text(value)
    return (exp.Literal.number(text), True) if text is not None else None


def _decimal_text(value: Fraction) -> str | None:
    """``value`` as an exact decimal numeral (None when it has no finite one in 38 digits)."""
    for scale in range(39):
        scaled = value * 10**scale
        if scaled.denominator != 1:
            continue
        digits = str(abs(scaled.numerator)).rjust(scale + 1, "0")
        sign = "-" if value < 0 else ""
        return f"{sign}{digits[:-scale]}.{digits[-scale:]}" if scale else f"{sign}{digits}"
    return None


def _ordered_literal(value: str | date) -> exp.Expr:
    if isinstance(value, date):
        return exp.cast(exp.Literal.string(value.isoformat()), "DATE")
    return exp.Literal.string(value)


def _difference(
    later: Hashable,
    earlier: Hashable,
    weight: Weight,
    columns: _TupleColumns,
) -> exp.Expr | None:
    """``later − earlier ≤ w`` between two columns of the tuple."""
    left, right = columns.column(later), columns.column(earlier)
    if weight.value == 0:
        return _at_most(left, right, weight.strict)
    wide = _wide_decimal(columns.types[str(later)], columns.types[str(earlier)])
    text = _decimal_text(weight.value)
    if wide is None or text is None:
        return None
    difference = exp.Sub(this=exp.cast(left, wide), expression=exp.cast(right, wide))
    return _at_most(difference, exp.Literal.number(text), weight.strict)


INTEGER_DIGITS: dict[type[T.DataType], int] = {
    T.ByteType: 3,
    T.ShortType: 5,
    T.IntegerType: 10,
    T.LongType: 19,
}


def _wide_decimal(*data_types: T.DataType) -> str | None:
    """A decimal type in which the difference of two such columns is exact (no overflow)."""
    digits, scale = 0, 0
    for data_type in data_types:
        if isinstance(data_type, T.DecimalType):
            digits = max(digits, data_type.precision - data_type.scale)
            scale = max(scale, data_type.scale)
        elif type(data_type) in INTEGER_DIGITS:
            digits = max(digits, INTEGER_DIGITS[type(data_type)])
        else:
            return None
    if digits + 1 + scale > 38:
        return None
    return f"DECIMAL(38, {scale})"
