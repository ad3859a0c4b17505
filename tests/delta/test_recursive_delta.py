"""The recursive CTE's delta rule (``delta/recursive.py``) on DataFrames, without storage:
``R_old + ΔR`` equals the fixpoint computed afresh over the new tables, level by level, for
a step that joins two changing tables; the stored state, the level limit and what a view
stores (``apply/fixpoints.py``), also after ``ALTER ... AS``."""

from __future__ import annotations

from collections import Counter

import pytest
import sqlglot
from conftest import (
    assert_view_matches_query,
    session_confs,
    view_description,
    z_difference,
    zset_weights,
)
from pyspark.sql import DataFrame, SparkSession
from sparkmv import fs
from sparkmv.analyze.relational import Recursive, RelationalBuilder, walk
from sparkmv.apply.fixpoints import FIXPOINTS_DIR
from sparkmv.delta.engine import BaseState, Fixpoints, Version
from sparkmv.delta.recursive import state_columns
from sparkmv.delta.rules import delta_engine
from sparkmv.zset import WEIGHT
from sqlglot.optimizer.qualify import qualify

TABLES = {"db.e": ("s", "d"), "db.w": ("n", "ok")}
W_SCHEMA = "n INT, ok BOOLEAN"
# the step joins the recursion with two tables, both of which change
QUERY = (
    "WITH RECURSIVE r(s, d, len) AS (SELECT s, d, 1 FROM e UNION ALL"
    " SELECT r.s, e.d, r.len + 1 FROM r JOIN e ON r.d = e.s JOIN w ON w.n = e.d"
    " WHERE r.len < 4 AND w.ok) SELECT * FROM r"
)
# non-linear: the step reads the recursion twice (path doubling) and both tables, which change
DOUBLING = (
    "WITH RECURSIVE r(s, d, len) AS (SELECT s, d, 1 FROM e UNION ALL"
    " SELECT a.s, e.d, a.len + b.len + 1 FROM r a JOIN r b ON a.d = b.s JOIN e ON b.d = e.s"
    " JOIN w ON w.n = e.d WHERE a.len < 7 AND w.ok) SELECT * FROM r"
)


def recursive_node(query: str = QUERY) -> Recursive:
    schema = {"db": {"e": {"s": "INT", "d": "INT"}, "w": {"n": "INT", "ok": "BOOLEAN"}}}
    tree = qualify(sqlglot.parse_one(query, read="spark"), schema=schema, db="db", dialect="spark")
    root, _ = RelationalBuilder(TABLES).build(tree)
    return next(node for node in walk(root) if isinstance(node, Recursive))


def fixpoint(spark: SparkSession, node: Recursive, tables: dict[str, BaseState]) -> DataFrame:
    with delta_engine(spark, tables) as engine:
        engine.evaluate(node, Version.NEW)
        return engine.fixpoints.computed[node.key]


@pytest.mark.parametrize("query", [QUERY, DOUBLING], ids=["linear", "non-linear"])
def test_stored_fixpoint_plus_change_is_the_new_fixpoint(spark: SparkSession, query: str) -> None:
    node = recursive_node(query)
    e_old = spark.createDataFrame([(1, 2), (2, 3), (3, 1), (2, 2), (1, 2)], "s INT, d INT")
    w_old = spark.createDataFrame(
        [(1, True), (2, True), (3, True), (4, False)], "n INT, ok BOOLEAN"
    )
    old = fixpoint(spark, node, {"db.e": BaseState(e_old), "db.w": BaseState(w_old)})
    assert old.columns == [*state_columns(node), WEIGHT]
    e_new = spark.createDataFrame([(1, 2), (2, 3), (3, 1), (3, 4), (1, 2)], "s INT, d INT")
    e_change = spark.createDataFrame([(2, 2, -1), (3, 4, 1)], f"s INT, d INT, {WEIGHT} BIGINT")
    w_new = spark.createDataFrame(
        [(1, True), (2, True), (3, False), (4, True)], "n INT, ok BOOLEAN"
    )
    w_change = spark.createDataFrame(
        [(3, True, -1), (4, False, -1), (3, False, 1), (4, True, 1)],
        f"n INT, ok BOOLEAN, {WEIGHT} BIGINT",
    )
    changed = {"db.e": BaseState(e_new, e_change), "db.w": BaseState(w_new, w_change)}
    with delta_engine(spark, changed) as engine:
        engine.fixpoints.stored[node.key] = old
        change = zset_weights(engine.delta(node))
        engine.evaluate(node, Version.NEW)
        maintained = zset_weights(engine.fixpoints.computed[node.key])
    new_tables = {"db.e": BaseState(e_new), "db.w": BaseState(w_new)}
    fresh = zset_weights(fixpoint(spark, node, new_tables))
    assert maintained == fresh
    # ΔR (without the level) is the difference of the CTE's values
    visible_old: Counter[tuple[object, ...]] = Counter()
    visible_new: Counter[tuple[object, ...]] = Counter()
    for target, rows in ((visible_old, zset_weights(old)), (visible_new, fresh)):
        for row, weight in rows.items():
            target[row[:-1]] += weight
    assert change == z_difference(visible_new, visible_old)


def test_analysis_runs_no_iteration(spark: SparkSession) -> None:
    node = recursive_node()
    e = spark.createDataFrame([(1, 2)], "s INT, d INT")
    w = spark.createDataFrame([(2, True)], W_SCHEMA)
    with delta_engine(spark, {"db.e": BaseState(e), "db.w": BaseState(w)}) as engine:
        frame = engine.analyzing().evaluate(node, Version.NEW)
        assert [f.dataType.simpleString() for f in frame.schema.fields] == ["int"] * 3 + ["bigint"]
        assert engine.fixpoints == Fixpoints()


def assert_fails_as_spark_does(spark: SparkSession, query: str, view: str, error: str) -> None:
    """Spark's ``query`` over the tables as they are fails with ``error``, and so does the
    refresh of ``view`` (its query)."""
    with pytest.raises(Exception, match=error):
        spark.sql(query).collect()
    with pytest.raises(Exception, match=error):
        spark.sql(f"REFRESH MATERIALIZED VIEW {view}")


def assert_refreshes_incrementally(spark: SparkSession, view: str) -> None:
    row = spark.sql(f"REFRESH MATERIALIZED VIEW {view}").collect()[0]
    assert row.mode == "INCREMENTAL", row.reason
    assert_view_matches_query(spark, view)


@pytest.mark.parametrize(
    "step",
    [
        "SELECT r.s, e.d FROM r JOIN e ON r.d = e.s",
        "SELECT a.s, b.d FROM r a JOIN r b ON a.d = b.s",
    ],
    ids=["linear", "non-linear"],
)
def test_level_limit_fails_as_spark_does(spark: SparkSession, db: str, step: str) -> None:
    spark.sql("CREATE TABLE e (s INT, d INT) USING parquet")
    spark.sql("INSERT INTO e VALUES (1, 2), (2, 3)")
    query = (
        f"WITH RECURSIVE r(s, d) AS (SELECT s, d FROM e UNION ALL {step})"
        " SELECT DISTINCT s, d FROM r"
    )
    with session_confs(spark, {"spark.sql.cteRecursionLevelLimit": "5"}):
        spark.sql(f"CREATE MATERIALIZED VIEW reach AS {query}")
        spark.sql("INSERT INTO e VALUES (3, 4), (4, 5)")
        assert_refreshes_incrementally(spark, "reach")
        spark.sql("INSERT INTO e VALUES (5, 1)")  # a cycle: the recursion never ends
        assert_fails_as_spark_does(spark, query, "reach", "RECURSION_LEVEL_LIMIT_EXCEEDED")
        spark.sql("DELETE FROM e WHERE s = 5")
        assert_refreshes_incrementally(spark, "reach")


@pytest.mark.parametrize(
    ("step", "limit"),
    [
        # walks of a chain of n edges: n(n+1)/2 — 3, then 15, then 10
        ("SELECT r.s, e.d FROM r JOIN e ON r.d = e.s", 12),
        # path doubling, each level from the previous one alone: 3, then 11, then 8
        ("SELECT a.s, b.d FROM r a JOIN r b ON a.d = b.s", 10),
    ],
    ids=["linear", "non-linear"],
)
def test_row_limit_fails_as_spark_does(spark: SparkSession, db: str, step: str, limit: int) -> None:
    """A change that makes the recursion's rows reach ``spark.sql.cteRecursionRowLimit``
    fails the refresh with Spark's error, and the view keeps its rows; once the tables are
    back under the limit, the refresh is incremental again."""
    spark.sql("CREATE TABLE e (s INT, d INT) USING parquet")
    spark.sql("INSERT INTO e VALUES (1, 2), (2, 3)")
    query = f"WITH RECURSIVE r(s, d) AS (SELECT s, d FROM e UNION ALL {step}) SELECT s, d FROM r"
    with session_confs(spark, {"spark.sql.cteRecursionRowLimit": str(limit)}):
        spark.sql(f"CREATE MATERIALIZED VIEW walks AS {query}")
        before = spark.table("walks").collect()
        spark.sql("INSERT INTO e VALUES (3, 4), (4, 5), (5, 6)")  # a chain of 5 edges
        assert_fails_as_spark_does(spark, query, "walks", "RECURSION_ROW_LIMIT_EXCEEDED")
        assert sorted(spark.table("walks").collect()) == sorted(before)
        spark.sql("DELETE FROM e WHERE s = 5")  # a chain of 4 edges
        assert_refreshes_incrementally(spark, "walks")


def test_a_change_whose_rounds_cancel_at_the_level_limit_is_recomputed(
    spark: SparkSession, db: str
) -> None:
    """Levels 0-2 before and after, limit 3: deleting the edge into node 3 (level 2) and
    adding one out of it makes ``G_0`` hold node 4 at level 3 (from the stored fixpoint)
    and ``G_2`` the same row negated (from the deletion). Spark's query over the new
    tables succeeds, so the refresh recomputes instead of failing; a change that does
    reach the limit still fails as Spark does."""
    spark.sql("CREATE TABLE e (s INT, d INT) USING parquet")
    spark.sql("INSERT INTO e VALUES (1, 2), (2, 3)")
    spark.sql("CREATE TABLE start (n INT) USING parquet")
    spark.sql("INSERT INTO start VALUES (1)")
    query = (
        "WITH RECURSIVE r(n) AS (SELECT n FROM start"
        " UNION ALL SELECT e.d FROM r JOIN e ON r.n = e.s) SELECT n FROM r"
    )
    with session_confs(spark, {"spark.sql.cteRecursionLevelLimit": "3"}):
        spark.sql(f"CREATE MATERIALIZED VIEW reach AS {query}")
        spark.sql("DELETE FROM e WHERE s = 1")
        spark.sql("INSERT INTO e VALUES (3, 4)")
        row = spark.sql("REFRESH MATERIALIZED VIEW reach").collect()[0]
        assert row.mode == "FULL"
        assert "reached the recursion level limit (3)" in row.reason, row.reason
        assert_view_matches_query(spark, "reach")
        spark.sql("INSERT INTO e VALUES (1, 2)")  # now 1 → 2 → 3 → 4: level 3 holds node 4
        assert_fails_as_spark_does(spark, query, "reach", "RECURSION_LEVEL_LIMIT_EXCEEDED")
        spark.sql("DELETE FROM e WHERE s = 3")
        assert_refreshes_incrementally(spark, "reach")


def test_a_missing_fixpoint_makes_the_refresh_full_then_incremental_again(
    spark: SparkSession, db: str
) -> None:
    """A snapshot without the stored fixpoint (``apply/fixpoints.py``): FULL with the reason,
    which stores it; the next refresh is incremental. A refresh whose ΔV is empty but whose
    fixpoint changed commits a new snapshot holding the new fixpoint."""
    spark.sql("CREATE TABLE e (s INT, d INT) USING parquet")
    spark.sql("INSERT INTO e VALUES (1, 2), (2, 3), (1, 3)")
    spark.sql(
        "CREATE MATERIALIZED VIEW walks AS WITH RECURSIVE r(s, d, k) AS (SELECT s, d, 1 FROM e"
        " UNION ALL SELECT r.s, e.d, r.k + 1 FROM r JOIN e ON r.d = e.s WHERE r.k < 3)"
        " SELECT s, d, k FROM r WHERE s = 1"
    )
    storage = view_description(spark, "walks")["Storage"]
    fs.remove(spark, f"{storage}/{FIXPOINTS_DIR}")
    spark.sql("INSERT INTO e VALUES (3, 4)")
    row = spark.sql("REFRESH MATERIALIZED VIEW walks").collect()[0]
    assert row.mode == "FULL"
    assert "the stored fixpoint of the recursive CTE r is missing" in row.reason
    assert_view_matches_query(spark, "walks")
    # walks from 5 only: the fixpoint changes, the view (walks from 1) does not
    spark.sql("INSERT INTO e VALUES (5, 6)")
    before = view_description(spark, "walks")["Storage"]
    row = spark.sql("REFRESH MATERIALIZED VIEW walks").collect()[0]
    assert row.mode == "INCREMENTAL", row.reason
    assert (row.rows_inserted, row.rows_deleted) == (0, 0)
    after = view_description(spark, "walks")["Storage"]
    assert after != before
    stored = spark.read.parquet(f"{after}/{FIXPOINTS_DIR}/*").collect()
    assert (5, 6, 1, 0, 1) in [tuple(r) for r in stored]  # c0, c1, c2, level, weight
    spark.sql("DELETE FROM e WHERE s = 5 OR (s = 1 AND d = 2)")
    spark.sql("INSERT INTO e VALUES (1, 5)")
    row = spark.sql("REFRESH MATERIALIZED VIEW walks").collect()[0]
    assert row.mode == "INCREMENTAL", row.reason
    assert_view_matches_query(spark, "walks")


@pytest.mark.parametrize(
    ("altered", "mode"),
    [
        # the old rows filtered: derived from them (counted as incremental), not computed
        ("SELECT s, d, k FROM r WHERE s = 1", "INCREMENTAL"),
        ("SELECT s, COUNT(*) AS walks FROM r GROUP BY s", "FULL"),  # computed afresh
    ],
    ids=["derived", "computed"],
)
def test_alter_as_stores_the_fixpoint(
    spark: SparkSession, db: str, altered: str, mode: str
) -> None:
    """``ALTER ... AS`` of a recursive view stores the new definition's fixpoint with its
    snapshot, whether its rows are derived from the old ones or computed: the next refresh
    is incremental."""
    cte = (
        "WITH RECURSIVE r(s, d, k) AS (SELECT s, d, 1 FROM e UNION ALL"
        " SELECT r.s, e.d, r.k + 1 FROM r JOIN e ON r.d = e.s WHERE r.k < 3)"
    )
    spark.sql("CREATE TABLE e (s INT, d INT) USING parquet")
    spark.sql("INSERT INTO e VALUES (1, 2), (2, 3), (1, 3), (3, 1)")
    spark.sql(f"CREATE MATERIALIZED VIEW walks AS {cte} SELECT s, d, k FROM r")
    spark.sql(f"ALTER MATERIALIZED VIEW walks AS {cte} {altered}")
    assert_view_matches_query(spark, "walks")
    described = view_description(spark, "walks")
    assert described["Last Refresh Mode"] == mode
    assert fs.exists(spark, f"{described['Storage']}/{FIXPOINTS_DIR}")
    spark.sql("INSERT INTO e VALUES (2, 1)")
    spark.sql("DELETE FROM e WHERE s = 1 AND d = 3")
    row = spark.sql("REFRESH MATERIALIZED VIEW walks").collect()[0]
    assert row.mode == "INCREMENTAL", row.reason
    assert_view_matches_query(spark, "walks")
