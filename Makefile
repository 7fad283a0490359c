# One command per chore. Every target sets up .venv itself, so a fresh clone needs only these.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint format bench bench-peers schema-doc images docs real-model clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

setup: $(BIN)/.installed

demo: setup
	$(BIN)/evalnb demo

# Inspect AI in an environment of its own (its pins clash with evalnb's dev tools): the tests
# read evalnb's Inspect exports back with Inspect's own code.
INSPECT_VENV := build/peers-venv
$(INSPECT_VENV)/.inspect-ai:
	test -x $(INSPECT_VENV)/bin/python || $(PYTHON) -m venv $(INSPECT_VENV)
	$(INSPECT_VENV)/bin/python -m pip install --quiet 'inspect-ai==0.3.285'
	touch $@

test: setup $(INSPECT_VENV)/.inspect-ai
	scripts/ensure_browser.sh
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	INSPECT_AI_PYTHON=$(CURDIR)/$(INSPECT_VENV)/bin/python $(BIN)/pytest -n 4 --dist loadgroup

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

docs: setup
	mkdir -p build/docs
	$(BIN)/jupyter nbconvert --to html --execute --ExecutePreprocessor.store_widget_state=True --output-dir build/docs notebooks/*.ipynb

# Optional: llama.cpp's server and Gemma 3 270M (about 10 minutes the first time).
real-model: setup
	scripts/real_model.sh

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
