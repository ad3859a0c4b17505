"""The view IR: which queries become which operators, and which constructs are refused.

Pure sqlglot, no Spark: the builder only needs the base tables' column names.
"""

from __future__ import annotations

import pytest
import sqlglot
from sparkmv.analyze.maintainability import qualified
from sparkmv.analyze.relational import (
    Aggregate,
    AggregateCall,
    Distinct,
    Filter,
    Join,
    Node,
    NotMaintainableError,
    Project,
    RelationalBuilder,
    Replicate,
    Scan,
    UnionAll,
    walk,
)
from sqlglot.optimizer.qualify import qualify

TABLES = {"db.r": ("a", "b"), "db.s": ("b", "c")}


def build(query: str) -> tuple[Node, list[str]]:
    schema: dict[str, object] = {
        "db": {"r": {"a": "INT", "b": "INT"}, "s": {"b": "INT", "c": "STRING"}}
    }
    tree = qualify(sqlglot.parse_one(query, read="spark"), schema=schema, db="db", dialect="spark")
    return RelationalBuilder(TABLES).build(tree)


def shape(node: Node) -> str:
    """The operator tree as text, e.g. ``Project(Filter(Scan(db.r)))``."""
    if isinstance(node, Scan):
        return f"Scan({node.table})"
    if isinstance(node, Join):
        return "Join(" + ", ".join(shape(i) for i in node.inputs) + ")"
    if isinstance(node, UnionAll):
        return "UnionAll(" + ", ".join(shape(c) for c in node.children) + ")"
    return f"{type(node).__name__}({shape(node.child)})"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("SELECT a FROM r WHERE b > 1", "Project(Filter(Scan(db.r)))"),
        ("SELECT * FROM r JOIN s ON r.b = s.b", "Project(Join(Scan(db.r), Scan(db.s)))"),
        (
            "SELECT x.a FROM r x, r y WHERE x.b = y.b",
            "Project(Filter(Join(Scan(db.r), Scan(db.r))))",
        ),
        ("SELECT DISTINCT b FROM r", "Distinct(Project(Scan(db.r)))"),
        (
            "SELECT b FROM r UNION SELECT b FROM s",
            "Distinct(UnionAll(Project(Scan(db.r)), Project(Scan(db.s))))",
        ),
        (
            "WITH k AS (SELECT DISTINCT b FROM r) SELECT k.b, s.c FROM k JOIN s ON k.b = s.b",
            "Project(Join(Distinct(Project(Scan(db.r))), Scan(db.s)))",
        ),
        ("SELECT q.a FROM (SELECT a FROM r) q ORDER BY q.a", "Project(Project(Scan(db.r)))"),
        ("SELECT r.a, s.c FROM (r JOIN s ON r.b = s.b)", "Project(Join(Scan(db.r), Scan(db.s)))"),
        (
            "SELECT x.a, s.c FROM r AS x JOIN (r JOIN s ON r.b = s.b) ON x.a = r.a",
            "Project(Join(Scan(db.r), Join(Scan(db.r), Scan(db.s))))",
        ),
    ],
)
def test_queries_become_operators(query: str, expected: str) -> None:
    assert shape(build(query)[0]) == expected


def test_columns_get_internal_names_and_expressions_use_them() -> None:
    node, names = build("SELECT r.a + 1 AS a1, s.c FROM r JOIN s ON r.b = s.b WHERE s.c <> 'x'")
    assert names == ["a1", "c"]
    assert isinstance(node, Project)
    assert len(set(node.outputs)) == 2
    scans = [n for n in walk(node) if isinstance(n, Scan)]
    internal = {o for scan in scans for o in scan.outputs}
    rendered = " ".join(e.sql(dialect="spark") for e in node.expressions)
    assert "r." not in rendered and "s." not in rendered
    assert any(name in rendered for name in internal)
    assert isinstance(node.child, Filter) and isinstance(node.child.child, Join)


def test_self_join_scans_get_distinct_names() -> None:
    node, _ = build("SELECT x.a, y.a FROM r x JOIN r y ON x.b = y.b")
    scans = [n for n in walk(node) if isinstance(n, Scan)]
    assert len(scans) == 2
    assert not set(scans[0].outputs) & set(scans[1].outputs)


@pytest.mark.parametrize(
    ("query", "construct"),
    [
        ("SELECT a FROM r LIMIT 1", "LIMIT"),
        ("SELECT b, collect_list(a) FROM r GROUP BY b", "COLLECT_LIST"),
        ("SELECT b, count(a) FILTER (WHERE a > 1) FROM r GROUP BY b", "FILTER"),
        ("SELECT b, count(*) FROM r GROUP BY ROLLUP (b)", "ROLLUP"),
        ("SELECT b, count(DISTINCT a, b) FROM r GROUP BY b", "several columns"),
        ("SELECT b, sum(sum(a)) FROM r GROUP BY b", "aggregate function"),
        ("SELECT a, rand() FROM r", "RAND"),
        ("SELECT a, uuid() FROM r", "UUID"),
        ("SELECT a, current_timestamp() FROM r", "CURRENT_TIMESTAMP"),
        ("SELECT * FROM r LEFT JOIN s ON r.b = (SELECT max(b) FROM s)", "subquery"),
        (
            "SELECT b, count(*) FROM r GROUP BY b HAVING EXISTS (SELECT 1 FROM s WHERE s.b > 1)",
            "EXISTS / IN \\(subquery\\) in the select list or HAVING",
        ),
        ("SELECT a FROM r WHERE (a, b) IN (SELECT b, b FROM s)", "several columns"),
        ("SELECT a, (SELECT b FROM s WHERE s.b = r.b) FROM r", "not one aggregate value"),
        ("SELECT a, (SELECT max(b) FROM s GROUP BY c) FROM r", "may return several rows"),
        (
            "SELECT a, (SELECT max(s.b) FROM s WHERE s.b = r.b GROUP BY s.c) FROM r",
            "grouped by other than its correlation keys",
        ),
        ("SELECT a FROM r WHERE EXISTS (SELECT count(*) FROM s WHERE s.b = r.b)", "aggregate"),
        (
            "SELECT a FROM r WHERE EXISTS (SELECT 1 FROM s WHERE s.b = r.b LIMIT 1)",
            "LIMIT",
        ),
        (
            "SELECT b, sum(a) FROM r GROUP BY b HAVING sum(a) > (SELECT sum(s.b) FROM s"
            " WHERE s.b = r.b)",
            "correlated subquery in the select list or HAVING",
        ),
        ("SELECT a FROM r WHERE a > ALL (SELECT b FROM s)", "subquery"),
        ("SELECT a, rank() OVER (ORDER BY sum(a)) FROM r", "window function in an aggregate"),
        ("SELECT a, collect_list(a) OVER (PARTITION BY b) FROM r", "COLLECT_LIST"),
        ("SELECT explode(array(a)) FROM r", "generator"),
        ("SELECT 1 AS one", "without FROM"),
    ],
)
def test_constructs_outside_the_class_are_named(query: str, construct: str) -> None:
    with pytest.raises(NotMaintainableError, match=construct):
        build(query)


def test_distinct_root_and_union_outputs() -> None:
    node, names = build("SELECT a FROM r UNION ALL SELECT b FROM s")
    assert isinstance(node, UnionAll) and names == ["a"]
    assert len(node.outputs) == 1
    assert isinstance(build("SELECT DISTINCT a FROM r")[0], Distinct)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("SELECT b, count(*) FROM r GROUP BY b", "Project(Aggregate(Scan(db.r)))"),
        ("SELECT sum(a) FROM r WHERE b > 0", "Project(Aggregate(Filter(Scan(db.r))))"),
        (
            "SELECT b, count(*) FROM r GROUP BY b HAVING min(a) > 1",
            "Project(Filter(Aggregate(Scan(db.r))))",
        ),
        (
            "SELECT g.b, s.c FROM (SELECT b, count(*) AS n FROM r GROUP BY b) g"
            " JOIN s ON g.b = s.b",
            "Project(Join(Project(Aggregate(Scan(db.r))), Scan(db.s)))",
        ),
    ],
)
def test_aggregate_shapes(query: str, expected: str) -> None:
    assert shape(build(query)[0]) == expected


def test_aggregate_calls_are_collected_once_and_keys_reused() -> None:
    node, names = build(
        "SELECT a + 1 AS k, count(*) AS n, sum(b) * 2 AS twice, count(DISTINCT b) AS d"
        " FROM r GROUP BY a + 1 HAVING sum(b) > 0 AND count(*) > 1"
    )
    assert names == ["k", "n", "twice", "d"]
    assert isinstance(node, Project) and isinstance(node.child, Filter)
    aggregate = node.child.child
    assert isinstance(aggregate, Aggregate)
    assert len(aggregate.keys) == 1
    functions = [(call.function, call.distinct) for call in aggregate.calls]
    assert functions == [("count", False), ("sum", False), ("count", True)]
    assert aggregate.calls[0] == AggregateCall("count", None)
    # The select list reads the aggregate's outputs, never the input's columns.
    rendered = " ".join(e.sql() for e in node.expressions)
    assert all(o in rendered for o in (aggregate.key_outputs[0], *aggregate.call_outputs[:2]))


def test_a_column_neither_grouped_nor_aggregated_is_refused() -> None:
    with pytest.raises(NotMaintainableError, match="neither grouped nor aggregated"):
        build("SELECT a, count(*) FROM r GROUP BY b")


def test_an_uncorrelated_subquery_in_having_joins_the_aggregate() -> None:
    """Its own columns are not reported as neither grouped nor aggregated: the subquery is
    a global aggregate (one row) joined to every group, under the HAVING filter."""
    root, _ = build(
        "SELECT a, sum(b) AS s FROM r GROUP BY a HAVING sum(b) > (SELECT sum(b) FROM r WHERE a > 0)"
    )
    joined = "Join(Aggregate(Scan(db.r)), Aggregate(Filter(Scan(db.r))))"
    assert shape(root) == f"Project(Filter({joined}))"


@pytest.mark.parametrize(
    ("query", "comparison"),
    [
        ("SELECT a FROM r EXCEPT SELECT b FROM s", "="),
        ("SELECT a FROM r INTERSECT SELECT b FROM s", ">"),
    ],
)
def test_a_set_comparison_is_an_aggregate_of_two_counters(query: str, comparison: str) -> None:
    """Each input's rows tagged, counted per distinct row, and compared (``_set_comparison``)."""
    root, names = build(query)
    tagged = "Project(Project(Scan(db.{})))"
    union = f"UnionAll({tagged.format('r')}, {tagged.format('s')})"
    assert shape(root) == f"Project(Filter(Aggregate({union})))"
    assert names == ["a"]
    assert isinstance(root, Project) and isinstance(root.child, Filter)
    aggregate = root.child.child
    assert isinstance(aggregate, Aggregate)
    assert [call.sql() for call in aggregate.calls] == [
        f"sum(`{tag}`)" for tag in aggregate.child.outputs[-2:]
    ]
    in_left, in_right = aggregate.call_outputs
    predicate = root.child.predicate.sql(dialect="spark")
    assert predicate == f"`{in_left}` > 0 AND `{in_right}` {comparison} 0"


@pytest.mark.parametrize(
    ("query", "copies"),
    [
        ("SELECT a FROM r EXCEPT ALL SELECT b FROM s", "GREATEST(`{0}` - `{1}`, 0)"),
        ("SELECT a FROM r INTERSECT ALL SELECT b FROM s", "LEAST(`{0}`, `{1}`)"),
    ],
)
def test_an_all_set_comparison_replicates_each_row_by_its_counters(query: str, copies: str) -> None:
    """``ρ_k σ_{k > 0} π_{X, k}(γ_{X; n_A, n_B}(A' ⊎ B'))``: ``k`` copies of each row."""
    root, names = build(query)
    tagged = "Project(Project(Scan(db.{})))"
    union = f"UnionAll({tagged.format('r')}, {tagged.format('s')})"
    assert shape(root) == f"Replicate(Filter(Project(Aggregate({union}))))"
    assert names == ["a"]
    assert isinstance(root, Replicate) and isinstance(root.child, Filter)
    counted = root.child.child
    assert isinstance(counted, Project) and isinstance(counted.child, Aggregate)
    assert counted.outputs[-1] == root.copies
    assert root.outputs == counted.outputs[:-1]
    in_left, in_right = counted.child.call_outputs
    assert counted.expressions[-1].sql(dialect="spark") == copies.format(in_left, in_right)


def test_an_ordinal_order_by_over_a_subquery_item_is_dropped_before_qualifying() -> None:
    """sqllogictest's ``ORDER BY 1, 2`` over a scalar subquery item: sqlglot cannot qualify
    it, and without a LIMIT it does not change the view's rows."""
    query = "SELECT a, (SELECT count(*) FROM r AS x WHERE x.b < r.b) AS n FROM r ORDER BY 1, 2"
    tree = qualified(sqlglot.parse_one(query, read="spark"), "db", TABLES)
    assert tree.args.get("order") is None
    assert RelationalBuilder(TABLES).build(tree)[1] == ["a", "n"]
    limited = qualified(sqlglot.parse_one("SELECT a FROM r ORDER BY a LIMIT 2"), "db", TABLES)
    assert limited.args.get("order") is not None
