-- Aggregate views: each group's state (COUNT(*), non-null counts, sums, extremes) is stored
-- with it, a refresh adds the change's state to the changed groups only, and a group whose
-- MIN/MAX may have been deleted (or with a DISTINCT aggregate) is recomputed alone.

-- AUTO's cost model would refresh views this small fully where a change is computed in steps
-- (an aggregate below a join): this file shows the incremental terms, so AUTO's estimate is off.
SET spark.sparkmv.refresh.costBased = false;

CREATE TABLE sales (region STRING, item STRING, qty INT, price DECIMAL(8,2)) USING parquet;
INSERT INTO sales VALUES
  ('north', 'apple', 3, 1.20), ('north', 'pear', NULL, 2.00), ('south', 'apple', 5, 1.10),
  ('south', 'fig', 1, NULL), ('east', 'apple', 2, 1.30);

CREATE MATERIALIZED VIEW by_region AS
  SELECT region, count(*) AS n, count(qty) AS n_qty, sum(qty) AS qty, avg(price) AS avg_price,
         min(item) AS first_item, max(qty) AS max_qty, count(DISTINCT item) AS items
  FROM sales GROUP BY region;
-- A global aggregate has one row, even over no rows.
CREATE MATERIALIZED VIEW totals AS
  SELECT count(*) AS n, sum(qty) AS qty, avg(qty) AS avg_qty, max(price) AS top FROM sales;
-- HAVING filters the maintained groups; a group can fail it and pass again later.
CREATE MATERIALIZED VIEW busy AS
  SELECT upper(region) AS region, sum(qty) * 2 AS double_qty FROM sales
  GROUP BY upper(region) HAVING count(*) > 1;
DESCRIBE MATERIALIZED VIEW EXTENDED by_region;

-- north gains a row, south loses its largest qty (its MAX is recomputed), east vanishes.
INSERT INTO sales VALUES ('north', 'kiwi', 4, 0.50);
DELETE FROM sales WHERE region = 'south' AND qty = 5;
DELETE FROM sales WHERE region = 'east';

EXPLAIN REFRESH MATERIALIZED VIEW by_region;
REFRESH MATERIALIZED VIEW by_region;
SELECT * FROM by_region;

EXPLAIN REFRESH MATERIALIZED VIEW totals;
REFRESH MATERIALIZED VIEW totals;
SELECT * FROM totals;

REFRESH MATERIALIZED VIEW busy;
SELECT * FROM busy;

-- All rows go: the groups vanish, the global row stays (count 0, NULL sums).
DELETE FROM sales;
REFRESH MATERIALIZED VIEW by_region;
REFRESH MATERIALIZED VIEW totals;
REFRESH MATERIALIZED VIEW busy;
SELECT * FROM by_region;
SELECT * FROM totals;
SELECT * FROM busy;

-- And come back; east returns with only NULL quantities (SUM is NULL, COUNT is 0).
INSERT INTO sales VALUES ('east', 'plum', NULL, 3.00), ('east', 'plum', NULL, 3.50);
REFRESH MATERIALIZED VIEW by_region;
REFRESH MATERIALIZED VIEW totals;
REFRESH MATERIALIZED VIEW busy;
SELECT * FROM by_region;
SELECT * FROM totals;
SELECT * FROM busy;
-- Each view equals its query: no row in one but not the other (EXCEPT ALL, both ways).
WITH expected AS (SELECT region, count(*) AS n, count(qty) AS n_qty, sum(qty) AS qty, avg(price) AS avg_price, min(item) AS first_item, max(qty) AS max_qty, count(DISTINCT item) AS items FROM sales GROUP BY region)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM by_region EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM by_region)) AS diff;
WITH expected AS (SELECT count(*) AS n, sum(qty) AS qty, avg(qty) AS avg_qty, max(price) AS top FROM sales)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM totals EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM totals)) AS diff;
WITH expected AS (SELECT upper(region) AS region, sum(qty) * 2 AS double_qty FROM sales GROUP BY upper(region) HAVING count(*) > 1)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM busy EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM busy)) AS diff;

-- An aggregate below a join: its change is recomputed for the changed groups only.
CREATE TABLE regions (region STRING, manager STRING) USING parquet;
INSERT INTO regions VALUES ('east', 'ann'), ('north', 'bob');
CREATE MATERIALIZED VIEW managed AS
  SELECT g.region, g.n, r.manager
  FROM (SELECT region, count(*) AS n FROM sales GROUP BY region) AS g
  JOIN regions AS r ON g.region = r.region;
INSERT INTO sales VALUES ('north', 'apple', 1, 1.00);
EXPLAIN REFRESH MATERIALIZED VIEW managed;
REFRESH MATERIALIZED VIEW managed;
SELECT * FROM managed;
WITH expected AS (SELECT g.region, g.n, r.manager FROM (SELECT region, count(*) AS n FROM sales GROUP BY region) AS g JOIN regions AS r ON g.region = r.region)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM managed EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM managed)) AS diff;

-- TPC-H Q1's sums: DECIMAL(15,2) products widen to DECIMAL(38,6), kept exactly (ANSI mode).
CREATE TABLE lines (flag STRING, price DECIMAL(15,2), discount DECIMAL(15,2), tax DECIMAL(15,2))
  USING parquet;
INSERT INTO lines VALUES ('A', 100.00, 0.05, 0.08), ('A', 250.50, 0.10, 0.02), ('R', 9.99, 0.00, 0.00);
CREATE MATERIALIZED VIEW charges REFRESH INCREMENTAL AS
  SELECT flag, sum(price * (1 - discount) * (1 + tax)) AS charge,
         avg(price * (1 - discount)) AS avg_disc_price, count(*) AS n
  FROM lines GROUP BY flag;
INSERT INTO lines VALUES ('A', 1.25, 0.50, 0.50), ('R', 20.00, 0.01, 0.07);
DELETE FROM lines WHERE price = 250.50;
REFRESH MATERIALIZED VIEW charges;
SELECT * FROM charges ORDER BY flag;
WITH expected AS (SELECT flag, sum(price * (1 - discount) * (1 + tax)) AS charge, avg(price * (1 - discount)) AS avg_disc_price, count(*) AS n FROM lines GROUP BY flag)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM charges EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM charges)) AS diff;
SELECT flag, sum(price * (1 - discount) * (1 + tax)) AS charge,
       avg(price * (1 - discount)) AS avg_disc_price, count(*) AS n
FROM lines GROUP BY flag ORDER BY flag;
