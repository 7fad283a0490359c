# One command per chore. Every target sets up .venv itself, so a fresh clone needs only these.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo lab test lint format bench bench-peers schema-doc images docs real-model clean promptfoo

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

setup: $(BIN)/.installed

demo: setup
	$(BIN)/evalnb demo

# JupyterLab from .venv, serving notebooks/ on 127.0.0.1 only; no browser is opened. The token
# goes through the environment (not the command line, which other users could read).
LAB_PORT ?= 8888
lab: setup
	@token=$$($(BIN)/python -c 'import secrets; print(secrets.token_urlsafe(24))'); \
	echo "JupyterLab starting in notebooks/. Open this address in your browser (Ctrl-C here stops it):"; \
	echo "    http://127.0.0.1:$(LAB_PORT)/lab?token=$$token"; \
	echo "(another port: make lab LAB_PORT=8890)"; \
	cd notebooks && JUPYTER_TOKEN=$$token exec ../$(BIN)/jupyter lab --no-browser --allow-root \
		--ip=127.0.0.1 --port=$(LAB_PORT) --ServerApp.port_retries=0 \
		--ServerApp.log_level=WARN --LabApp.log_level=WARN

# Inspect AI in an environment of its own (its pins clash with evalnb's dev tools): the tests
# read evalnb's Inspect exports back with Inspect's own code.
INSPECT_VENV := build/peers-venv
$(INSPECT_VENV)/.inspect-ai:
	test -x $(INSPECT_VENV)/bin/python || $(PYTHON) -m venv $(INSPECT_VENV)
	$(INSPECT_VENV)/bin/python -m pip install --quiet 'inspect-ai==0.3.285'
	touch $@

# promptfoo (npm), pinned, under build/promptfoo: imported promptfoo suites are expanded and
# graded by promptfoo itself, and the tests compare evalnb with it (about 1.4 GB, 2-3 minutes
# the first time). Telemetry and update checks are off; its config folder is a temporary one.
PROMPTFOO_VERSION := 0.121.20
PROMPTFOO_DIR := build/promptfoo
$(PROMPTFOO_DIR)/.installed-$(PROMPTFOO_VERSION):
	scripts/ensure_browser.sh
	mkdir -p $(PROMPTFOO_DIR)
	test -f $(PROMPTFOO_DIR)/package.json || echo '{"name": "evalnb-promptfoo", "private": true}' > $(PROMPTFOO_DIR)/package.json
	cd $(PROMPTFOO_DIR) && tmp=$$(mktemp -d) && PROMPTFOO_DISABLE_TELEMETRY=1 \
		PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_CONFIG_DIR=$$tmp npm install --no-audit --no-fund \
		--loglevel=error promptfoo@$(PROMPTFOO_VERSION) && rm -rf $$tmp
	touch $@

promptfoo: $(PROMPTFOO_DIR)/.installed-$(PROMPTFOO_VERSION)

# pytest runs tests/test_docs.py too: it builds the documentation site (`mkdocs build --strict`,
# the notebooks as stored) and checks it: every public name documented, no broken internal
# link, the README a front page.
test: setup $(INSPECT_VENV)/.inspect-ai promptfoo
	scripts/ensure_browser.sh
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	INSPECT_AI_PYTHON=$(CURDIR)/$(INSPECT_VENV)/bin/python $(BIN)/pytest -n 4 --dist loadfile

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: setup
	$(BIN)/python benchmarks/runner.py

# evalnb beside Inspect AI (PyPI) and promptfoo (npm, skipped when npm cannot install it),
# each installed under build/ (BENCHMARKS.md, "Peers").
bench-peers: setup
	test -x build/peers-venv/bin/python || $(PYTHON) -m venv build/peers-venv
	build/peers-venv/bin/python -m pip install --quiet 'inspect-ai==0.3.285' openai pandas pyarrow
	mkdir -p build/peers-node
	cd build/peers-node && { npm install --no-audit --no-fund --no-save promptfoo@0.121.20 \
		|| echo "promptfoo not installed: benchmarks/peers.py runs without it"; }
	$(BIN)/python benchmarks/peers.py

schema-doc: setup
	$(BIN)/python -c 'from evalnb.store import schema_markdown as s; print(s(), end="")' > docs/schema.md

images: setup
	$(BIN)/python docs/make_images.py
	$(BIN)/python docs/make_widget_images.py

# The documentation site (mkdocs.yml) into build/site: the guide, the API reference from the
# docstrings and the six notebooks, executed (about 2-3 minutes; DOCS_EXECUTE=false renders
# them as stored, without outputs). Open build/site/index.html. mkdocs-jupyter stores the
# widget state as it executes, and each page draws the explorer, the review panel and the
# progress bars from it with evalnb's own script (docs/_build/hooks.py): no network needed.
DOCS_EXECUTE ?= true
docs: setup
	NO_MKDOCS_2_WARNING=1 EVALNB_DOCS_EXECUTE=$(DOCS_EXECUTE) $(BIN)/mkdocs build --strict
	@echo "The documentation site is in build/site/: open build/site/index.html"

# Optional: llama.cpp's server and Gemma 3 270M (about 10 minutes the first time).
real-model: setup
	scripts/real_model.sh

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
