"""Constructs named without resolving the query (``analyze/constructs.py``)."""

from __future__ import annotations

import pytest
import sqlglot
from sparkmv.analyze.constructs import find_expression_subquery


@pytest.mark.parametrize(
    "query",
    [
        "SELECT a, (SELECT count(*) FROM t AS x WHERE x.b < t.b) FROM t",
        "SELECT a FROM t WHERE a IN (SELECT b FROM u)",
        "SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.b = t.a)",
        "SELECT CASE WHEN c > (SELECT avg(c) FROM t) THEN 1 END FROM t",
    ],
)
def test_a_subquery_in_an_expression_is_found(query: str) -> None:
    tree = sqlglot.parse_one(query, read="spark")
    assert find_expression_subquery(tree) == "subquery in an expression"


@pytest.mark.parametrize(
    "query",
    [
        "SELECT a FROM (SELECT a FROM t) AS x",
        "(SELECT a FROM t)",
        "SELECT a FROM t UNION (SELECT b FROM u)",
        "WITH c AS (SELECT 1 AS a) SELECT a FROM c",
        "SELECT t.a FROM t JOIN (SELECT b FROM u) AS y ON t.a = y.b",
    ],
)
def test_a_query_in_a_relation_position_is_not(query: str) -> None:
    assert find_expression_subquery(sqlglot.parse_one(query, read="spark")) == ""
