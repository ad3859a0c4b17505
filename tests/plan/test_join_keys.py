"""A join term reads an input from its own change where the driver's counts prove it.

``plan/join_keys.py``: in the term of ``ΔR_i``, another input ``R_j`` equated to it is read as
``ΔR_j⁺`` (for ``R_j``) or ``ΔR_j⁻`` (for ``R_j,old``) when, at every key of ``ΔR_i``, ``R_j``
had no rows before the change or has none after it. The changes drawn here are TPC-H's
refresh functions in small (an order inserted with its lines, an order deleted with all of
its lines), where the proof holds, mixed with writes that break it at some keys: a line added
to or updated in a surviving order, an order deleted without its lines, a line whose order
does not exist, an order's key changed, a second order under an existing key. Every view
refreshes INCREMENTAL and equals its query afterwards; EXPLAIN names the inputs read from
their change.
"""

from __future__ import annotations

from conftest import assert_view_matches_query, spark_examples
from differential import NO_SHRINK
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

ORDERS = "CREATE TABLE o (k INT, c STRING, d DATE) USING parquet"
LINES = "CREATE TABLE l (k INT, c STRING, x INT) USING parquet"
FIRST_ORDERS = "INSERT INTO o VALUES (1, 'a', DATE'2020-01-01'), (2, 'b', NULL), (3, 'a', NULL)"
FIRST_LINES = "INSERT INTO l VALUES (1, 'a', 5), (1, 'a', 7), (2, 'b', 1), (3, 'a', 9), (4, 'z', 2)"

VIEWS = {
    # an aggregate above the join
    "by_c": "SELECT o.c, count(*) AS n, sum(l.x) AS total FROM o JOIN l ON o.k = l.k GROUP BY o.c",
    # rows, a local filter on the lines, the join written the other way round
    "rows": "SELECT o.k, o.d, l.x FROM l JOIN o ON l.k = o.k WHERE l.x > 2",
    # two conjuncts (a composite key), through a derived table that renames its columns
    "pairs": "SELECT s.kk, s.x, o.d FROM (SELECT k AS kk, c AS cc, x FROM l WHERE x <> 4) AS s"
    " JOIN o ON s.kk = o.k AND s.cc = o.c",
    # a self-join of the lines
    "twins": "SELECT a.k, a.x, b.x AS y FROM l AS a JOIN l AS b ON a.k = b.k",
}


@st.composite
def batches(draw: st.DrawFn) -> list[list[str]]:
    """Two to three batches of writes; new orders get keys above any existing one."""
    result = []
    fresh = 100
    for _ in range(draw(st.integers(2, 3))):
        batch: list[str] = []
        for _ in range(draw(st.integers(1, 4))):
            kind = draw(st.sampled_from(["new"] * 3 + ["gone"] * 3 + ["noise"] * 2))
            key = draw(st.integers(1, 6))
            c = draw(st.sampled_from(["a", "b"]))
            if kind == "new":
                fresh += 1
                lines = draw(st.lists(st.integers(0, 9), max_size=3))
                batch.append(f"INSERT INTO o VALUES ({fresh}, '{c}', DATE'2021-02-03')")
                if lines:
                    values = ", ".join(f"({fresh}, '{c}', {x})" for x in lines)
                    batch.append(f"INSERT INTO l VALUES {values}")
            elif kind == "gone":
                batch += [f"DELETE FROM l WHERE k = {key}", f"DELETE FROM o WHERE k = {key}"]
            else:
                batch.append(
                    draw(
                        st.sampled_from(
                            [
                                f"INSERT INTO l VALUES ({key}, '{c}', 3)",
                                f"UPDATE l SET x = x + 1 WHERE k = {key}",
                                f"DELETE FROM o WHERE k = {key}",
                                f"INSERT INTO l VALUES ({key + 50}, '{c}', 6)",
                                f"UPDATE o SET k = k + 10 WHERE k = {key}",
                                f"INSERT INTO o VALUES ({key}, '{c}', NULL)",
                                f"UPDATE l SET c = 'b' WHERE k = {key}",
                            ]
                        )
                    )
                )
        result.append(batch)
    return result


def create(spark: SparkSession) -> None:
    for statement in (ORDERS, LINES, FIRST_ORDERS, FIRST_LINES):
        spark.sql(statement)
    for name, query in VIEWS.items():
        spark.sql(f"CREATE MATERIALIZED VIEW {name} REFRESH INCREMENTAL AS {query}")


def refresh_all(spark: SparkSession) -> None:
    for name in VIEWS:
        row = spark.sql(f"REFRESH MATERIALIZED VIEW {name}").collect()[0]
        assert row["mode"] == "INCREMENTAL", row
        assert_view_matches_query(spark, name)


def delta_line(spark: SparkSession, view: str) -> str:
    plan = spark.sql(f"EXPLAIN REFRESH MATERIALIZED VIEW {view}").collect()[0][0]
    terms = ("ΔV = ", "Δstate = ")
    return next(line.strip() for line in plan.splitlines() if line.strip().startswith(terms))


@settings(max_examples=spark_examples(2), phases=NO_SHRINK, deadline=None)
@given(writes=batches())
def test_join_views_match_their_query_whatever_the_proofs_say(
    spark: SparkSession, db: str, writes: list[list[str]]
) -> None:
    spark.sql(f"DROP DATABASE IF EXISTS {db}_x CASCADE")
    spark.sql(f"CREATE DATABASE {db}_x")
    spark.sql(f"USE {db}_x")
    try:
        create(spark)
        for batch in writes:
            for statement in batch:
                spark.sql(statement)
            refresh_all(spark)
    finally:
        spark.sql(f"USE {db}")
        for name in VIEWS:
            spark.sql(f"DROP MATERIALIZED VIEW IF EXISTS {db}_x.{name}")
        spark.sql(f"DROP DATABASE {db}_x CASCADE")


def test_orders_inserted_and_deleted_with_their_lines_are_joined_by_their_changes(
    spark: SparkSession, db: str
) -> None:
    """RF1/RF2 in small: each term reads the other table's change, neither table's rows."""
    create(spark)
    spark.sql("INSERT INTO o VALUES (7, 'a', DATE'2022-01-01')")
    spark.sql("INSERT INTO l VALUES (7, 'a', 8), (7, 'a', 3)")
    spark.sql("DELETE FROM l WHERE k = 1")
    spark.sql("DELETE FROM o WHERE k = 1")
    assert delta_line(spark, "by_c") == "Δstate = γ[count(*), sum(·)](Δo' ⋈ Δ⁻l + Δ⁺o ⋈ Δl')"
    assert delta_line(spark, "rows") == "ΔV = π(σ(Δl' ⋈ Δ⁻o + Δ⁺l ⋈ Δo'))"
    assert delta_line(spark, "pairs") == "ΔV = π(π(σ(Δl')) ⋈ Δ⁻o + Δ⁺π(σ(l)) ⋈ Δo')"
    assert delta_line(spark, "twins") == "ΔV = π(Δl a' ⋈ Δ⁻l b + Δ⁺l a ⋈ Δl b')"
    refresh_all(spark)


def test_a_surviving_key_makes_its_term_read_the_table(spark: SparkSession, db: str) -> None:
    """A line added to a surviving order: the lines' term reads the orders (order 2 has rows
    before and after); the orders' term still reads the lines' change (order 8 is new)."""
    create(spark)
    spark.sql("INSERT INTO l VALUES (2, 'b', 4)")
    spark.sql("INSERT INTO o VALUES (8, 'b', NULL)")
    assert delta_line(spark, "by_c") == "Δstate = γ[count(*), sum(·)](Δo' ⋈ Δ⁻l + o ⋈ Δl')"
    refresh_all(spark)


def test_a_line_inserted_and_deleted_in_one_change_is_not_read_as_deleted(
    spark: SparkSession, db: str
) -> None:
    """A new order's line deleted again before the refresh: the orders' term reads the lines'
    net deletions, where that line is not (it was never there before the change)."""
    create(spark)
    spark.sql("INSERT INTO o VALUES (9, 'a', NULL)")
    spark.sql("INSERT INTO l VALUES (9, 'a', 1), (9, 'a', 2)")
    spark.sql("DELETE FROM l WHERE k = 9 AND x = 1")
    assert delta_line(spark, "by_c") == "Δstate = γ[count(*), sum(·)](Δo' ⋈ Δ⁻l + Δ⁺o ⋈ Δl')"
    refresh_all(spark)


def test_a_key_naming_one_column_twice_is_proved_by_position(spark: SparkSession, db: str) -> None:
    """``a.k = b.k AND a.x = b.k`` keys ``b`` on ``(k, k)``: the proof reads the change's
    key columns by position, not by name (by name, the refresh failed)."""
    for statement in (LINES, FIRST_LINES):
        spark.sql(statement)
    query = "SELECT a.k, a.x, b.c FROM l AS a JOIN l AS b ON a.k = b.k AND a.x = b.k"
    spark.sql(f"CREATE MATERIALIZED VIEW same REFRESH INCREMENTAL AS {query}")
    spark.sql("INSERT INTO l VALUES (5, 'e', 5), (6, 'f', 7)")
    spark.sql("DELETE FROM l WHERE k = 4")
    row = spark.sql("REFRESH MATERIALIZED VIEW same").collect()[0]
    assert row["mode"] == "INCREMENTAL", row
    assert_view_matches_query(spark, "same")
