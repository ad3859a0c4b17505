"""The sparkmv demo: base tables, a materialized view, writes, REFRESH, SELECT, DESCRIBE."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import sparkmv
from pyspark.sql import SparkSession
from sparkmv.shell import format_table

WAREHOUSE = Path("demo-warehouse")


def show(spark: SparkSession, statement: str) -> None:
    print(f"\nsparkmv> {' '.join(statement.split())};")
    frame = spark.sql(statement)
    rows = frame.collect()
    if frame.columns:
        print(format_table(frame.columns, rows))


TABLES = [
    "CREATE TABLE stores (id INT, region STRING) USING parquet",
    "CREATE TABLE sales (store_id INT, amount DECIMAL(10,2)) USING parquet",
    "INSERT INTO stores VALUES (1, 'north'), (2, 'south'), (3, 'west')",
    "INSERT INTO sales VALUES (1, 10.00), (1, 5.50), (2, 7.25), (3, 1.00)",
]
"""The demo's base tables and their first rows (``bench/fixed_cost.py`` builds them too)."""

VIEW_QUERY = """SELECT d.region, SUM(s.amount) AS total, COUNT(*) AS n
            FROM sales s JOIN stores d ON s.store_id = d.id
            GROUP BY d.region"""
"""The query of the demo's view, ``sales_by_region``."""

STATEMENTS = [
    *TABLES,
    f"""CREATE MATERIALIZED VIEW sales_by_region
         COMMENT 'revenue per region'
         AS {VIEW_QUERY}""",
    "SELECT * FROM sales_by_region ORDER BY region",
    "INSERT INTO sales VALUES (2, 100.00), (3, 2.00)",
    "SELECT * FROM sales_by_region ORDER BY region",
    "REFRESH MATERIALIZED VIEW sales_by_region",
    "SELECT * FROM sales_by_region ORDER BY region",
    "SHOW MATERIALIZED VIEWS",
    "DESCRIBE MATERIALIZED VIEW EXTENDED sales_by_region",
]
"""The demo's statements, in order (tests/cluster_suite.py runs them on a multi-JVM cluster)."""


def run(spark: SparkSession) -> None:
    """The demo's statements, then a mistake, in ``spark`` (a session with sparkmv)."""
    for statement in STATEMENTS:
        show(spark, statement)
    print("\nA mistake gets a Spark-style error, not a traceback:")
    try:
        spark.sql("REFRESH MATERIALIZED VIEW sales_by_regoin")
    except Exception as error:
        print(f"  {type(error).__name__}: {error}")


def main() -> int:
    shutil.rmtree(WAREHOUSE, ignore_errors=True)
    print("Starting Spark with the sparkmv extension (warehouse: ./demo-warehouse) ...")
    spark = sparkmv.session(WAREHOUSE)
    try:
        run(spark)
    finally:
        spark.stop()
    print("\nDone. The catalog in ./demo-warehouse keeps the view across restarts.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
