-- Schedules and freshness targets: SCHEDULE EVERY, TARGET LAG, TARGET LAG DOWNSTREAM, stored
-- in the catalog and shown by DESCRIBE EXTENDED and SHOW MATERIALIZED VIEWS. No scheduler runs
-- here (none without sparkmv server or sparkmv.serve()): they say so.

CREATE TABLE sales (id INT, region STRING, amount INT) USING parquet;
INSERT INTO sales VALUES (1, 'north', 10), (2, 'south', 20);
CREATE MATERIALIZED VIEW by_region TARGET LAG DOWNSTREAM AS
  SELECT region, SUM(amount) AS total FROM sales GROUP BY region;
CREATE MATERIALIZED VIEW big_regions TARGET LAG '10 minutes' AS
  SELECT region FROM by_region WHERE total > 10;
CREATE MATERIALIZED VIEW every_sale REFRESH ON DEMAND SCHEDULE EVERY '1 hour 30 minutes' AS
  SELECT id, amount FROM sales;
CREATE MATERIALIZED VIEW plain AS SELECT id FROM sales;

SHOW MATERIALIZED VIEWS;

-- A change not yet consumed: the lag counts from its commit.
INSERT INTO sales VALUES (3, 'east', 30);
DESCRIBE MATERIALIZED VIEW EXTENDED big_regions;
REFRESH MATERIALIZED VIEW big_regions CASCADE;
SHOW MATERIALIZED VIEWS LIKE 'big*';

-- ALTER sets, replaces and drops a schedule; the intervals are shown canonical.
ALTER MATERIALIZED VIEW plain SET SCHEDULE EVERY '90 s';
ALTER MATERIALIZED VIEW every_sale TARGET LAG '1 day';
ALTER MATERIALIZED VIEW big_regions DROP SCHEDULE;
SHOW MATERIALIZED VIEWS;

-- ALTER ... AS keeps the schedule.
ALTER MATERIALIZED VIEW plain AS SELECT id, region FROM sales;
SHOW MATERIALIZED VIEWS LIKE 'plain';

-- Errors: an unknown view, a bad interval, a lag below the minimum, two schedules.
ALTER MATERIALIZED VIEW no_such_view SET TARGET LAG '10 minutes';
CREATE MATERIALIZED VIEW bad SCHEDULE EVERY '5 fortnights' AS SELECT 1 AS x;
ALTER MATERIALIZED VIEW plain SET TARGET LAG 'soon';
ALTER MATERIALIZED VIEW plain SET SCHEDULE EVERY 5;
ALTER MATERIALIZED VIEW plain SET TARGET LAG '30 seconds';
CREATE MATERIALIZED VIEW bad SCHEDULE EVERY '10 seconds' AS SELECT 1 AS x;
CREATE MATERIALIZED VIEW bad SCHEDULE EVERY '5 minutes' TARGET LAG '5 minutes' AS SELECT 1 AS x;
-- The minimum is a session conf.
SET spark.sparkmv.schedule.minInterval = 10;
ALTER MATERIALIZED VIEW plain SET TARGET LAG '30 seconds';
SHOW MATERIALIZED VIEWS LIKE 'plain';
SHOW MATERIALIZED VIEWS LIKE 'bad';
