# One command per chore. Every target sets up .venv itself, so a fresh clone needs only these.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint format bench schema-doc images docs real-model clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

setup: $(BIN)/.installed

demo: setup
	$(BIN)/evalnb demo

test: setup
	scripts/ensure_browser.sh
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/pytest

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: setup
	$(BIN)/python benchmarks/runner.py

schema-doc: setup
	$(BIN)/python -c 'from evalnb.store import schema_markdown as s; print(s(), end="")' > docs/schema.md

images: setup
	$(BIN)/python docs/make_images.py

docs: setup
	mkdir -p build/docs
	$(BIN)/jupyter nbconvert --to html --execute --output-dir build/docs notebooks/*.ipynb

# Optional: llama.cpp's server and Gemma 3 270M (about 10 minutes the first time).
real-model: setup
	scripts/real_model.sh

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
