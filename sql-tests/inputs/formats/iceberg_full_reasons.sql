-- Views over Apache Iceberg tables (docs/table-formats.md): when their refresh is FULL, and
-- why. Run by tests/formats/test_iceberg.py on the Spark 4.1 line with Iceberg's runtime
-- (`make test-formats`), not by `make test`; `ice` is its Hadoop catalog.
SET spark.sparkmv.refresh.costBased = false;
CREATE NAMESPACE ice.golden_iceberg_full_reasons;

-- Merge-on-read deletes: the reason names the properties to set.
CREATE TABLE ice.golden_iceberg_full_reasons.mor (a BIGINT) USING iceberg
  TBLPROPERTIES ('write.delete.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read',
                 'write.merge.mode' = 'merge-on-read');
INSERT INTO ice.golden_iceberg_full_reasons.mor SELECT /*+ COALESCE(1) */ id FROM range(10);
CREATE MATERIALIZED VIEW residues AS
  SELECT a % 3 AS k, COUNT(*) AS n FROM ice.golden_iceberg_full_reasons.mor GROUP BY 1;
DELETE FROM ice.golden_iceberg_full_reasons.mor WHERE a = 1;
REFRESH MATERIALIZED VIEW residues;
SELECT * FROM residues;

-- A schema change in the range, then snapshots expired past the view's.
CREATE TABLE ice.golden_iceberg_full_reasons.r (a INT) USING iceberg;
INSERT INTO ice.golden_iceberg_full_reasons.r VALUES (1), (2);
CREATE MATERIALIZED VIEW big_ones AS SELECT a FROM ice.golden_iceberg_full_reasons.r WHERE a > 1;
ALTER TABLE ice.golden_iceberg_full_reasons.r ADD COLUMNS (c STRING);
INSERT INTO ice.golden_iceberg_full_reasons.r VALUES (3, 'x');
REFRESH MATERIALIZED VIEW big_ones;
INSERT INTO ice.golden_iceberg_full_reasons.r VALUES (4, 'y');
INSERT INTO ice.golden_iceberg_full_reasons.r VALUES (5, 'z');
CALL ice.system.expire_snapshots(table => 'golden_iceberg_full_reasons.r',
  older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1);
REFRESH MATERIALIZED VIEW big_ones;
INSERT INTO ice.golden_iceberg_full_reasons.r VALUES (6, 'w');
REFRESH MATERIALIZED VIEW big_ones;
SELECT * FROM big_ones;

-- A table dropped and created again under the view: never read against the old one's
-- snapshots.
DROP TABLE ice.golden_iceberg_full_reasons.r PURGE;
CREATE TABLE ice.golden_iceberg_full_reasons.r (a INT, c STRING) USING iceberg;
INSERT INTO ice.golden_iceberg_full_reasons.r VALUES (10, 'a');
REFRESH MATERIALIZED VIEW big_ones;
INSERT INTO ice.golden_iceberg_full_reasons.r VALUES (20, 'b');
REFRESH MATERIALIZED VIEW big_ones;
SELECT * FROM big_ones;

-- Format version 1: no sequence numbers.
CREATE TABLE ice.golden_iceberg_full_reasons.v1 (a INT) USING iceberg
  TBLPROPERTIES ('format-version' = '1');
CREATE MATERIALIZED VIEW v1_count AS SELECT COUNT(*) AS n FROM ice.golden_iceberg_full_reasons.v1;
INSERT INTO ice.golden_iceberg_full_reasons.v1 VALUES (1);
REFRESH MATERIALIZED VIEW v1_count;

DROP MATERIALIZED VIEW residues;
DROP MATERIALIZED VIEW big_ones;
DROP MATERIALIZED VIEW v1_count;
DROP TABLE ice.golden_iceberg_full_reasons.mor PURGE;
DROP TABLE ice.golden_iceberg_full_reasons.r PURGE;
DROP TABLE ice.golden_iceberg_full_reasons.v1 PURGE;
DROP NAMESPACE ice.golden_iceberg_full_reasons;
