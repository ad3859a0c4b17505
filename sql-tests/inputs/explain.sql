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

-- A plain aggregate's small change: one Spark job sums it into its groups and rewrites them.
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

-- TPC-H Q6's shape: an argument of arithmetic, a WHERE of date constants shifted by an
-- interval, BETWEEN over arithmetic constants; and a decimal average. The irrelevance filter
-- keeps what it can compile of the WHERE (not the interval's bound): it drops one changed row.
CREATE TABLE lines (price DECIMAL(15,2), discount DECIMAL(15,2), quantity DECIMAL(15,2),
  shipdate DATE) USING parquet;
INSERT INTO lines VALUES (100.00, 0.06, 10.00, DATE '1994-03-01'),
  (200.00, 0.02, 5.00, DATE '1994-05-01');
CREATE MATERIALIZED VIEW revenue AS
  SELECT sum(price * discount) AS revenue, avg(price) AS average_price FROM lines
  WHERE shipdate >= DATE '1994-01-01' AND shipdate < DATE '1994-01-01' + INTERVAL '1' YEAR
    AND discount BETWEEN .06 - 0.01 AND .06 + 0.01 AND quantity < 24;
INSERT INTO lines VALUES (50.00, 0.07, 1.00, DATE '1994-12-31'),
  (70.00, 0.06, 30.00, DATE '1994-02-02'), (33.33, 0.05, 2.00, DATE '1995-01-01');
EXPLAIN REFRESH MATERIALIZED VIEW revenue;
REFRESH MATERIALIZED VIEW revenue;
SELECT * FROM revenue;
WITH expected AS (
  SELECT sum(price * discount) AS revenue, avg(price) AS average_price FROM lines
  WHERE shipdate >= DATE '1994-01-01' AND shipdate < DATE '1994-01-01' + INTERVAL '1' YEAR
    AND discount BETWEEN .06 - 0.01 AND .06 + 0.01 AND quantity < 24)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM revenue EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM revenue)) AS diff;
