# Two commands do all the setup on a fresh machine with Python 3.11:
#   make demo   the main job: an example DAG against the embedded emulator and an SQLite warehouse
#   make test   lint, type checks and the whole test suite
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SCALE_STAMP := $(VENV)/.installed-scale
# make demo needs the provider, the emulator and SQLite's Airflow provider (the examples extra), plus DuckDB's
# with NAMELOOKUP_DEMO_WAREHOUSE=duckdb: a stamp of its own per warehouse, a fraction of the development
# install. The development install (make install, which make test needs) holds both and touches them too.
COMMA := ,
DEMO_DUCKDB := $(filter duckdb,$(NAMELOOKUP_DEMO_WAREHOUSE))
DEMO_EXTRAS := examples$(if $(DEMO_DUCKDB),$(COMMA)duckdb)
DEMO_STAMPS := $(VENV)/.installed-demo $(VENV)/.installed-demo-duckdb
DEMO_STAMP := $(VENV)/.installed-demo$(if $(DEMO_DUCKDB),-duckdb)
# The emulator's own distribution (namelookup-emulator), beside the provider's.
EMULATOR_DIR := namelookup-emulator
EMULATOR_PYPROJECT := $(EMULATOR_DIR)/pyproject.toml

.PHONY: install test test-compat lint unit demo bench emulator scale-test airflow2-deployment clean dist wheel-smoke browser screenshots \
	bigquery-emulator spark h2 docs
# Cached outside the tree so that CI's fresh clones reuse them (rebuilt when a pyproject.toml changes).
BQEMULATOR_VENV ?= $(HOME)/.cache/airflow-provider-namelookup/bqemulator-venv
SMOKE_VENV ?= $(HOME)/.cache/airflow-provider-namelookup/wheel-smoke-venv
EMULATOR_SMOKE_VENV ?= $(HOME)/.cache/airflow-provider-namelookup/emulator-smoke-venv

install: $(STAMP)

$(STAMP): pyproject.toml $(EMULATOR_PYPROJECT) Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# Both distributions editable in one resolve: the provider's [emulator] extra is met by this tree's emulator.
	$(BIN)/python -m pip install --quiet -e ./$(EMULATOR_DIR) -e '.[dev]'
	# A venv of an older checkout: replacing the provider that shipped the namelookup-emulator script deletes it.
	test -x $(BIN)/namelookup-emulator || $(BIN)/python -m pip install --quiet --no-deps --force-reinstall -e ./$(EMULATOR_DIR)
	# The editable install leaves <name>.egg-info in the tree, a second copy of the package's metadata
	# whenever the tree is on sys.path (pytest, python -m): Airflow would load the plugin twice.
	rm -rf airflow_provider_namelookup.egg-info $(EMULATOR_DIR)/namelookup_emulator.egg-info
	# apache-airflow-providers-mysql requires mysqlclient, which needs MySQL C headers;
	# the hook runs on mysql-connector-python instead (extra {"client": "mysql-connector-python"}).
	$(BIN)/python -m pip install --quiet --no-deps 'apache-airflow-providers-mysql>=6'
	touch $(STAMP) $(DEMO_STAMPS)

$(DEMO_STAMP): pyproject.toml $(EMULATOR_PYPROJECT) Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ./$(EMULATOR_DIR) -e '.[$(DEMO_EXTRAS)]'
	rm -rf airflow_provider_namelookup.egg-info $(EMULATOR_DIR)/namelookup_emulator.egg-info
	touch $(DEMO_STAMP)

$(SCALE_STAMP): $(STAMP) pyproject.toml Makefile
	$(BIN)/python -m pip install --quiet -e ./$(EMULATOR_DIR) -e '.[dev,scale]'
	rm -rf airflow_provider_namelookup.egg-info $(EMULATOR_DIR)/namelookup_emulator.egg-info
	touch $(SCALE_STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy airflow_provider_namelookup $(EMULATOR_DIR)/namelookup_emulator benchmarks scale_test compat

# Each test is stopped after 10 minutes (pytest-timeout; the slowest takes under a minute on 2 cores):
# a test that hangs fails with every thread's traceback instead of holding the run until CI's limit.
# TEST_WORKERS processes (pytest-xdist) share the suite a test file at a time, so that a file's session and
# module fixtures (Spark, bqemulator, an api-server) start once per process; TEST_WORKERS=0 runs it in one.
TEST_WORKERS ?= 2
test: lint browser bigquery-emulator spark h2
	NAMELOOKUP_BQEMULATOR_PYTHON=$(BQEMULATOR_VENV)/bin/python $(BIN)/python -m pytest --timeout 600 \
		$(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile)

# bqemulator (a BigQuery REST API on DuckDB), which the BigQuery tests run the engine's statements on
# (tests/bigquery_emulator.py), in a venv of its own: it pins an older sqlglot than the provider.
# DuckDB fetches its extensions from the internet when asked to INSTALL them; here they come from PyPI
# (duckdb-extension-*, built for exactly this DuckDB) and are put where INSTALL finds them (~/.duckdb).
# Kept between runs while the package list is the same.
BQEMULATOR_PACKAGES := 'bqemulator>=1.4,<2' numpy duckdb==1.5.5 duckdb-extensions==1.5.5 \
	duckdb-extension-spatial==1.5.5 duckdb-extension-icu==1.5.5 duckdb-extension-avro==1.5.5
bigquery-emulator:
	@test "$$(cat $(BQEMULATOR_VENV)/.packages 2>/dev/null)" = "$(BQEMULATOR_PACKAGES)" || { \
		rm -rf $(BQEMULATOR_VENV) && mkdir -p $(dir $(BQEMULATOR_VENV)) && $(PYTHON) -m venv $(BQEMULATOR_VENV) \
		&& $(BQEMULATOR_VENV)/bin/python -m pip install --quiet $(BQEMULATOR_PACKAGES) \
		&& echo "$(BQEMULATOR_PACKAGES)" > $(BQEMULATOR_VENV)/.packages; }
	@$(BQEMULATOR_VENV)/bin/python -c "import duckdb_extensions as x; [x.import_extension(e) for e in ('spatial', 'icu', 'avro')]"

# Debian's Chromium and its driver, for the credits view's browser test (tests/plugins/test_credits_page.py,
# through selenium). Installed with apt-get when missing (root, as on CI), and only they: no recommended
# packages (which pulled udev, and with it upgrades of systemd and libudev), no upgrade of anything else
# beyond what they depend on. Playwright's own browser download does not work without internet.
BROWSER_PACKAGES := chromium chromium-driver
browser:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
		echo "make browser: installing $(BROWSER_PACKAGES) for the credits view's browser test, and only them" \
		     "(apt-get update, then apt-get install -y --no-install-recommends $(BROWSER_PACKAGES))"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends $(BROWSER_PACKAGES); fi

# Databricks SQL's statements run on a local Spark with Apache Iceberg tables (tests/warehouse/spark_dbapi.py):
# pyspark 3.5.6 and Iceberg 1.10.2's runtime jar (PyPI's snowpark-connect-deps-iceberg; no Delta Lake jar is on
# PyPI, apt or npm, and Maven Central is out of reach) installed into the venv, and the Jackson that runtime
# jar lacks relocated with Debian's jarjar (libjarjar-java: installed with apt-get when missing, and only it)
# into SPARK_CACHE (tests/warehouse/spark_jars.py). Quick when done: one import and one file checked.
SPARK_CACHE ?= $(HOME)/.cache/airflow-provider-namelookup/spark
SPARK_PACKAGES := pyspark==3.5.6 snowpark-connect-deps-iceberg==1.0.3
spark: $(STAMP)
	@$(BIN)/python -c "import pyspark, snowpark_connect_deps_iceberg" 2>/dev/null || \
		$(BIN)/python -m pip install --quiet $(SPARK_PACKAGES)
	@test -f /usr/share/java/jarjar.jar || { \
		echo "make spark: installing libjarjar-java to relocate Jackson for Iceberg (apt-get update, then" \
		     "apt-get install -y --no-install-recommends libjarjar-java)"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends libjarjar-java; }
	@test -f $(SPARK_CACHE)/iceberg-shaded-jackson-2.18.8.jar || $(BIN)/python -m tests.warehouse.spark_jars $(SPARK_CACHE)

# H2's jar (Debian's libh2-java), which tests/contrib runs the compliance suite on through JPype's DB-API
# (JPype1 is in the dev extra): the warehouse the docs' "Adding a warehouse" page is proved with. Installed
# with apt-get when missing (root, as on CI), and only it.
h2:
	@test -f /usr/share/java/h2.jar || { \
		echo "make h2: installing libh2-java for the compliance suite's H2 proof (apt-get update, then" \
		     "apt-get install -y --no-install-recommends libh2-java)"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends libh2-java; }

# The documentation site's screenshots of the credits view (light and dark) and of the accuracy report,
# taken by their browser tests into docs/images/; and of the site itself (its landing page, a how-to and
# the API reference) into docs/screenshots/, which the site does not show.
screenshots: $(STAMP) browser
	NAMELOOKUP_SCREENSHOTS=$(CURDIR)/docs/images NAMELOOKUP_DOCS_SCREENSHOTS=$(CURDIR)/docs/screenshots \
		$(BIN)/python -m pytest -q tests/plugins/test_credits_page.py tests/evaluation/test_report_page.py \
		tests/docs/test_browser.py

# The documentation site: docs/ built by Sphinx into docs/_build/html (open docs/_build/html/index.html),
# offline (no intersphinx, no CDN), with every warning an error. tests/docs/ builds it too and checks it.
docs: $(STAMP)
	$(BIN)/python -m sphinx -b html -W --keep-going -q -d docs/_build/doctrees docs docs/_build/html
	@echo "make docs: docs/_build/html/index.html"

# The version matrix (docs/installation.md "Supported versions"): the smoke subset (pytest -m compat) on Airflow 2.11,
# 3.0, 3.1 and 3.2 with Python 3.11 and on Airflow 3.3 with Python 3.12 and 3.13, in venvs built from compat/*.txt
# and cached in ~/.cache/airflow-provider-namelookup/compat (the provider is installed from this tree).
test-compat:
	$(PYTHON) compat/matrix.py run

demo: $(DEMO_STAMP)
	$(BIN)/python -m demo

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

# A real CeleryExecutor deployment (2 workers, PostgreSQL, Redis db 13) enriching 200,000 rows,
# then a worker SIGKILLed mid-run, then the approval example with a failed try, its retry and a clear:
# about 3-6 minutes on 2 cores, hard-stopped at 12 (SIGTERM cleans up).
scale-test: $(SCALE_STAMP)
	timeout --signal=TERM --kill-after=30 720 $(BIN)/python -m scale_test

# A real Airflow 2.11.2 deployment (webserver, scheduler, triggerer, one Celery worker; PostgreSQL, Redis db 12)
# running the credit gate (once deferred until a top-up) and the warehouse enrichment example on SQLite (twice: the
# second run pays nothing), checked through the webserver's REST API: about 1.5-3 minutes on 2 cores once its venv
# (compat/af2.11-py3.11-deployment.txt, cached like the version matrix's; about 1.5 minutes to build) exists,
# hard-stopped at 15 (SIGTERM cleans up). Not part of .ci/run.
airflow2-deployment: $(STAMP)
	timeout --signal=TERM --kill-after=30 900 $(BIN)/python -m scale_test.airflow2

# The emulator on port 8765 with an account whose token stays the same across restarts, so the
# Airflow connection it prints at start is pasted once (make emulator EMULATOR_TOKEN=... for another).
EMULATOR_TOKEN ?= local-emulator-token
emulator: $(STAMP)
	NAMELOOKUP_EMULATOR_SEED_TOKEN='$(EMULATOR_TOKEN)' $(BIN)/namelookup-emulator --host 127.0.0.1 --port 8765 \
		--seed-credits 100000

# The sdists and wheels of both distributions (the provider and namelookup-emulator) in $(DIST), their
# metadata checked: neither is on PyPI yet, so this is how to install them without a checkout
# (README "Install": pip install --find-links ./dist 'airflow-provider-namelookup[examples]').
# The build leaves <name>.egg-info in the tree, which would have Airflow load the plugin twice.
DIST ?= dist
dist: $(STAMP)
	rm -rf $(DIST)
	$(BIN)/python -m build --outdir $(DIST) .
	$(BIN)/python -m build --outdir $(DIST) $(EMULATOR_DIR)
	rm -rf airflow_provider_namelookup.egg-info $(EMULATOR_DIR)/namelookup_emulator.egg-info
	$(BIN)/python -m twine check --strict $(DIST)/*
	@echo "make dist: $$(cd $(DIST) && ls *.whl | tr '\n' ' ')in $(DIST)/"

# Install both built wheels (make dist, not this tree) into a separate venv, and the emulator's wheel
# alone into a second one (no Airflow, no provider), and run packaging/wheel_smoke.py in each from
# outside the tree. Each venv is kept between runs while the pyproject.toml files are unchanged (their
# dependencies are the same); the wheels themselves are reinstalled each time.
wheel-smoke: dist
	test "$$(cat $(SMOKE_VENV)/.pyproject.sha 2>/dev/null)" = "$$(cat pyproject.toml $(EMULATOR_PYPROJECT) | sha256sum | cut -d' ' -f1)" \
		|| { rm -rf $(SMOKE_VENV) && mkdir -p $(dir $(SMOKE_VENV)) && $(PYTHON) -m venv $(SMOKE_VENV) \
		     && $(SMOKE_VENV)/bin/python -m pip install --quiet --upgrade pip; }
	$(SMOKE_VENV)/bin/python -m pip uninstall --quiet --yes airflow-provider-namelookup namelookup-emulator
	$(SMOKE_VENV)/bin/python -m pip install --quiet "$$(ls $(DIST)/namelookup_emulator-*.whl)" \
		"$$(ls $(DIST)/airflow_provider_namelookup-*.whl)[emulator,compliance]"
	cat pyproject.toml $(EMULATOR_PYPROJECT) | sha256sum | cut -d' ' -f1 > $(SMOKE_VENV)/.pyproject.sha
	cd /tmp && $(SMOKE_VENV)/bin/python $(CURDIR)/packaging/wheel_smoke.py provider $(CURDIR)
	test "$$(cat $(EMULATOR_SMOKE_VENV)/.pyproject.sha 2>/dev/null)" = "$$(sha256sum $(EMULATOR_PYPROJECT) | cut -d' ' -f1)" \
		|| { rm -rf $(EMULATOR_SMOKE_VENV) && mkdir -p $(dir $(EMULATOR_SMOKE_VENV)) \
		     && $(PYTHON) -m venv $(EMULATOR_SMOKE_VENV) && $(EMULATOR_SMOKE_VENV)/bin/python -m pip install --quiet --upgrade pip; }
	$(EMULATOR_SMOKE_VENV)/bin/python -m pip uninstall --quiet --yes namelookup-emulator
	$(EMULATOR_SMOKE_VENV)/bin/python -m pip install --quiet "$$(ls $(DIST)/namelookup_emulator-*.whl)"
	sha256sum $(EMULATOR_PYPROJECT) | cut -d' ' -f1 > $(EMULATOR_SMOKE_VENV)/.pyproject.sha
	cd /tmp && $(EMULATOR_SMOKE_VENV)/bin/python $(CURDIR)/packaging/wheel_smoke.py emulator $(CURDIR)

clean:
	rm -rf $(VENV) dist build docs/_build $(EMULATOR_DIR)/build .airflow .demo .pytest_cache .mypy_cache .ruff_cache
