# sparkmv — `make demo` and `make test` each do all set-up themselves on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
JAR := python/sparkmv/jars/sparkmv-shim.jar
SHIM_SOURCES := $(shell find scala-shim -name '*.scala')

.PHONY: demo test test-full golden lint jar bench bench-capture clean

demo: $(INSTALLED) $(JAR)
	$(PY) examples/demo.py

test: lint $(JAR)
	$(PY) -m pytest

# The randomized suites at full size (20x the examples, unseeded).
test-full: $(INSTALLED) $(JAR)
	SPARKMV_FULL_TESTS=1 $(PY) -m pytest

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

$(INSTALLED): python/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e 'python[test]'
	touch $@

# Rebuilt only when the shim's sources change (sparkmv.jar also checks a digest of them).
$(JAR): $(SHIM_SOURCES) | $(INSTALLED)
	$(VENV)/bin/sparkmv jar

clean:
	rm -rf $(VENV) python/sparkmv/jars spark-warehouse demo-warehouse .pytest_cache .mypy_cache
