"""``WITH RECURSIVE`` in the view IR (``relational._recursive_cte``): which recursive CTEs
become ``Recursive`` nodes, how the step carries the level, and what is refused and why.

Pure sqlglot, no Spark.
"""

from __future__ import annotations

import pytest
import sqlglot
from sparkmv.analyze.ir import passed_columns, read_columns
from sparkmv.analyze.relational import (
    Aggregate,
    Node,
    NotMaintainableError,
    Project,
    Recursive,
    RecursiveRef,
    RelationalBuilder,
    Scan,
    walk,
)
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


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        (
            "WITH RECURSIVE r(s, d) AS (SELECT s, d FROM e UNION ALL"
            " SELECT r1.s, r2.d FROM r r1 JOIN r r2 ON r1.d = r2.s) SELECT * FROM r",
            "non-linear recursion",
        ),
        (
            "WITH RECURSIVE r(s, d) AS (SELECT s, d FROM e UNION"
            " SELECT r.s, e.d FROM r JOIN e ON r.d = e.s) SELECT * FROM r",
            r"UNION \(set\) in a recursive CTE",
        ),
        (
            "WITH RECURSIVE r(s, n) AS (SELECT s, 1 FROM e UNION ALL"
            " SELECT s, COUNT(*) FROM r GROUP BY s) SELECT * FROM r",
            "under GROUP BY",
        ),
        (
            "WITH RECURSIVE r(s, d) AS (SELECT s, d FROM e UNION ALL"
            " SELECT DISTINCT r.s, e.d FROM r JOIN e ON r.d = e.s) SELECT * FROM r",
            "under DISTINCT",
        ),
    ],
)
def test_refused(query: str, reason: str) -> None:
    with pytest.raises(NotMaintainableError, match=reason):
        build(query)
