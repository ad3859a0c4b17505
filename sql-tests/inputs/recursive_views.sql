-- Recursive views (issue 25 item 1): WITH RECURSIVE ... UNION ALL with a step that reads the
-- CTE once (linear), maintained by semi-naive iteration seeded by the change over the stored
-- fixpoint: ΔR = Σ_k G_k, G_0 = ΔA + Δ_E step(R_old), G_k+1 = step(G_k). Deletions are
-- negative weights (a row's multiplicity is its number of walks: counting is exact).
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
-- non-linear recursion: refused, with the reason
CREATE MATERIALIZED VIEW squares REFRESH INCREMENTAL AS
  WITH RECURSIVE r(s, d, len) AS (
    SELECT s, d, 1 FROM e
    UNION ALL
    SELECT r1.s, r2.d, r1.len + r2.len FROM r r1 JOIN r r2 ON r1.d = r2.s WHERE r1.len < 2)
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
