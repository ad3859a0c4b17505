"""A view's predicate as a disjunction of conjunctions of difference constraints (Blakeley §4).

``disjuncts(predicate, types)`` rewrites a WHERE/ON predicate (sqlglot, over columns whose
Spark types are known) into negation normal form, then disjunctive normal form, and each atom
of the class ``x op y + c`` / ``x op c`` into ``Constraint``s. Both rewrites keep SQL's
three-valued semantics: Kleene's AND/OR distribute and obey De Morgan, and ``NOT (x < y)`` is
``x ≥ y`` (both NULL when an operand is). A row passes ``WHERE`` iff some disjunct is TRUE,
iff all of that disjunct's atoms are TRUE.

An atom outside the class (``<>``, ``LIKE``, ``IS NULL``, functions, arithmetic beyond
``± c``, a comparison across types Spark would cast) becomes TRUE: dropping a conjunct can
only make the predicate easier to satisfy, so the test stays sound (it may keep a tuple it
could have dropped, never the other way round).

Domains, per Spark type (one "family" per kind of comparison that is exact):
- integral and DECIMAL(p ≤ 28): exact arithmetic; an atom whose variables are all integral
  is tightened as in the paper (``x < c`` ⇒ ``x ≤ ⌈c⌉ − 1``); ``± c`` arithmetic only when
  Spark's arithmetic cannot wrap around (ANSI mode: an overflow fails the query);
- FLOAT/DOUBLE: order only (no arithmetic: ``x + 1`` rounds, and NaN + 1 = NaN); constants
  are taken as the doubles Spark compares with;
- STRING (binary collation) and DATE: order only, each constant a node of its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from fractions import Fraction
from typing import Any

from pyspark.sql import types as T
from sqlglot import exp

from sparkmv.filter.difference_constraints import Constraint, Weight

MAX_DISJUNCTS = 64
"""Beyond this many disjuncts the DNF is not built (no filter: every tuple is kept)."""
MAX_EXACT_DECIMAL_PRECISION = 28
"""Comparisons of such decimals with each other and with integers are exact in Spark."""


class ZeroNode:
    """The node whose value is 0: ``x ≤ c`` is ``x − ZERO ≤ c``."""

    def __repr__(self) -> str:
        return "ZERO"


ZERO = ZeroNode()


@dataclass(frozen=True)
class ConstantNode:
    """A constant of an ordered non-numeric type (``family`` "string" or "date")."""

    family: str
    value: str | date


Conjunction = list[Constraint]

INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)


def family(data_type: T.DataType) -> str | None:
    """The kind of comparison a column of this type takes part in; None: none in the class."""
    if isinstance(data_type, INTEGRAL):
        return "exact"
    if isinstance(data_type, T.DecimalType):
        return "exact" if data_type.precision <= MAX_EXACT_DECIMAL_PRECISION else None
    if isinstance(data_type, (T.FloatType, T.DoubleType)):
        return "float"
    if isinstance(data_type, T.StringType) and data_type.collation == "UTF8_BINARY":
        return "string"
    if isinstance(data_type, T.DateType):
        return "date"
    return None


def disjuncts(
    predicate: exp.Expr, types: Mapping[str, T.DataType], exact_arithmetic: bool
) -> list[Conjunction] | None:
    """``predicate`` as ``C_1 ∨ … ∨ C_m`` (each a list of constraints; ``[]`` is FALSE and
    ``[[]]`` TRUE), or None when the DNF would exceed ``MAX_DISJUNCTS``."""
    return _Translator(types, exact_arithmetic).dnf(predicate, negated=False)


@dataclass(frozen=True)
class _Linear:
    """``Σ coefficient·column + constant``; ``arithmetic``: it came from ``+``/``−``."""

    terms: dict[str, int]
    constant: Fraction
    arithmetic: bool = False

    def minus(self, other: _Linear) -> _Linear:
        terms = dict(self.terms)
        for name, coefficient in other.terms.items():
            terms[name] = terms.get(name, 0) - coefficient
        return _Linear(
            {name: c for name, c in terms.items() if c},
            self.constant - other.constant,
            self.arithmetic or other.arithmetic,
        )


COMPARISONS: dict[type[exp.Expr], str] = {
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.EQ: "=",
}
NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "=": "<>"}
MIRRORED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}


class _Translator:
    def __init__(self, types: Mapping[str, T.DataType], exact_arithmetic: bool) -> None:
        self.types = types
        self.exact_arithmetic = exact_arithmetic

    def dnf(self, node: exp.Expr, negated: bool) -> list[Conjunction] | None:
        if isinstance(node, exp.Paren):
            return self.dnf(node.this, negated)
        if isinstance(node, exp.Not):
            return self.dnf(node.this, not negated)
        if isinstance(node, (exp.And, exp.Or)):
            conjunctive = isinstance(node, exp.And) != negated  # De Morgan
            left = self.dnf(node.left, negated)
            right = self.dnf(node.right, negated)
            if left is None or right is None:
                return None
            return _and(left, right) if conjunctive else _or(left, right)
        if isinstance(node, exp.Boolean):
            return [[]] if node.this != negated else []
        if isinstance(node, exp.Between):
            low = exp.GTE(this=node.this, expression=node.args["low"])
            high = exp.LTE(this=node.this, expression=node.args["high"])
            return self.dnf(exp.And(this=low, expression=high), negated)
        if isinstance(node, exp.In) and not negated and node.expressions:
            equalities = [exp.EQ(this=node.this, expression=e) for e in node.expressions]
            result: list[Conjunction] | None = []
            for equality in equalities:
                part = self.dnf(equality, False)
                result = None if part is None or result is None else _or(result, part)
            return result
        operator = COMPARISONS.get(type(node))
        if operator is None:
            return [[]]  # outside the class: maybe satisfiable
        if negated:
            operator = NEGATED[operator]
        return self.atom(node.this, operator, node.expression)

    def atom(self, left: exp.Expr, operator: str, right: exp.Expr) -> list[Conjunction]:
        """``left operator right`` as constraints (``[[]]``: outside the class)."""
        if operator == "<>":
            return [[]]
        ordered = self._ordered(left, operator, right)
        if ordered is not None:
            return ordered
        return self._numeric(left, operator, right)

    def _ordered(self, left: exp.Expr, operator: str, right: exp.Expr) -> list[Conjunction] | None:
        """A comparison of strings or dates (column or constant on each side); None if the
        atom is not one."""
        left_side, right_side = self._ordered_side(left), self._ordered_side(right)
        if left_side is None and right_side is None:
            return None
        if left_side is None or right_side is None or left_side[0] != right_side[0]:
            return [[]]
        left_node, right_node = left_side[1], right_side[1]
        if isinstance(left_node, ConstantNode) and isinstance(right_node, ConstantNode):
            holds = _compare(left_node.value, operator, right_node.value)
            return [[]] if holds else []
        return [_constraints(left_node, right_node, operator, Fraction(0), integral=False)]

    def _ordered_side(self, side: exp.Expr) -> tuple[str, str | ConstantNode] | None:
        while isinstance(side, exp.Paren):
            side = side.this
        if isinstance(side, exp.Column):
            kind = family(self.types[side.name]) if side.name in self.types else None
            return (kind, side.name) if kind in ("string", "date") else None
        if isinstance(side, exp.Literal) and side.is_string:
            return "string", ConstantNode("string", side.this)
        if (
            isinstance(side, exp.Cast)
            and side.to.this == exp.DataType.Type.DATE
            and isinstance(side.this, exp.Literal)
            and side.this.is_string
        ):
            try:
                return "date", ConstantNode("date", date.fromisoformat(side.this.this))
            except ValueError:
                return None
        return None

    def _numeric(self, left: exp.Expr, operator: str, right: exp.Expr) -> list[Conjunction]:
        sides = [self._linear(left), self._linear(right)]
        if sides[0] is None or sides[1] is None:
            return [[]]
        difference = sides[0].minus(sides[1])  # difference operator 0
        families = {family(self.types[name]) for name in difference.terms}
        if not difference.terms:  # constants, or x op x + c: TRUE (if x is not NULL) or FALSE
            if not _compare(difference.constant, operator, Fraction(0)):
                return []
            present = {*sides[0].terms, *sides[1].terms}  # a self-loop: "x is not NULL"
            return [[Constraint(name, name, Weight(Fraction(0))) for name in sorted(present)]]
        if len(families) != 1:
            return [[]]
        kind = families.pop()
        if kind == "float":
            return self._float(sides[0], operator, sides[1])
        if kind != "exact" or (difference.arithmetic and not self.exact_arithmetic):
            return [[]]
        nodes = _difference_nodes(difference.terms)
        if nodes is None:
            return [[]]
        later, earlier = nodes
        integral = all(isinstance(self.types[name], INTEGRAL) for name in difference.terms)
        return [_constraints(later, earlier, operator, -difference.constant, integral)]

    def _float(self, left: _Linear, operator: str, right: _Linear) -> list[Conjunction]:
        """Doubles compare by order only: a column with a column, or with a constant."""
        if left.arithmetic or right.arithmetic:
            return [[]]
        nodes: list[object] = []
        constant = Fraction(0)
        for side, sign in ((left, 1), (right, -1)):
            if side.terms:
                (name, coefficient), *rest = side.terms.items()
                if rest or coefficient != 1:
                    return [[]]
                nodes.append(name)
            else:
                nodes.append(ZERO)
                try:  # Spark compares with the constant as a double
                    constant += sign * Fraction(float(side.constant))
                except OverflowError:
                    return [[]]
        return [_constraints(nodes[0], nodes[1], operator, -constant, integral=False)]

    def _linear(self, node: exp.Expr) -> _Linear | None:
        if isinstance(node, exp.Paren):
            return self._linear(node.this)
        if isinstance(node, exp.Column):
            if node.name not in self.types or family(self.types[node.name]) not in (
                "exact",
                "float",
            ):
                return None
            return _Linear({node.name: 1}, Fraction(0))
        if isinstance(node, exp.Literal) and not node.is_string:
            text = node.this
            if any(mark in text.lower() for mark in ("e", "d", "l", "f", "s", "y", "b")):
                return None  # a double, or a typed literal: Spark would not compare exactly
            try:
                return _Linear({}, Fraction(text))
            except ValueError:
                return None
        if isinstance(node, exp.Neg):
            inner = self._linear(node.this)
            if inner is None:
                return None
            return _Linear({}, Fraction(0)).minus(inner)
        if isinstance(node, (exp.Add, exp.Sub)):
            left, right = self._linear(node.this), self._linear(node.expression)
            if left is None or right is None:
                return None
            if isinstance(node, exp.Add):
                right = _Linear({}, Fraction(0)).minus(right)
            combined = left.minus(right)
            return _Linear(combined.terms, combined.constant, arithmetic=True)
        return None


def _difference_nodes(terms: dict[str, int]) -> tuple[object, object] | None:
    """``(p, q)`` with ``terms`` = ``p − q`` (ZERO standing for no variable), if it is one."""
    positive = [name for name, c in terms.items() if c == 1]
    negative = [name for name, c in terms.items() if c == -1]
    if len(positive) + len(negative) != len(terms) or len(positive) > 1 or len(negative) > 1:
        return None
    return (positive[0] if positive else ZERO), (negative[0] if negative else ZERO)


def _constraints(
    later: object, earlier: object, operator: str, constant: Fraction, integral: bool
) -> Conjunction:
    """``later − earlier operator constant`` as constraints ``v − u ≤ w``."""
    upper = operator in ("<", "<=", "=")
    lower = operator in (">", ">=", "=")
    strict = operator in ("<", ">")
    result = []
    if upper:
        result.append(Constraint(earlier, later, _weight(constant, strict, integral)))
    if lower:  # later − earlier ≥ c  ⇔  earlier − later ≤ −c
        result.append(Constraint(later, earlier, _weight(-constant, strict, integral)))
    return result


def _weight(bound: Fraction, strict: bool, integral: bool) -> Weight:
    if not integral:
        return Weight(bound, strict)
    return Weight(Fraction(math.ceil(bound) - 1 if strict else math.floor(bound)))


def _compare(left: Any, operator: str, right: Any) -> bool:
    """``left operator right`` between two constants of one type."""
    match operator:
        case "<":
            return bool(left < right)
        case "<=":
            return bool(left <= right)
        case ">":
            return bool(left > right)
        case ">=":
            return bool(left >= right)
    return bool(left == right)


def _and(left: list[Conjunction], right: list[Conjunction]) -> list[Conjunction] | None:
    if len(left) * len(right) > MAX_DISJUNCTS:
        return None
    return [a + b for a in left for b in right]


def _or(left: list[Conjunction], right: list[Conjunction]) -> list[Conjunction] | None:
    if [] in left or [] in right:
        return [[]]  # a TRUE disjunct
    if len(left) + len(right) > MAX_DISJUNCTS:
        return None
    return left + right
