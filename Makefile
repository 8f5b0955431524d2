# `make demo` and `make test` work on a fresh machine with Python 3.11 and Java 17:
# each creates .venv when it is missing and installs cerql with its dev extras.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench bench-quick install clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m cerql demo

test: $(STAMP)
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m pytest -q

# Benchmarks are scripts, not tests (benchmarks/README.md); figures go to docs/benchmarks.md.
bench-quick: $(STAMP)
	$(PY) benchmarks/bench_kernel.py --quick
	$(PY) benchmarks/peers/bench_core.py --quick
	$(PY) benchmarks/peers/bench_flink.py --quick
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) benchmarks/bench_spark.py --quick

bench: $(STAMP)
	$(PY) benchmarks/bench_kernel.py
	$(PY) benchmarks/peers/bench_core.py
	$(PY) benchmarks/peers/bench_flink.py
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) benchmarks/bench_spark.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
