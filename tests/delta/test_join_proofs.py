"""A join term reads an input from its own change where the engine's ``KeyProof`` proves it
(``delta/join.py``): after a change shaped as TPC-H's RF1/RF2 (new orders with their new
lines, old orders deleted with all their lines), ``Δ(O ⋈ L) = ΔO ⋈ Δ⁻L + Δ⁺O ⋈ ΔL`` scans
neither table. The proof is given here as a refresh would give one from metadata, for a
change where it holds; the view must still equal its query."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from conftest import assert_view_matches_query
from differential import refresh
from pyspark.sql import SparkSession
from sparkmv.commands import refresh as refresh_command
from sparkmv.delta import rules
from sparkmv.delta.engine import BaseState, DeltaEngine, KeyedColumns, KeyProof

QUERIES = {
    "rows": "SELECT o.ok, o.cust, l.qty FROM orders o JOIN lines l ON o.ok = l.ok",
    "aggregate": "SELECT o.cust, count(*) AS n, sum(l.qty) AS q FROM orders o"
    " JOIN lines l ON l.ok = o.ok GROUP BY o.cust",
}


def always_proven(rows: KeyedColumns, keys: KeyedColumns) -> bool:
    """Both tables changed at the same order keys only (the change below): true for them."""
    return {rows[0].rpartition(".")[2], keys[0].rpartition(".")[2]} == {"orders", "lines"}


@pytest.mark.parametrize("query", QUERIES.values(), ids=QUERIES.keys())
def test_inputs_proven_reached_only_through_their_change_are_read_from_it(
    spark: SparkSession, db: str, query: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spark.sql("CREATE TABLE orders (ok INT, cust INT) USING parquet")
    spark.sql("CREATE TABLE lines (ok INT, qty INT) USING parquet")
    spark.sql("INSERT INTO orders SELECT id, id % 3 FROM range(1, 9)")
    spark.sql("INSERT INTO lines SELECT id % 8 + 1, id FROM range(24)")
    spark.sql(f"CREATE MATERIALIZED VIEW v REFRESH INCREMENTAL AS {query}")
    spark.sql("INSERT INTO orders VALUES (20, 1), (21, 2)")  # RF1: new orders, new lines
    spark.sql("INSERT INTO lines VALUES (20, 5), (20, 6), (21, 7)")
    spark.sql("DELETE FROM orders WHERE ok IN (2, 5)")  # RF2: old orders and all their lines
    spark.sql("DELETE FROM lines WHERE ok IN (2, 5)")

    def proven(
        spark: SparkSession, tables: Mapping[str, BaseState], proofs: KeyProof | None = None
    ) -> DeltaEngine:
        return rules.delta_engine(spark, tables, always_proven)  # in place of the refresh's

    monkeypatch.setattr(refresh_command, "delta_engine", proven)
    plan = spark.sql("EXPLAIN REFRESH MATERIALIZED VIEW v").collect()[0][0]
    assert "Δ⁻lines" in plan or "Δ⁻orders" in plan, plan
    assert refresh(spark, "v")[0] == "INCREMENTAL"
    monkeypatch.undo()
    assert_view_matches_query(spark, "v")
