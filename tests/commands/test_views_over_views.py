"""Materialized views over materialized views (``capture/view_log.py``,
``commands/dependencies.py``): a downstream view refreshes incrementally from the change its
upstream view logged, REFRESH ... CASCADE refreshes upstream views first, DROP refuses to
orphan a reader unless CASCADE, DESCRIBE EXTENDED shows the graph both ways, a definition
that would read itself is refused, and the costs an upstream's log adds are pinned."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import assert_view_matches_query, change_log_of, view_description
from pyspark.errors import AnalysisException
from pyspark.sql import Row, SparkSession
from sparkmv.commands import refresh as refresh_command
from test_refresh_cost import Cost, counted

INCREMENTAL = "REFRESH INCREMENTAL"


def refresh(spark: SparkSession, statement: str) -> Row:
    return spark.sql(f"REFRESH MATERIALIZED VIEW {statement}").collect()[0]


@pytest.fixture
def chain(spark: SparkSession, db: str) -> list[str]:
    """t → u (filter-project) → d (aggregate over u) → e (DISTINCT over d)."""
    spark.sql("CREATE TABLE t (k INT, v INT) USING parquet")
    spark.sql("INSERT INTO t VALUES (1, 10), (2, 20), (2, 5), (3, NULL), (1, 10)")
    spark.sql(f"CREATE MATERIALIZED VIEW u {INCREMENTAL} AS SELECT k, v FROM t WHERE k < 5")
    spark.sql(
        f"CREATE MATERIALIZED VIEW d {INCREMENTAL} AS"
        " SELECT k, SUM(v) AS total, COUNT(*) AS n FROM u GROUP BY k"
    )
    spark.sql(f"CREATE MATERIALIZED VIEW e {INCREMENTAL} AS SELECT DISTINCT n FROM d")
    return ["u", "d", "e"]


def change_t(spark: SparkSession) -> None:
    spark.sql("INSERT INTO t VALUES (4, 7), (1, 1), (9, 9)")
    spark.sql("DELETE FROM t WHERE v = 5")
    spark.sql("UPDATE t SET v = v + 1 WHERE k = 3 OR v = 20")


def test_a_view_over_a_view_refreshes_incrementally_from_the_logged_change(
    spark: SparkSession, chain: list[str]
) -> None:
    change_t(spark)
    assert refresh(spark, "u").mode == "INCREMENTAL"
    for view in ("d", "e"):
        row = refresh(spark, view)
        assert row.mode == "INCREMENTAL", row.reason
        assert_view_matches_query(spark, view)
    # A full refresh of the upstream logs the exact difference: the readers stay incremental.
    spark.sql("INSERT INTO t VALUES (2, 2)")
    assert refresh(spark, "u FULL").mode == "FULL"
    row = refresh(spark, "d")
    assert row.mode == "INCREMENTAL", row.reason
    assert (row.rows_inserted, row.rows_deleted) == (1, 1)  # group 2's row replaced
    assert_view_matches_query(spark, "d")


def test_a_plain_refresh_reads_what_the_upstream_logged_so_far(
    spark: SparkSession, chain: list[str]
) -> None:
    """Before the upstream refreshes, the downstream's refresh has nothing to do: it is its
    query over the upstream as the upstream stands (stale with it, never wrong)."""
    change_t(spark)
    row = refresh(spark, "d")
    assert (row.mode, row.rows_inserted, row.rows_deleted) == ("INCREMENTAL", 0, 0)
    assert_view_matches_query(spark, "d")
    assert view_description(spark, "u")["Up To Date"].startswith("no")


def test_cascade_refreshes_the_upstream_views_first_in_dependency_order(
    spark: SparkSession, chain: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spark.sql(
        f"CREATE MATERIALIZED VIEW j {INCREMENTAL} AS"
        " SELECT e.n, d.k FROM e JOIN d ON e.n = d.n JOIN u ON u.k = d.k"
    )
    order: list[str] = []
    original = refresh_command.refresh_view

    def recording(context: Any, statement: Any) -> Any:
        order.append(statement.name.name)
        return original(context, statement)

    monkeypatch.setattr(refresh_command, "refresh_view", recording)
    change_t(spark)
    row = refresh(spark, "j CASCADE")
    assert order == ["u", "d", "e", "j"]
    assert row.mode == "INCREMENTAL", row.reason
    for view in ("u", "d", "e", "j"):
        assert_view_matches_query(spark, view)
    order.clear()
    refresh(spark, "d")  # plain: d alone
    assert order == ["d"]


def test_drop_of_a_view_that_others_read_is_refused_unless_cascade(
    spark: SparkSession, chain: list[str]
) -> None:
    with pytest.raises(AnalysisException) as refused:
        spark.sql("DROP MATERIALIZED VIEW u")
    assert "MATERIALIZED_VIEW_HAS_DEPENDENTS" in str(refused.value)
    assert "SQLSTATE: 2BP01" in str(refused.value)
    assert "d" in str(refused.value) and "CASCADE" in str(refused.value)
    assert {r.viewName for r in spark.sql("SHOW MATERIALIZED VIEWS").collect()} == {"u", "d", "e"}
    spark.sql("DROP MATERIALIZED VIEW e")  # nothing reads e
    spark.sql("DROP MATERIALIZED VIEW u CASCADE")
    assert spark.sql("SHOW MATERIALIZED VIEWS").collect() == []
    assert spark.sql("SHOW TABLES LIKE 't'").count() == 1  # the base table stays
    spark.sql("INSERT INTO t VALUES (5, 5)")  # and is no longer tracked by the dropped views


def test_describe_extended_shows_the_dependency_graph_both_ways(
    spark: SparkSession, chain: list[str]
) -> None:
    u, d, e = (view_description(spark, view) for view in chain)
    db = spark.catalog.currentDatabase()
    assert u["Reads Materialized Views"] == "(none)"
    assert u["Read By Materialized Views"] == f"{db}.d"
    assert d["Reads Materialized Views"] == f"{db}.u"
    assert d["Read By Materialized Views"] == f"{db}.e"
    assert e["Reads Materialized Views"] == f"{db}.d"
    assert e["Read By Materialized Views"] == "(none)"


@pytest.mark.parametrize(
    "statement",
    [
        "ALTER MATERIALIZED VIEW u AS SELECT k, v FROM u",
        "ALTER MATERIALIZED VIEW u AS SELECT k, total AS v FROM d",
        "CREATE OR REPLACE MATERIALIZED VIEW u AS SELECT n AS k, n AS v FROM e",
    ],
    ids=["itself", "downstream", "two-levels-down"],
)
def test_a_definition_that_reads_the_view_or_a_view_downstream_of_it_is_refused(
    spark: SparkSession, chain: list[str], statement: str
) -> None:
    with pytest.raises(AnalysisException) as refused:
        spark.sql(statement)
    assert "MATERIALIZED_VIEW_CYCLE" in str(refused.value)
    assert "SQLSTATE: 42P17" in str(refused.value)
    described = view_description(spark, "u")
    assert described["Query"] == "SELECT k, v FROM t WHERE k < 5"


def test_a_replaced_upstream_makes_its_readers_refresh_fully_saying_why(
    spark: SparkSession, chain: list[str]
) -> None:
    spark.sql("ALTER MATERIALIZED VIEW u AS SELECT k, v FROM t WHERE k < 3")
    row = refresh(spark, "d")
    assert row.mode == "FULL"
    assert "changed without logging its change" in row.reason
    assert_view_matches_query(spark, "d")
    spark.sql("INSERT INTO t VALUES (1, 3)")
    refresh(spark, "u")
    assert refresh(spark, "d").mode == "INCREMENTAL"  # logged again from then on
    assert_view_matches_query(spark, "d")


def test_an_on_commit_reader_is_maintained_by_the_upstream_refresh(
    spark: SparkSession, db: str
) -> None:
    """t → u (ON COMMIT) → d (ON COMMIT): a write to t refreshes u, whose change refreshes d,
    in the same statement."""
    spark.sql("CREATE TABLE t (k INT, v INT) USING parquet")
    spark.sql("INSERT INTO t VALUES (1, 10), (2, 20)")
    spark.sql(
        "CREATE MATERIALIZED VIEW u REFRESH INCREMENTAL ON COMMIT AS SELECT k, v FROM t WHERE v > 5"
    )
    spark.sql(
        "CREATE MATERIALIZED VIEW d REFRESH INCREMENTAL ON COMMIT AS"
        " SELECT k, SUM(v) AS s FROM u GROUP BY k"
    )
    spark.sql("INSERT INTO t VALUES (1, 7), (3, 30), (4, 1)")
    spark.sql("DELETE FROM t WHERE k = 2")
    for view in ("u", "d"):
        assert view_description(spark, view)["Up To Date"] == "yes"
        assert_view_matches_query(spark, view)
    assert view_description(spark, "d")["Last Refresh Mode"] == "INCREMENTAL"


def test_the_upstream_log_is_compacted_once_every_reader_consumed_it(
    spark: SparkSession, chain: list[str]
) -> None:
    log = change_log_of(spark, "u")
    change_t(spark)
    refresh(spark, "u")
    assert log.current_version() > log.earliest_readable()
    refresh(spark, "d")  # d is u's only reader
    assert log.earliest_readable() == log.current_version()


def test_what_the_log_costs_an_upstream_refresh_and_what_a_reader_refresh_costs(
    spark: SparkSession, db: str
) -> None:
    """An upstream refresh without readers pays nothing for logging; with a reader, the
    jobs of one statement that computes ΔU over the buckets the refresh changed and writes
    it into the log (measured 3: its consolidation's shuffle, run by adaptive execution as
    jobs of their own, and the write). The reader's incremental refresh reads ΔU from the
    log: measured 2 jobs, the refresh's own (named ``ΔV, merged``) and an unnamed one that a
    ``spark.sql`` call runs, most likely Spark's schema inference of the ``parquet.`` path in
    ``u``'s catalog view when the reader's query is analyzed (a table read by sparkmv itself
    gets an explicit schema and no such job)."""
    spark.sql("CREATE TABLE fact (id BIGINT, k INT, v INT) USING parquet")
    spark.sql("INSERT INTO fact SELECT id, id % 10, id % 7 FROM range(1000)")
    spark.sql(f"CREATE MATERIALIZED VIEW u {INCREMENTAL} AS SELECT id, k, v FROM fact WHERE k < 5")

    def change() -> None:
        spark.sql("INSERT INTO fact SELECT id, id % 10, id % 7 FROM range(1000, 1030)")
        spark.sql("DELETE FROM fact WHERE id % 50 = 1")

    def measured(view: str) -> tuple[Row, Cost]:
        with counted(spark) as cost:
            row = refresh(spark, view)
        assert row.mode == "INCREMENTAL", row.reason
        return row, cost

    change()
    _, alone = measured("u")
    spark.sql(
        f"CREATE MATERIALIZED VIEW d {INCREMENTAL} AS SELECT k, count(*) AS n FROM u GROUP BY k"
    )
    change()
    _, logged = measured("u")
    _, reader = measured("d")
    assert alone.jobs == 1 and logged.jobs <= alone.jobs + 3, (alone, logged)
    assert reader.jobs <= 2, reader
    assert logged.round_trips - alone.round_trips <= 40, (alone, logged)
    assert_view_matches_query(spark, "u")
    assert_view_matches_query(spark, "d")
    print(f"upstream alone {alone}, upstream with a reader {logged}, reader {reader}")
