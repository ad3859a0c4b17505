"""Subqueries and outer joins as IR operators (``analyze/decorrelate.py``): which shapes they
become, what they read, and how their scans are screened. Pure sqlglot, no Spark; the
differential suites (``test_differential_subqueries.py``) check the values."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T
from sparkmv.analyze.decorrelate import correlation, split_conjuncts
from sparkmv.analyze.ir import (
    Aggregate,
    Distinct,
    Join,
    Negate,
    Node,
    Project,
    Scan,
    UnionAll,
    read_columns,
    walk,
)
from sparkmv.filter.irrelevance import irrelevance_filters
from sqlglot import exp, parse_one
from test_relational import build


def shape(node: Node) -> str:
    """The operator tree as compact text: ``r``, ``J(…)``, ``U(…)``, ``δ(…)``, ``−(…)``, ``π``,
    ``σ``, ``γ``."""
    if isinstance(node, Scan):
        return node.table.rpartition(".")[2]
    if isinstance(node, Join):
        return "J(" + ", ".join(shape(i) for i in node.inputs) + ")"
    if isinstance(node, UnionAll):
        return "U(" + ", ".join(shape(c) for c in node.children) + ")"
    symbol = {"Distinct": "δ", "Negate": "−", "Project": "π", "Filter": "σ", "Aggregate": "γ"}
    return f"{symbol[type(node).__name__]}({shape(node.child)})"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # L ⋉ R = π_L(L ⋈ δ(π_k R)); IN adds its value to the keys
        ("SELECT a FROM r WHERE EXISTS (SELECT 1 FROM s WHERE s.b = r.b)", "π(π(J(r, δ(π(s)))))"),
        ("SELECT a FROM r WHERE b IN (SELECT b FROM s WHERE c > 'x')", "π(π(J(r, δ(π(σ(s))))))"),
        # L ▷ R = L ∪ −(L ⋉ R), the plain conjunct filtering L first
        (
            "SELECT a FROM r WHERE NOT EXISTS (SELECT 1 FROM s WHERE s.b = r.b) AND a > 1",
            "π(U(σ(r), −(π(J(σ(r), δ(π(s)))))))",
        ),
        # another comparison: the matched combinations of r's columns, joined back
        (
            "SELECT a FROM r WHERE EXISTS (SELECT 1 FROM s WHERE s.b < r.a)",
            "π(π(J(r, δ(π(J(π(r), s))))))",
        ),
        # an outer join: the inner join and the padded anti-join
        (
            "SELECT r.a, s.c FROM r LEFT JOIN s ON r.b = s.b",
            "π(U(J(r, s), π(U(r, −(π(J(r, δ(π(s)))))))))",
        ),
        # a scalar subquery: its aggregate per key, by a left outer join that reads it once
        (
            "SELECT a, (SELECT count(*) FROM s WHERE s.b = r.b) AS n FROM r",
            "π(U(J(r, γ(s)), π(U(r, −(π(J(r, γ(s))))))))",
        ),
        # uncorrelated: the global aggregate (one row) joined to every row
        ("SELECT a FROM r WHERE a > (SELECT avg(b) FROM s)", "π(σ(J(r, γ(s))))"),
        # a subquery in the subquery: its rows are the inner anti-join's, the correlation
        # still an equality over them (resolved after the rewrite renamed s's columns)
        (
            "SELECT a FROM r WHERE EXISTS (SELECT 1 FROM s WHERE s.b = r.b"
            " AND NOT EXISTS (SELECT 1 FROM r AS x WHERE x.a = s.b))",
            "π(π(J(r, δ(π(U(s, −(π(J(s, δ(π(r)))))))))))",
        ),
    ],
)
def test_subqueries_and_outer_joins_become_operators(query: str, expected: str) -> None:
    assert shape(build(query)[0]) == expected


def test_an_anti_join_reads_its_left_input_once_as_a_shared_node() -> None:
    root, _ = build("SELECT a FROM r WHERE NOT EXISTS (SELECT 1 FROM s WHERE s.b = r.b)")
    scans = [node for node in walk(root) if isinstance(node, Scan)]
    assert sorted(scan.table for scan in scans) == ["db.r", "db.s"]  # walked once each
    union = next(node for node in walk(root) if isinstance(node, UnionAll))
    negated = union.children[1]
    assert isinstance(negated, Negate)
    semijoin = negated.child
    assert isinstance(semijoin, Project) and isinstance(semijoin.child, Join)
    assert semijoin.child.inputs[0] is union.children[0]  # the same L


def test_a_count_over_no_rows_is_zero() -> None:
    """The scalar subquery's value over the outer join's padding: COUNT as coalesce(n, 0)."""
    root, _ = build("SELECT a, (SELECT count(*) + 1 FROM s WHERE s.b = r.b) AS n FROM r")
    assert isinstance(root, Project)
    assert root.expressions[1].sql(dialect="spark").startswith("COALESCE(")
    aggregate = next(node for node in walk(root) if isinstance(node, Aggregate))
    assert len(aggregate.keys) == 1  # grouped by the correlation key


def test_not_in_counts_the_subquery_rows_and_their_nulls() -> None:
    root, _ = build("SELECT a FROM r WHERE b NOT IN (SELECT b FROM s)")
    aggregate = next(node for node in walk(root) if isinstance(node, Aggregate))
    assert not aggregate.keys  # uncorrelated: one global row
    assert aggregate.calls[0].sql() == "count(*)"
    assert aggregate.calls[1].function == "count" and aggregate.calls[1].argument is not None
    assert any(isinstance(node, Negate) for node in walk(root))


def test_correlation_splits_conjuncts_by_what_they_read() -> None:
    left = Scan("db.r", ("a", "b"), ("l_a", "l_b"), "r")
    right = Scan("db.s", ("b", "c"), ("r_b", "r_c"), "s")
    condition = parse_one(
        "l_b = r_b AND r_c > 'x' AND l_a > 1 AND l_a + 1 <=> r_b AND l_a < r_b AND 1 = 1"
    )
    found = correlation(split_conjuncts(condition), left, right)
    assert [c.sql() for c in found.left] == ["l_a > 1"]
    assert [c.sql() for c in found.right] == ["r_c > 'x'", "1 = 1"]
    assert [(p.left.sql(), p.right.sql(), p.null_safe) for p in found.pairs] == [
        ("l_b", "r_b", False),
        ("l_a + 1", "r_b", True),
    ]
    assert [c.sql() for c in found.mixed] == ["l_a < r_b"]


def test_columns_an_outer_join_passes_by_position_are_read() -> None:
    """``s.c`` is in no expression below the union of the outer join, only above it: its
    changes must not be dropped as readily ignorable."""
    root, _ = build("SELECT r.a, s.c FROM r LEFT JOIN s ON r.b = s.b")
    assert read_columns(root) == {"db.r": {"a", "b"}, "db.s": {"b", "c"}}
    root, _ = build("SELECT r.b, count(s.c) AS n FROM r LEFT JOIN s ON r.b = s.b GROUP BY r.b")
    assert read_columns(root) == {"db.r": {"b"}, "db.s": {"b", "c"}}


def test_a_scan_read_by_several_blocks_passes_what_any_of_them_keeps() -> None:
    """In ``r ▷ s`` the scan of r feeds the anti-join's left input as it is (no predicate)
    and its semi-join (``r.b = k``: a NULL b never matches): a changed row of r with a NULL
    b is irrelevant to the semi-join only, so r gets no filter (nor does s: its DISTINCT
    keys keep a NULL key). A semi-join alone screens r's changes."""
    root, _ = build("SELECT a FROM r WHERE NOT EXISTS (SELECT 1 FROM s WHERE s.b = r.b)")
    filters = irrelevance_filters(root, _int_types, exact_arithmetic=True)
    assert filters == {}
    root, _ = build("SELECT a FROM r WHERE EXISTS (SELECT 1 FROM s WHERE s.b = r.b)")
    filters = irrelevance_filters(root, _int_types, exact_arithmetic=True)
    screened = {scan.table: test.sql(dialect="spark") for scan, test in filters.items()}
    assert screened == {"db.r": "NOT `b` IS NULL"}


def _int_types(node: Node) -> dict[str, T.DataType]:
    return {name: T.IntegerType() for name in node.outputs}


def test_distinct_keys_of_a_semijoin_hold_each_key_once() -> None:
    root, _ = build("SELECT a FROM r WHERE b IN (SELECT b FROM s)")
    keys = next(node for node in walk(root) if isinstance(node, Distinct))
    assert isinstance(keys.child, Project) and len(keys.outputs) == 1
    assert isinstance(keys.child.expressions[0], exp.Column)
