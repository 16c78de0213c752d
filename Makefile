# Every target sets itself up: a fresh clone needs only python3 (3.11+) and make.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# The peers live in an environment of their own: make test never installs them.
BENCH_VENV  ?= .venv-bench
BENCH_PY    := $(BENCH_VENV)/bin/python
BENCH_REQS  := benchmarks/compare/requirements.txt benchmarks/compare/constraints.txt
BENCH_STAMP := $(BENCH_VENV)/.installed-$(shell cat pyproject.toml $(BENCH_REQS) | cksum | cut -d' ' -f1)
# make live installs into an environment of its own too (scripts/live.sh sets it up).
LIVE_VENV   ?= .venv-live
# Python's bytecode cache stays on whatever the environment says (PYTHONDONTWRITEBYTECODE):
# each of the seventy Python processes of a test run would compile synopsis afresh, and each
# test worker its tests and every plugin pytest rewrites (about 9 s of CPU a worker).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test test-deep mutation lint typecheck unit browser bench live clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --upgrade pip
	@$(PY) -m pip install --quiet -e ".[dev]"
	@rm -f $(VENV)/.installed-* && touch $@

$(BENCH_STAMP): pyproject.toml $(BENCH_REQS)
	@test -x $(BENCH_PY) || $(PYTHON) -m venv $(BENCH_VENV)
	@$(BENCH_PY) -m pip install --quiet --upgrade pip
	@echo "installing synopsis and the peers into $(BENCH_VENV) (first run only)"
	@$(BENCH_PY) -m pip install --quiet -e . -r benchmarks/compare/requirements.txt \
		-c benchmarks/compare/constraints.txt
	@rm -f $(BENCH_VENV)/.installed-* && touch $@

demo: $(STAMP)
	@mkdir -p build/demo
	@$(VENV)/bin/synopsis replay examples/transcripts/codex-compaction-config-change.jsonl \
		--model gpt-5 --window 32000 --plot build/demo/replay.png --html build/demo/replay.html

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks scripts
	$(VENV)/bin/ruff format --check src tests benchmarks scripts

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# pytest-xdist spreads the tests over WORKERS processes (one per core by default; WORKERS=0
# runs them in this one) and pytest-cov combines the workers' coverage. A few property tests
# take far longer than the rest: a worker that runs out of tests takes some of the other's.
WORKERS ?= auto
XDIST   := -n $(WORKERS) --dist worksteal

unit: $(STAMP) browser
	$(PY) -m pytest $(XDIST) --cov --cov-report=term-missing $(PYTEST_ARGS)

test: lint typecheck unit

# The browser tests (tests/ui) drive Debian's Chromium through its ChromeDriver: installed here
# where missing, as root (CI runs so); elsewhere they are skipped, or fail under CI=true.
CHROMIUM_PACKAGES := chromium chromium-driver
browser:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then exit 0; fi; \
	outcome=$$([ "$$CI" = true ] && echo fail || echo "be skipped"); \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
		echo "no chromium or chromedriver in /usr/bin: the browser tests will $$outcome"; exit 0; fi; \
	echo "installing $(CHROMIUM_PACKAGES) for the browser tests (first run only)"; \
	log=$$(mktemp); \
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends $(CHROMIUM_PACKAGES); } >"$$log" 2>&1 || \
		{ cat "$$log"; echo "$(CHROMIUM_PACKAGES) not installed: the browser tests will $$outcome"; }; \
	rm -f "$$log"

# The whole suite with the deep Hypothesis profile (400 examples a property, where make test
# runs 50), for a nightly run: no coverage gate, and a per-test timeout to match the counts.
test-deep: $(STAMP) browser
	HYPOTHESIS_PROFILE=deep $(PY) -m pytest $(XDIST) --timeout=300 $(PYTEST_ARGS)

# Mutation testing of the pure core with mutmut, installed here on first use (the tests do
# not need it). What it mutates and which tests it runs: pyproject's [tool.mutmut]. It works
# in a copy, mutants/, and reuses the verdicts that folder holds: rm -rf mutants for a fresh
# run (about half an hour on two cores). docs/mutation.md has the score and the survivors.
mutation: $(STAMP)
	@$(VENV)/bin/mutmut --version >/dev/null 2>&1 || $(PY) -m pip install --quiet "mutmut>=3.8,<4"
	$(VENV)/bin/mutmut run --max-children $(or $(MUTATION_CHILDREN),2)
	$(VENV)/bin/mutmut results

# synopsis's own micro-benchmarks, then the comparison with the peers; results in
# benchmarks/results/compare.md and compare.json.
bench: $(STAMP) $(BENCH_STAMP)
	$(PY) -m benchmarks
	$(BENCH_PY) -m benchmarks.compare $(BENCH_ARGS)

# A live run against a real model: llama-cpp-python's OpenAI-compatible server with
# SmolLM2-135M-Instruct, in .venv-live (the first run builds llama-cpp-python from source,
# about ten minutes on two cores). Not part of make test. LIVE_ARGS go to pytest.
live:
	LIVE_VENV=$(LIVE_VENV) bash scripts/live.sh $(LIVE_ARGS)

clean:
	rm -rf $(VENV) $(BENCH_VENV) $(LIVE_VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .coverage
