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
export NO_MKDOCS_2_WARNING := 1
export PATH := $(CURDIR)/$(BIN):$(PATH)
# Let Python cache the bytecode of src/ and tests/ (git- and .dvcignore'd __pycache__): where the
# user's environment sets PYTHONDONTWRITEBYTECODE, every stage process and test worker would
# otherwise compile the project's modules (and pytest re-rewrite every test file) from source.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup lock lock-check repro dvc-deps test check lint format typecheck params ui bench clean exps compare plots exp sweep \
  labelstudio labelstudio-start labelstudio-lock

# The environment is requirements.lock: every package, pinned with its sha256, compiled by uv
# from pyproject.toml (`make lock`). The CPU build of torch is not on PyPI: it comes from
# TORCH_WHEELS (a folder or an HTML page of wheels) and must match the lock's hash.
LOCK := requirements.lock
TORCH_WHEELS ?= $(if $(wildcard /opt/wheels/torch-*),/opt/wheels,https://download.pytorch.org/whl/cpu/torch/)
UV := $(BIN)/uv
export UV_PYTHON_DOWNLOADS := never
UV_COMPILE = $(UV) pip compile pyproject.toml --extra dev --python-version 3.11 \
  --python-platform x86_64-manylinux_2_28 --find-links $(TORCH_WHEELS) \
  --constraint torch-cpu.constraints.txt --override lock-overrides.txt --generate-hashes --custom-compile-command 'make lock' --quiet

# uv itself is bootstrapped with pip from the lock's own hash-checked line (later by uv itself:
# the sync removes pip), then installs the rest.
$(UV): $(LOCK)
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@sed -n '/^uv==/,/# via/p' $(LOCK) | grep -v '#' > $(VENV)/uv.requirements
	@if test -x $(UV); then $(UV) pip install --quiet --python $(BIN)/python --no-deps \
	  --require-hashes -r $(VENV)/uv.requirements; \
	else $(BIN)/python -m pip install --isolated --quiet --disable-pip-version-check --no-deps \
	  --require-hashes -r $(VENV)/uv.requirements; fi
	@touch $(UV)

$(STAMP): pyproject.toml $(LOCK) $(UV)
	@start=$$(date +%s); \
	$(UV) pip sync --quiet --python $(BIN)/python --require-hashes --compile-bytecode --find-links $(TORCH_WHEELS) $(LOCK) && \
	$(UV) pip install --quiet --python $(BIN)/python --no-deps --no-build-isolation -e . && \
	touch $(STAMP) && \
	echo "setup: .venv = $(LOCK) ($$(grep -c '^[a-z0-9]' $(LOCK)) packages) + cultureqa (editable) in $$(( $$(date +%s) - start )) s"

setup: $(STAMP) ## create .venv and install exactly requirements.lock (with dev tools) and the project
	@test -d .dvc || (dvc init --quiet && dvc config hydra.enabled true)

lock: $(UV) ## refresh requirements.lock after editing pyproject.toml (ARGS=--upgrade to move every pin)
	$(UV_COMPILE) $(ARGS) -o $(LOCK)

lock-check: $(UV) ## fail when requirements.lock is out of date with pyproject.toml (CI)
	@tmp=$$(mktemp) && cp $(LOCK) $$tmp && $(UV_COMPILE) -o $$tmp && \
	if diff -u $(LOCK) $$tmp > $$tmp.diff; then echo "$(LOCK) is up to date with pyproject.toml"; rm -f $$tmp $$tmp.diff; \
	else head -40 $$tmp.diff; echo "error: $(LOCK) is out of date with pyproject.toml; fix: make lock, then commit $(LOCK)"; rm -f $$tmp $$tmp.diff; exit 1; fi

repro: setup ## rebuild datasets, evaluations and reports (offline, embedded defaults)
	$(BIN)/python -m cultureqa.cli params check
	$(BIN)/python -m cultureqa.dvc_deps prune-lock  # DVC rewrites the whole lock after each stage
	dvc repro
	@$(BIN)/python -m cultureqa.cli headline  # the run ends with its results table

# Tests run in parallel (pytest-xdist), one worker per core: each worker collects the whole suite
# and imports its libraries (~20-30 CPU s), so 4 workers on 2 cores cost more CPU and no less wall
# (docs/measured.md); --dist worksteal evens out the long tests. TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2
test: setup ## the offline test suite (ARGS=--durations=15 lists the slowest tests)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal $(ARGS)

check: lint typecheck ## ruff + mypy

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

format: setup
	$(BIN)/ruff format . && $(BIN)/ruff check --fix .

typecheck: setup
	$(BIN)/mypy

dvc-deps: setup ## rewrite dvc.yaml's code deps from the stages' imports (tests/test_dvc_deps.py checks them)
	$(BIN)/python -m cultureqa.dvc_deps write

params: setup ## recompose params.yaml from conf/ (keeps an applied experiment's values unless FORCE=1)
	$(BIN)/python -m cultureqa.cli params compose $(if $(FORCE),--force)

# `dvc exp show` lists every dep path and all of params.yaml; `make exps` shows the params that differ
# and the model slot's headline metrics first; no line wider than the terminal (EXPS_WIDTH=N: N; 160 piped).
EXPS_WIDTH ?=
exps: ## experiments in a terminal: what differs, model metrics first, fits the terminal (ALL=1: DVC's full table)
	@$(if $(ALL),dvc exp show --no-pager $(ARGS),python -m cultureqa.cli exps $(if $(EXPS_WIDTH),--width $(EXPS_WIDTH)) $(ARGS))

compare: ## one table across experiments: headline per benchmark ± 95% CI, Δ to ARGS="--baseline EXP"
	@python -m cultureqa.cli compare $(ARGS)

# `dvc exp run` ends with DVC's own lines; these end with the results (docs/comparing-runs.md).
# A failed `dvc exp run` leaves its -S overrides in params.yaml, the stages it finished in dvc.lock
# and the failed stage's outputs removed: put both files back as they were, then their outputs.
exp: ## one DVC experiment ending with its results table: make exp ARGS="-S model=random"
	@snap=$$(mktemp -d) && cp params.yaml $$snap/ && { test ! -f dvc.lock || cp dvc.lock $$snap/; } && \
	if dvc exp run $(ARGS); then rm -rf $$snap; else rc=$$?; cp $$snap/params.yaml params.yaml; \
	  if test -f $$snap/dvc.lock; then cp $$snap/dvc.lock dvc.lock; else rm -f dvc.lock; fi; rm -rf $$snap; \
	  echo "make exp: dvc exp run failed (exit $$rc): params.yaml and dvc.lock restored as before; restoring their outputs (dvc checkout)" >&2; \
	  dvc checkout -q || echo "make exp: some outputs were not restored; run: dvc checkout" >&2; exit $$rc; fi
	@python -m cultureqa.cli headline
sweep: ## queue + run a sweep ending with make compare's table: make sweep ARGS="-S 'model=a,b'"
	dvc exp run --queue $(ARGS)
	dvc exp run --run-all
	@python -m cultureqa.cli compare

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
	@python -m cultureqa.runs.plots_page dvc_plots/index.html
	mkdir -p dvc_plots/vendor && cp $(VEGA_JS) dvc_plots/vendor/

UI_PORT ?= 5000
ui: setup ## open the MLflow UI on http://127.0.0.1:5000 (prints each experiment's runs-table address)
	@$(BIN)/python -m cultureqa.cli ui-links --base http://127.0.0.1:$(UI_PORT)
	$(BIN)/mlflow ui --backend-store-uri sqlite:///$(CURDIR)/mlflow.db --host 127.0.0.1 --port $(UI_PORT) --workers 1

# Label Studio (docs/human-validation.md) lives in its own environment, outside requirements.lock:
# .ls-venv from labelstudio/requirements.txt (every package pinned with its hash). The project talks
# to it over HTTP only. `make labelstudio-start` runs it on LS_PORT with its data in LS_DATA.
LS_VENV := .ls-venv
LS_PORT ?= 8080
LS_DATA ?= $(CURDIR)/.labelstudio
$(LS_VENV)/.installed: labelstudio/requirements.txt $(UV)
	@test -x $(LS_VENV)/bin/python || $(PY) -m venv $(LS_VENV)
	$(UV) pip sync --quiet --python $(LS_VENV)/bin/python --require-hashes labelstudio/requirements.txt
	@touch $@
labelstudio: $(LS_VENV)/.installed ## Label Studio's own pinned environment in .ls-venv

labelstudio-start: labelstudio ## start Label Studio on http://127.0.0.1:$(LS_PORT) (user and token from the environment)
	$(BIN)/python -m cultureqa.human.server --port $(LS_PORT) --data-dir $(LS_DATA)

labelstudio-lock: $(UV) ## re-pin labelstudio/requirements.txt from labelstudio/requirements.in
	$(UV) pip compile labelstudio/requirements.in --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
	  --generate-hashes --custom-compile-command 'make labelstudio-lock' --quiet -o labelstudio/requirements.txt

.PHONY: docs
IFRAME_WORKER_DIR ?= $(HOME)/.cache/cultureqa/iframe-worker
$(IFRAME_WORKER_DIR)/.installed:
	npm install --prefix $(IFRAME_WORKER_DIR) --no-save --no-audit --no-fund --silent iframe-worker@1.0.4
	touch $@
docs: setup $(IFRAME_WORKER_DIR)/.installed ## build the documentation site (README's docs/ pages) into site/, offline; warnings fail
	$(BIN)/mkdocs build --strict --quiet --site-dir site
	install -D -m 644 $(IFRAME_WORKER_DIR)/node_modules/iframe-worker/shim/index.js site/vendor/iframe-worker/shim.js
	@echo "docs: site/index.html"

clean: ## remove pipeline outputs (not the response store or the model cache)
	rm -rf data/eval data/track .runlog reports/* metrics/eval metrics/validate
