-- Recursive views (issue 25 item 1): WITH RECURSIVE ... UNION ALL, maintained by semi-naive
-- iteration seeded by the change over the stored fixpoint: ΔR = Σ_k G_k,
-- G_0 = ΔA + Δ_E step(R_old), G_k+1 = step(G_k) for a step that reads the CTE once (linear).
-- A step that reads it n times (Spark: every reference reads the previous level) is
-- multilinear: G_k+1 = step(R_k + G_k) − step(R_k) = Σ_i step_i(R_k + G_k, …, G_k, R_k, …),
-- R_k = R_old + G_0 + … + G_k-1. Deletions are negative weights (a row's multiplicity is its
-- number of walks: counting is exact).
-- Aggregates and DISTINCT above the CTE are the usual rules over ΔR. Every view equals its query.

SET spark.sparkmv.refresh.costBased = false;

CREATE TABLE e (s INT, d INT) USING parquet;
-- a cycle 1 → 2 → 3 → 1, a self-loop on 2, a duplicate edge, a NULL target
INSERT INTO e VALUES (1, 2), (2, 3), (3, 1), (2, 2), (1, 2), (4, NULL);

-- shortest bounded path length and walk counts per pair
CREATE MATERIALIZED VIEW paths REFRESH INCREMENTAL AS
  WITH RECURSIVE r(s, d, len) AS (
    SELECT s, d, 1 FROM e
    UNION ALL
    SELECT r.s, e.d, r.len + 1 FROM r JOIN e ON r.d = e.s WHERE r.len < 4)
  SELECT s, d, MIN(len) AS shortest, COUNT(*) AS walks FROM r GROUP BY s, d;
-- reachability from node 1 within 3 steps
CREATE MATERIALIZED VIEW reach REFRESH INCREMENTAL AS
  WITH RECURSIVE r(n, k) AS (
    SELECT d, 1 FROM e WHERE s = 1
    UNION ALL
    SELECT e.d, r.k + 1 FROM r JOIN e ON r.n = e.s WHERE r.k < 3)
  SELECT DISTINCT n FROM r;
-- non-linear recursion (path doubling: the step reads r twice, both at the previous level)
CREATE MATERIALIZED VIEW doubling REFRESH INCREMENTAL AS
  WITH RECURSIVE r(s, d, len) AS (
    SELECT s, d, 1 FROM e
    UNION ALL
    SELECT r1.s, r2.d, r1.len + r2.len FROM r r1 JOIN r r2 ON r1.d = r2.s WHERE r1.len < 4)
  SELECT s, d, len, COUNT(*) AS walks FROM r GROUP BY s, d, len;
-- the reference read through EXISTS (a semi-join: as a set, not multilinear): refused
CREATE MATERIALIZED VIEW onward REFRESH INCREMENTAL AS
  WITH RECURSIVE r(s, d, len) AS (
    SELECT s, d, 1 FROM e
    UNION ALL
    SELECT r1.s, r1.d, r1.len + 1 FROM r r1
    WHERE r1.len < 3 AND EXISTS (SELECT 1 FROM r r2 WHERE r2.s = r1.d))
  SELECT DISTINCT s, d FROM r;
SHOW MATERIALIZED VIEWS;
SELECT * FROM paths;

-- a new edge extends the cycle, an edge is deleted, an edge moves
INSERT INTO e VALUES (3, 4), (4, 5);
DELETE FROM e WHERE s = 2 AND d = 2;
UPDATE e SET d = 1 WHERE s = 4 AND d IS NULL;

EXPLAIN REFRESH MATERIALIZED VIEW paths;
REFRESH MATERIALIZED VIEW paths;
SELECT * FROM paths;
WITH RECURSIVE r(s, d, len) AS (
    SELECT s, d, 1 FROM e
    UNION ALL
    SELECT r.s, e.d, r.len + 1 FROM r JOIN e ON r.d = e.s WHERE r.len < 4),
  expected AS (SELECT s, d, MIN(len) AS shortest, COUNT(*) AS walks FROM r GROUP BY s, d)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM paths EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM paths)) AS diff;

EXPLAIN REFRESH MATERIALIZED VIEW reach;
REFRESH MATERIALIZED VIEW reach;
SELECT * FROM reach;
WITH RECURSIVE r(n, k) AS (
    SELECT d, 1 FROM e WHERE s = 1
    UNION ALL
    SELECT e.d, r.k + 1 FROM r JOIN e ON r.n = e.s WHERE r.k < 3),
  expected AS (SELECT DISTINCT n FROM r)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM reach EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM reach)) AS diff;

EXPLAIN REFRESH MATERIALIZED VIEW doubling;
REFRESH MATERIALIZED VIEW doubling;
SELECT * FROM doubling ORDER BY s, d, len;
WITH RECURSIVE r(s, d, len) AS (
    SELECT s, d, 1 FROM e
    UNION ALL
    SELECT r1.s, r2.d, r1.len + r2.len FROM r r1 JOIN r r2 ON r1.d = r2.s WHERE r1.len < 4),
  expected AS (SELECT s, d, len, COUNT(*) AS walks FROM r GROUP BY s, d, len)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM doubling EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM doubling)) AS diff;

-- deleting the edges of the cycle retracts every walk through them
DELETE FROM e WHERE s = 3;
REFRESH MATERIALIZED VIEW paths;
REFRESH MATERIALIZED VIEW reach;
SELECT * FROM reach;
WITH RECURSIVE r(s, d, len) AS (
    SELECT s, d, 1 FROM e
    UNION ALL
    SELECT r.s, e.d, r.len + 1 FROM r JOIN e ON r.d = e.s WHERE r.len < 4),
  expected AS (SELECT s, d, MIN(len) AS shortest, COUNT(*) AS walks FROM r GROUP BY s, d)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM paths EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM paths)) AS diff;
REFRESH MATERIALIZED VIEW doubling;
WITH RECURSIVE r(s, d, len) AS (
    SELECT s, d, 1 FROM e
    UNION ALL
    SELECT r1.s, r2.d, r1.len + r2.len FROM r r1 JOIN r r2 ON r1.d = r2.s WHERE r1.len < 4),
  expected AS (SELECT s, d, len, COUNT(*) AS walks FROM r GROUP BY s, d, len)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM doubling EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM doubling)) AS diff;

-- a recursion without a depth bound: maintained while the graph has no cycle; an edge that
-- closes a cycle makes the refresh fail as Spark's query does (the view keeps its rows)
SET spark.sql.cteRecursionLevelLimit = 10;
CREATE MATERIALIZED VIEW closure AS
  WITH RECURSIVE r(s, d) AS (SELECT s, d FROM e UNION ALL SELECT r.s, e.d FROM r JOIN e ON r.d = e.s)
  SELECT DISTINCT s, d FROM r;
INSERT INTO e VALUES (2, 1);
REFRESH MATERIALIZED VIEW closure;
RESET spark.sql.cteRecursionLevelLimit;
SELECT count(*) AS rows_kept FROM closure;
