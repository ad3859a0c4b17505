"""A refresh re-checks the delta rules' column types only when a schema they depend on changed.

CREATE checks that the rules' evaluation of the view's IR has the query's column types and
remembers the schemas it checked (``MvMetadata.checked_schemas``). A refresh whose base
tables and query still have those schemas runs only the analysis; after ``ADD COLUMNS`` the
check runs once more and the new key is remembered. The view equals its query throughout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from conftest import assert_view_matches_query
from pyspark.sql import SparkSession
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.commands.context import CommandContext
from sparkmv.identifiers import TableName
from sparkmv.plan import refresh_plan


def metadata(spark: SparkSession, db: str) -> MvMetadata:
    return CommandContext.of(spark).catalog.get(TableName("joined", db))


def refreshed(spark: SparkSession) -> str:
    row = spark.sql("REFRESH MATERIALIZED VIEW joined").collect()[0]
    assert_view_matches_query(spark, "joined")
    return str(row.mode)


def test_the_type_check_runs_again_only_after_a_schema_change(
    spark: SparkSession, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spark.sql("CREATE TABLE facts (k INT, v BIGINT) USING parquet")
    spark.sql("CREATE TABLE dims (k INT, name STRING) USING parquet")
    spark.sql("INSERT INTO facts VALUES (1, 10), (2, 20), (2, 20), (NULL, 5)")
    spark.sql("INSERT INTO dims VALUES (1, 'a'), (2, 'b')")
    spark.sql(
        "CREATE MATERIALIZED VIEW joined AS"
        " SELECT f.k, f.v, d.name FROM facts f JOIN dims d ON f.k = d.k"
    )
    created_key = metadata(spark, db).checked_schemas
    assert created_key

    checks: list[str] = []
    check: Callable[..., Any] = refresh_plan.maintainability_of

    def counted(*arguments: Any) -> Any:
        checks.append("check")
        return check(*arguments)

    monkeypatch.setattr(refresh_plan, "maintainability_of", counted)

    spark.sql("INSERT INTO facts VALUES (1, 11)")
    assert refreshed(spark) == "INCREMENTAL"
    assert checks == []
    assert metadata(spark, db).checked_schemas == created_key

    spark.sql("ALTER TABLE dims ADD COLUMNS (weight DOUBLE)")
    spark.sql("INSERT INTO dims VALUES (2, 'c', 0.5)")
    assert refreshed(spark) == "INCREMENTAL"
    assert checks == ["check"]
    altered_key = metadata(spark, db).checked_schemas
    assert altered_key and altered_key != created_key

    spark.sql("DELETE FROM facts WHERE k = 2")
    assert refreshed(spark) == "INCREMENTAL"
    assert checks == ["check"]
    assert metadata(spark, db).checked_schemas == altered_key
