"""Metadata ↔ table properties: the round trip, long values, and the format version."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sparkmv.catalog import properties as keys
from sparkmv.catalog.metadata import ModeHistory, MvMetadata, RefreshStats
from sparkmv.catalog.modes import RefreshMode, RefreshPolicy, RefreshTrigger
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.identifiers import TableName


def metadata(query: str) -> MvMetadata:
    return MvMetadata(
        name=TableName("v", "db"),
        query=query,
        query_database="db",
        policy=RefreshPolicy.FULL,
        trigger=RefreshTrigger.ON_DEMAND,
        base_tables=("db.a", "db.b"),
        columns=("x", "weird `name`"),
        snapshot="file:/w/_sparkmv/db/v/snapshot-1",
        row_count=3,
        created_ms=1,
        stats=RefreshStats(
            refreshes=2,
            full_refreshes=2,
            last_mode="FULL",
            last_reason="why",
            cost_history={RefreshMode.FULL: ModeHistory(2, mean_ms=812.5, mean_model_ms=301.2)},
        ),
    )


@given(query=st.text(max_size=7000))
def test_round_trip_with_values_longer_than_the_metastore_allows(query: str) -> None:
    encoded = metadata(query).to_properties()
    assert all(len(value) <= keys.CHUNK_SIZE for value in encoded.values())
    assert MvMetadata.from_properties(TableName("v", "db"), encoded) == metadata(query)


def test_user_properties_exclude_sparkmv_and_spark_bookkeeping() -> None:
    properties = {
        **metadata("SELECT 1").to_properties(),
        "owner": "me",
        "view.query.out.col.0": "x",
        "spark.sql.create.version": "4.3.0",
    }
    assert keys.user_properties(properties) == {"owner": "me"}


def test_a_newer_format_is_refused() -> None:
    encoded = metadata("SELECT 1").to_properties()
    encoded[keys.FORMAT] = str(keys.FORMAT_VERSION + 1)
    with pytest.raises(SparkMvError) as raised:
        MvMetadata.from_properties(TableName("v", "db"), encoded)
    assert raised.value.error_class is ErrorClass.MATERIALIZED_VIEW_UNSUPPORTED_FEATURE


def test_the_cost_history_is_one_property_and_a_view_without_one_reads_as_empty() -> None:
    encoded = metadata("SELECT 1").to_properties()
    assert encoded[keys.COST_HISTORY] == (
        '{"FULL": {"last_refresh": 0, "mean_model_ms": 301.2, "mean_ms": 812.5, "refreshes": 2}}'
    )
    del encoded[keys.COST_HISTORY]  # written before the cost model
    read = MvMetadata.from_properties(TableName("v", "db"), encoded)
    assert read.stats.cost_history == {}
