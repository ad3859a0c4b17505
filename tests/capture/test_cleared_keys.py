"""What a DELETE's condition proves about its table (``ClearedKeys.scala``): one column
compared with constants, ``k = c``, ``k IN (…)`` or a disjunction of those over ``k``, of an
integer or date type; nothing for any other shape. Read from the analyzed condition, as the
DELETE's is (a SELECT's WHERE is analyzed by the same rules)."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import SparkSession


@pytest.mark.parametrize(
    ("condition", "cleared"),
    [
        ("k IN (7, 2, 5, 2)", {"column": "k", "values": [2, 5, 7]}),
        ("k = 3 OR k IN (4, NULL) OR 9 = k", {"column": "k", "values": [3, 4, 9]}),
        ("small IN (1, 2)", {"column": "small", "values": [1, 2]}),
        ("d = DATE'1970-01-03'", {"column": "d", "values": [2]}),
        ("k IN (NULL)", {"column": "k", "values": []}),
        ("k IN (2) AND small > 1", None),  # rows at 2 may remain
        ("k = 2 OR small = 1", None),  # two columns
        ("k = small", None),
        ("k = 1.5", None),  # compared as decimals
        ("s IN ('a')", None),  # not an integer
        ("k + 1 = 3", None),
    ],
)
def test_a_delete_condition_clears_keys_of_one_shape(
    spark: SparkSession, db: str, condition: str, cleared: dict[str, object] | None
) -> None:
    spark.sql("CREATE TABLE t (k BIGINT, small SMALLINT, d DATE, s STRING) USING parquet")
    analyzed = spark.sql(f"SELECT * FROM t WHERE {condition}")._jdf.queryExecution().analyzed()
    where = analyzed.child()  # under the Project of *
    assert where.nodeName() == "Filter"
    found = str(spark._jvm.io.sparkmv.capture.ClearedKeys.of(where.child(), where.condition()))
    assert (json.loads(found) if found else None) == cleared
