-- Irrelevance filters (Blakeley §4): changed rows that cannot satisfy the view's predicate,
-- whatever the other tables hold, are dropped from the change before any join.

-- Example 4.1: v = π_{A,D}(σ_{A < 10 ∧ C > 5 ∧ B = C}(r × s)).
CREATE TABLE r (a INT, b INT) USING parquet;
CREATE TABLE s (c INT, d INT) USING parquet;
INSERT INTO r VALUES (1, 2), (5, 10), (12, 15);
INSERT INTO s VALUES (2, 10), (10, 20);
CREATE MATERIALIZED VIEW v AS SELECT a, d FROM r, s WHERE a < 10 AND c > 5 AND b = c;

-- (11, 10) is irrelevant (11 < 10 is false), (9, 10) is relevant.
INSERT INTO r VALUES (11, 10), (9, 10);
EXPLAIN REFRESH MATERIALIZED VIEW v;
REFRESH MATERIALIZED VIEW v;
SELECT * FROM v ORDER BY a;

-- An update whose images both fail the filter (c = 2 is not > 5) changes nothing.
UPDATE s SET d = d + 1 WHERE c = 2;
REFRESH MATERIALIZED VIEW v;
DESCRIBE MATERIALIZED VIEW EXTENDED v;

-- Disjunctions, strings, dates, NULLs and a contradiction.
CREATE TABLE events (id INT, kind STRING, day DATE, score DECIMAL(5, 1)) USING parquet;
CREATE MATERIALIZED VIEW picked AS
  SELECT id, kind FROM events
  WHERE (kind = 'click' AND score >= 2.5) OR (day < DATE '2026-01-01' AND id BETWEEN 10 AND 20);
CREATE MATERIALIZED VIEW never AS SELECT id FROM events WHERE id > 5 AND id < 3;
INSERT INTO events VALUES
  (1, 'click', DATE '2026-05-01', 3.0), (2, 'click', DATE '2026-05-01', 1.0),
  (15, 'view', DATE '2025-12-31', NULL), (16, 'view', DATE '2026-01-01', NULL),
  (17, NULL, NULL, NULL);
EXPLAIN REFRESH MATERIALIZED VIEW picked;
REFRESH MATERIALIZED VIEW picked;
SELECT * FROM picked ORDER BY id;
EXPLAIN REFRESH MATERIALIZED VIEW never;
REFRESH MATERIALIZED VIEW never;

-- With the filters off nothing is skipped.
SET spark.sparkmv.irrelevanceFilters.enabled = false;
INSERT INTO r VALUES (20, 10);
EXPLAIN REFRESH MATERIALIZED VIEW v;
REFRESH MATERIALIZED VIEW v;
SET spark.sparkmv.irrelevanceFilters.enabled = true;
-- Each view equals its query: no row in one but not the other (EXCEPT ALL, both ways).
WITH expected AS (SELECT a, d FROM r, s WHERE a < 10 AND c > 5 AND b = c)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM v EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM v)) AS diff;
WITH expected AS (SELECT id, kind FROM events WHERE (kind = 'click' AND score >= 2.5) OR (day < DATE '2026-01-01' AND id BETWEEN 10 AND 20))
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM picked EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM picked)) AS diff;
WITH expected AS (SELECT id FROM events WHERE id > 5 AND id < 3)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM never EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM never)) AS diff;

-- An update of columns the view never reads cancels out before any join (a readily
-- ignorable update): its pre- and post-image agree on every column the view reads.
CREATE TABLE items (id INT, price INT, note STRING) USING parquet;
INSERT INTO items VALUES (1, 10, 'a'), (2, 20, 'b');
CREATE MATERIALIZED VIEW priced AS SELECT id, price FROM items WHERE price > 5;
UPDATE items SET note = 'changed';
REFRESH MATERIALIZED VIEW priced;
SELECT * FROM priced ORDER BY id;
WITH expected AS (SELECT id, price FROM items WHERE price > 5)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM priced EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM priced)) AS diff;
