-- Views over views: a view can read other materialized views. Each refresh of a view that
-- others read logs the change it applied; a view over it refreshes incrementally from that
-- log, as from a base table's. REFRESH ... CASCADE refreshes the views it reads first;
-- DROP of a view that others read is refused unless CASCADE.

CREATE TABLE orders (id INT, customer STRING, amount INT) USING parquet;
INSERT INTO orders VALUES
  (1, 'ann', 10), (2, 'bob', 20), (3, 'ann', 5), (4, NULL, 7), (5, 'cy', NULL), (6, 'ann', 10);

-- An SPJ view, an aggregate over it, and a DISTINCT over the aggregate: three levels.
CREATE MATERIALIZED VIEW big_orders REFRESH INCREMENTAL AS
  SELECT id, customer, amount FROM orders WHERE amount IS NULL OR amount > 6;
CREATE MATERIALIZED VIEW per_customer REFRESH INCREMENTAL AS
  SELECT customer, count(*) AS n, sum(amount) AS total FROM big_orders GROUP BY customer;
CREATE MATERIALIZED VIEW order_counts REFRESH INCREMENTAL AS
  SELECT DISTINCT n FROM per_customer;
DESCRIBE MATERIALIZED VIEW EXTENDED per_customer;

INSERT INTO orders VALUES (7, 'bob', 30), (8, 'dee', 8), (9, 'ann', 1);
DELETE FROM orders WHERE id = 1;
UPDATE orders SET amount = 40 WHERE customer = 'cy';

-- Plain REFRESH of the downstream view: its upstream has logged nothing yet.
REFRESH MATERIALIZED VIEW per_customer;
-- The upstream alone, then the downstream reads the change it logged.
REFRESH MATERIALIZED VIEW big_orders;
REFRESH MATERIALIZED VIEW per_customer;
-- CASCADE: the views order_counts reads are refreshed first (nothing left to do here).
REFRESH MATERIALIZED VIEW order_counts CASCADE;
SELECT * FROM per_customer;
SELECT * FROM order_counts;

-- A full refresh of the upstream logs the exact difference: its readers stay incremental.
INSERT INTO orders VALUES (10, 'ann', 9), (11, NULL, 12);
DELETE FROM orders WHERE customer = 'bob' AND amount = 20;
REFRESH MATERIALIZED VIEW big_orders FULL;
REFRESH MATERIALIZED VIEW order_counts CASCADE;
SELECT * FROM per_customer;

-- Each view equals its query: no row in one but not the other (EXCEPT ALL, both ways).
WITH expected AS (SELECT id, customer, amount FROM orders WHERE amount IS NULL OR amount > 6)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM big_orders EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM big_orders)) AS diff;
WITH expected AS (SELECT customer, count(*) AS n, sum(amount) AS total FROM big_orders GROUP BY customer)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM per_customer EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM per_customer)) AS diff;
WITH expected AS (SELECT DISTINCT n FROM per_customer)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM order_counts EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM order_counts)) AS diff;

-- A view cannot read itself, directly or through the views that read it.
ALTER MATERIALIZED VIEW big_orders AS SELECT customer AS id, customer, n AS amount FROM per_customer;
-- A view that others read is not dropped alone.
DROP MATERIALIZED VIEW big_orders;
DROP MATERIALIZED VIEW big_orders CASCADE;
SHOW MATERIALIZED VIEWS;
DROP TABLE orders;
