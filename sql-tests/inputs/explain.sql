-- EXPLAIN of materialized-view statements: what would run, without running it.

CREATE TABLE orders (id INT, customer STRING, amount INT) USING parquet;
INSERT INTO orders VALUES (1, 'ann', 10), (2, 'bob', 20), (3, 'ann', NULL);

EXPLAIN CREATE MATERIALIZED VIEW totals AS
  SELECT customer, SUM(amount) AS total FROM orders GROUP BY customer;

-- EXPLAIN creates nothing.
SHOW MATERIALIZED VIEWS;

CREATE MATERIALIZED VIEW totals AS
  SELECT customer, SUM(amount) AS total FROM orders GROUP BY customer;
EXPLAIN REFRESH MATERIALIZED VIEW totals;
EXPLAIN REFRESH MATERIALIZED VIEW totals FULL;
EXPLAIN EXTENDED REFRESH MATERIALIZED VIEW totals;

CREATE MATERIALIZED VIEW big REFRESH FULL AS SELECT id, amount FROM orders WHERE amount > 10;
EXPLAIN REFRESH MATERIALIZED VIEW big;

-- EXPLAIN refreshes nothing: the refresh count is still 1.
DESCRIBE MATERIALIZED VIEW EXTENDED totals;

-- A plain aggregate's small change: the driver sums and merges it, no Spark job.
INSERT INTO orders VALUES (4, 'cy', 5);
EXPLAIN REFRESH MATERIALIZED VIEW totals;
REFRESH MATERIALIZED VIEW totals;

-- Each view equals its query: no row in one but not the other (EXCEPT ALL, both ways).
WITH expected AS (SELECT customer, SUM(amount) AS total FROM orders GROUP BY customer)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM totals EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM totals)) AS diff;
WITH expected AS (SELECT id, amount FROM orders WHERE amount > 10)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM big EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM big)) AS diff;

-- EXPLAIN CREATE makes the same checks as CREATE.
EXPLAIN CREATE MATERIALIZED VIEW totals AS SELECT id FROM orders;
EXPLAIN CREATE MATERIALIZED VIEW IF NOT EXISTS totals AS SELECT id FROM orders;
EXPLAIN CREATE MATERIALIZED VIEW orders AS SELECT id FROM orders;
EXPLAIN CREATE MATERIALIZED VIEW w REFRESH ON COMMIT AS SELECT id FROM orders;
EXPLAIN CREATE MATERIALIZED VIEW w (x, y) AS SELECT id FROM orders;

-- Statements that read no data.
EXPLAIN DROP MATERIALIZED VIEW totals;
EXPLAIN SHOW MATERIALIZED VIEWS;
