-- The refresh history: every refresh appends one record, read by SHOW MATERIALIZED VIEW
-- REFRESHES and the table-valued function sparkmv_refresh_history. Times, durations,
-- estimates, Spark jobs and bytes read are normalised.

CREATE TABLE sales (id INT, region STRING, amount INT) USING parquet;
INSERT INTO sales VALUES (1, 'north', 10), (2, 'south', 20), (3, 'north', 5);
CREATE MATERIALIZED VIEW by_region AS
  SELECT region, SUM(amount) AS total, COUNT(*) AS n FROM sales GROUP BY region;
CREATE MATERIALIZED VIEW ratios AS SELECT id, 100 DIV (amount - 8) AS r FROM sales;

-- CREATE is no refresh: the history is empty.
SHOW MATERIALIZED VIEW REFRESHES FOR by_region;

-- An incremental refresh, one with nothing pending (SKIPPED), a full one.
INSERT INTO sales VALUES (4, 'east', 7);
REFRESH MATERIALIZED VIEW by_region;
REFRESH MATERIALIZED VIEW by_region;
REFRESH MATERIALIZED VIEW by_region FULL;
SHOW MATERIALIZED VIEW REFRESHES FOR by_region;
-- The newest first.
SHOW MATERIALIZED VIEW REFRESHES FOR by_region LIMIT 1;
SELECT trigger, status, mode, reason, rows_inserted, rows_deleted, irrelevant_rows, base_versions
  FROM sparkmv_refresh_history('by_region') ORDER BY started;

-- A failed refresh commits nothing and records its error class.
INSERT INTO sales VALUES (5, 'west', 8);
REFRESH MATERIALIZED VIEW ratios;
SELECT view, status, mode, rows_inserted, error_class, error_message
  FROM sparkmv_refresh_history('golden_refresh_history.ratios');

-- ON COMMIT and CASCADE say what started the refresh.
CREATE MATERIALIZED VIEW north REFRESH ON COMMIT AS
  SELECT id, amount FROM sales WHERE region = 'north';
CREATE MATERIALIZED VIEW big_regions AS SELECT region FROM by_region WHERE total > 10;
INSERT INTO sales VALUES (6, 'north', 1);
REFRESH MATERIALIZED VIEW big_regions CASCADE;
SELECT view, trigger, status, mode FROM sparkmv_refresh_history()
  WHERE view LIKE 'golden_refresh_history.%' AND started >= (
    SELECT max(started) FROM sparkmv_refresh_history('ratios'))
  ORDER BY ended;

-- The function as a relation: aggregated, and joined with a view's rows.
SELECT view, mode, count(*) AS refreshes FROM sparkmv_refresh_history()
  WHERE view LIKE 'golden_refresh_history.%' AND status <> 'FAILED'
  GROUP BY view, mode ORDER BY view, mode;
SELECT b.region, b.total, h.base_versions['golden_refresh_history.sales'] AS sales_version
  FROM by_region b JOIN sparkmv_refresh_history('by_region') h ON h.mode = 'FULL'
  ORDER BY b.region;

-- Errors: an unknown view, a table, a bad LIMIT, bad arguments to the function.
SHOW MATERIALIZED VIEW REFRESHES FOR no_such_view;
SHOW MATERIALIZED VIEW REFRESHES FOR sales;
SHOW MATERIALIZED VIEW REFRESHES LIMIT -1;
SHOW MATERIALIZED VIEW REFRESHES FOR by_region LIMIT many;
SELECT * FROM sparkmv_refresh_history('no_such_view');
SELECT * FROM sparkmv_refresh_history('by_region', 'ratios');
SELECT * FROM sparkmv_refresh_history(42);

-- DROP removes a view's history with it.
DROP MATERIALIZED VIEW ratios;
SELECT count(*) AS records FROM sparkmv_refresh_history() WHERE view = 'golden_refresh_history.ratios';
