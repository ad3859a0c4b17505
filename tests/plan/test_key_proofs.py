"""Join-term proofs from footer statistics (``plan/key_proofs.py``): an append of rows with
new keys to both inputs of a join reads neither table, ``Δ(O ⋈ L) = ΔO ⋈ Δ⁻L + Δ⁺O ⋈ ΔL``,
proven from the parquet footers alone; anything the footers cannot prove reads the table.
Every refresh is INCREMENTAL and leaves the view equal to its query."""

from __future__ import annotations

from conftest import assert_view_matches_query, session_confs, spark_examples
from differential import ALWAYS_INCREMENTAL, NO_SHRINK, example_database, note, refresh
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

QUERIES = (
    "SELECT o.ok, o.cust, l.qty FROM orders o JOIN lines l ON o.ok = l.ok",
    "SELECT o.cust, count(*) AS n, sum(l.qty) AS q FROM orders o JOIN lines l ON l.ok = o.ok"
    " GROUP BY o.cust",
    # a composite key: one column's ranges suffice
    "SELECT o.ok, l.qty FROM orders o JOIN lines l ON o.ok = l.ok AND o.cust = l.qty",
)


def create(spark: SparkSession, query: str) -> None:
    spark.sql("CREATE TABLE orders (ok BIGINT, cust INT) USING parquet")
    spark.sql("CREATE TABLE lines (ok BIGINT, qty INT) USING parquet")
    spark.sql("INSERT INTO orders SELECT id, id % 3 FROM range(1, 9)")
    spark.sql("INSERT INTO lines SELECT id % 8 + 1, id % 4 FROM range(24)")
    spark.sql(f"CREATE MATERIALIZED VIEW v REFRESH INCREMENTAL AS {query}")


def explain(spark: SparkSession) -> str:
    return str(spark.sql("EXPLAIN REFRESH MATERIALIZED VIEW v").collect()[0][0])


def cost_line(plan: str) -> str:
    return next(line for line in plan.splitlines() if line.startswith("Cost:"))


def test_an_append_of_new_keys_reads_only_the_changes(spark: SparkSession, db: str) -> None:
    create(spark, QUERIES[0])
    spark.sql("INSERT INTO orders VALUES (20, 1), (21, 2), (NULL, 0)")
    spark.sql("INSERT INTO lines VALUES (20, 5), (20, 6), (21, 7), (NULL, 1)")
    plan = explain(spark)
    assert "Δ⁻lines" in plan and "Δ⁺orders" in plan, plan
    assert (
        f"Proof (footer statistics): {db}.lines.ok held values in [1, 8] before its change, "
        f"the change of {db}.orders.ok has values in [20, 21]"
    ) in plan, plan
    assert refresh(spark, "v")[0] == "INCREMENTAL"
    assert_view_matches_query(spark, "v")


def test_keys_inside_the_old_range_read_the_table(spark: SparkSession, db: str) -> None:
    create(spark, QUERIES[0])
    spark.sql("INSERT INTO orders VALUES (20, 1), (3, 2)")  # 3: old lines match it
    spark.sql("INSERT INTO lines VALUES (20, 5)")
    plan = explain(spark)
    # ΔO's term reads lines: they held rows at 3. ΔL's keys (20) are beyond the old orders'.
    assert "lines l_old" in plan and "Δ⁻lines" not in plan, plan
    assert "Δ⁺orders" in plan, plan
    assert refresh(spark, "v")[0] == "INCREMENTAL"
    assert_view_matches_query(spark, "v")


def test_columns_of_other_types_prove_nothing(spark: SparkSession, db: str) -> None:
    spark.sql("CREATE TABLE orders (ok STRING, cust INT) USING parquet")
    spark.sql("CREATE TABLE lines (ok STRING, qty INT) USING parquet")
    spark.sql("INSERT INTO orders VALUES ('a', 1)")
    spark.sql("INSERT INTO lines VALUES ('a', 1)")
    spark.sql(f"CREATE MATERIALIZED VIEW v REFRESH INCREMENTAL AS {QUERIES[0]}")
    spark.sql("INSERT INTO orders VALUES ('b', 1)")
    spark.sql("INSERT INTO lines VALUES ('b', 2)")
    assert "Δ⁻" not in explain(spark)
    assert refresh(spark, "v")[0] == "INCREMENTAL"
    assert_view_matches_query(spark, "v")


KEYS = st.one_of(st.none(), st.integers(-3, 30))


@st.composite
def batches(draw: st.DrawFn) -> list[str]:
    """Writes to both tables: appends of new keys above the old ones (often), inserts at any
    key, NULL keys, deletes and updates of keys, deletes by key lists (of one table, or of
    both at one list, as TPC-H's RF2)."""
    writes = []
    top = draw(st.integers(40, 60))
    if draw(st.booleans()):
        new = draw(st.lists(st.integers(top, top + 5), min_size=1, max_size=3))
        writes.append(f"INSERT INTO orders VALUES {', '.join(f'({k}, {k % 3})' for k in new)}")
        writes.append(f"INSERT INTO lines VALUES {', '.join(f'({k}, {k % 4})' for k in new)}")
    for _ in range(draw(st.integers(0, 2))):
        table, other = draw(st.sampled_from([("orders", "cust"), ("lines", "qty")]))
        key = draw(KEYS)
        kind = draw(st.sampled_from(["insert", "delete", "update", "delete keys"]))
        literal = "NULL" if key is None else str(key)
        if kind == "delete keys":
            drawn = draw(st.lists(KEYS, min_size=1, max_size=4))
            listed = ", ".join("NULL" if k is None else str(k) for k in drawn)
            both = draw(st.booleans())
            for deleted in ("orders", "lines") if both else (table,):
                writes.append(f"DELETE FROM {deleted} WHERE ok IN ({listed})")
        elif kind == "insert":
            writes.append(f"INSERT INTO {table} VALUES ({literal}, {draw(st.integers(0, 3))})")
        elif kind == "delete" and key is not None:
            writes.append(f"DELETE FROM {table} WHERE ok = {key}")
        elif key is not None:
            writes.append(f"UPDATE {table} SET ok = ok + {top} WHERE {other} = {key % 4}")
    return writes


@settings(
    max_examples=spark_examples(4),
    deadline=None,
    phases=NO_SHRINK,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(query=st.sampled_from(QUERIES), steps=st.lists(batches(), min_size=1, max_size=3))
def test_views_over_appended_keys_equal_their_queries(
    spark: SparkSession, db: str, query: str, steps: list[list[str]]
) -> None:
    with example_database(spark, db), session_confs(spark, ALWAYS_INCREMENTAL):
        create(spark, query)
        for number, writes in enumerate(steps, 1):
            for statement in writes:
                note(statement)
                spark.sql(statement)
            mode, reason = refresh(spark, "v")
            note(f"step {number}: {mode} ({reason})")
            assert mode == "INCREMENTAL", reason
            assert_view_matches_query(spark, "v")


def test_deletes_at_one_key_list_read_only_the_changes(spark: SparkSession, db: str) -> None:
    """TPC-H's RF2: orders and their line items deleted by one key list. The line items left
    hold none of those keys (lines' DELETE condition), and every deleted order has one (the
    orders' DELETE condition): ``Δ⁻O ⋈ L_old = Δ⁻O ⋈ Δ⁻L``, and the same the other way."""
    create(spark, QUERIES[1])
    spark.sql("DELETE FROM orders WHERE ok IN (2, 5, 7)")
    spark.sql("DELETE FROM lines WHERE ok IN (7, 5, 2)")
    plan = explain(spark)
    assert "Δ⁻lines" in plan and "Δ⁺orders" in plan, plan
    assert "joined" not in cost_line(plan), plan  # the estimate counts no scan either
    assert (
        f"Proof (DELETE conditions): {db}.lines.ok holds no row at the 3 keys its DELETE at "
        f"version 2 cleared, which hold the keys of every row of {db}.orders.ok deleted at "
        "version 2"
    ) in plan, plan
    assert refresh(spark, "v")[0] == "INCREMENTAL"
    assert_view_matches_query(spark, "v")


def test_an_append_and_a_delete_are_proven_part_by_part(spark: SparkSession, db: str) -> None:
    """RF1 then RF2: the new keys by footer ranges, the deleted ones by the DELETEs."""
    create(spark, QUERIES[0])
    spark.sql("INSERT INTO orders VALUES (20, 1), (21, 2)")
    spark.sql("INSERT INTO lines VALUES (20, 5), (21, 7)")
    spark.sql("DELETE FROM orders WHERE ok = 3 OR ok IN (4, NULL)")
    spark.sql("DELETE FROM lines WHERE ok IN (3, 4)")
    plan = explain(spark)
    assert "Δ⁻lines" in plan and "Δ⁺orders" in plan, plan
    assert (
        f"Proof (DELETE conditions and footer statistics): {db}.lines.ok holds no row at the "
        f"2 keys its DELETE at version 3 cleared, which hold the keys of every row of "
        f"{db}.orders.ok deleted at version 3; {db}.lines.ok held values in [1, 8] before "
        f"its change, the rest of the change of {db}.orders.ok has values in [20, 21]"
    ) in plan, plan
    assert refresh(spark, "v")[0] == "INCREMENTAL"
    assert_view_matches_query(spark, "v")


def test_what_the_deletes_do_not_prove_reads_the_table(spark: SparkSession, db: str) -> None:
    """Orders deleted at keys lines were not (3), a condition of another shape, and a row
    inserted after the DELETE at a key it cleared: each term reads the other table."""
    create(spark, QUERIES[0])
    spark.sql("DELETE FROM orders WHERE ok IN (2, 3)")
    spark.sql("DELETE FROM lines WHERE ok IN (2)")
    plan = explain(spark)
    # lines' deleted keys lie within the orders' cleared ones, not the other way
    assert "lines l_old" in plan and "Δ⁺orders" in plan, plan
    assert "joined" in cost_line(plan), plan
    assert refresh(spark, "v")[0] == "INCREMENTAL"
    assert_view_matches_query(spark, "v")
    spark.sql("DELETE FROM orders WHERE ok IN (4, 5) AND cust >= 0")
    spark.sql("DELETE FROM lines WHERE ok IN (4, 5)")
    spark.sql("INSERT INTO lines VALUES (5, 9)")
    plan = explain(spark)
    assert "lines l_old" in plan and "Δ⁺orders" not in plan, plan
    assert refresh(spark, "v")[0] == "INCREMENTAL"
    assert_view_matches_query(spark, "v")


def test_more_keys_than_the_conf_allows_are_not_logged(spark: SparkSession, db: str) -> None:
    create(spark, QUERIES[0])
    with session_confs(spark, {"spark.sparkmv.capture.clearedKeysMaxValues": "2"}):
        spark.sql("DELETE FROM orders WHERE ok IN (2, 5, 7)")
        spark.sql("DELETE FROM lines WHERE ok IN (2, 5, 7)")
    plan = explain(spark)
    assert "lines l_old" in plan and "Δ⁺orders" not in plan, plan
    assert refresh(spark, "v")[0] == "INCREMENTAL"
    assert_view_matches_query(spark, "v")
