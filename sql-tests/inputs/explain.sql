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
