# sparkmv — `make demo` and `make test` each do all set-up themselves on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
BENCH_INSTALLED := $(VENV)/.installed-bench
SERVER_INSTALLED := $(VENV)/.installed-server
# The pyspark each virtualenv is pinned to: .venv's (the default line), .venv-spark42's
# (`make test-spark42`) and .venv-spark41's (`make test-spark41`); python/pyproject.toml admits
# every line the shim has sources for.
PYSPARK := 4.3.0
PYSPARK_42 := 4.2.0
PYSPARK_41 := 4.1.4
# A Spark line (major.minor) of a version: the shim's jar is built per line (sparkmv/jar.py).
spark_line = $(word 1,$(subst ., ,$(1))).$(word 2,$(subst ., ,$(1)))
shim_jar = python/sparkmv/jars/spark-$(call spark_line,$(1))/sparkmv-shim.jar
JAR := $(call shim_jar,$(PYSPARK))
SHIM_SOURCES := $(shell find scala-shim -name '*.scala')

.PHONY: demo test test-full test-spark42 test-spark41 sqllogictest sqllogictest-part sqllogictest-ledger differential-part differential-ledger pg-ivm golden golden-formats lint jar bench bench-capture bench-on-commit bench-fixed-cost bench-formats bench-refresh bench-irrelevance bench-key-proofs bench-recursive bench-tpch bench-join-floor bench-crossover clean

demo: $(INSTALLED) $(JAR)
	$(PY) examples/demo.py

# Two pytest workers, one per core, each with its own SparkSession (a test file stays on one
# worker): much of a test's time is a JVM starting or the driver waiting on py4j, not both
# cores busy.
XDIST := -n 2 --dist loadfile
test: lint $(JAR) $(SERVER_INSTALLED)
	$(PY) -m pytest $(XDIST)

# The shim built against pyspark $(PYSPARK_42) in its own virtualenv, and a few suites on it: the
# line's source pick, the parser claim, the statements' lifecycle, write capture (62 tests, about
# 15 minutes on a loaded 2-core machine; not part of `make test` or .ci/run).
VENV_42 := .venv-spark42
INSTALLED_42 := $(VENV_42)/.installed
JAR_42 := $(call shim_jar,$(PYSPARK_42))
SPARK42_TESTS := tests/test_spark_lines.py tests/parse tests/commands/test_lifecycle.py tests/capture/test_write_capture.py
test-spark42: $(JAR_42)
	$(VENV_42)/bin/python -m pytest $(SPARK42_TESTS)

# The same suites on pyspark $(PYSPARK_41) (.venv-spark41). Spark 4.1 has no changelog API
# (TableCatalog.loadChangelog), so there the shim refuses every DSv2 table a changelog
# (scala-spark-4.1's ChangelogCompat) and the tests of testcat's changelog are skipped.
VENV_41 := .venv-spark41
INSTALLED_41 := $(VENV_41)/.installed
JAR_41 := $(call shim_jar,$(PYSPARK_41))
SPARK41_TESTS := $(SPARK42_TESTS)
test-spark41: $(JAR_41)
	$(VENV_41)/bin/python -m pytest $(SPARK41_TESTS)

# Views over Delta Lake and Iceberg tables (tests/formats), each on the Spark line its jars are
# built for: Delta 4.4.0 on 4.2, Iceberg 1.11.0 on 4.1. Their jars are resolved with Maven into
# tests/.build/delta-jars and tests/.build/iceberg-jars, loaded as spark.jars.
DELTA_JARS := tests/.build/delta-jars
ICEBERG_JARS := tests/.build/iceberg-jars
DELTA_TESTS := tests/formats/test_delta.py
ICEBERG_TESTS := tests/formats/test_iceberg.py
test-formats: $(JAR_42) $(JAR_41) $(DELTA_JARS)/.resolved $(ICEBERG_JARS)/.resolved
	SPARKMV_DELTA_JARS=$(DELTA_JARS) $(VENV_42)/bin/python -m pytest $(DELTA_TESTS)
	SPARKMV_ICEBERG_JARS=$(ICEBERG_JARS) $(VENV_41)/bin/python -m pytest $(ICEBERG_TESTS)

$(DELTA_JARS)/.resolved: tests/formats/delta-pom.xml
	mvn -q -B -f $< dependency:copy-dependencies -DincludeScope=runtime \
		-DincludeGroupIds=io.delta,io.unitycatalog -DoutputDirectory=$(abspath $(DELTA_JARS))
	touch $@

$(ICEBERG_JARS)/.resolved: tests/formats/iceberg-pom.xml
	mvn -q -B -f $< dependency:copy-dependencies -DincludeScope=runtime \
		-DincludeGroupIds=org.apache.iceberg -DoutputDirectory=$(abspath $(ICEBERG_JARS))
	touch $@

# The randomized suites at full size (20x the examples, unseeded).
test-full: $(INSTALLED) $(JAR) $(SERVER_INSTALLED)
	SPARKMV_FULL_TESTS=1 $(PY) -m pytest $(XDIST)

# Every query record of SQLite's sqllogictest select1-5 as a materialized view (hours; two
# processes, one shard each; merged counts at the end, exit 1 if any view is wrong or failed).
sqllogictest: $(INSTALLED) $(JAR)
	$(PY) tests/sqllogictest/runner.py --processes 2

# The full run in parts, one sitting each: `make sqllogictest-part FILES=select3 SHARD=1/4`
# records its counts and failures, with the commit it ran on, in tests/sqllogictest/ledger/;
# `make sqllogictest-ledger` merges the recorded parts and says what is not covered yet.
# RECORDS=a-b runs the a-th to b-th records only (with SHARD: every n-th of those).
FILES ?= select1
SHARD ?= 1/1
RECORDS ?=
PART := $(FILES)$(if $(RECORDS),-records-$(RECORDS))-$(subst /,-of-,$(SHARD))
sqllogictest-part: $(INSTALLED) $(JAR)
	$(PY) tests/sqllogictest/runner.py --files $(FILES) --shard $(SHARD) \
		$(if $(RECORDS),--records $(RECORDS)) --record tests/sqllogictest/ledger/$(PART).json

sqllogictest-ledger: $(INSTALLED)
	$(PY) tests/sqllogictest/runner.py --ledger tests/sqllogictest/ledger

# Randomized differential fleets (many views over one write stream) in parts:
# `make differential-part SEED=7 EXAMPLES=20` runs 20 fleets drawn with hypothesis seed 7 and,
# if all pass, records their counts in tests/differential_ledger/seed-7.json;
# `make differential-ledger` sums the recorded parts.
SEED ?= 1
EXAMPLES ?= 20
differential-part: $(INSTALLED) $(JAR)
	SPARKMV_FLEET_SEED=$(SEED) SPARKMV_FLEET_EXAMPLES=$(EXAMPLES) \
		SPARKMV_FLEET_RECORD=tests/differential_ledger/seed-$(SEED).json \
		$(PY) -m pytest -x -q tests/test_differential_fleet.py

differential-ledger: $(INSTALLED)
	$(PY) tests/test_differential_fleet.py

# pg_ivm's regression suite (../shared/corpora/pg_ivm: sql/*.sql, expected/*.out) with ON
# COMMIT views: every mapped section (about 20 minutes on 2 cores; `make test` runs a seeded
# sample); rewrites tests/pg_ivm/REPORT.md (review the diff), fails if a mapped section fails.
pg-ivm: $(INSTALLED) $(JAR)
	SPARKMV_PG_IVM_FULL=1 $(PY) -m pytest -x -q tests/pg_ivm/test_pg_ivm.py -k sections_pass

# Regenerate sql-tests/results/*.sql.out (review the diff before committing).
golden: $(INSTALLED) $(JAR)
	SPARKMV_GENERATE_GOLDEN_FILES=1 $(PY) -m pytest tests/test_golden_sql.py

# The table formats' golden files (sql-tests/inputs/formats/), on their Spark lines.
golden-formats: $(JAR_42) $(JAR_41) $(DELTA_JARS)/.resolved $(ICEBERG_JARS)/.resolved
	SPARKMV_GENERATE_GOLDEN_FILES=1 SPARKMV_DELTA_JARS=$(DELTA_JARS) $(VENV_42)/bin/python \
		-m pytest $(DELTA_TESTS) -k golden
	SPARKMV_GENERATE_GOLDEN_FILES=1 SPARKMV_ICEBERG_JARS=$(ICEBERG_JARS) $(VENV_41)/bin/python \
		-m pytest $(ICEBERG_TESTS) -k golden

lint: $(INSTALLED)
	$(VENV)/bin/ruff check python tests bench examples
	$(VENV)/bin/ruff format --check python tests bench examples
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

jar: $(JAR)

bench: $(INSTALLED) $(JAR)
	$(PY) bench/bridge_overhead.py

# Change capture: tracked vs untracked INSERT of 1M rows; DELETE of 0.1% of 10M rows.
bench-capture: $(INSTALLED) $(JAR)
	$(PY) bench/capture.py

# A single-row INSERT with an ON COMMIT aggregate view vs with an ON DEMAND one (1M rows).
bench-on-commit: $(INSTALLED) $(JAR)
	$(PY) bench/on_commit.py

# The demo's refresh and a refresh with nothing pending: 60 rounds, medians per 10 (cold to warm JVM).
# A view over a Delta and over an Iceberg table: incremental refreshes from the table's log
# against FULL, with jobs and py4j round trips (bench/formats.py), each on its Spark line.
bench-formats: $(JAR_42) $(JAR_41) $(DELTA_JARS)/.resolved $(ICEBERG_JARS)/.resolved
	SPARKMV_DELTA_JARS=$(DELTA_JARS) $(VENV_42)/bin/python bench/formats.py delta
	SPARKMV_ICEBERG_JARS=$(ICEBERG_JARS) $(VENV_41)/bin/python bench/formats.py iceberg

bench-fixed-cost: $(INSTALLED) $(JAR)
	$(PY) bench/fixed_cost.py

# Incremental vs full refresh after 0.1% inserted + 0.1% deleted, fact of 1M and 10M rows.
bench-refresh: $(INSTALLED) $(JAR)
	$(PY) bench/refresh.py

# TPC-H: incremental vs full refresh of the 22 TPC-H query views after RF1/RF2 and UPDATEs of
# part, partsupp, supplier and customer, SF 0.1 and SF 1 (data generated by DuckDB's tpch
# extension, cached in bench/.data/).
bench-tpch: $(BENCH_INSTALLED) $(JAR)
	$(PY) bench/tpch.py

# Join views at TPC-H SF 1, plain Spark: INSERT OVERWRITE of the query against the one delta
# term bench-tpch's change makes unavoidable (an upper bound on incremental vs FULL).
bench-join-floor: $(BENCH_INSTALLED) $(JAR)
	$(PY) bench/join_floor.py

# Crossover: full vs incremental vs AUTO refresh of TPC-H Q1/Q3 (SF 0.1) and a filter-project
# view (1M fact rows) by change size, 0.01% to 50%; how often AUTO picked the cheaper mode.
# Writes bench/results/crossover.svg and .json (`python bench/crossover.py --help` for sizes).
bench-crossover: $(BENCH_INSTALLED) $(JAR)
	$(PY) bench/crossover.py

# Join-term proofs from footer statistics: a join view after an append of new orders and their
# lineitems, proofs on and off.
bench-key-proofs: $(INSTALLED) $(JAR)
	$(PY) bench/key_proofs.py

# Irrelevance filters: a 1M-row insert, 99% provably irrelevant, filters on / off vs only the 1%.
bench-irrelevance: $(INSTALLED) $(JAR)
	$(PY) bench/irrelevance.py

# Recursive views: bounded all-pairs reachability over a 100k-edge DAG, incremental vs full
# refresh after 0.1% of the edges inserted and deleted.
bench-recursive: $(INSTALLED) $(JAR)
	$(PY) bench/recursive.py

$(INSTALLED): python/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e 'python[test]' pyspark==$(PYSPARK)
	touch $@

$(INSTALLED_42): python/pyproject.toml
	test -x $(VENV_42)/bin/python || $(PYTHON) -m venv $(VENV_42)
	$(VENV_42)/bin/python -m pip install --quiet --disable-pip-version-check \
		-e 'python[test]' pyspark==$(PYSPARK_42)
	touch $@

$(INSTALLED_41): python/pyproject.toml
	test -x $(VENV_41)/bin/python || $(PYTHON) -m venv $(VENV_41)
	$(VENV_41)/bin/python -m pip install --quiet --disable-pip-version-check \
		-e 'python[test]' pyspark==$(PYSPARK_41)
	touch $@

# The benchmarks' extra dependencies (the bench group: DuckDB and its tpch extension).
$(BENCH_INSTALLED): python/pyproject.toml | $(INSTALLED)
	$(PY) -m pip install --quiet --disable-pip-version-check -e 'python[bench]' pyspark==$(PYSPARK)
	touch $@

# The Spark Connect client's dependencies (the server extra), for tests/test_server.py.
$(SERVER_INSTALLED): python/pyproject.toml | $(INSTALLED)
	$(PY) -m pip install --quiet --disable-pip-version-check -e 'python[server]' pyspark==$(PYSPARK)
	touch $@

# Rebuilt only when the shim's sources or the error classes it carries change (sparkmv.jar
# also checks a digest of them).
$(JAR): $(SHIM_SOURCES) python/sparkmv/errors.py | $(INSTALLED)
	$(VENV)/bin/sparkmv jar

$(JAR_42): $(SHIM_SOURCES) python/sparkmv/errors.py | $(INSTALLED_42)
	$(VENV_42)/bin/sparkmv jar

$(JAR_41): $(SHIM_SOURCES) python/sparkmv/errors.py | $(INSTALLED_41)
	$(VENV_41)/bin/sparkmv jar

clean:
	rm -rf $(VENV) $(VENV_42) $(VENV_41) python/sparkmv/jars spark-warehouse demo-warehouse .pytest_cache .mypy_cache
