-- DELETE, UPDATE and MERGE on parquet tables (plain Spark refuses them), and what a view's
-- change log records of them.

CREATE TABLE orders (id INT, status STRING, qty INT, region STRING) USING parquet PARTITIONED BY (region);
INSERT INTO orders VALUES
  (1, 'open', 5, 'north'), (2, 'open', NULL, 'north'), (3, 'shipped', 2, 'south'),
  (4, 'open', 1, NULL), (4, 'open', 1, NULL);
CREATE MATERIALIZED VIEW open_orders AS SELECT region, count(*) AS n, sum(qty) AS qty FROM orders WHERE status = 'open' GROUP BY region;

-- Each statement returns how many rows it changed.
DELETE FROM orders WHERE qty IS NULL;
UPDATE orders SET status = 'shipped', region = 'south' WHERE id = 1;
UPDATE orders SET qty = qty + 1 WHERE id = 42;
CREATE TABLE updates (id INT, status STRING, qty INT, region STRING) USING parquet;
INSERT INTO updates VALUES (3, 'returned', 2, 'south'), (4, 'closed', NULL, NULL), (9, 'open', 7, 'east');
MERGE INTO orders USING updates ON orders.id = updates.id
  WHEN MATCHED AND updates.status = 'closed' THEN DELETE
  WHEN MATCHED THEN UPDATE SET status = updates.status
  WHEN NOT MATCHED THEN INSERT *;
SELECT * FROM orders ORDER BY id;

-- The view refreshes to its query; the change log recorded every write.
REFRESH MATERIALIZED VIEW open_orders;
SELECT * FROM open_orders ORDER BY region NULLS FIRST;
WITH expected AS (SELECT region, count(*) AS n, sum(qty) AS qty FROM orders WHERE status = 'open' GROUP BY region)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM open_orders EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM open_orders)) AS diff;

-- A MERGE whose ON condition matches a target row twice changes nothing.
INSERT INTO updates VALUES (9, 'dup', 1, 'east');
MERGE INTO orders USING updates ON orders.id = updates.id WHEN MATCHED THEN UPDATE SET qty = updates.qty;
SELECT count(*) FROM orders;

-- Nested fields cannot be assigned; other formats keep Spark's own error.
CREATE TABLE nested (id INT, s STRUCT<a: INT>) USING parquet;
UPDATE nested SET s.a = 1;
CREATE TABLE notes (id INT) USING json;
DELETE FROM notes WHERE id = 1;
