# The two README commands:  make repro  (set up + run the pipeline)  and  make test.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export LITELLM_LOCAL_MODEL_COST_MAP := True
export DVC_NO_ANALYTICS := 1
export MLFLOW_DISABLE_TELEMETRY := true
export GX_ANALYTICS_ENABLED := false
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: setup repro test check lint format typecheck params ui bench clean exps compare plots

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP) ## create .venv and install the project with dev tools
	@test -d .dvc || (dvc init --quiet && dvc config hydra.enabled true)

repro: setup ## rebuild datasets, evaluations and reports (offline, embedded defaults)
	$(BIN)/python -m cultureqa.cli params check
	dvc repro

test: setup ## the offline test suite
	$(BIN)/python -m pytest -q

check: lint typecheck ## ruff + mypy

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

format: setup
	$(BIN)/ruff format . && $(BIN)/ruff check --fix .

typecheck: setup
	$(BIN)/mypy

params: setup ## recompose params.yaml from conf/ (keeps an applied experiment's values unless FORCE=1)
	$(BIN)/python -m cultureqa.cli params compose $(if $(FORCE),--force)

# DVC lists every dep path and all of params.yaml; keep the headline metrics and what a sweep varies.
EXPS_DROP := --drop '.*/|^(expectations|prompts)$$' --drop '^(base|baselines|benchmarks|cases|evaluate|generator|judge|mocqa|mocqa_eval|source|spend|tracking)\.'
exps: ## compare experiments in a terminal: headline metrics, model and prompt (about 55 columns)
	@dvc exp show --no-pager $(EXPS_DROP) $(ARGS)

compare: ## one table across experiments: headline per benchmark ± 95% CI, Δ to ARGS="--baseline EXP"
	@python -m cultureqa.cli compare $(ARGS)

# `dvc plots` pages load Vega from a CDN (blank offline): render against copies from the npm
# registry (BSD-3-Clause; installed once per machine, never committed) with .dvc/plots/offline.html.
VEGA_DIR ?= $(HOME)/.cache/cultureqa/vega
VEGA_PKGS := vega@5.33.1 vega-lite@5.23.0 vega-embed@6.29.0
VEGA_JS := $(VEGA_DIR)/node_modules/vega/build/vega.min.js \
	$(VEGA_DIR)/node_modules/vega-lite/build/vega-lite.min.js \
	$(VEGA_DIR)/node_modules/vega-embed/build/vega-embed.min.js
PLOTS ?= show
$(VEGA_DIR)/.installed:
	npm install --prefix $(VEGA_DIR) --no-save --no-audit --no-fund --silent $(VEGA_PKGS)
	touch $@

plots: $(VEGA_DIR)/.installed ## DVC plots offline in dvc_plots/index.html; PLOTS="diff exp-a exp-b" compares
	dvc plots $(PLOTS) --html-template .dvc/plots/offline.html -o dvc_plots $(ARGS)
	mkdir -p dvc_plots/vendor && cp $(VEGA_JS) dvc_plots/vendor/

UI_PORT ?= 5000
ui: setup ## open the MLflow UI on http://127.0.0.1:5000 (prints each experiment's runs-table address)
	@$(BIN)/python -m cultureqa.cli ui-links --base http://127.0.0.1:$(UI_PORT)
	$(BIN)/mlflow ui --backend-store-uri sqlite:///$(CURDIR)/mlflow.db --host 127.0.0.1 --port $(UI_PORT) --workers 1

clean: ## remove pipeline outputs (not the response store or the model cache)
	rm -rf data/eval data/track .runlog reports/* metrics/eval metrics/validate
