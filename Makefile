# sparkmv — `make demo` and `make test` each do all set-up themselves on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
JAR := python/sparkmv/jars/sparkmv-shim.jar
SHIM_SOURCES := $(shell find scala-shim -name '*.scala')

.PHONY: demo test test-full sqllogictest golden lint jar bench bench-capture bench-refresh clean

demo: $(INSTALLED) $(JAR)
	$(PY) examples/demo.py

test: lint $(JAR)
	$(PY) -m pytest

# The randomized suites at full size (20x the examples, unseeded).
test-full: $(INSTALLED) $(JAR)
	SPARKMV_FULL_TESTS=1 $(PY) -m pytest

# Every query record of SQLite's sqllogictest select1-5 as a materialized view (hours; two
# processes, one shard each; merged counts at the end, exit 1 if any view is wrong or failed).
sqllogictest: $(INSTALLED) $(JAR)
	$(PY) tests/sqllogictest/runner.py --processes 2

# Regenerate sql-tests/results/*.sql.out (review the diff before committing).
golden: $(INSTALLED) $(JAR)
	SPARKMV_GENERATE_GOLDEN_FILES=1 $(PY) -m pytest tests/test_golden_sql.py

lint: $(INSTALLED)
	$(VENV)/bin/ruff check python tests bench examples
	$(VENV)/bin/ruff format --check python tests bench examples
	$(VENV)/bin/mypy

jar: $(JAR)

bench: $(INSTALLED) $(JAR)
	$(PY) bench/bridge_overhead.py

# Change capture: tracked vs untracked INSERT of 1M rows; DELETE of 0.1% of 10M rows.
bench-capture: $(INSTALLED) $(JAR)
	$(PY) bench/capture.py

# Incremental vs full refresh after 0.1% inserted + 0.1% deleted, fact of 1M and 10M rows.
bench-refresh: $(INSTALLED) $(JAR)
	$(PY) bench/refresh.py

$(INSTALLED): python/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e 'python[test]'
	touch $@

# Rebuilt only when the shim's sources change (sparkmv.jar also checks a digest of them).
$(JAR): $(SHIM_SOURCES) | $(INSTALLED)
	$(VENV)/bin/sparkmv jar

clean:
	rm -rf $(VENV) python/sparkmv/jars spark-warehouse demo-warehouse .pytest_cache .mypy_cache
