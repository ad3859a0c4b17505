-- Incremental refresh: each operator's delta rule (EXPLAIN REFRESH prints the delta terms),
-- the mode every refresh picks, and the view's rows after it (they equal the query's).

-- AUTO's cost model would refresh views this small fully where a change is computed in steps
-- (an aggregate below a join): this file shows the incremental terms, so AUTO's estimate is off.
SET spark.sparkmv.refresh.costBased = false;

CREATE TABLE r (a INT, b INT) USING parquet;
CREATE TABLE s (b INT, c STRING) USING parquet;
INSERT INTO r VALUES (1, 1), (2, 1), (3, NULL), (1, 1);
INSERT INTO s VALUES (1, 'x'), (1, 'y'), (NULL, 'z');

-- Selection and projection, bag semantics: the duplicate (1, 1) counts twice.
CREATE MATERIALIZED VIEW sp AS SELECT a + 1 AS a1, b FROM r WHERE a < 3 OR b IS NULL;
-- Inner join, and a self-join (two scans of r: two delta terms).
CREATE MATERIALIZED VIEW j AS SELECT r.a, s.c FROM r JOIN s ON r.b = s.b;
CREATE MATERIALIZED VIEW sj AS SELECT x.a, y.a AS a2 FROM r x, r y WHERE x.b = y.b AND x.a < y.a;
-- DISTINCT keeps a multiplicity counter per row; UNION is DISTINCT over UNION ALL.
CREATE MATERIALIZED VIEW d AS SELECT DISTINCT b FROM r;
CREATE MATERIALIZED VIEW ua AS SELECT b FROM r UNION ALL SELECT b FROM s;
CREATE MATERIALIZED VIEW u AS SELECT b FROM r UNION SELECT b FROM s;
-- INTERSECT and EXCEPT: per distinct row, a counter of each input (an aggregate view).
CREATE MATERIALIZED VIEW i AS SELECT b FROM r INTERSECT SELECT b FROM s;
CREATE MATERIALIZED VIEW e AS SELECT b FROM r EXCEPT SELECT b FROM s;
-- A DISTINCT subquery (through WITH) joined further: its delta counts in its old input.
CREATE MATERIALIZED VIEW w AS
  WITH keys AS (SELECT DISTINCT b FROM r) SELECT keys.b, s.c FROM keys JOIN s ON keys.b = s.b;

-- Nothing changed yet: a refresh only records itself.
EXPLAIN REFRESH MATERIALIZED VIEW j;
REFRESH MATERIALIZED VIEW j;

-- (2, 1) goes, (5, 1) and (1, NULL) come, s gains (1, 'w').
DELETE FROM r WHERE a = 2;
INSERT INTO r VALUES (5, 1), (1, NULL);
INSERT INTO s VALUES (1, 'w');

EXPLAIN REFRESH MATERIALIZED VIEW sp;
REFRESH MATERIALIZED VIEW sp;
SELECT * FROM sp;

EXPLAIN REFRESH MATERIALIZED VIEW j;
REFRESH MATERIALIZED VIEW j;
SELECT * FROM j;

EXPLAIN REFRESH MATERIALIZED VIEW sj;
REFRESH MATERIALIZED VIEW sj;
SELECT * FROM sj;

EXPLAIN REFRESH MATERIALIZED VIEW d;
REFRESH MATERIALIZED VIEW d;
SELECT * FROM d;

EXPLAIN REFRESH MATERIALIZED VIEW ua;
REFRESH MATERIALIZED VIEW ua;
SELECT * FROM ua;

EXPLAIN REFRESH MATERIALIZED VIEW u;
REFRESH MATERIALIZED VIEW u;
SELECT * FROM u;

EXPLAIN REFRESH MATERIALIZED VIEW w;
REFRESH MATERIALIZED VIEW w;
SELECT * FROM w;

EXPLAIN REFRESH MATERIALIZED VIEW i;
REFRESH MATERIALIZED VIEW i;
SELECT * FROM i;

REFRESH MATERIALIZED VIEW e;
SELECT * FROM e;

-- Each view equals its query: no row in one but not the other (EXCEPT ALL, both ways).
WITH expected AS (SELECT a + 1 AS a1, b FROM r WHERE a < 3 OR b IS NULL)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM sp EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM sp)) AS diff;
WITH expected AS (SELECT r.a, s.c FROM r JOIN s ON r.b = s.b)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM j EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM j)) AS diff;
WITH expected AS (SELECT x.a, y.a AS a2 FROM r x, r y WHERE x.b = y.b AND x.a < y.a)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM sj EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM sj)) AS diff;
WITH expected AS (SELECT DISTINCT b FROM r)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM d EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM d)) AS diff;
WITH expected AS (SELECT b FROM r UNION ALL SELECT b FROM s)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM ua EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM ua)) AS diff;
WITH expected AS (SELECT b FROM r UNION SELECT b FROM s)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM u EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM u)) AS diff;
WITH expected AS (SELECT b FROM r INTERSECT SELECT b FROM s)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM i EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM i)) AS diff;
WITH expected AS (SELECT b FROM r EXCEPT SELECT b FROM s)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM e EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM e)) AS diff;
WITH expected AS (WITH keys AS (SELECT DISTINCT b FROM r) SELECT keys.b, s.c FROM keys JOIN s ON keys.b = s.b)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM w EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM w)) AS diff;

-- Both copies of b = 1 leave DISTINCT's input only when the last one goes.
UPDATE r SET b = 2 WHERE b = 1 AND a = 1;
REFRESH MATERIALIZED VIEW d;
SELECT * FROM d;
DELETE FROM r WHERE b = 1;
REFRESH MATERIALIZED VIEW d;
SELECT * FROM d;
REFRESH MATERIALIZED VIEW u;
SELECT * FROM u;
REFRESH MATERIALIZED VIEW i;
SELECT * FROM i;
REFRESH MATERIALIZED VIEW e;
SELECT * FROM e;
-- And after their second refresh.
WITH expected AS (SELECT DISTINCT b FROM r)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM d EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM d)) AS diff;
WITH expected AS (SELECT b FROM r UNION SELECT b FROM s)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM u EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM u)) AS diff;
WITH expected AS (SELECT b FROM r INTERSECT SELECT b FROM s)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM i EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM i)) AS diff;
WITH expected AS (SELECT b FROM r EXCEPT SELECT b FROM s)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM e EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM e)) AS diff;

-- The hidden counter never shows.
DESCRIBE MATERIALIZED VIEW EXTENDED d;

-- A CTE the query never reads: its table is a base table, but its change changes nothing.
CREATE MATERIALIZED VIEW unread AS WITH unused AS (SELECT a FROM r) SELECT c FROM s;
INSERT INTO r VALUES (9, 9);
REFRESH MATERIALIZED VIEW unread;
SELECT * FROM unread;
WITH expected AS (WITH unused AS (SELECT a FROM r) SELECT c FROM s)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM unread EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM unread)) AS diff;

-- UNION ALL of an INT and a BIGINT branch is BIGINT, also when only the INT branch changed.
CREATE TABLE wide (b BIGINT) USING parquet;
INSERT INTO wide VALUES (10000000000);
CREATE MATERIALIZED VIEW widened AS SELECT b FROM r UNION ALL SELECT b FROM wide;
INSERT INTO r VALUES (7, 7);
REFRESH MATERIALIZED VIEW widened;
SELECT * FROM widened;
WITH expected AS (SELECT b FROM r UNION ALL SELECT b FROM wide)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM widened EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM widened)) AS diff;

-- Unchanged tables are joined once: two of the chain's four tables change, and ΔV is the
-- change of their join (two terms), joined with the other two.
CREATE TABLE c1 (k INT, v STRING) USING parquet;
CREATE TABLE c2 (k INT, l INT) USING parquet;
CREATE TABLE c3 (l INT, m INT) USING parquet;
CREATE TABLE c4 (m INT, w STRING) USING parquet;
INSERT INTO c1 VALUES (1, 'a'), (2, 'b');
INSERT INTO c2 VALUES (1, 10), (2, 20), (2, 21);
INSERT INTO c3 VALUES (10, 100), (20, 200), (21, 200);
INSERT INTO c4 VALUES (100, 'x'), (200, 'y');
CREATE MATERIALIZED VIEW chain AS
  SELECT c1.v, c4.w FROM c1, c2, c3, c4 WHERE c1.k = c2.k AND c2.l = c3.l AND c3.m = c4.m;
INSERT INTO c2 VALUES (1, 21);
DELETE FROM c3 WHERE l = 20;
INSERT INTO c3 VALUES (20, 100);
EXPLAIN REFRESH MATERIALIZED VIEW chain;
REFRESH MATERIALIZED VIEW chain;
SELECT * FROM chain;
WITH expected AS (SELECT c1.v, c4.w FROM c1, c2, c3, c4 WHERE c1.k = c2.k AND c2.l = c3.l AND c3.m = c4.m)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM chain EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM chain)) AS diff;

-- Three of the chain's inputs change: the largest (by bytes) of those whose removal leaves
-- the others connected (c1 or c4; without c2, c1 is cut off) is joined last, once, with the
-- change of the others' join: Δ(c1 ⋈ c2 ⋈ c3) ⋈ c4_old + c1 ⋈ c2 ⋈ c3 ⋈ Δc4. Key 3 is new
-- to both c1 and c2, so their terms read each other's change: Δ⁻c2 (c2's rows at 3 before the
-- change: none) and Δ⁺c1 (c1's rows at 3 now: the inserted one).
INSERT INTO c1 VALUES (3, 'c');
INSERT INTO c2 VALUES (3, 10);
DELETE FROM c4 WHERE m = 200;
INSERT INTO c4 VALUES (200, 'z'), (100, 'w');
EXPLAIN REFRESH MATERIALIZED VIEW chain;
REFRESH MATERIALIZED VIEW chain;
SELECT * FROM chain;
WITH expected AS (SELECT c1.v, c4.w FROM c1, c2, c3, c4 WHERE c1.k = c2.k AND c2.l = c3.l AND c3.m = c4.m)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM chain EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM chain)) AS diff;

-- INTERSECT ALL and EXCEPT ALL: the same counters, each row replicated min(n_r, n_s) and
-- max(n_r - n_s, 0) times (ρ); a counter that moves writes only the difference of copies.
CREATE TABLE ma (x INT) USING parquet;
CREATE TABLE mb (x INT) USING parquet;
INSERT INTO ma VALUES (1), (1), (1), (2), (NULL), (NULL);
INSERT INTO mb VALUES (1), (2), (2), (NULL);
CREATE MATERIALIZED VIEW ia REFRESH INCREMENTAL AS SELECT x FROM ma INTERSECT ALL SELECT x FROM mb;
CREATE MATERIALIZED VIEW ea REFRESH INCREMENTAL AS SELECT x FROM ma EXCEPT ALL SELECT x FROM mb;
INSERT INTO mb VALUES (1), (NULL), (3);
DELETE FROM ma WHERE x = 2;
INSERT INTO ma VALUES (3), (3);
EXPLAIN REFRESH MATERIALIZED VIEW ea;
REFRESH MATERIALIZED VIEW ia;
REFRESH MATERIALIZED VIEW ea;
SELECT * FROM ia;
SELECT * FROM ea;
WITH expected AS (SELECT x FROM ma INTERSECT ALL SELECT x FROM mb)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM ia EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM ia)) AS diff;
WITH expected AS (SELECT x FROM ma EXCEPT ALL SELECT x FROM mb)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM ea EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM ea)) AS diff;
