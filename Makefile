# Two commands do all the setup on a fresh machine with Python 3.11:
#   make demo   the main job: an example DAG against the embedded emulator and an SQLite warehouse
#   make test   lint, type checks and the whole test suite
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SCALE_STAMP := $(VENV)/.installed-scale

.PHONY: install test lint unit demo bench emulator scale-test clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	# apache-airflow-providers-mysql requires mysqlclient, which needs MySQL C headers;
	# the hook runs on mysql-connector-python instead (extra {"client": "mysql-connector-python"}).
	$(BIN)/python -m pip install --quiet --no-deps 'apache-airflow-providers-mysql>=6'
	touch $(STAMP)

$(SCALE_STAMP): $(STAMP) pyproject.toml Makefile
	$(BIN)/python -m pip install --quiet -e '.[dev,scale]'
	touch $(SCALE_STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy airflow_provider_namelookup benchmarks scale_test

test: lint
	$(BIN)/python -m pytest

demo: $(STAMP)
	$(BIN)/python -m demo

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

# A real CeleryExecutor deployment (2 workers, PostgreSQL, Redis db 13) enriching 200,000 rows,
# then a worker SIGKILLed mid-run: about 5 minutes on 2 cores, hard-stopped at 10 (SIGTERM cleans up).
scale-test: $(SCALE_STAMP)
	timeout --signal=TERM --kill-after=30 600 $(BIN)/python -m scale_test

emulator: $(STAMP)
	$(BIN)/namelookup-emulator --host 127.0.0.1 --port 8765

clean:
	rm -rf $(VENV) .airflow .demo .pytest_cache .mypy_cache .ruff_cache
