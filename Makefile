# Two commands from a fresh clone: `make demo` and `make test`.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DATA_DIR ?= .memstrata-demo
# The ONNX export of the bundled MiniLM (made once, on first use) stays in the clone.
export MEMSTRATA_MODEL_CACHE ?= $(CURDIR)/.memstrata-models

.PHONY: install demo test lint typecheck unit bench clean generate

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	# torch first and exactly pinned: the CPU build (an unpinned torch pulls CUDA).
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -c requirements.lock -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)
	# Headless Chromium renders the health report's HTML in the tests (Debian package).
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)

demo: install
	$(BIN)/memstrata serve-demo --data-dir $(DATA_DIR)

lint: install
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/pytest -q

test: lint typecheck unit

bench: install
	$(BIN)/memstrata bench layers --json --data-dir .memstrata-bench

clean:
	rm -rf $(VENV) $(DATA_DIR) .memstrata-bench .memstrata-models .pytest_cache .mypy_cache .ruff_cache

# The gRPC schema and the client's methods come from the service's capability table;
# tests fail when these files are stale.
generate: install
	$(BIN)/python -m memstrata.service.proto > proto/memstrata/v1/memstrata.proto
	$(BIN)/python -m memstrata.service.codegen
