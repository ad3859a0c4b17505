"""Semi- and anti-join values computed by Spark's own joins (``delta/semijoin.py``).

Random tables with NULLs and duplicates, a random change: the values of ``EXISTS``,
``NOT EXISTS`` and ``IN`` views (correlated on equalities and on other conditions, one nested
in another's subquery) as of NEW and OLD, and the change between them, must equal Spark's
answers to the query over the tables after and before the change, as Z-sets.
"""

from __future__ import annotations

from collections import Counter

import sqlglot
from conftest import spark_examples, z_difference, zset_weights
from differential import NO_SHRINK
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession
from sparkmv.analyze.ir import Node, Project, UnionAll
from sparkmv.analyze.relational import RelationalBuilder, walk
from sparkmv.delta.engine import BaseState, Version
from sparkmv.delta.rules import delta_engine
from sparkmv.zset import WEIGHT
from sqlglot.optimizer.qualify import qualify

TABLES = {"db.l": ("k", "a"), "db.r": ("k", "b")}
SCHEMA = {"db": {"l": {"k": "INT", "a": "INT"}, "r": {"k": "INT", "b": "INT"}}}
ROW = "k INT, a INT"
QUERIES = {
    "exists": "SELECT * FROM l WHERE EXISTS (SELECT * FROM r WHERE r.k = l.k)",
    "exists, mixed": "SELECT * FROM l WHERE EXISTS (SELECT * FROM r WHERE r.k = l.k AND r.b > l.a)",
    "not exists": "SELECT a FROM l WHERE NOT EXISTS (SELECT * FROM r WHERE r.k = l.k)",
    "not exists, mixed": (
        "SELECT * FROM l WHERE a > 0 AND NOT EXISTS (SELECT * FROM r WHERE r.k = l.k"
        " AND r.b <> l.a)"
    ),
    "in": "SELECT k FROM l WHERE k IN (SELECT b FROM r WHERE r.k IS NOT NULL)",
    "uncorrelated": "SELECT * FROM l WHERE NOT EXISTS (SELECT * FROM r WHERE b = 2)",
    # the outer anti-join's right input holds an anti-join: its OLD value is a difference
    "nested": (
        "SELECT * FROM l WHERE NOT EXISTS (SELECT * FROM r WHERE r.k = l.k AND NOT EXISTS"
        " (SELECT * FROM l AS l2 WHERE l2.a = r.b))"
    ),
}

values = st.one_of(st.none(), st.integers(0, 2))
rows = st.lists(st.tuples(values, values), max_size=7)


def root_of(query: str) -> Node:
    tree = qualify(sqlglot.parse_one(query, read="spark"), schema=SCHEMA, db="db", dialect="spark")
    root, _ = RelationalBuilder(TABLES).build(tree)
    return root


def answer(spark: SparkSession, query: str, l_rows: list, r_rows: list) -> Counter:
    """Spark's answer to ``query`` over ``l_rows`` and ``r_rows``, read as temporary views
    ``l`` and ``r``, dropped after (they would shadow other tests' tables of those names)."""
    spark.createDataFrame(l_rows, ROW).createOrReplaceTempView("l")
    spark.createDataFrame(r_rows, "k INT, b INT").createOrReplaceTempView("r")
    try:
        return Counter(tuple(row) for row in spark.sql(query).collect())
    finally:
        spark.catalog.dropTempView("l")
        spark.catalog.dropTempView("r")


def change(spark: SparkSession, old: list, new: list, schema: str) -> DataFrame:
    difference = Counter(new)
    difference.subtract(Counter(old))
    weighted = [(*row, weight) for row, weight in difference.items() if weight]
    return spark.createDataFrame(weighted, f"{schema}, {WEIGHT} BIGINT")


@settings(max_examples=spark_examples(4), phases=NO_SHRINK, deadline=None)
@given(
    query=st.sampled_from(sorted(QUERIES)),
    l_old=rows,
    r_old=rows,
    l_new=rows,
    r_new=rows,
)
@example(
    query="nested",
    l_old=[(1, 0), (1, 0), (None, 1)],
    r_old=[(1, 0), (2, None)],
    l_new=[(1, 1), (2, 0)],
    r_new=[(1, 0), (2, 1)],
)
def test_values_and_changes_equal_the_query_before_and_after(
    spark: SparkSession, query: str, l_old: list, r_old: list, l_new: list, r_new: list
) -> None:
    root = root_of(QUERIES[query])
    expected_old = answer(spark, QUERIES[query], l_old, r_old)
    expected_new = answer(spark, QUERIES[query], l_new, r_new)
    tables = {
        "db.l": BaseState(spark.createDataFrame(l_new, ROW), change(spark, l_old, l_new, ROW)),
        "db.r": BaseState(
            spark.createDataFrame(r_new, "k INT, b INT"),
            change(spark, r_old, r_new, "k INT, b INT"),
        ),
    }
    with delta_engine(spark, tables) as engine:
        assert zset_weights(engine.evaluate(root, Version.NEW)) == expected_new
        assert zset_weights(engine.evaluate(root, Version.OLD)) == expected_old
        assert zset_weights(engine.delta(root)) == z_difference(expected_new, expected_old)


def test_every_semi_and_anti_join_value_is_a_spark_join(spark: SparkSession) -> None:
    """The value as of NEW joins by Spark's semi- and anti-joins, none by the expansion."""
    empty = {
        "db.l": BaseState(spark.createDataFrame([], ROW)),
        "db.r": BaseState(spark.createDataFrame([], "k INT, b INT")),
    }
    for name, query in QUERIES.items():
        root = root_of(query)
        natives = [n for n in walk(root) if isinstance(n, (Project, UnionAll)) and n.native]
        assert natives, name
        with delta_engine(spark, empty) as engine:
            sql = engine.value(root, Version.NEW).sql
        outermost = natives[0].native
        assert outermost is not None
        assert ("LEFT ANTI JOIN" if outermost.anti else "LEFT SEMI JOIN") in sql, name
        assert " HAVING " not in sql, name  # no key counted, no difference consolidated
