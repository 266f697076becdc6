# ebm-platform: `make demo` and `make test` set everything up on a fresh machine.
SHELL := /bin/bash
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export LITELLM_LOCAL_MODEL_COST_MAP := True
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export DAGSTER_HOME := $(CURDIR)
export EBM_DATASETS_DIR ?= $(abspath ../shared/datasets)

UI_STAMP := $(VENV)/.ui-installed
TEST_WORKERS ?= 3
# pip byte-compiles every installed module (torch alone has thousands): torch installs in 18 s instead of
# 52 s without it, and Python compiles the modules a run imports on first import instead. For that the
# compiled files must be written: a machine that sets PYTHONDONTWRITEBYTECODE (this one does) would
# otherwise compile the whole stack again in every process (27 s instead of 15 s to import it).
PIP_INSTALL ?= --no-compile
# torch comes through pip, which reads the machine's pip configuration (here a local CPU wheel; uv would take
# PyPI's CUDA build, 6.4 GB); the rest of the stack through uv, which installs it from its cache in 4 s against
# pip's 29-50 s (2026-12-07, the same versions; uv compiles nothing either). pip is the fallback.
install_extra = $(BIN)/uv pip install -q --python $(BIN)/python -e '.[$(1)]' || $(BIN)/pip install -q $(PIP_INSTALL) -e '.[$(1)]'
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup models lint ui-deps services-deps demo test reliability ui-check bench dev validate clean

$(STAMP): pyproject.toml
	@command -v $(PY) >/dev/null || { echo "need $(PY) on PATH"; exit 1; }
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q $(PIP_INSTALL) torch==2.13.0
	$(BIN)/pip install -q $(PIP_INSTALL) uv==0.13.8
	$(call install_extra,test)
	$(BIN)/pip check
	$(BIN)/opt_in_out --opt_out >/dev/null  # OpenVINO would otherwise send usage telemetry on import
	$(BIN)/ebm embedder --check
	touch $(STAMP)

setup: $(STAMP)

# The PICO tagger, the verdict model and the closed-question reader, trained once per environment (kept in
# .venv/share), so that no test or demo step pays for training inside its own run.
models: $(STAMP)
	$(BIN)/ebm models

# The UI check needs a real browser: Debian's chromium (apt) driven by playwright (PyPI). When either
# cannot be installed, say so; the UI test then skips and pytest's summary prints the reason.
ui-deps: $(STAMP)
	@command -v chromium >/dev/null || { (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null 2>&1 \
		|| echo "chromium could not be installed: the UI check will be skipped"; }
	@test -f $(UI_STAMP) || { { $(call install_extra,ui); } && touch $(UI_STAMP); } \
		|| echo "playwright could not be installed: the UI check will be skipped"

demo: models
	$(BIN)/ebm demo

# The tests train their own test-sized models (EBM_TRAINING_LIMIT, set in conftest.py) under their own
# keys, so `make test` does not wait for `make models`; three pytest workers share the 2 cores (tests that
# wait on a subprocess or a server leave a core idle; 7 min 47 s vs 8 min 15 s with two, 11 min 40 s with one).
test: ui-deps lint
	$(BIN)/python -m pytest -q -rs -n $(TEST_WORKERS) --dist worksteal

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Kills, readers during writes, load and a daemon backfill (24 minutes on 2 cores, 2026-11-26); prints the reliability table.
# Its longest test may take hours on a slow machine, so the per-test timeout is three hours, not make test's 15 minutes.
reliability: services-deps
	$(BIN)/python -m pytest -q -rs -m reliability --timeout 10800 ebm_platform_tests/test_reliability.py

# The distributed row of the reliability suite needs Debian's postgresql and redis-server; when they
# cannot be installed, say so (that test then skips with the reason).
services-deps:
	@{ ls /usr/lib/postgresql/*/bin/initdb && command -v redis-server; } >/dev/null 2>&1 || \
		{ (apt-get update -qq && apt-get install -y -qq postgresql redis-server) >/dev/null 2>&1 \
		|| echo "postgresql or redis-server could not be installed: the distributed reliability test will be skipped"; }

ui-check: ui-deps
	$(BIN)/python -m pytest -q -rs ebm_platform_tests/test_ui.py

bench: $(STAMP)
	$(BIN)/python -m benchmarks

dev: $(STAMP)
	$(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

validate: $(STAMP)
	$(BIN)/dagster definitions validate -w workspace.yaml

clean:
	rm -rf data_lake/landing data_lake/assets data_lake/staging data_lake/models data_lake/cache data_lake/stores data_lake/reports data_lake/.dagster data_lake/warehouse.duckdb* data_lake/eval
