"""``WITH RECURSIVE`` in the view IR (``relational._recursive_cte``): which recursive CTEs
become ``Recursive`` nodes, how the step carries the level (one reference or several, on
equal levels), its per-reference terms, and what is refused and why.

Pure sqlglot, no Spark.
"""

from __future__ import annotations

import pytest
import sqlglot
from sparkmv.analyze.ir import passed_columns, read_columns
from sparkmv.analyze.relational import (
    Aggregate,
    Filter,
    Join,
    Node,
    NotMaintainableError,
    Project,
    Recursive,
    RecursiveRef,
    RelationalBuilder,
    Scan,
    UnionAll,
    children,
    walk,
)
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify

TABLES = {"db.e": ("s", "d", "w"), "db.start": ("n",)}
WALKS = (
    "WITH RECURSIVE r(s, d, len) AS (SELECT s, d, 1 FROM e UNION ALL"
    " SELECT r.s, e.d, r.len + 1 FROM r JOIN e ON r.d = e.s WHERE r.len < 4)"
)


def build(query: str) -> Node:
    schema = {"db": {"e": dict.fromkeys(TABLES["db.e"], "INT"), "start": {"n": "INT"}}}
    tree = qualify(sqlglot.parse_one(query, read="spark"), schema=schema, db="db", dialect="spark")
    return RelationalBuilder(TABLES).build(tree)[0]


def recursive(root: Node) -> Recursive:
    found = [node for node in walk(root) if isinstance(node, Recursive)]
    assert len(found) == 1
    return found[0]


def test_linear_recursion_is_a_recursive_node_under_the_aggregate() -> None:
    root = build(f"{WALKS} SELECT s, d, MIN(len) AS m FROM r GROUP BY s, d")
    node = recursive(root)
    assert isinstance(root, Project) and isinstance(root.child, Aggregate)
    assert node.key == "r0"
    assert len(node.outputs) == 3
    assert len(node.ref.outputs) == 4  # the CTE's columns, then the level
    refs = [n for n in walk(node.step) if isinstance(n, RecursiveRef)]
    assert refs == [node.ref]
    # the step's last output is the level + 1; its other outputs the CTE's columns
    assert isinstance(node.step, Project)
    assert node.step.expressions[-1].sql().endswith("+ 1")
    assert len(node.step.outputs) == 4
    assert [scan.table for scan in walk(node.anchor) if isinstance(scan, Scan)] == ["db.e"]


def test_every_column_of_the_recursion_is_read() -> None:
    """A column the step reads (``d``, ``len``) reaches the view through the recursion even
    when the select list drops it: a change of it is never ignorable."""
    root = build(f"{WALKS} SELECT DISTINCT s FROM r")
    assert read_columns(root)["db.e"] == {"s", "d"}
    assert recursive(root).ref.outputs[-1] in passed_columns(root)


def test_anchor_reading_another_table_and_several_steps() -> None:
    root = build(
        "WITH RECURSIVE r(n, k) AS (SELECT n, 0 FROM start UNION ALL"
        " SELECT e.d, r.k + 1 FROM r JOIN e ON r.n = e.s WHERE r.k < 3 UNION ALL"
        " SELECT e.s, r.k + 1 FROM r JOIN e ON r.n = e.d WHERE r.k < 3) SELECT * FROM r"
    )
    node = recursive(root)
    assert {s.table for s in walk(node.anchor) if isinstance(s, Scan)} == {"db.start"}
    assert {s.table for s in walk(node.step) if isinstance(s, Scan)} == {"db.e"}


DOUBLING = (
    "WITH RECURSIVE r(s, d, n) AS (SELECT s, d, 1 FROM e UNION ALL"
    " SELECT a.s, b.d, a.n + b.n FROM r a JOIN r b ON a.d = b.s WHERE a.n < 4) SELECT * FROM r"
)


def levels_equated(join: Join) -> set[frozenset[str]]:
    """The pairs of columns the join's condition equates."""
    assert join.condition is not None
    return {
        frozenset(column.name for column in equality.find_all(exp.Column))
        for equality in join.condition.find_all(exp.EQ)
    }


def live_refs(node: Node) -> set[int]:
    """The references ``node`` reads, not counting those under an emptied (``σ_false``)
    input."""
    if isinstance(node, Filter) and node.predicate == exp.false():
        return set()
    if isinstance(node, RecursiveRef):
        return {id(node)}
    return set().union(*(live_refs(child) for child in children(node)))


def test_nonlinear_step_reads_a_reference_per_occurrence_on_equal_levels() -> None:
    """Two references: two leaves with names of their own, joined on their levels (Spark's
    step reads both at the previous level), the output one level up; one term per
    reference, each the whole step (no UNION ALL to split)."""
    node = recursive(build(DOUBLING))
    assert len(node.refs) == 2
    first, second = node.refs
    assert not set(first.outputs) & set(second.outputs)
    assert [n for n in walk(node.step) if isinstance(n, RecursiveRef)] == [first, second]
    (join,) = [n for n in walk(node.step) if isinstance(n, Join)]
    assert frozenset({first.outputs[-1], second.outputs[-1]}) in levels_equated(join)
    assert isinstance(node.step, Project)
    assert node.step.expressions[-1].sql().endswith("+ 1")
    assert len(node.terms) == 2
    assert all(live_refs(term) == {id(first), id(second)} for term in node.terms)
    assert node.ref is first


def test_three_references_all_on_one_level() -> None:
    node = recursive(
        build(
            "WITH RECURSIVE r(s, d, n) AS (SELECT s, d, 1 FROM e UNION ALL"
            " SELECT a.s, c.d, a.n + b.n + c.n FROM r a JOIN r b ON a.d = b.s"
            " JOIN r c ON b.d = c.s WHERE a.n < 3) SELECT * FROM r"
        )
    )
    assert len(node.refs) == 3
    levels = [ref.outputs[-1] for ref in node.refs]
    equated = set().union(*(levels_equated(j) for j in walk(node.step) if isinstance(j, Join)))
    # the levels are equated pairwise with the first one's (transitively all equal)
    assert {frozenset({levels[0], other}) for other in levels[1:]} <= equated


def test_a_union_in_the_step_splits_the_terms_by_reference() -> None:
    """``(a ⋈ b) ∪ c``: the term of ``a`` or ``b`` empties the input reading ``c`` and the
    term of ``c`` the one reading ``a`` and ``b`` — a monomial that does not read a
    reference does not change with it. The union keeps both inputs, so Spark widens the
    column types as in the step."""
    node = recursive(
        build(
            "WITH RECURSIVE r(s, d, n) AS (SELECT s, d, 1 FROM e UNION ALL"
            " SELECT x.s, x.d, x.n + 1 FROM (SELECT a.s, b.d, a.n FROM r a JOIN r b ON a.d = b.s"
            " UNION ALL SELECT s, d, n FROM r) x WHERE x.n < 3) SELECT * FROM r"
        )
    )
    a, b, c = (id(ref) for ref in node.refs)
    assert [live_refs(term) for term in node.terms] == [{a, b}, {a, b}, {c}]
    for term in node.terms:
        (union,) = [n for n in walk(term) if isinstance(n, UnionAll)]
        assert len(union.children) == 2
        assert term.outputs == node.step.outputs


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        (
            "WITH RECURSIVE r(s, d) AS (SELECT s, d FROM e UNION"
            " SELECT r.s, e.d FROM r JOIN e ON r.d = e.s) SELECT * FROM r",
            r"UNION \(set\) in a recursive CTE",
        ),
        (
            "WITH RECURSIVE r(s, n) AS (SELECT s, 1 FROM e UNION ALL"
            " SELECT s, COUNT(*) FROM r GROUP BY s) SELECT * FROM r",
            "under GROUP BY in the step .*multilinear",
        ),
        (  # a semi-join reads the reference as a set (DISTINCT keys): not multilinear
            "WITH RECURSIVE r(s, d) AS (SELECT s, d FROM e UNION ALL SELECT a.s, a.d FROM r a"
            " WHERE EXISTS (SELECT 1 FROM r b WHERE b.s = a.d)) SELECT * FROM r",
            "under DISTINCT",
        ),
        (
            "WITH RECURSIVE r(s, d) AS (SELECT s, d FROM e UNION ALL SELECT a.s, x.d FROM r a"
            " JOIN (SELECT s, d FROM r UNION ALL SELECT s, d FROM e) x ON a.d = x.s)"
            " SELECT * FROM r",
            "a UNION ALL in the step of r with an input that does not read it",
        ),
        (
            "WITH RECURSIVE r(s, d) AS (SELECT s, d FROM e UNION ALL"
            " SELECT DISTINCT r.s, e.d FROM r JOIN e ON r.d = e.s) SELECT * FROM r",
            "under DISTINCT",
        ),
    ],
)
def test_refused(query: str, reason: str) -> None:
    with pytest.raises(NotMaintainableError, match=reason) as refused:
        build(query)
    assert "linear recursion" not in str(refused.value)
