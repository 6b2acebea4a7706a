# RolloutUI: `make run` starts the product, `make test` runs every check CI runs.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# PostgreSQL for the second test pass (CI provides it; skipped with a message when unreachable,
# unless REQUIRE_POSTGRES=1, which .ci/run sets so CI can never silently skip it).
PG_TEST_URL ?= postgres://postgres@127.0.0.1:5432/test
REQUIRE_POSTGRES ?= 0
# Parallel pytest processes (pytest-xdist) for the unit passes; 0 or 1 runs them in one process.
# Two by default (the machine's two cores): each worker has its own test database, and the suite
# passes this way (1,836 unit tests in one run on 2026-12-01); PYTEST_WORKERS=1 runs them in one.
PYTEST_WORKERS ?= 2
XDIST := $(if $(filter-out 0 1,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS),)
# Integration tests spend most of their time waiting on the processes they start (runall, Celery,
# Daphne, Chromium on a clock running a few times the wall): two run side by side by default. Each
# starts its own Redis (so no worker takes another test's tasks), a module runs on one worker (its
# module-scoped stack), and the tests on the shared Redis (fixture redis_url) run on one worker,
# one at a time (tests/conftest.py). INTEGRATION_WORKERS=1 runs them one at a time.
INTEGRATION_WORKERS ?= 2
INTEGRATION_XDIST := $(if $(filter-out 0 1,$(INTEGRATION_WORKERS)),-n $(INTEGRATION_WORKERS) --dist loadgroup,)
PYTEST_ARGS ?=
CHROMIUM := /usr/bin/chromium

.PHONY: help venv run test lint chromium node-deps clean

help:
	@echo "make run    start RolloutUI (Redis, Daphne, Celery worker and beat) on http://127.0.0.1:$${PORT:-8000}"
	@echo "make test   run the import contracts, migration check, the docs build and the test suite (SQLite, then PostgreSQL)"
	@echo "make clean  remove the virtualenv and caches (local state in var/ is kept: rm -rf var to reset it)"

# --- Virtualenv: Python >= 3.12, re-installed only when pyproject.toml changes ----------------
venv: $(STAMP)

$(STAMP): pyproject.toml
	@set -euo pipefail; \
	ok='import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)'; \
	if [ -x "$(PY)" ] && ! "$(PY)" -c "$$ok" 2>/dev/null; then \
	  echo "error: $(VENV) uses Python $$("$(PY)" -c 'import platform; print(platform.python_version())') but RolloutUI needs >= 3.12; run 'make clean' and retry" >&2; \
	  exit 1; \
	fi; \
	if [ ! -x "$(PY)" ]; then \
	  interp=""; \
	  for cand in python3.13 python3.12 python3; do \
	    if command -v "$$cand" >/dev/null 2>&1 && "$$cand" -c "$$ok" 2>/dev/null; then interp="$$(command -v $$cand)"; break; fi; \
	  done; \
	  if [ -z "$$interp" ] && command -v pyenv >/dev/null 2>&1; then \
	    for v in $$(pyenv versions --bare 2>/dev/null | sort -rV); do \
	      if PYENV_VERSION="$$v" python3 -c "$$ok" 2>/dev/null; then interp="$$(PYENV_VERSION=$$v pyenv which python3)"; break; fi; \
	    done; \
	  fi; \
	  if [ -z "$$interp" ]; then \
	    echo "error: RolloutUI needs Python >= 3.12; none found (tried python3.13, python3.12, python3 and pyenv versions)." >&2; \
	    echo "       Install one (e.g. 'pyenv install 3.12' or 'apt-get install python3.12'), then run make again." >&2; \
	    exit 1; \
	  fi; \
	  echo "Creating $(VENV) with $$interp ($$("$$interp" -c 'import platform; print(platform.python_version())'))"; \
	  "$$interp" -m venv "$(VENV)"; \
	fi; \
	"$(PY)" -m pip install --quiet -e '.[test]'; \
	touch "$(STAMP)"

# --- Run ------------------------------------------------------------------------------------
run: venv
	$(PY) manage.py runall

# --- Test -----------------------------------------------------------------------------------
# Debian's Chromium for the browser tests. Never `playwright install` (it downloads a browser
# and fails on these machines). A failure here only means the browser tests are skipped.
chromium:
	@if [ -x "$(CHROMIUM)" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "Installing Debian's chromium for the browser tests (apt-get)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	    || echo "warning: could not install chromium; browser tests will be skipped" >&2; \
	else \
	  echo "note: $(CHROMIUM) is missing and cannot be installed here (needs root and apt-get); browser tests will be skipped" >&2; \
	fi

lint: venv
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(PY) manage.py makemigrations --check --dry-run
	@# The documentation site (docs/, mkdocs.yml): --strict fails on a broken link, page or anchor. Built
	@# into a temporary folder, never into the repository; the build needs no network.
	@site="$$(mktemp -d)"; NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir "$$site"; \
	  rc=$$?; rm -rf "$$site"; exit $$rc
	@# Django's deployment checklist with production settings (HTTPS on, a named host, a real key);
	@# tests/kubernetes/test_production_settings.py runs it with the manifests' full environment.
	@var="$$(mktemp -d)"; ROLLOUTUI_VAR_DIR="$$var" ROLLOUTUI_HTTPS=1 ROLLOUTUI_ALLOWED_HOSTS=rollouts.example.com \
	  ROLLOUTUI_SECRET_KEY="$$($(PY) -c 'import secrets; print(secrets.token_hex(32))')" ROLLOUTUI_DEBUG=0 \
	  $(PY) manage.py check --deploy --fail-level WARNING; rc=$$?; rm -rf "$$var"; exit $$rc

# Node packages the tests use (package.json, pinned by package-lock.json): axe-core, which the
# accessibility test (tests/dashboard/test_accessibility.py) injects into every page. Only the tests
# need them; the dashboard has no build step. Re-installed when the lock file changes.
node-deps: node_modules/.package-lock.json

node_modules/.package-lock.json: package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "error: npm is missing: the accessibility test needs axe-core from npm (apt-get install npm, or Node.js >= 18)" >&2; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# Each pytest pass tolerates exit code 5 ("no tests collected": that selection is empty); any
# other failure is remembered, the remaining passes still run, and the target fails at the end.
test: venv node-deps
	@-$(MAKE) --no-print-directory chromium
	@$(MAKE) --no-print-directory lint
	@set -uo pipefail; failed=""; total_passed=0; total_failed=0; log="$$(mktemp)"; \
	pass() { \
	  name="$$1"; shift; echo; echo "=== pytest: $$name ==="; \
	  "$$@" 2>&1 | tee "$$log"; rc=$${PIPESTATUS[0]}; \
	  summary="$$(tail -n 1 "$$log")"; \
	  n=$$(echo "$$summary" | grep -oE '[0-9]+ passed' | awk '{s+=$$1} END {print s+0}'); total_passed=$$((total_passed + n)); \
	  n=$$(echo "$$summary" | grep -oE '[0-9]+ (failed|errors?)' | awk '{s+=$$1} END {print s+0}'); total_failed=$$((total_failed + n)); \
	  if [ $$rc -eq 5 ]; then echo "($$name: no tests selected)"; \
	  elif [ $$rc -ne 0 ]; then failed="$$failed [$$name]"; fi; \
	}; \
	pass "SQLite, unit" env -u DATABASE_URL $(PY) -m pytest -q -m "not integration" $(XDIST) $(PYTEST_ARGS); \
	pass "SQLite, integration" env -u DATABASE_URL $(PY) -m pytest -q -m "integration" $(INTEGRATION_XDIST) $(PYTEST_ARGS); \
	if $(PY) -c "import psycopg, sys; psycopg.connect('$(PG_TEST_URL)', connect_timeout=3).close()" 2>/dev/null; then \
	  pass "PostgreSQL, database unit" env DATABASE_URL=$(PG_TEST_URL) $(PY) -m pytest -q -m "database and not integration" $(XDIST) $(PYTEST_ARGS); \
	  pass "PostgreSQL, database integration" env DATABASE_URL=$(PG_TEST_URL) $(PY) -m pytest -q -m "database and integration" $(INTEGRATION_XDIST) $(PYTEST_ARGS); \
	elif [ "$(REQUIRE_POSTGRES)" = 1 ]; then \
	  echo "error: PostgreSQL is not reachable at $(PG_TEST_URL) and REQUIRE_POSTGRES=1" >&2; failed="$$failed [PostgreSQL unreachable]"; \
	else \
	  echo; echo "PostgreSQL is not reachable at $(PG_TEST_URL): skipping the PostgreSQL pass (set PG_TEST_URL to point at one)"; \
	fi; \
	rm -f "$$log"; echo; \
	echo "Total: $$total_passed passed, $$total_failed failed"; \
	if [ -n "$$failed" ]; then echo "FAILED:$$failed" >&2; exit 1; fi; \
	echo "All test passes succeeded."

# var/ (database, secret key, generated admin password's account) is deliberately kept.
clean:
	rm -rf $(VENV) node_modules .pytest_cache .hypothesis test-artifacts *.egg-info
	find . -path ./.git -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
