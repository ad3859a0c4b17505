-- Every way a materialized-view statement can fail, and what the user is told.

CREATE TABLE base (id INT, name STRING) USING parquet;
INSERT INTO base VALUES (1, 'a'), (2, 'b'), (2, 'b'), (3, NULL);
CREATE MATERIALIZED VIEW mv AS SELECT id, name FROM base;

-- The name is taken: by a table, by a materialized view.
CREATE MATERIALIZED VIEW base AS SELECT 1 AS one;
CREATE MATERIALIZED VIEW mv AS SELECT 1 AS one;

-- No such materialized view.
REFRESH MATERIALIZED VIEW missing;
DROP MATERIALIZED VIEW missing;
DESCRIBE MATERIALIZED VIEW missing;
ALTER MATERIALIZED VIEW missing SET REFRESH FULL;
EXPLAIN REFRESH MATERIALIZED VIEW missing;

-- Malformed statements.
CREATE MATERIALIZED VIEW no_query AS;
REFRESH MATERIALIZED VIEW mv garbage;
CREATE MATERIALIZED VIEW unterminated COMMENT 'no end AS SELECT 1 AS one;

CREATE MATERIALIZED VIEW no_as SELECT 1 AS one;
CREATE OR REPLACE MATERIALIZED VIEW IF NOT EXISTS both_flags AS SELECT 1 AS one;
ALTER MATERIALIZED VIEW mv SET REFRESH;
ALTER MATERIALIZED VIEW mv RENAME TO other;
SHOW MATERIALIZED VIEWS LIKE;

-- The query itself is wrong: Spark's own errors come through.
CREATE MATERIALIZED VIEW unknown_table AS SELECT * FROM no_such_table;
CREATE MATERIALIZED VIEW unknown_column AS SELECT no_such_column FROM base;
CREATE MATERIALIZED VIEW bad_syntax AS SELECT (1 AS one;
CREATE MATERIALIZED VIEW no_such_db.mv2 AS SELECT 1 AS one;
ALTER MATERIALIZED VIEW mv AS SELECT no_such_column FROM base;

-- Options that do not exist, or appear twice.
CREATE MATERIALIZED VIEW partitioned PARTITIONED BY (id) AS SELECT * FROM base;
CREATE MATERIALIZED VIEW bad_refresh REFRESH SOMETIMES AS SELECT * FROM base;
CREATE MATERIALIZED VIEW two_comments COMMENT 'a' COMMENT 'b' AS SELECT * FROM base;

-- Names: a reserved word, a back-quoted name with a space, an unquoted name with spaces.
CREATE MATERIALIZED VIEW select AS SELECT * FROM base;
CREATE MATERIALIZED VIEW `my view` AS SELECT * FROM base;
CREATE MATERIALIZED VIEW my view AS SELECT * FROM base;
CREATE MATERIALIZED VIEW a.b.c.d AS SELECT * FROM base;

-- The query must be exactly one SELECT.
CREATE MATERIALIZED VIEW two_statements AS SELECT 1 AS one; SELECT 2 AS two;
CREATE MATERIALIZED VIEW not_select AS INSERT INTO base VALUES (9, 'z');

-- Columns: count mismatch, duplicate names (listed or from the query).
CREATE MATERIALIZED VIEW too_few (a) AS SELECT id, name FROM base;
CREATE MATERIALIZED VIEW dup_listed (a, A) AS SELECT id, name FROM base;
CREATE MATERIALIZED VIEW dup_query AS SELECT id, id FROM base;
ALTER MATERIALIZED VIEW mv AS SELECT id, id FROM base;

-- Table properties under the reserved prefix.
CREATE MATERIALIZED VIEW reserved TBLPROPERTIES ('sparkmv.query' = 'x') AS SELECT * FROM base;

-- A query incremental maintenance does not cover (LIMIT) cannot be refreshed INCREMENTAL.
CREATE MATERIALIZED VIEW top AS SELECT id, name FROM base LIMIT 2;
REFRESH MATERIALIZED VIEW top INCREMENTAL;
CREATE MATERIALIZED VIEW incremental REFRESH INCREMENTAL AS SELECT * FROM base LIMIT 2;
ALTER MATERIALIZED VIEW top SET REFRESH INCREMENTAL;
DROP MATERIALIZED VIEW top;

-- REFRESH ON COMMIT needs every base table's writes captured (a JSON table's are not).
CREATE TABLE notes (id INT) USING json;
CREATE MATERIALIZED VIEW on_commit REFRESH ON COMMIT AS SELECT * FROM notes;
CREATE MATERIALIZED VIEW over_notes AS SELECT * FROM notes;
ALTER MATERIALIZED VIEW over_notes SET REFRESH ON COMMIT;
DROP MATERIALIZED VIEW over_notes;
DROP TABLE notes;

-- Materialized-view statements on a plain table.
DROP MATERIALIZED VIEW base;
REFRESH MATERIALIZED VIEW base;
CREATE OR REPLACE MATERIALIZED VIEW base AS SELECT 1 AS one;

-- Nothing changed: the table, the view and its data are as before.
SHOW MATERIALIZED VIEWS;
SHOW TABLES;
SELECT * FROM mv;
SELECT * FROM base;
WITH expected AS (SELECT id, name FROM base)
SELECT count(*) AS differing_rows FROM (
  (SELECT * FROM mv EXCEPT ALL SELECT * FROM expected)
  UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM mv)) AS diff;
DESCRIBE MATERIALIZED VIEW EXTENDED mv;
