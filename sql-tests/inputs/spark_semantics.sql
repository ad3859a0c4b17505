-- Spark's semantics kept by an incremental refresh (issue 53): values a row engine at the
-- driver got wrong, now computed by Spark. Each case: its tables, its view, a change, the
-- REFRESH (its mode), the view, and the check that the view equals its query as a multiset
-- (EXCEPT ALL both ways: no differing rows).

-- AUTO's cost model could refresh views this small fully: this file checks the incremental
-- refresh, so the estimate is off.
SET spark.sparkmv.refresh.costBased = false;

-- 1. Unary minus of a DECIMAL(38,18) in a row view over a join: every digit of the negated
-- value (a 28-digit decimal context would round it).
CREATE TABLE neg_f (k INT, c DECIMAL(38,18)) USING parquet;
CREATE TABLE neg_g (k INT) USING parquet;
INSERT INTO neg_f VALUES (1, 1.5);
INSERT INTO neg_g VALUES (1);
CREATE MATERIALIZED VIEW neg_join AS SELECT -neg_f.c AS n FROM neg_f JOIN neg_g ON neg_f.k = neg_g.k;
INSERT INTO neg_f VALUES (1, 12345678901234567890.123456789012345678);
REFRESH MATERIALIZED VIEW neg_join;
SELECT * FROM neg_join;
WITH expected AS (SELECT -neg_f.c AS n FROM neg_f JOIN neg_g ON neg_f.k = neg_g.k)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM neg_join EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM neg_join)) AS diff;

-- The same negation in a single-table aggregate's WHERE: rows on both sides of the bound,
-- which differ from it past the 28th digit.
CREATE TABLE neg_w (k INT, c DECIMAL(38,18)) USING parquet;
INSERT INTO neg_w VALUES (1, 1.5);
CREATE MATERIALIZED VIEW neg_where AS
  SELECT k, count(*) AS n FROM neg_w WHERE -c > -12345678901234567890.1234567890123460 GROUP BY k;
INSERT INTO neg_w VALUES
  (1, 12345678901234567890.123456789012345678), (1, 12345678901234567890.123456789012347),
  (2, 12345678901234567890.1234567890123459);
REFRESH MATERIALIZED VIEW neg_where;
SELECT * FROM neg_where;
WITH expected AS (SELECT k, count(*) AS n FROM neg_w WHERE -c > -12345678901234567890.1234567890123460 GROUP BY k)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM neg_where EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM neg_where)) AS diff;

-- 2. A decimal literal of more than 28 significant digits, in a WHERE ...
CREATE TABLE lit_w (k INT, c DECIMAL(38,18)) USING parquet;
INSERT INTO lit_w VALUES (1, 1.5);
CREATE MATERIALIZED VIEW lit_where AS
  SELECT k, count(*) AS n FROM lit_w WHERE c < -12345678901234567890.1234567890123460 GROUP BY k;
INSERT INTO lit_w VALUES (1, -12345678901234567890.1234567895), (2, -12345678901234567890.1234567890123459);
REFRESH MATERIALIZED VIEW lit_where;
SELECT * FROM lit_where;
WITH expected AS (SELECT k, count(*) AS n FROM lit_w WHERE c < -12345678901234567890.1234567890123460 GROUP BY k)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM lit_where EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM lit_where)) AS diff;

-- ... and as a CASE branch summed with a DECIMAL(30,4) column.
CREATE TABLE lit_c (k INT, flag BOOLEAN, amt DECIMAL(30,4)) USING parquet;
INSERT INTO lit_c VALUES (1, false, 2.5);
CREATE MATERIALIZED VIEW lit_case AS
  SELECT k, sum(CASE WHEN flag THEN -1234567890123456789012345.6789 ELSE amt END) AS s
  FROM lit_c GROUP BY k;
INSERT INTO lit_c VALUES (1, true, 1.0), (2, true, 0), (2, false, 3.0001);
REFRESH MATERIALIZED VIEW lit_case;
SELECT * FROM lit_case;
WITH expected AS (SELECT k, sum(CASE WHEN flag THEN -1234567890123456789012345.6789 ELSE amt END) AS s FROM lit_c GROUP BY k)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM lit_case EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM lit_case)) AS diff;

-- 3. A CASE branch beyond BIGINT (a DECIMAL(20,0) literal) under a condition on a DOUBLE
-- column, evaluated row by row.
CREATE TABLE big_c (k INT, score DOUBLE) USING parquet;
INSERT INTO big_c VALUES (1, 1.0);
CREATE MATERIALIZED VIEW big_case AS
  SELECT k, sum(CASE WHEN score IS NULL THEN 12345678901234567890 ELSE 0 END) AS s
  FROM big_c GROUP BY k;
CREATE MATERIALIZED VIEW big_case_cmp AS
  SELECT k, sum(CASE WHEN score > 1.5 THEN 12345678901234567890 ELSE 1 END) AS s
  FROM big_c GROUP BY k;
INSERT INTO big_c VALUES (1, NULL), (1, NULL), (2, NULL), (2, 2.0);
REFRESH MATERIALIZED VIEW big_case;
REFRESH MATERIALIZED VIEW big_case_cmp;
SELECT * FROM big_case;
SELECT * FROM big_case_cmp;
WITH expected AS (SELECT k, sum(CASE WHEN score IS NULL THEN 12345678901234567890 ELSE 0 END) AS s FROM big_c GROUP BY k)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM big_case EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM big_case)) AS diff;
WITH expected AS (SELECT k, sum(CASE WHEN score > 1.5 THEN 12345678901234567890 ELSE 1 END) AS s FROM big_c GROUP BY k)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM big_case_cmp EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM big_case_cmp)) AS diff;

-- 4. Joins whose input is a subquery projecting columns the view does not read (id, an
-- expression): the join's change reads only the columns it needs.
CREATE TABLE sub_f (id INT, k INT) USING parquet;
CREATE TABLE sub_g (k INT, v STRING) USING parquet;
INSERT INTO sub_f VALUES (1, 1), (2, 2);
INSERT INTO sub_g VALUES (1, 'a'), (2, 'b');
CREATE MATERIALIZED VIEW sub_count AS
  SELECT count(*) AS n FROM (SELECT id, k FROM sub_f) x JOIN sub_g ON x.k = sub_g.k;
CREATE MATERIALIZED VIEW sub_expr AS
  SELECT count(*) AS n FROM (SELECT id, k, k + 1 AS k2 FROM sub_f) x JOIN sub_g ON x.k = sub_g.k;
CREATE MATERIALIZED VIEW sub_where AS
  SELECT count(*) AS n FROM (SELECT id, k FROM sub_f WHERE id > 1) x JOIN sub_g ON x.k = sub_g.k;
CREATE MATERIALIZED VIEW sub_rows AS
  SELECT sub_g.v FROM (SELECT id, k, k * 10 AS k10 FROM sub_f) x JOIN sub_g ON x.k = sub_g.k;
CREATE MATERIALIZED VIEW sub_groups AS
  SELECT sub_g.v, count(*) AS n FROM (SELECT id, k FROM sub_f) x JOIN sub_g ON x.k = sub_g.k
  GROUP BY sub_g.v;
CREATE MATERIALIZED VIEW sub_left AS
  SELECT x.k, sub_g.v FROM (SELECT id, k FROM sub_f) x LEFT JOIN sub_g ON x.k = sub_g.k;
CREATE MATERIALIZED VIEW sub_left_groups AS
  SELECT sub_g.v, count(*) AS n FROM (SELECT id, k FROM sub_f) x LEFT JOIN sub_g ON x.k = sub_g.k
  GROUP BY sub_g.v;
-- Only sub_f changes: new rows of k 1 and of k 3 (no match in sub_g).
INSERT INTO sub_f VALUES (3, 1), (4, 3), (1, 2);
REFRESH MATERIALIZED VIEW sub_count;
REFRESH MATERIALIZED VIEW sub_expr;
REFRESH MATERIALIZED VIEW sub_where;
REFRESH MATERIALIZED VIEW sub_rows;
REFRESH MATERIALIZED VIEW sub_groups;
REFRESH MATERIALIZED VIEW sub_left;
REFRESH MATERIALIZED VIEW sub_left_groups;
-- Both sides change: sub_g gains a match for k 3 and a second row of k 1, sub_f loses id 2.
INSERT INTO sub_g VALUES (3, 'c'), (1, 'd');
DELETE FROM sub_f WHERE id = 2;
REFRESH MATERIALIZED VIEW sub_count;
REFRESH MATERIALIZED VIEW sub_expr;
REFRESH MATERIALIZED VIEW sub_where;
REFRESH MATERIALIZED VIEW sub_rows;
REFRESH MATERIALIZED VIEW sub_groups;
REFRESH MATERIALIZED VIEW sub_left;
REFRESH MATERIALIZED VIEW sub_left_groups;
SELECT * FROM sub_count;
SELECT * FROM sub_groups;
SELECT * FROM sub_left;
WITH expected AS (SELECT count(*) AS n FROM (SELECT id, k FROM sub_f) x JOIN sub_g ON x.k = sub_g.k)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM sub_count EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM sub_count)) AS diff;
WITH expected AS (SELECT count(*) AS n FROM (SELECT id, k, k + 1 AS k2 FROM sub_f) x JOIN sub_g ON x.k = sub_g.k)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM sub_expr EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM sub_expr)) AS diff;
WITH expected AS (SELECT count(*) AS n FROM (SELECT id, k FROM sub_f WHERE id > 1) x JOIN sub_g ON x.k = sub_g.k)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM sub_where EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM sub_where)) AS diff;
WITH expected AS (SELECT sub_g.v FROM (SELECT id, k, k * 10 AS k10 FROM sub_f) x JOIN sub_g ON x.k = sub_g.k)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM sub_rows EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM sub_rows)) AS diff;
WITH expected AS (SELECT sub_g.v, count(*) AS n FROM (SELECT id, k FROM sub_f) x JOIN sub_g ON x.k = sub_g.k GROUP BY sub_g.v)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM sub_groups EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM sub_groups)) AS diff;
WITH expected AS (SELECT x.k, sub_g.v FROM (SELECT id, k FROM sub_f) x LEFT JOIN sub_g ON x.k = sub_g.k)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM sub_left EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM sub_left)) AS diff;
WITH expected AS (SELECT sub_g.v, count(*) AS n FROM (SELECT id, k FROM sub_f) x LEFT JOIN sub_g ON x.k = sub_g.k GROUP BY sub_g.v)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM sub_left_groups EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM sub_left_groups)) AS diff;

-- Neighbours: a subquery of a subquery renaming its columns, a FULL OUTER JOIN, a self-join
-- of two such subqueries; UPDATE, and rows joining both sides.
CREATE TABLE nb_f (id INT, k INT, s STRING) USING parquet;
CREATE TABLE nb_g (k INT, v STRING) USING parquet;
INSERT INTO nb_f VALUES (1, 1, 'p'), (2, 2, 'q');
INSERT INTO nb_g VALUES (1, 'a'), (5, 'e');
CREATE MATERIALIZED VIEW nb_nested AS
  SELECT x.kk, nb_g.v
  FROM (SELECT i AS i2, k AS kk, upper(s) AS u FROM (SELECT id AS i, k, s, id * 2 AS d FROM nb_f) y) x
  JOIN nb_g ON x.kk = nb_g.k;
CREATE MATERIALIZED VIEW nb_full AS
  SELECT x.k, nb_g.v FROM (SELECT id, k, k + 1 AS k2 FROM nb_f) x FULL OUTER JOIN nb_g ON x.k = nb_g.k;
CREATE MATERIALIZED VIEW nb_self AS
  SELECT count(*) AS n FROM (SELECT id, k FROM nb_f) a JOIN (SELECT id, k, id + k AS z FROM nb_f) b ON a.k = b.k;
INSERT INTO nb_f VALUES (3, 1, 'r'), (4, 5, 's');
UPDATE nb_f SET k = 1 WHERE id = 2;
INSERT INTO nb_g VALUES (1, 'z'), (2, 'b');
DELETE FROM nb_g WHERE v = 'a';
REFRESH MATERIALIZED VIEW nb_nested;
REFRESH MATERIALIZED VIEW nb_full;
REFRESH MATERIALIZED VIEW nb_self;
SELECT * FROM nb_nested;
SELECT * FROM nb_full;
SELECT * FROM nb_self;
WITH expected AS (SELECT x.kk, nb_g.v FROM (SELECT i AS i2, k AS kk, upper(s) AS u FROM (SELECT id AS i, k, s, id * 2 AS d FROM nb_f) y) x JOIN nb_g ON x.kk = nb_g.k)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM nb_nested EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM nb_nested)) AS diff;
WITH expected AS (SELECT x.k, nb_g.v FROM (SELECT id, k, k + 1 AS k2 FROM nb_f) x FULL OUTER JOIN nb_g ON x.k = nb_g.k)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM nb_full EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM nb_full)) AS diff;
WITH expected AS (SELECT count(*) AS n FROM (SELECT id, k FROM nb_f) a JOIN (SELECT id, k, id + k AS z FROM nb_f) b ON a.k = b.k)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM nb_self EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM nb_self)) AS diff;

-- Wide decimals in a join's WHERE (a literal past 28 digits, a negation), and a negation
-- under a window over the join, with a deleted row.
CREATE TABLE wd_f (k INT, c DECIMAL(38,18)) USING parquet;
CREATE TABLE wd_g (k INT) USING parquet;
INSERT INTO wd_f VALUES (1, 1.5), (1, 2.5);
INSERT INTO wd_g VALUES (1);
CREATE MATERIALIZED VIEW wd_where AS
  SELECT wd_f.k, wd_f.c FROM wd_f JOIN wd_g ON wd_f.k = wd_g.k
  WHERE wd_f.c < -12345678901234567890.1234567890123460 OR -wd_f.c > 12345678901234567890.1234567890123460;
CREATE MATERIALIZED VIEW wd_window AS
  SELECT wd_f.k, -wd_f.c AS n, sum(-wd_f.c) OVER () AS t FROM wd_f JOIN wd_g ON wd_f.k = wd_g.k;
INSERT INTO wd_f VALUES
  (1, -12345678901234567890.1234567895), (1, -12345678901234567890.1234567890123459),
  (1, 12345678901234567890.123456789012345678);
DELETE FROM wd_f WHERE c = 2.5;
REFRESH MATERIALIZED VIEW wd_where;
REFRESH MATERIALIZED VIEW wd_window;
SELECT * FROM wd_where;
SELECT * FROM wd_window;
WITH expected AS (SELECT wd_f.k, wd_f.c FROM wd_f JOIN wd_g ON wd_f.k = wd_g.k WHERE wd_f.c < -12345678901234567890.1234567890123460 OR -wd_f.c > 12345678901234567890.1234567890123460)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM wd_where EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM wd_where)) AS diff;
WITH expected AS (SELECT wd_f.k, -wd_f.c AS n, sum(-wd_f.c) OVER () AS t FROM wd_f JOIN wd_g ON wd_f.k = wd_g.k)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM wd_window EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM wd_window)) AS diff;

-- The same shapes refreshed ON COMMIT, inside each write (policy INCREMENTAL: a write whose
-- view could not be refreshed incrementally would fail); DESCRIBE counts the refreshes.
CREATE TABLE oc_f (id INT, k INT) USING parquet;
CREATE TABLE oc_g (k INT, v STRING) USING parquet;
INSERT INTO oc_f VALUES (1, 1), (2, 2);
INSERT INTO oc_g VALUES (1, 'a'), (2, 'b');
CREATE MATERIALIZED VIEW oc_count REFRESH INCREMENTAL ON COMMIT AS
  SELECT count(*) AS n FROM (SELECT id, k FROM oc_f) x JOIN oc_g ON x.k = oc_g.k;
CREATE MATERIALIZED VIEW oc_rows REFRESH INCREMENTAL ON COMMIT AS
  SELECT oc_g.v FROM (SELECT id, k, k + 1 AS k2 FROM oc_f WHERE id > 0) x JOIN oc_g ON x.k = oc_g.k;
CREATE MATERIALIZED VIEW oc_left REFRESH INCREMENTAL ON COMMIT AS
  SELECT oc_g.v, count(*) AS n FROM (SELECT id, k FROM oc_f) x LEFT JOIN oc_g ON x.k = oc_g.k
  GROUP BY oc_g.v;
INSERT INTO oc_f VALUES (3, 1), (4, 3);
INSERT INTO oc_g VALUES (3, 'c');
DELETE FROM oc_f WHERE id = 1;
UPDATE oc_f SET k = 1 WHERE id = 2;
MERGE INTO oc_f USING (SELECT 5 AS id, 2 AS k) AS s ON oc_f.id = s.id WHEN NOT MATCHED THEN INSERT *;
DESCRIBE MATERIALIZED VIEW EXTENDED oc_count;
DESCRIBE MATERIALIZED VIEW EXTENDED oc_rows;
DESCRIBE MATERIALIZED VIEW EXTENDED oc_left;
SELECT * FROM oc_count;
SELECT * FROM oc_rows;
SELECT * FROM oc_left;
WITH expected AS (SELECT count(*) AS n FROM (SELECT id, k FROM oc_f) x JOIN oc_g ON x.k = oc_g.k)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM oc_count EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM oc_count)) AS diff;
WITH expected AS (SELECT oc_g.v FROM (SELECT id, k, k + 1 AS k2 FROM oc_f WHERE id > 0) x JOIN oc_g ON x.k = oc_g.k)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM oc_rows EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM oc_rows)) AS diff;
WITH expected AS (SELECT oc_g.v, count(*) AS n FROM (SELECT id, k FROM oc_f) x LEFT JOIN oc_g ON x.k = oc_g.k GROUP BY oc_g.v)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM oc_left EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM oc_left)) AS diff;
