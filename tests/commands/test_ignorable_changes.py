"""Irrelevant and readily ignorable changes reach no delta rule (Blakeley §4, Hanson §1).

What a refresh would feed the rules is read from the engine EXPLAIN builds: per changed
table its logged rows (an UPDATE assigning no column the view reads is skipped), its net
change ``ΔR`` (the columns the view never reads NULL, so images equal on the others
cancel), and per scan its irrelevance filter. The view is checked against its query after
each refresh (docs/development.md).
"""

from __future__ import annotations

from conftest import assert_view_matches_query
from pyspark.sql import SparkSession
from sparkmv.analyze.relational import Scan, walk
from sparkmv.catalog.modes import RefreshMode
from sparkmv.commands import refresh
from sparkmv.commands.context import CommandContext
from sparkmv.delta.engine import DeltaEngine
from sparkmv.identifiers import TableName
from sparkmv.plan.refresh_plan import plan_refresh


def pending(spark: SparkSession, db: str) -> tuple[DeltaEngine, Scan]:
    """The engine a refresh of ``priced`` would run now, and its one scan."""
    context = CommandContext.of(spark)
    view = context.catalog.get(TableName("priced", db))
    bases = context.peek_tracking(view.base_tables)
    plan = plan_refresh(spark, view, RefreshMode.INCREMENTAL, bases)
    assert plan.query is not None and plan.query.maintainability.root is not None
    (scan,) = [n for n in walk(plan.query.maintainability.root) if isinstance(n, Scan)]
    return refresh.screened_engine(spark, plan.query, bases, plan.changed), scan


def test_changes_the_view_cannot_see_reach_no_rule(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE items (id INT, price INT, note STRING) USING parquet")
    spark.sql("INSERT INTO items VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 1, 'c')")
    spark.sql("CREATE MATERIALIZED VIEW priced AS SELECT id, price FROM items WHERE price > 5")

    spark.sql("UPDATE items SET note = 'changed'")  # assigns no column the view reads
    engine, _ = pending(spark, db)
    state = engine.tables[f"{db}.items"]
    assert state.logged is not None and state.logged.count() == 0  # the statement is skipped
    spark.sql("REFRESH MATERIALIZED VIEW priced")
    assert_view_matches_query(spark, "priced")

    # Assigns a column the view reads, but changes only one it does not: the images cancel.
    spark.sql("UPDATE items SET note = 'again', price = price WHERE id = 1")
    engine, _ = pending(spark, db)
    state = engine.tables[f"{db}.items"]
    assert state.logged is not None and state.logged.count() == 2
    assert state.change is not None and state.change.count() == 0
    spark.sql("REFRESH MATERIALIZED VIEW priced")
    assert_view_matches_query(spark, "priced")

    spark.sql("UPDATE items SET price = price + 1 WHERE id = 3")  # 1 → 2: irrelevant
    engine, scan = pending(spark, db)
    change = engine.tables[f"{db}.items"].change
    assert change is not None and change.count() == 2
    assert engine.screens[scan].sql(dialect="spark") == "`price` >= 6"
    row = spark.sql("REFRESH MATERIALIZED VIEW priced").collect()[0]
    assert (row.rows_inserted, row.rows_deleted, row.irrelevant_rows) == (0, 0, 2)
    assert_view_matches_query(spark, "priced")

    spark.sql("UPDATE items SET price = 7 WHERE id = 3")  # 2 → 7: the post-image is relevant
    row = spark.sql("REFRESH MATERIALIZED VIEW priced").collect()[0]
    assert (row.rows_inserted, row.rows_deleted, row.irrelevant_rows) == (1, 0, 1)
    assert_view_matches_query(spark, "priced")
