# Two commands set everything up on a fresh machine (Python >= 3.10 with its venv module):
#   make run    create .venv on first use, install profcompare (what running needs, no test tools),
#               run the main job on the simulator
#   make test   create .venv on first use, install profcompare with its test tools (the dev extra),
#               run the tests
#   make docs   create .venv on first use, install MkDocs with the Material theme (the docs extra),
#               build the user guide into site/ strictly (a warning or a broken link fails)
#   make typecheck  the same environment; mypy over the package (pyproject.toml [tool.mypy] says
#               what is checked and how strictly)
# The virtual environment is reused; it is refreshed when pyproject.toml changes. Two stamps say
# what is installed: .installed (the project) and .installed-dev (the project and its test tools),
# so `make run` then `make test` adds only the test tools, and `make test` alone installs both.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
DOCS_STAMP := $(VENV)/.installed-docs

.PHONY: run test typecheck docs clean-venv

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUN_STAMP)

# The dev install includes everything the runtime one does, so it satisfies both stamps.
$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(RUN_STAMP) $(DEV_STAMP)

# The docs install includes the runtime one too (the extra adds only MkDocs and its theme).
$(DOCS_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	touch $(RUN_STAMP) $(DOCS_STAMP)

run: $(RUN_STAMP)
	$(BIN)/profcompare run onchip offchip-sharded $(ARGS)

test: $(DEV_STAMP)
	$(BIN)/python -m pytest $(ARGS)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site $(ARGS)
typecheck: $(DEV_STAMP)
	$(BIN)/python -m mypy $(ARGS)

clean-venv:
	rm -rf $(VENV)
