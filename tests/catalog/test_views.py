"""``ViewCatalog.refresh_facts``: what a refresh reads from the catalog, whatever it guessed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession
from sparkmv.catalog.views import RefreshFacts, ViewCatalog
from sparkmv.identifiers import TableName


@pytest.fixture
def other_db(spark: SparkSession, db: str) -> Iterator[str]:
    name = f"{db}_other"
    spark.sql(f"CREATE DATABASE {name}")
    yield name
    spark.sql(f"DROP DATABASE {name} CASCADE")


def _facts(catalog: ViewCatalog, view: TableName, guess: list[str]) -> RefreshFacts:
    catalog._bases_seen[view] = guess  # what an earlier refresh would have left
    return catalog.refresh_facts(view)


def test_refresh_facts_do_not_depend_on_the_guessed_base_tables(
    spark: SparkSession, db: str, other_db: str
) -> None:
    """The base tables seen at the last refresh are looked up with the view, as a guess; a
    stale, partial, excessive or absent guess changes how many metastore calls the facts
    take, never the facts."""
    spark.sql("CREATE TABLE a (k INT, x INT) USING parquet")
    spark.sql("CREATE TABLE b (k INT, y INT) USING parquet")
    spark.sql(f"CREATE TABLE {other_db}.c (k INT, z INT) USING parquet")
    spark.sql("INSERT INTO a VALUES (1, 10)")
    spark.sql("CREATE MATERIALIZED VIEW v AS SELECT a.k, x, y FROM a JOIN b ON a.k = b.k")
    view = TableName("v", db)
    catalog = ViewCatalog(spark)
    guesses = {
        "none": [],
        "exact": [f"{db}.a", f"{db}.b"],
        "partial": [f"{db}.b"],
        "excessive": [f"{db}.a", f"{db}.b", f"{other_db}.c", "nowhere.t", f"{db}.missing"],
        "stale": [f"{other_db}.c"],
    }
    expected = _facts(catalog, view, [])
    assert set(expected.bases) == {TableName("a", db), TableName("b", db)}
    assert all(entry is not None for entry in expected.bases.values())
    assert len(expected.files) == 2  # both tracked and unpartitioned
    for label, guess in guesses.items():
        assert _facts(catalog, view, guess) == expected, label

    spark.sql(f"ALTER MATERIALIZED VIEW v AS SELECT a.k, x, z FROM a JOIN {other_db}.c USING (k)")
    after = _facts(catalog, view, [])
    assert set(after.bases) == {TableName("a", db), TableName("c", other_db)}
    for label, guess in guesses.items():
        assert _facts(catalog, view, guess) == after, label
    assert set(catalog._bases_seen[view]) == {f"{db}.a", f"{other_db}.c"}  # the next guess
