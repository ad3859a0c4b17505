-- Views over Delta Lake tables (docs/table-formats.md): when their refresh is FULL, and why.
-- Run by tests/formats/test_delta.py on the Spark 4.2 line with Delta's jars
-- (`make test-formats`), not by `make test`.
SET spark.sparkmv.refresh.costBased = false;

-- A table that keeps no change records: the reason names the property to set.
CREATE TABLE plain (k INT, v INT) USING delta;
INSERT INTO plain VALUES (1, 10), (2, 20);
CREATE MATERIALIZED VIEW plain_sums AS SELECT k, sum(v) AS s FROM plain GROUP BY k;
INSERT INTO plain VALUES (1, 5);
REFRESH MATERIALIZED VIEW plain_sums;
SELECT * FROM plain_sums;

-- Its Change Data Feed enabled: the view has not read the feed yet, then it does.
ALTER TABLE plain SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true');
REFRESH MATERIALIZED VIEW plain_sums;
INSERT INTO plain VALUES (3, 30);
DELETE FROM plain WHERE k = 2;
REFRESH MATERIALIZED VIEW plain_sums;
SELECT * FROM plain_sums;

-- A VACUUM in the range: the change files of the versions before it may be gone.
CREATE TABLE fed (a INT) USING delta TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true');
INSERT INTO fed VALUES (1), (2);
CREATE MATERIALIZED VIEW big_ones AS SELECT a FROM fed WHERE a > 1;
INSERT INTO fed VALUES (3);
VACUUM fed;
REFRESH MATERIALIZED VIEW big_ones;
INSERT INTO fed VALUES (4);
REFRESH MATERIALIZED VIEW big_ones;

-- A schema change in the range.
ALTER TABLE fed ADD COLUMNS (c STRING);
INSERT INTO fed VALUES (5, 'x');
REFRESH MATERIALIZED VIEW big_ones;
SELECT * FROM big_ones;

-- A table dropped and created again under the view: never read against the old one's
-- versions.
DROP TABLE fed;
CREATE TABLE fed (a INT) USING delta TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true');
INSERT INTO fed VALUES (10);
INSERT INTO fed VALUES (20);
REFRESH MATERIALIZED VIEW big_ones;
INSERT INTO fed VALUES (30);
REFRESH MATERIALIZED VIEW big_ones;
SELECT * FROM big_ones;
