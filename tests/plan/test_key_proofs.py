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
    key, NULL keys, deletes and updates of keys."""
    writes = []
    top = draw(st.integers(40, 60))
    if draw(st.booleans()):
        new = draw(st.lists(st.integers(top, top + 5), min_size=1, max_size=3))
        writes.append(f"INSERT INTO orders VALUES {', '.join(f'({k}, {k % 3})' for k in new)}")
        writes.append(f"INSERT INTO lines VALUES {', '.join(f'({k}, {k % 4})' for k in new)}")
    for _ in range(draw(st.integers(0, 2))):
        table, other = draw(st.sampled_from([("orders", "cust"), ("lines", "qty")]))
        key = draw(KEYS)
        kind = draw(st.sampled_from(["insert", "delete", "update"]))
        literal = "NULL" if key is None else str(key)
        if kind == "insert":
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
