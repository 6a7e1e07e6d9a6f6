# Two commands do all the setup on a fresh machine with Python 3.11:
#   make demo   the main job: an example DAG against the embedded emulator and an SQLite warehouse
#   make test   lint, type checks and the whole test suite
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SCALE_STAMP := $(VENV)/.installed-scale

.PHONY: install test test-compat lint unit demo bench emulator scale-test clean wheel-smoke browser screenshots
# Cached outside the tree so that CI's fresh clones reuse it (rebuilt when pyproject.toml changes).
SMOKE_VENV ?= $(HOME)/.cache/airflow-provider-namelookup/wheel-smoke-venv

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	# The editable install leaves <name>.egg-info in the tree, a second copy of the package's metadata
	# whenever the tree is on sys.path (pytest, python -m): Airflow would load the plugin twice.
	rm -rf airflow_provider_namelookup.egg-info
	# apache-airflow-providers-mysql requires mysqlclient, which needs MySQL C headers;
	# the hook runs on mysql-connector-python instead (extra {"client": "mysql-connector-python"}).
	$(BIN)/python -m pip install --quiet --no-deps 'apache-airflow-providers-mysql>=6'
	touch $(STAMP)

$(SCALE_STAMP): $(STAMP) pyproject.toml Makefile
	$(BIN)/python -m pip install --quiet -e '.[dev,scale]'
	rm -rf airflow_provider_namelookup.egg-info
	touch $(SCALE_STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy airflow_provider_namelookup benchmarks scale_test compat

test: lint browser
	$(BIN)/python -m pytest

# Debian's Chromium and its driver, for the credits view's browser test (tests/plugins/test_credits_page.py,
# through selenium). Installed with apt-get when missing (root, as on CI); Playwright's own browser
# download does not work without internet.
browser:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; fi

# The README's screenshots of the credits view (light and dark), taken by its browser test into docs/.
screenshots: $(STAMP) browser
	NAMELOOKUP_SCREENSHOTS=$(CURDIR)/docs $(BIN)/python -m pytest -q tests/plugins/test_credits_page.py

# The version matrix (README "Supported versions"): the smoke subset (pytest -m compat) on Airflow 3.1
# and 3.2 with Python 3.11 and on Airflow 3.3 with Python 3.12 and 3.13, in venvs built from compat/*.txt
# and cached in ~/.cache/airflow-provider-namelookup/compat (the provider is installed from this tree).
test-compat:
	$(PYTHON) compat/matrix.py run

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

# Build the sdist and wheel, check their metadata, install the built wheel (not this tree)
# with its emulator extra into a separate venv, and run packaging/wheel_smoke.py from outside
# the tree. The venv is kept between runs while pyproject.toml is unchanged (its
# dependencies are the same); the provider itself is reinstalled from the new wheel each time.
wheel-smoke: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	$(BIN)/python -m twine check --strict dist/*
	test "$$(cat $(SMOKE_VENV)/.pyproject.sha 2>/dev/null)" = "$$(sha256sum pyproject.toml | cut -d' ' -f1)" \
		|| { rm -rf $(SMOKE_VENV) && mkdir -p $(dir $(SMOKE_VENV)) && $(PYTHON) -m venv $(SMOKE_VENV) \
		     && $(SMOKE_VENV)/bin/python -m pip install --quiet --upgrade pip; }
	$(SMOKE_VENV)/bin/python -m pip uninstall --quiet --yes airflow-provider-namelookup
	$(SMOKE_VENV)/bin/python -m pip install --quiet "$$(ls dist/*.whl)[emulator]"
	sha256sum pyproject.toml | cut -d' ' -f1 > $(SMOKE_VENV)/.pyproject.sha
	cd /tmp && $(SMOKE_VENV)/bin/python $(CURDIR)/packaging/wheel_smoke.py $(CURDIR)

clean:
	rm -rf $(VENV) dist build .airflow .demo .pytest_cache .mypy_cache .ruff_cache
