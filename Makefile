# Every target sets itself up: a fresh clone needs only python3 (3.11+) and make.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --upgrade pip
	@$(PY) -m pip install --quiet -e ".[dev,report]"
	@rm -f $(VENV)/.installed-* && touch $@

demo: $(STAMP)
	@mkdir -p build/demo
	@$(VENV)/bin/synopsis replay examples/transcripts/codex-compaction-config-change.jsonl \
		--model gpt-5 --window 32000 --plot build/demo/replay.png --html build/demo/replay.html

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks scripts
	$(VENV)/bin/ruff format --check src tests benchmarks scripts

typecheck: $(STAMP)
	$(VENV)/bin/mypy

unit: $(STAMP)
	$(PY) -m pytest --cov --cov-report=term-missing $(PYTEST_ARGS)

test: lint typecheck unit

bench: $(STAMP)
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .coverage
