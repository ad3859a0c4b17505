"""The irrelevance filters against brute force (Blakeley §4, Theorem 4.1).

A view ``σ_C(r × s)``; a changed tuple ``t`` of ``r`` is irrelevant iff no tuple of ``s``
makes ``C(t, ·)`` TRUE (SQL's three-valued logic; NULLs included). For random predicates:

- soundness, over integers, decimals and strings with NULLs: every tuple the compiled filter
  drops has no witness in ``s``'s (finite) domain;
- completeness, for the decidable class (integer atoms ``x op y + c``, ``x op c`` under
  AND/OR): every tuple without a witness is dropped. The witnesses are searched in a range
  wide enough to hold a solution whenever one exists (shortest-path potentials are bounded
  by the sum of the constraints' weights).

Predicates and filters are evaluated in Python with SQL's NULL semantics; the differential
refresh suites run the same filters in Spark.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import types as T
from sparkmv.analyze.relational import Filter, Join, Node, Scan
from sparkmv.filter.irrelevance import irrelevance_filters
from sqlglot import exp, parse_one

R = Scan("db.r", ("a", "b", "e"), ("r_a", "r_b", "r_e"), "r")
S = Scan("db.s", ("c", "d", "f"), ("s_c", "s_d", "s_f"), "s")
TYPES: dict[str, T.DataType] = {
    "r_a": T.IntegerType(),
    "r_b": T.DecimalType(5, 1),
    "r_e": T.StringType(),
    "s_c": T.IntegerType(),
    "s_d": T.DecimalType(5, 1),
    "s_f": T.StringType(),
}
INTEGERS = [None, -2, -1, 0, 1, 2]
DECIMALS = [None, Fraction(-3, 2), Fraction(-1, 2), Fraction(0), Fraction(1, 2), Fraction(1)]
STRINGS = [None, "a", "ab", "b"]

Value = Any
Evaluator = Callable[[Mapping[str, Value]], Value]


def evaluator(node: exp.Expr) -> Evaluator:
    """``node`` as a Python function of the row, NULL as None (Kleene's logic)."""
    if isinstance(node, exp.Paren):
        return evaluator(node.this)
    if isinstance(node, exp.Column):
        name = node.name
        return lambda row: row[name]
    if isinstance(node, exp.Boolean):
        value = bool(node.this)
        return lambda row: value
    if isinstance(node, exp.Literal):
        constant: Value = node.this if node.is_string else Fraction(node.this)
        return lambda row: constant
    if isinstance(node, exp.Cast):
        return evaluator(node.this)  # only widening casts of numbers occur
    if isinstance(node, exp.Neg):
        inner = evaluator(node.this)
        return lambda row: None if (v := inner(row)) is None else -v
    if isinstance(node, exp.Not):
        inner = evaluator(node.this)
        return lambda row: None if (v := inner(row)) is None else not v
    if isinstance(node, exp.Is):  # IS NULL
        inner = evaluator(node.this)
        return lambda row: inner(row) is None
    left, right = evaluator(node.this), evaluator(node.expression)
    if isinstance(node, exp.And):
        return lambda row: _and(left(row), right(row))
    if isinstance(node, exp.Or):
        return lambda row: _or(left(row), right(row))
    operations: dict[type[exp.Expr], Callable[[Value, Value], Value]] = {
        exp.Add: lambda x, y: x + y,
        exp.Sub: lambda x, y: x - y,
        exp.Mul: lambda x, y: x * y,
        exp.Like: lambda x, y: re.fullmatch(re.escape(y).replace("%", ".*"), x) is not None,
        exp.LT: lambda x, y: x < y,
        exp.LTE: lambda x, y: x <= y,
        exp.GT: lambda x, y: x > y,
        exp.GTE: lambda x, y: x >= y,
        exp.EQ: lambda x, y: x == y,
        exp.NEQ: lambda x, y: x != y,
    }
    operation = operations[type(node)]

    def apply(row: Mapping[str, Value]) -> Value:
        x, y = left(row), right(row)
        return None if x is None or y is None else operation(x, y)

    return apply


def _and(x: Value, y: Value) -> Value:
    if x is False or y is False:
        return False
    return None if x is None or y is None else True


def _or(x: Value, y: Value) -> Value:
    if x is True or y is True:
        return True
    return None if x is None or y is None else False


def atoms(integer_only: bool) -> st.SearchStrategy[str]:
    """Atoms over r's and s's columns: ``x op y + c``, ``x op c`` (and, unless
    ``integer_only``, decimals, strings and atoms outside the class)."""
    ops = st.sampled_from(["<", "<=", "=", ">=", ">"])
    constants = st.integers(-2, 2)
    ints = st.sampled_from(["r_a", "s_c", "r_b", "s_d"])  # b, d: decimals unless integer_only
    pairs = st.tuples(ints, ints)
    numeric = st.one_of(
        st.builds(lambda x, o, c: f"{x} {o} {c}", ints, ops, constants),
        st.builds(lambda xy, o, c: f"{xy[0]} {o} {xy[1]} + {c}", pairs, ops, constants),
        st.builds(lambda xy, o, c: f"{xy[0]} - {c} {o} {xy[1]}", pairs, ops, constants),
    )
    if integer_only:
        return numeric
    strings = st.sampled_from(["r_e", "s_f", "'a'", "'ab'", "'b'"])
    others = st.sampled_from(
        [
            "r_a <> s_c",
            "r_e LIKE 'a%'",
            "r_b IS NULL",
            "s_c IS NOT NULL",
            "r_a * 2 < s_c",
            "r_b < 0.5",
        ]
    )
    ordered = st.builds(lambda x, o, y: f"{x} {o} {y}", strings, ops, strings)
    return st.one_of(numeric, ordered, others)


def predicates(integer_only: bool) -> st.SearchStrategy[str]:
    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        combined = st.one_of(
            st.builds(lambda x, y: f"({x} AND {y})", inner, inner),
            st.builds(lambda x, y: f"({x} OR {y})", inner, inner),
        )
        if integer_only:
            return combined
        return st.one_of(combined, st.builds(lambda x: f"NOT ({x})", inner))

    return st.recursive(atoms(integer_only), extend, max_leaves=5)


INTEGER_TYPES = dict(TYPES, r_b=T.IntegerType(), s_d=T.IntegerType())


def compiled(predicate: str, types: Mapping[str, T.DataType]) -> exp.Expr | None:
    root: Node = Filter(Join((R, S), None), parse_one(predicate, dialect="spark"))

    def leaf_types(node: Node) -> dict[str, T.DataType]:
        return {name: types[name] for name in node.outputs}

    return irrelevance_filters(root, leaf_types, exact_arithmetic=True).get(R)


def verdicts(
    predicate: str,
    types: Mapping[str, T.DataType],
    r_domains: Mapping[str, list[Value]],
    s_rows: list[dict[str, Value]],
) -> list[tuple[dict[str, Value], bool, bool]]:
    """Per tuple of r: (tuple, kept by the filter, has a witness among ``s_rows``)."""
    condition = evaluator(parse_one(predicate, dialect="spark"))
    test = compiled(predicate, types)
    keep = evaluator(test) if test is not None else (lambda row: True)
    results = []
    for values in itertools.product(*r_domains.values()):
        t = dict(zip(r_domains, values, strict=True))
        row = {f"r_{c}": v for c, v in t.items()}
        witness = any(condition({**row, **s}) is True for s in s_rows)
        results.append((t, keep(t) is True, witness))
    return results


@given(predicates(integer_only=False))
def test_a_dropped_tuple_is_irrelevant(predicate: str) -> None:
    s_rows = [
        {"s_c": c, "s_d": d, "s_f": f} for c, d, f in itertools.product(INTEGERS, DECIMALS, STRINGS)
    ]
    domains = {"a": INTEGERS, "b": DECIMALS, "e": STRINGS}
    for t, kept, witness in verdicts(predicate, TYPES, domains, s_rows):
        assert kept or not witness, f"{predicate}: dropped {t}, relevant"


WIDE = range(-16, 17)
"""Holds a solution of any satisfiable system of the integer class here (a solution is a
shortest-path potential: at most 4 edges, each of weight at most 4 in absolute value)."""


@given(predicates(integer_only=True))
def test_every_irrelevant_tuple_is_dropped(predicate: str) -> None:
    s_rows = [{"s_c": c, "s_d": d, "s_f": None} for c, d in itertools.product(WIDE, WIDE)]
    domains = {"a": INTEGERS, "b": INTEGERS, "e": [None]}
    for t, kept, witness in verdicts(predicate, INTEGER_TYPES, domains, s_rows):
        assert kept or not witness, f"{predicate}: dropped {t}, relevant"
        assert witness or not kept, f"{predicate}: kept {t}, irrelevant"


def test_example_4_1() -> None:
    """Blakeley's Example 4.1: ``A < 10 ∧ C > 5 ∧ B = C`` keeps (9, 10), drops (11, 10)."""
    test = compiled("r_a < 10 AND s_c > 5 AND r_b = s_c", INTEGER_TYPES)
    assert test is not None
    assert test.sql(dialect="spark") == "`a` <= 9 AND `b` >= 6"
    keep = evaluator(test)
    assert keep({"a": Fraction(9), "b": Fraction(10)}) is True
    assert keep({"a": Fraction(11), "b": Fraction(10)}) is False
