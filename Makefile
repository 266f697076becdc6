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

.PHONY: setup demo test bench dev validate clean

$(STAMP): pyproject.toml
	@command -v $(PY) >/dev/null || { echo "need $(PY) on PATH"; exit 1; }
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test]'
	$(BIN)/pip check
	$(BIN)/ebm embedder --check
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/ebm demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python -m benchmarks

dev: $(STAMP)
	$(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

validate: $(STAMP)
	$(BIN)/dagster definitions validate -w workspace.yaml

clean:
	rm -rf data_lake/landing data_lake/assets data_lake/models data_lake/cache data_lake/stores data_lake/reports data_lake/.dagster data_lake/warehouse.duckdb* data_lake/eval
