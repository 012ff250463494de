# Two commands set everything up on a fresh machine (Python >= 3.10 with its venv module):
#   make run    create .venv on first use, install profcompare, run the main job on the simulator
#   make test   create .venv on first use, install profcompare with its test tools, run the tests
# The virtual environment is reused; it is refreshed when pyproject.toml changes.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev

.PHONY: run test clean-venv

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/profcompare run onchip offchip-sharded $(ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest $(ARGS)

clean-venv:
	rm -rf $(VENV)
