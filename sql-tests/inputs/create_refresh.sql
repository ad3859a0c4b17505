-- The life of a materialized view: create, read, go stale, refresh, describe, alter, drop.

CREATE TABLE sales (id INT, region STRING, amount INT) USING parquet;
INSERT INTO sales VALUES
  (1, 'north', 10), (2, 'north', 20), (3, 'south', NULL), (4, NULL, 5), (4, NULL, 5), (5, 'east', 7);

-- A plain view: every row of the query, duplicates and NULLs included.
CREATE MATERIALIZED VIEW all_sales AS SELECT * FROM sales;
SELECT * FROM all_sales;
-- Each view equals its query: no row in one but not the other (EXCEPT ALL, both ways).
WITH expected AS (SELECT * FROM sales)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM all_sales EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM all_sales)) AS diff;

-- An aggregate with a column list (with comments) and table properties.
CREATE MATERIALIZED VIEW sales_by_region (region COMMENT 'sales region', total COMMENT 'sum of amounts', n)
  TBLPROPERTIES ('owner' = 'analytics', 'tier' = 'gold')
  AS SELECT region, SUM(amount) AS total, COUNT(*) AS cnt FROM sales GROUP BY region;
SELECT * FROM sales_by_region ORDER BY region NULLS FIRST;
WITH expected AS (SELECT region, SUM(amount) AS total, COUNT(*) AS cnt FROM sales GROUP BY region)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM sales_by_region EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM sales_by_region)) AS diff;

-- A view comment.
CREATE MATERIALIZED VIEW north_sales COMMENT 'sales in the north' AS
  SELECT id, amount FROM sales WHERE region = 'north';
SELECT * FROM north_sales;
DESCRIBE MATERIALIZED VIEW EXTENDED north_sales;
WITH expected AS (SELECT id, amount FROM sales WHERE region = 'north')
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM north_sales EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM north_sales)) AS diff;

-- Policy FULL, trigger ON DEMAND.
CREATE MATERIALIZED VIEW big_sales REFRESH FULL ON DEMAND AS
  SELECT id, amount FROM sales WHERE amount >= 10;
SELECT * FROM big_sales;

-- IF NOT EXISTS on an existing view does nothing (the view keeps its query).
CREATE MATERIALIZED VIEW IF NOT EXISTS big_sales AS SELECT 1 AS one;
SELECT * FROM big_sales;

-- OR REPLACE replaces the definition and the data.
CREATE OR REPLACE MATERIALIZED VIEW all_sales AS SELECT id, amount FROM sales WHERE region IS NOT NULL;
SELECT * FROM all_sales;

-- A write to a base table: the views are stale until refreshed.
INSERT INTO sales VALUES (6, 'south', 30), (7, 'west', NULL);
SELECT * FROM sales_by_region ORDER BY region NULLS FIRST;

-- REFRESH under policy AUTO: the result row says which mode was used and why.
REFRESH MATERIALIZED VIEW sales_by_region;
SELECT * FROM sales_by_region ORDER BY region NULLS FIRST;

WITH expected AS (SELECT region, SUM(amount) AS total, COUNT(*) AS cnt FROM sales GROUP BY region)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM sales_by_region EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM sales_by_region)) AS diff;

-- REFRESH under policy FULL, then an explicit FULL refresh.
REFRESH MATERIALIZED VIEW big_sales;
REFRESH MATERIALIZED VIEW all_sales FULL;
SELECT * FROM big_sales;
SELECT * FROM all_sales;

-- A refresh with no change in between leaves the contents as they are.
REFRESH MATERIALIZED VIEW big_sales;
SELECT * FROM big_sales;
WITH expected AS (SELECT id, amount FROM sales WHERE amount >= 10)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM big_sales EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM big_sales)) AS diff;
WITH expected AS (SELECT id, amount FROM sales WHERE region IS NOT NULL)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM all_sales EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM all_sales)) AS diff;

-- Listing: each view once among the tables; SHOW MATERIALIZED VIEWS with patterns.
SHOW TABLES;
SHOW MATERIALIZED VIEWS;
SHOW MATERIALIZED VIEWS LIKE '*sales';
SHOW MATERIALIZED VIEWS IN golden_create_refresh LIKE 'sales*|big*';
SHOW MATERIALIZED VIEWS LIKE 'nothing*';

DESCRIBE MATERIALIZED VIEW sales_by_region;
DESCRIBE MATERIALIZED VIEW EXTENDED sales_by_region;
DESC MATERIALIZED VIEW EXTENDED big_sales;

-- ALTER: change the policy (metadata only), then the query.
ALTER MATERIALIZED VIEW sales_by_region SET REFRESH FULL;
SHOW MATERIALIZED VIEWS LIKE 'sales_by_region';
REFRESH MATERIALIZED VIEW sales_by_region;
ALTER MATERIALIZED VIEW sales_by_region AS
  SELECT region, SUM(amount) AS total FROM sales WHERE region IS NOT NULL GROUP BY region;
SELECT * FROM sales_by_region ORDER BY region;
DESCRIBE MATERIALIZED VIEW EXTENDED sales_by_region;
WITH expected AS (SELECT region, SUM(amount) AS total FROM sales WHERE region IS NOT NULL GROUP BY region)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM sales_by_region EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM sales_by_region)) AS diff;

-- DROP: the view is gone; IF EXISTS makes a second drop a no-op.
DROP MATERIALIZED VIEW all_sales;
DROP MATERIALIZED VIEW IF EXISTS all_sales;
SHOW MATERIALIZED VIEWS;
SHOW TABLES;
