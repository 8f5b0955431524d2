# `make demo` and `make test` work on a fresh machine with Python 3.11 and Java 17:
# each creates .venv when it is missing, installs cerql with its dev extras, and compiles the
# matching kernel (numba) before the first query, saying what it does as it goes (README.md
# has how long each step takes on 2 cores).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

BENCH_STAMP := $(VENV)/.installed-bench

.PHONY: demo test bench bench-quick install warmup clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@echo "cerql: installing cerql into .venv with its dev extras (about 6 min on a fresh machine: PySpark, numba, pandas)..."
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Compiles the numba kernel once (1-2 min on 2 cores; its own progress line), so that the first
# query does not; a second or so when the cache is current (cerql/cli/warmup.py).
warmup: $(STAMP)
	@$(PY) -m cerql warmup

demo: warmup
	@echo "cerql: running the demo queries (sql/) on a local Spark, then one over a stream (about 2 min)..."
	$(PY) -m cerql demo
	$(PY) -m cerql demo --stream

# Two pytest workers (pytest-xdist), one per core, each with its own local[2] session: most tests
# are single-threaded Python, so one process left a core idle. --dist loadfile keeps a file's
# tests, and its module fixtures, on one worker.
test: warmup
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m pytest -q -n 2 --dist loadfile

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $(BENCH_STAMP)

# Benchmarks are scripts, not tests (benchmarks/README.md); figures go to docs/benchmarks.md.
# The peer benchmark builds CORE's and Flink's venvs under $TMPDIR/cerql-peers when missing.
# Quick runs write their plots to $TMPDIR/cerql-bench-plots, full runs to docs/img.
QUICK_PLOTS := $(or $(TMPDIR),/tmp)/cerql-bench-plots

bench-quick: $(BENCH_STAMP)
	$(PY) benchmarks/bench_kernel.py --quick
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) benchmarks/peers/bench_peers.py --quick --plots $(QUICK_PLOTS)

bench: $(BENCH_STAMP)
	$(PY) benchmarks/bench_kernel.py
	$(PY) benchmarks/bench_cross.py
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) benchmarks/peers/bench_peers.py --json docs/img/peers.json --plots docs/img
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) benchmarks/bench_spark.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
